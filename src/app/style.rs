//! Colour, on a terminal only. The commands write styled text through
//! [`anstream`], whose streams strip the styles when colour is off: when the
//! stream is not a terminal, when `NO_COLOR` is set, or with `--color never`
//! (`--color always` keeps them everywhere). [`crate::app::out`] writes through
//! such a stream; `anstream::eprintln!` is its stderr.

use anstream::ColorChoice;
use anstyle::{AnsiColor, Style};

/// Sets the choice of `--color` for every stream of the process.
pub fn choose(choice: ColorChoice) {
    choice.write_global();
}

/// Whether what is written to stdout keeps its colour.
pub fn stdout_coloured() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != ColorChoice::Never
}

/// The colour of a status: green for success, yellow for a run that did nothing, red for one
/// that failed, cyan for one under way; none for other words.
pub fn colour_of(status: &str) -> Option<AnsiColor> {
    Some(match status {
        "succeeded" | "delivered" | "yes" => AnsiColor::Green,
        "silent" | "skipped" | "paused" | "pending" | "uncertain" => AnsiColor::Yellow,
        "failed" | "timed_out" | "interrupted" => AnsiColor::Red,
        "running" | "queued" | "sending" => AnsiColor::Cyan,
        _ => return None,
    })
}

/// The style of a status (see [`colour_of`]).
pub fn of_status(status: &str) -> Style {
    Style::new().fg_color(colour_of(status).map(Into::into))
}

/// `text` in the style of the status `status` (see [`of_status`]).
pub fn status(status: &str, text: &str) -> String {
    paint(of_status(status), text)
}

/// `text` in `style`; plain when the style is plain.
pub fn paint(style: Style, text: &str) -> String {
    if style == Style::new() { text.to_string() } else { format!("{style}{text}{style:#}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_get_their_colour_and_others_none() {
        assert_eq!(status("succeeded", "ok"), "\u{1b}[32mok\u{1b}[0m");
        assert_eq!(status("failed", "no"), "\u{1b}[31mno\u{1b}[0m");
        assert_eq!(status("whatever", "x"), "x");
    }
}
