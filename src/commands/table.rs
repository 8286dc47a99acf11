//! The tables of `list`, `history`, `cluster`, `skills` and `eval` ([`comfy_table`]): left-aligned
//! columns two spaces apart, fitted to the terminal's width (or to `$COLUMNS`), a cell that does not fit cut with `…`; statuses coloured where colour is on.

use std::io::IsTerminal;

use comfy_table::{Attribute, Cell, Color, ContentArrangement, Row, Table, presets};

/// The text of the table with `header` and `rows`, lines without trailing spaces.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING).set_content_arrangement(ContentArrangement::Dynamic).set_truncation_indicator("…");
    let mut head = Row::from(header.iter().map(|h| Cell::new(h).add_attribute(Attribute::Bold)));
    head.max_height(1);
    t.set_header(head);
    if crate::app::style::stdout_coloured() {
        t.enforce_styling();
    }
    t.force_no_tty();
    if let Some(width) = width() {
        t.set_width(width);
    }
    let coloured: Vec<bool> = header.iter().map(|h| h.ends_with("STATUS") || *h == "ENABLED").collect();
    for row in rows {
        let cells = row.iter().enumerate().map(|(i, text)| {
            let cell = Cell::new(text);
            match crate::app::style::colour_of(text) {
                Some(c) if coloured.get(i).copied().unwrap_or(false) => cell.fg(comfy(c)),
                _ => cell,
            }
        });
        let mut row = Row::from(cells);
        row.max_height(1);
        t.add_row(row);
    }
    for column in t.column_iter_mut() {
        column.set_padding((0, 2));
    }
    t.lines().map(|l| l.trim_end().to_string()).collect::<Vec<_>>().join("\n")
}

/// The width to fit: the terminal's, else `$COLUMNS`, else none. A terminal that reports no
/// usable width (a pseudo-terminal nobody sized) counts as none.
fn width() -> Option<u16> {
    const NARROWEST: u16 = 20;
    let terminal = std::io::stdout()
        .is_terminal()
        .then(|| terminal_size::terminal_size_of(std::io::stdout()))
        .flatten()
        .map(|(terminal_size::Width(w), _)| w);
    let columns = || std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<u16>().ok());
    terminal.filter(|w| *w >= NARROWEST).or_else(columns).filter(|w| *w >= NARROWEST)
}

/// The table's colour for one of [`crate::app::style::colour_of`].
fn comfy(colour: anstyle::AnsiColor) -> Color {
    use anstyle::AnsiColor as A;
    match colour {
        A::Green => Color::Green,
        A::Yellow => Color::Yellow,
        A::Red => Color::Red,
        A::Cyan => Color::Cyan,
        _ => Color::Reset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_two_spaces_apart_and_lines_have_no_trailing_space() {
        let rows = vec![vec!["1".to_string(), "daily".to_string()], vec!["12".to_string(), "x".to_string()]];
        assert_eq!(table(&["RUN", "ROUTINE"], &rows), "RUN  ROUTINE\n1    daily\n12   x");
    }
}
