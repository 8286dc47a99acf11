//! `routines chat`: an interactive session on the streaming agent path.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use routines::agent::attach::MAX_IMAGES;
use routines::agent::{Agent, AgentEvent, ConfirmFn, ConfirmRequest, Confirmation, StoreRecorder, TurnStats};
use routines::config::Config;
use routines::store::{NewRun, RunKind, RunOutcome, RunStatus};
use tokio::io::AsyncBufReadExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Mutex, mpsc};

use crate::app::{Error, Parts};

type Lines = Arc<Mutex<mpsc::Receiver<String>>>;

pub async fn run(config: Config) -> Result<(), Error> {
    // Take over SIGINT before anything else, so Ctrl-C never kills the session.
    let mut sigint = signal(SignalKind::interrupt()).map_err(Error::Signals)?;
    let parts = Parts::build(config)?;
    let mut agent = parts.agent()?;
    let run_id = parts.store.create_run(&NewRun {
        kind: RunKind::Chat,
        routine: None,
        trigger: "chat".into(),
        scheduled_for: None,
        status: RunStatus::Queued,
    })?;
    parts.store.start_run(run_id)?;
    agent.set_event_sink(Some(Arc::new(StoreRecorder { store: parts.store.clone(), run_id })));

    let lines = read_lines();
    agent.set_confirm_fn(Some(confirm_fn(lines.clone())));
    let interactive = std::io::stdin().is_terminal();
    let vision = parts.config.provider.vision;
    eprintln!(
        "routines chat: model {} at {}. Ctrl-C cancels an answer;{} /exit or Ctrl-D leaves.",
        parts.model,
        parts.config.provider.base_url.as_deref().unwrap_or("?"),
        if vision { " /image PATH attaches an image;" } else { "" }
    );

    let mut totals = TurnStats::default();
    let mut failures = 0u32;
    loop {
        if interactive {
            out!("> ")?;
            let _ = std::io::stdout().flush();
        }
        let line = tokio::select! {
            line = async { lines.lock().await.recv().await } => line,
            _ = sigint.recv() => {
                eprintln!("\n(nothing to cancel; type /exit or press Ctrl-D to leave)");
                continue;
            }
        };
        let Some(line) = line else { break };
        let message = line.trim();
        match message {
            "" => continue,
            "/exit" | "/quit" => break,
            "/clear" => {
                agent.set_history(Vec::new());
                eprintln!("(history cleared)");
                continue;
            }
            m if m == "/image" || m.starts_with("/image ") => {
                attach(&mut agent, m["/image".len()..].trim(), vision);
                continue;
            }
            _ => {}
        }

        let (tx, rx) = mpsc::unbounded_channel();
        let printer = tokio::spawn(print_events(rx));
        let outcome = tokio::select! {
            r = agent.process_message_stream(message, tx) => Some(r),
            _ = sigint.recv() => None,
        };
        let ended_with_newline = printer.await.unwrap_or(true);
        if !ended_with_newline {
            outln!()?;
        }
        match outcome {
            None => eprintln!("(cancelled)"),
            Some(Ok(_)) => {
                let t = agent.last_turn();
                totals.iterations += t.iterations;
                totals.prompt_tokens += t.prompt_tokens;
                totals.completion_tokens += t.completion_tokens;
            }
            Some(Err(e)) => {
                failures += 1;
                eprintln!("error: {e}");
            }
        }
    }

    let status = if failures == 0 { RunStatus::Succeeded } else { RunStatus::Failed };
    parts.store.finish_run(
        run_id,
        &RunOutcome {
            prompt_tokens: totals.prompt_tokens,
            completion_tokens: totals.completion_tokens,
            iterations: totals.iterations,
            ..RunOutcome::new(status, (failures > 0).then(|| format!("{failures} turn(s) failed")))
        },
    )?;
    Ok(())
}

