//! Lexing: the line is walked with `shell-words`' quoting rules, and the
//! first construct a shell would have given meaning to is refused.
//!
//! - Quoting is respected exactly as `shell-words` splits: text inside single
//!   quotes is data, and so is a backslash-escaped character (`find -exec rm
//!   {} \;`). Double quotes make operators data but not `$` or backticks,
//!   which a shell would still expand there.
//! - Operators (`;` `&&` `||` `|` `&`, a line break between two commands),
//!   substitutions (`$(...)`, backticks, `<(...)`, `>(...)`), redirections
//!   (`>` `>>` `<` `2>` `&>` `2>&1` `<<` `<<<` ...) and subshell parentheses
//!   are refused even though exec would pass them on literally: the model
//!   meant shell semantics and would silently get wrong results.
//! - `$` is refused when a shell would expand it: `$NAME`, `${...}`, `$1`,
//!   `$?` (and the other special parameters), `$((...))`, `$[...]`, `$'...'`
//!   and `$"..."`. Nothing is expanded here, so `ls $HOME` would look for a
//!   file literally named `$HOME`; the reason tells the model to write the
//!   value itself. A `$` that a shell leaves alone (`grep 'a$'`, `grep a$
//!   file`, `echo $`) passes. `~` and globs (`*`, `?`, `[...]`) are not
//!   expanded either and are passed on literally, not refused.
//! - A comment (`#` at the start of a word) is dropped, as `shell-words` does;
//!   a trailing line break is harmless, one followed by more text is refused.

use super::{CommandRefusal, CommandRefusal as R};

/// Walks the line with `shell-words`' quoting rules and refuses the first
/// construct a shell would have treated as more than words.
pub(super) fn scan(line: &str) -> Result<(), CommandRefusal> {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Delim,
        Word,
        Single,
        Double,
        Comment,
    }
    let b = line.as_bytes();
    let mut s = S::Delim;
    let mut word_start = 0;
    // The current word so far is unquoted digits only (a file descriptor before `>`).
    let mut digits = false;
    let mut seen_word = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match s {
            S::Single => {
                if c == b'\'' {
                    s = S::Word;
                }
            }
            S::Double => match c {
                b'"' => s = S::Word,
                b'\\' => i += 1,
                b'`' => return Err(R::Substitution("`...`")),
                b'$' => dollar(line, i, true)?,
                _ => {}
            },
            S::Comment => {
                if c == b'\n' {
                    line_break(b, i, seen_word)?;
                    s = S::Delim;
                }
            }
            S::Delim | S::Word => {
                match c {
                    b' ' | b'\t' => {
                        s = S::Delim;
                        i += 1;
                        continue;
                    }
                    b'\n' => {
                        line_break(b, i, seen_word)?;
                        s = S::Delim;
                        i += 1;
                        continue;
                    }
                    b'#' if s == S::Delim => {
                        s = S::Comment;
                        i += 1;
                        continue;
                    }
                    b';' => return Err(R::Operator(";")),
                    b'&' => {
                        return Err(match b.get(i + 1) {
                            Some(b'&') => R::Operator("&&"),
                            Some(b'>') => redirection(line, i, i + 1),
                            _ => R::Operator("&"),
                        });
                    }
                    b'|' => return Err(R::Operator(if b.get(i + 1) == Some(&b'|') { "||" } else { "|" })),
                    b'<' | b'>' => {
                        let start = if s == S::Word && digits { word_start } else { i };
                        return Err(redirection(line, start, i));
                    }
                    b'(' => return Err(R::Subshell("(")),
                    b')' => return Err(R::Subshell(")")),
                    b'`' => return Err(R::Substitution("`...`")),
                    b'$' => dollar(line, i, false)?,
                    _ => {}
                }
                if s == S::Delim {
                    s = S::Word;
                    word_start = i;
                    digits = true;
                    seen_word = true;
                }
                digits &= c.is_ascii_digit();
                match c {
                    b'\'' => s = S::Single,
                    b'"' => s = S::Double,
                    b'\\' => i += 1,
                    _ => {}
                }
            }
        }
        i += 1;
    }
    if matches!(s, S::Single | S::Double) {
        return Err(R::Syntax("missing closing quote".to_string()));
    }
    Ok(())
}

/// A line break between two commands chains them; a leading or trailing one is harmless.
fn line_break(b: &[u8], i: usize, seen_word: bool) -> Result<(), CommandRefusal> {
    if seen_word && b[i + 1..].iter().any(|c| !c.is_ascii_whitespace()) { Err(R::Operator("\n")) } else { Ok(()) }
}

/// The redirection starting at `start` (file descriptor digits or `&`), whose `<`/`>` is at `at`.
fn redirection(line: &str, start: usize, at: usize) -> CommandRefusal {
    let b = line.as_bytes();
    let mut j = at + 1;
    match (b[at], b.get(j).copied()) {
        (b'<', Some(b'(')) => return R::Substitution("<(...)"),
        (b'>', Some(b'(')) => return R::Substitution(">(...)"),
        (b'<', Some(b'<')) => {
            j += 1;
            if matches!(b.get(j), Some(b'<' | b'-')) {
                j += 1;
            }
        }
        (_, Some(b'>' | b'|')) => j += 1,
        (_, Some(b'&')) => {
            j += 1;
            while b.get(j).is_some_and(|c| c.is_ascii_digit() || *c == b'-') {
                j += 1;
            }
        }
        _ => {}
    }
    R::Redirection(line[start..j].to_string())
}

/// A `$` at `i`: refused where a shell would expand it.
fn dollar(line: &str, i: usize, in_double: bool) -> Result<(), CommandRefusal> {
    let b = line.as_bytes();
    let Some(&next) = b.get(i + 1) else { return Ok(()) };
    match next {
        b'(' if b.get(i + 2) == Some(&b'(') => Err(R::Expansion("$((...))".to_string())),
        b'(' => Err(R::Substitution("$(...)")),
        b'{' => {
            let text = match line[i..].find('}') {
                Some(end) if end <= 40 => &line[i..=i + end],
                _ => "${...}",
            };
            Err(R::Expansion(text.to_string()))
        }
        b'[' => Err(R::Expansion("$[...]".to_string())),
        c if c.is_ascii_alphabetic() || c == b'_' => {
            let len = b[i + 1..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
            Err(R::Expansion(line[i..i + 1 + len].to_string()))
        }
        c if c.is_ascii_digit() || b"?#@*!$-".contains(&c) => Err(R::Expansion(line[i..i + 2].to_string())),
        b'\'' if !in_double => Err(R::Expansion("$'...'".to_string())),
        b'"' if !in_double => Err(R::Expansion("$\"...\"".to_string())),
        _ => Ok(()),
    }
}
