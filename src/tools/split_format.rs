//! A format string split into words. Small models write `git log -1 --pretty=format:%an %s`
//! without quotes; commands run without a shell, but the line is split into words as a shell
//! splits it, so `%s` becomes an argument of its own and git fails ("ambiguous argument
//! '%s'"), as `date +%Y-%m-%d %H:%M` fails with "extra operand". Told only that the call
//! failed, the 1.5B model ran the same command three times of three (bench/README.md, stop 38).
//! A value of several words is split the same way: `git log --author=Ana Lima` made `Lima` a
//! revision, and the model answered "0 commits" (stop 40). For git, a `--name=value` option
//! followed by plain words (letters only) is taken as that value split.
//!
//! The failed call's result says which word was split off and gives the command with the
//! format as one quoted argument; the engine sends that command back as the call to make
//! (`agent/grounding.rs`, which computes it again from the call's own command, never reading
//! it back from a result), and the policy decides it like any other. Nothing is rewritten
//! before it runs: the command the model wrote is the one that ran.

/// What the failure's note says before the command with the format joined, or the value.
const AS_ONE: &str = "with the format as one argument: ";
const VALUE_AS_ONE: &str = "with the value as one argument: ";

/// The note for a failed `argv` whose format was split into words: which words, and the
/// command with them joined into the format, quoted ([`joined`]). `None` when no format was
/// split, or the joined command cannot be written with single quotes.
pub fn hint(argv: &[String]) -> Option<String> {
    let (at, end) = split(argv)?;
    let split_off = argv[at + 1..end].iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
    let one = if format_at(argv).is_some() { AS_ONE } else { VALUE_AS_ONE };
    Some(format!("{split_off} became an argument of its own; {one}`{}`", joined(argv)?))
}

/// The command `argv` with the words of its split format joined into one quoted argument, as
/// one line; `None` when no format was split or it cannot be quoted.
pub fn joined(argv: &[String]) -> Option<String> {
    let (at, end) = split(argv)?;
    let format = argv[at..end].join(" ");
    let mut words: Vec<String> = argv[..at].iter().map(|a| quoted(a)).collect::<Option<_>>()?;
    words.push(quote(&format)?);
    for a in &argv[end..] {
        words.push(quoted(a)?);
    }
    Some(words.join(" "))
}

#[cfg(test)]
/// The command a note of [`hint`] wrote out, read back from a result (for the tests).
fn format_fix(result: &str) -> Option<&str> {
    let (_, rest) = result.split_once(AS_ONE).or_else(|| result.split_once(VALUE_AS_ONE))?;
    let (one, _) = rest.strip_prefix('`')?.split_once('`')?;
    (!one.trim().is_empty()).then_some(one)
}

/// The words `at..end` of `argv` that were one argument: a format ([`format_at`]) or, for git,
/// a value ([`value_at`]).
fn split(argv: &[String]) -> Option<(usize, usize)> {
    format_at(argv).or_else(|| value_at(argv))
}

/// For `git`, the words of an option's value split: a word `--name=value` (the value begins
/// with a letter), then the plain words after it (letters only), up to the first other word.
fn value_at(argv: &[String]) -> Option<(usize, usize)> {
    if argv.first().map(String::as_str) != Some("git") {
        return None;
    }
    let plain = |w: &str| !w.is_empty() && w.chars().all(char::is_alphabetic);
    let at = argv.iter().position(|w| {
        w.strip_prefix("--")
            .and_then(|o| o.split_once('='))
            .is_some_and(|(name, value)| !name.is_empty() && value.starts_with(char::is_alphabetic))
    })?;
    let end = at + 1 + argv[at + 1..].iter().take_while(|w| plain(w)).count();
    (end > at + 1).then_some((at, end))
}

/// The words `at..end` of `argv` that were one format: a word holding a `%` directive (`%an`,
/// `%Y`), then words that each hold one or are punctuation alone (`-`, `|`, `:`), up to the
/// last that holds one. At least two words.
fn format_at(argv: &[String]) -> Option<(usize, usize)> {
    let directive =
        |w: &str| w.char_indices().any(|(i, c)| c == '%' && w[i + 1..].starts_with(|n: char| n.is_ascii_alphabetic()));
    let punctuation = |w: &str| !w.is_empty() && !w.chars().any(char::is_alphanumeric);
    let at = argv.iter().skip(1).position(|w| directive(w) && !w.contains(' '))? + 1;
    let mut end = at + 1;
    let mut i = at + 1;
    while let Some(w) = argv.get(i) {
        if directive(w) && w.starts_with('%') {
            end = i + 1;
        } else if !punctuation(w) {
            break;
        }
        i += 1;
    }
    (end > at + 1).then_some((at, end))
}

/// `word` as a shell word: as it is when it needs no quotes, else in single quotes.
fn quoted(word: &str) -> Option<String> {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
    if plain { Some(word.to_string()) } else { quote(word) }
}

/// `word` in single quotes; `None` when it holds one.
fn quote(word: &str) -> Option<String> {
    (!word.contains('\'')).then(|| format!("'{word}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn a_format_split_into_words_is_named_and_joined() {
        let note = hint(&argv("git log -1 --pretty=format:%an %s")).unwrap();
        assert_eq!(
            note,
            "`%s` became an argument of its own; with the format as one argument: `git log -1 '--pretty=format:%an %s'`"
        );
        assert_eq!(format_fix(&format!("[failed] exit code 128; {note}")), Some("git log -1 '--pretty=format:%an %s'"));
        assert_eq!(
            format_fix(&hint(&argv("git log --format=%h - %an, %ar : %s -n 3")).unwrap()),
            Some("git log '--format=%h - %an, %ar : %s' -n 3")
        );
        assert_eq!(format_fix(&hint(&argv("date +%Y-%m-%d %H:%M")).unwrap()), Some("date '+%Y-%m-%d %H:%M'"));
        assert_eq!(joined(&argv("date +%Y-%m-%d %H:%M")).as_deref(), Some("date '+%Y-%m-%d %H:%M'"));
    }

    #[test]
    fn a_git_option_value_split_into_words_is_named_and_joined() {
        let note = hint(&argv("git log -3 --stat --author=Ana Lima")).unwrap();
        assert_eq!(
            note,
            "`Lima` became an argument of its own; with the value as one argument: `git log -3 --stat '--author=Ana Lima'`"
        );
        assert_eq!(format_fix(&note), Some("git log -3 --stat '--author=Ana Lima'"));
        assert_eq!(
            joined(&argv("git log --grep=fix login bug --oneline")).as_deref(),
            Some("git log '--grep=fix login bug' --oneline")
        );
        for line in ["git log --author=Ana src/main.rs", "git log --author=Ana -- docs", "grep --regexp=a b f.txt"] {
            assert_eq!(hint(&argv(line)), None, "{line}");
        }
    }

    #[test]
    fn words_that_are_not_a_split_format_give_no_note() {
        for line in [
            "git log -1 --pretty=format:%an",
            "git log --format=%h -- src",
            "grep -n 100% report.txt",
            "git log -1 --pretty=format:%an notes.txt",
            "printf %s it's",
        ] {
            assert_eq!(hint(&argv(line)), None, "{line}");
        }
        // A word it cannot quote.
        assert_eq!(hint(&argv("git log --format=%an %s it's")), None);
    }
}
