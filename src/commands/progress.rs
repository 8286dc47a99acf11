//! What `routines run` shows on stderr while the agent works: a line per tool call, and on a
//! terminal a spinner with the time spent; then the last line's figures.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use routines::agent::AgentEvent;
use routines::status::format::count;
use routines::store::RunRow;
use tokio::sync::mpsc;

/// The status lines of one run, with a spinner only when stderr is a terminal.
pub struct Progress {
    spinner: Option<ProgressBar>,
}

impl Progress {
    /// Says the run started.
    pub fn start(name: String) -> Progress {
        let line = format!("running {name}...");
        if !std::io::stderr().is_terminal() {
            eprintln!("{line}");
            return Progress { spinner: None };
        }
        let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        spinner.set_style(style);
        spinner.set_message(line);
        spinner.enable_steady_tick(Duration::from_millis(120));
        crate::app::spinner::show(&spinner);
        Progress { spinner: Some(spinner) }
    }

    /// Prints a line for each event until the run ends, then takes the spinner away.
    pub async fn follow(self, mut rx: mpsc::UnboundedReceiver<AgentEvent>) {
        while let Some(event) = rx.recv().await {
            let line = match event {
                AgentEvent::Running { tool, summary } if summary.is_empty() => format!("  · {tool}"),
                AgentEvent::Running { tool, summary } => format!("  · {tool}: {summary}"),
                AgentEvent::Success { tool, first_line } => format!("  ✓ {tool}: {first_line}"),
                AgentEvent::Failed { tool, lines } => format!("  ✗ {tool}: {}", lines.lines().next().unwrap_or("")),
                AgentEvent::Notice(n) => format!("  ! {n}"),
                AgentEvent::TextDelta(_) => continue,
            };
            match &self.spinner {
                // A terminal line is cut to a width that fits most terminals.
                Some(s) => s.println(line.chars().take(160).collect::<String>()),
                None => eprintln!("{line}"),
            }
        }
        if let Some(s) = self.spinner {
            crate::app::spinner::hide();
            s.finish_and_clear();
        }
    }
}

/// What a finished run took and cost, for its last line: ` in 1.4s · 3 model calls · 1,234
/// tokens`.
pub fn summary(run: &RunRow) -> String {
    let took = match (run.started_at, run.finished_at) {
        (Some(a), Some(b)) => format!(" in {}", took((b - a).to_std().unwrap_or_default())),
        _ => String::new(),
    };
    let calls = match run.iterations {
        1 => "1 model call".to_string(),
        n => format!("{n} model calls"),
    };
    format!("{took} · {calls} · {} tokens", count(run.prompt_tokens + run.completion_tokens))
}

/// A duration as a person reads it: `0.4s`, `12.3s`, `2m 24s`, `1h 05m`.
pub fn took(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(took(Duration::from_millis(1440)), "1.4s");
        assert_eq!(took(Duration::from_secs(144)), "2m 24s");
        assert_eq!(took(Duration::from_secs(3900)), "1h 05m");
    }
}