/// `/image PATH`: the images of PATH (a path or glob in the workspace) go with the next message.
fn attach(agent: &mut Agent, path: &str, vision: bool) {
    if !vision {
        eprintln!("error: the model is not set up for images; set `vision: true` under `provider:` in routines.yaml");
        return;
    }
    if path.is_empty() {
        eprintln!("usage: /image PATH (a PNG, JPEG, WebP or GIF file in the workspace)");
        return;
    }
    match agent.find_images(&[path.to_string()]) {
        Ok(found) if found.is_empty() => eprintln!("error: `{path}` matches no file"),
        Ok(found) if found.len() + agent.attached_images().len() > MAX_IMAGES => {
            eprintln!("error: at most {MAX_IMAGES} images go with one message");
        }
        Ok(found) => {
            for image in &found {
                eprintln!("(attached {}, {} bytes, to your next message)", image.path, image.bytes);
            }
            agent.attach_images(found);
        }
        Err(e) => eprintln!("error: {e}"),
    }
}

/// Lines of stdin, read by one task and shared between the prompt and the
/// confirmation questions.
fn read_lines() -> Lines {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if tx.send(line).await.is_err() {
                break;
            }
        }
    });
    Arc::new(Mutex::new(rx))
}

fn confirm_fn(lines: Lines) -> ConfirmFn {
    Arc::new(move |req: ConfirmRequest| {
        let lines = lines.clone();
        Box::pin(async move {
            let what = if req.summary.is_empty() { req.tool.clone() } else { format!("{} {}", req.tool, req.summary) };
            eprint!("  ? Allow {what}? [y/N/a] ");
            let _ = std::io::stderr().flush();
            let answer = lines.lock().await.recv().await.unwrap_or_default();
            parse_answer(&answer)
        })
    })
}

fn parse_answer(answer: &str) -> Confirmation {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Confirmation::Yes,
        "a" | "always" => Confirmation::Always,
        _ => Confirmation::No,
    }
}

/// Prints a turn's events; returns whether stdout ended with a newline.
async fn print_events(mut rx: mpsc::UnboundedReceiver<AgentEvent>) -> bool {
    let mut at_line_start = true;
    let mut out = std::io::stdout();
    while let Some(event) = rx.recv().await {
        match event {
            AgentEvent::TextDelta(t) => {
                let _ = write!(out, "{t}");
                let _ = out.flush();
                at_line_start = t.ends_with('\n');
            }
            other => {
                if !at_line_start {
                    let _ = writeln!(out);
                    at_line_start = true;
                }
                eprintln!("{}", status_line(&other));
            }
        }
    }
    at_line_start
}

fn status_line(event: &AgentEvent) -> String {
    match event {
        AgentEvent::Running { tool, summary } if summary.is_empty() => format!("  · Running {tool}"),
        AgentEvent::Running { tool, summary } => format!("  · Running {tool}: {summary}"),
        AgentEvent::Success { tool, first_line } => format!("  ✓ Success {tool}: {first_line}"),
        AgentEvent::Failed { tool, lines } => {
            let mut s = format!("  ✗ Failed {tool}:");
            for l in lines.lines() {
                s.push_str("\n      ");
                s.push_str(l);
            }
            s
        }
        AgentEvent::Notice(n) => format!("  ! {n}"),
        AgentEvent::TextDelta(t) => t.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_confirmations() {
        assert_eq!(parse_answer("y"), Confirmation::Yes);
        assert_eq!(parse_answer(" A "), Confirmation::Always);
        assert_eq!(parse_answer(""), Confirmation::No);
        assert_eq!(parse_answer("nope"), Confirmation::No);
    }

    #[test]
    fn status_lines_name_the_outcome() {
        let failed = AgentEvent::Failed { tool: "file_read".into(), lines: "[failed] a\nb\nc".into() };
        assert_eq!(status_line(&failed), "  ✗ Failed file_read:\n      [failed] a\n      b\n      c");
        let ok = AgentEvent::Success { tool: "self_info".into(), first_line: "agent: routines".into() };
        assert_eq!(status_line(&ok), "  ✓ Success self_info: agent: routines");
    }
}
