//! A server's reply as it may be recorded: never what the client sent to log in.
//!
//! A hostile or careless SMTP server can repeat the client's `AUTH` command in its refusal
//! (`535 5.7.8 Authentication failed for AUTH PLAIN AG1lQGV4…`), or the base64 login and
//! password that `AUTH LOGIN` sends on lines of their own. lettre joins the lines of a reply
//! with spaces before they reach us, so the text is cut from the first `AUTH <mechanism>` to
//! its end, and every base64 run in what is left that decodes to the login, the password or
//! anything with a NUL byte (the form of `AUTH PLAIN`'s argument) is replaced. The process's
//! redactor looks for these encodings too; this holds without it, and for a password too
//! short for the redactor's pieces.

use base64::Engine;
use base64::alphabet::{self, Alphabet};
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The mechanisms lettre can send (`AUTH PLAIN`, `AUTH LOGIN`, `AUTH XOAUTH2`).
const MECHANISMS: [&str; 3] = ["PLAIN", "LOGIN", "XOAUTH2"];

/// What replaces the echo of an `AUTH` command, to the end of the reply.
const CUT: &str = "[echo of the AUTH command removed]";

/// What replaces a base64 run that decodes to a credential.
const REMOVED: &str = "[removed]";

/// Runs shorter than this are not decoded: 6 bytes at most, too short to hold a login.
const MIN_RUN: usize = 8;

/// `text` without the echo of an `AUTH` command and without base64 runs that decode to one
/// of `credentials` (the login and the password) or to text with a NUL byte.
pub(super) fn without_auth_echo(text: &str, credentials: &[&str]) -> String {
    let kept = match auth_command_at(text) {
        Some(at) => format!("{}{CUT}", text.get(..at).unwrap_or_default()),
        None => text.to_string(),
    };
    let mut out = String::with_capacity(kept.len());
    let mut rest = kept.as_str();
    while let Some(start) = rest.find(is_base64) {
        let len = rest.get(start..).and_then(|r| r.find(|c| !is_base64(c))).unwrap_or(rest.len() - start);
        let (before, run, after) = (&rest[..start], &rest[start..start + len], &rest[start + len..]);
        out.push_str(before);
        out.push_str(if run.len() >= MIN_RUN && decodes_to_login(run, credentials) { REMOVED } else { run });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Where the first `AUTH` word followed by a mechanism lettre sends starts, in any case.
fn auth_command_at(text: &str) -> Option<usize> {
    let mut words: Vec<(usize, &str)> = Vec::new();
    let mut cursor = 0;
    for word in text.split_whitespace() {
        let at = cursor + text.get(cursor..).and_then(|r| r.find(word)).unwrap_or(0);
        cursor = at + word.len();
        words.push((at, word.trim_matches(|c: char| !c.is_ascii_alphanumeric())));
    }
    words
        .windows(2)
        .find(|pair| match pair {
            [(_, auth), (_, mechanism)] => {
                auth.eq_ignore_ascii_case("AUTH") && MECHANISMS.iter().any(|m| mechanism.eq_ignore_ascii_case(m))
            }
            _ => false,
        })
        .map(|pair| pair.first().map_or(0, |(at, _)| *at))
}

fn is_base64(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '-' | '_')
}

/// Whether `run` is base64 (either alphabet, padding or not) of bytes holding a NUL or one of
/// `credentials`.
fn decodes_to_login(run: &str, credentials: &[&str]) -> bool {
    let trimmed = run.trim_end_matches('=');
    // A length of 4n+1 is never base64: the last character may be a neighbour's.
    let trimmed = if trimmed.len() % 4 == 1 { &trimmed[..trimmed.len() - 1] } else { trimmed };
    [&alphabet::STANDARD, &alphabet::URL_SAFE].into_iter().any(|abc| match lenient(abc).decode(trimmed) {
        Ok(bytes) => {
            bytes.contains(&0)
                || credentials
                    .iter()
                    .filter(|c| c.len() >= 4)
                    .any(|c| bytes.windows(c.len()).any(|w| w == c.as_bytes()))
        }
        Err(_) => false,
    })
}

fn lenient(abc: &Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        abc,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    const LOGIN: &str = "mailer@example.com";
    const PASSWORD: &str = "pw-4a2f";

    fn shown(text: &str) -> String {
        without_auth_echo(text, &[LOGIN, PASSWORD])
    }

    #[test]
    fn the_echo_of_an_auth_command_is_cut_to_the_end() {
        let blob = STANDARD.encode(format!("\0{LOGIN}\0{PASSWORD}"));
        let reply = format!("5.7.8 Authentication failed for: 5.7.8 AUTH PLAIN {blob} 5.7.8 Try again.");
        assert_eq!(shown(&reply), format!("5.7.8 Authentication failed for: 5.7.8 {CUT}"));
        assert_eq!(shown(&format!("bad: 'auth plain {blob}'")), format!("bad: {CUT}"));
        assert_eq!(shown("error (auth login)"), format!("error {CUT}"));
    }

    #[test]
    fn base64_of_a_login_a_password_or_a_nul_is_removed() {
        let (user, password) = (STANDARD.encode(LOGIN), STANDARD.encode(PASSWORD));
        assert_eq!(shown(&format!("bad credentials {password} for {user}")), "bad credentials [removed] for [removed]");
        let blob = STANDARD.encode("\0other\0secret-pass");
        assert_eq!(shown(&format!("535 {}", blob.trim_end_matches('='))), "535 [removed]");
    }

    #[test]
    fn a_reply_without_an_echo_is_kept_word_for_word() {
        for reply in [
            "5.7.8 Authentication credentials invalid",
            "530 5.7.0 Must issue a STARTTLS command first; AUTH required",
            "see https://support.example.com/mail/?p=BadCredentials Zm9vYmFyYmF6cXV4 d41d8cd98f00b204e9800998ecf8427e",
        ] {
            assert_eq!(shown(reply), reply);
        }
    }
}
