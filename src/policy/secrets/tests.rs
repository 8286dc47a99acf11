//! Tests of redaction: whole values, fragments, strengths, encodings, the
//! shared set, the store hook and the log writer.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{Arc, Mutex};

use super::*;
use crate::config::Env;
use crate::store::Scrub;

const KEY: &str = "sk-live-4f9a2b7c1d8e6f30";

#[test]
fn replaces_every_known_value_and_nothing_else() {
    let r = Redactor::new(["sk-abc123".to_string(), "sk-abc123-long".to_string(), "ab".to_string()]);
    assert_eq!(r.redact("key=sk-abc123-long other=sk-abc123 ab"), "key=[redacted] other=[redacted] ab");
    assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    assert!(Redactor::new(Vec::<String>::new()).is_empty());
}

#[test]
fn every_run_of_eight_characters_of_a_credential_is_redacted() {
    let r = Redactor::new([KEY.to_string()]);
    // Two fragments, as `grep -o` on /proc/PID/environ would give them.
    let (a, b) = (&KEY[..12], &KEY[12..]);
    assert_eq!(r.redact(&format!("part one: {a}\npart two: {b}")), "part one: [redacted]\npart two: [redacted]");
    // Exactly eight characters from the middle.
    assert_eq!(r.redact(&format!("x{}y", &KEY[5..13])), "x[redacted]y");
    // Seven characters are not a secret.
    assert_eq!(r.redact(&format!("x{}y", &KEY[5..12])), format!("x{}y", &KEY[5..12]));
    // The whole key, twice, and overlapping pieces become one span each.
    assert_eq!(r.redact(&format!("{KEY}{KEY} and {}", &KEY[3..20])), "[redacted] and [redacted]");
}

#[test]
fn short_credentials_are_redacted_whole_and_tiny_ones_ignored() {
    let r = Redactor::new(["hunter2".to_string(), "abc".to_string()]);
    assert_eq!(r.redact("pw hunter2, not hunter, abc stays"), "pw [redacted], not hunter, abc stays");
    // hunter2 as is, reversed, hex in two cases, percent-encoded in two cases,
    // base64 at three alignments (no `+` or `/`, so one alphabet).
    assert_eq!(r.pattern_count(), 9);
}

#[test]
fn identifiers_are_redacted_only_whole() {
    let r = Redactor::default();
    r.learn_with([("routines@example.com".to_string(), Strength::Whole)]);
    assert_eq!(r.redact("login routines@example.com"), "login [redacted]");
    // Pieces of a login are ordinary words.
    assert_eq!(r.redact("the routines ran; mail ops@example.com"), "the routines ran; mail ops@example.com");
}

#[test]
fn urls_with_a_password_give_the_password_as_a_credential() {
    let url = "postgres://app:s3cr3t-pa55word@db.internal:5432/routines";
    let r = Redactor::default();
    r.learn([url.to_string()]);
    assert_eq!(r.redact(url), "[redacted]");
    assert_eq!(r.redact("connect to postgres at db.internal"), "connect to postgres at db.internal");
    assert_eq!(r.redact("password: s3cr3t-pa55word"), "password: [redacted]");
    assert_eq!(r.redact("half: pa55word!"), "half: [redacted]!");
}

#[test]
fn json_escaped_and_percent_encoded_forms_are_found() {
    let secret = "p@ss/w\"rd+with spaces";
    let r = Redactor::new([secret.to_string()]);
    let json = serde_json::to_string(&serde_json::json!({ "pw": secret })).unwrap();
    assert!(!r.redact(&json).contains("w\\\"rd+wi"), "{}", r.redact(&json));
    let encoded = "https://x.example/?pw=p%40ss%2Fw%22rd%2Bwith%20spaces";
    assert_eq!(r.redact(encoded), "https://x.example/?pw=[redacted]");
}

#[test]
fn multibyte_secrets_are_windowed_by_characters() {
    let secret = "密钥是一二三四五六七八九十";
    let r = Redactor::new([secret.to_string()]);
    assert_eq!(r.redact("见：一二三四五六七八。"), "见：[redacted]。");
    assert_eq!(r.redact("见：一二三四五六七。"), "见：一二三四五六七。");
}

#[test]
fn clones_share_what_is_learned_later() {
    let r = Redactor::default();
    let clone = r.clone();
    assert!(clone.is_empty());
    r.learn([KEY.to_string()]);
    assert_eq!(clone.redact(KEY), "[redacted]");
    let before = r.pattern_count();
    r.learn([KEY.to_string(), "  ".to_string()]);
    assert_eq!(r.pattern_count(), before, "nothing new, nothing rebuilt");
    assert_eq!(format!("{r:?}"), "Redactor { secrets: 1 }", "Debug never shows a secret");
}

#[test]
fn json_values_are_redacted_string_by_string() {
    let r = Redactor::new([KEY.to_string()]);
    let mut v = serde_json::json!({ "a": [format!("x{KEY}"), 3], KEY: { "b": "clean" } });
    r.redact_json(&mut v);
    assert_eq!(v, serde_json::json!({ "a": ["x[redacted]", 3], "[redacted]": { "b": "clean" } }));
    assert_eq!(r.scrub("no secret"), None);
    assert_eq!(r.scrub(&format!("k={KEY}")).as_deref(), Some("k=[redacted]"));
}

struct Vars(Vec<(&'static str, &'static str)>);

impl Env for Vars {
    fn var(&self, name: &str) -> Option<String> {
        self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }
}

#[test]
fn learn_vars_reads_only_the_variables_that_are_set() {
    let r = Redactor::default();
    r.learn_vars(["HOOK_SECRET", "UNSET"], &Vars(vec![("HOOK_SECRET", "whsec-0123456789abcdef")]));
    assert_eq!(r.redact("sig whsec-0123456789abcdef"), "sig [redacted]");
    assert_eq!(r.pattern_count(), Redactor::new(["whsec-0123456789abcdef".to_string()]).pattern_count());
}

/// A writer target that keeps what was written.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_log_writer_redacts_an_event_split_across_writes() {
    use tracing_subscriber::fmt::MakeWriter;
    let sink = Sink::default();
    let target = sink.clone();
    let make = Redacting::new(move || target.clone(), Redactor::new([KEY.to_string()]));
    {
        let mut w = make.make_writer();
        // The key arrives in two writes; neither half alone is 8 characters of it at the seam.
        w.write_all(format!("error=\"{}", &KEY[..10]).as_bytes()).unwrap();
        w.write_all(format!("{}\"\n", &KEY[10..]).as_bytes()).unwrap();
        assert!(sink.0.lock().unwrap().is_empty(), "nothing is written before the event is complete");
    }
    assert_eq!(String::from_utf8(sink.0.lock().unwrap().clone()).unwrap(), "error=\"[redacted]\"\n");
}

#[test]
fn a_subscriber_with_the_writer_logs_no_secret() {
    let sink = Sink::default();
    let target = sink.clone();
    let redactor = Redactor::new([KEY.to_string()]);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(Redacting::new(move || target.clone(), redactor))
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tracing::warn!(error = %format!("HTTP 401: bad key {KEY}"), "Model call failed.");
    });
    let logged = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("Model call failed.") && logged.contains("bad key [redacted]"), "{logged}");
    assert!(!logged.contains(&KEY[..8]), "{logged}");
}

mod encoded {
    //! The encoded forms: base64 at each alignment in both alphabets, hex, full
    //! percent-encoding, reversed; their pieces; and what must stay as written.

    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

    use super::*;

    /// A credential whose base64 has `+` and `/` at every alignment.
    const PW: &str = "k3y?>~~wh0le-f1re&fury";

    fn redactor() -> Redactor {
        Redactor::new([PW.to_string()])
    }

    #[track_caller]
    fn hidden(r: &Redactor, text: &str) {
        let out = r.redact(text);
        assert!(out.contains(REDACTED) && !out.contains(text), "{text:?} stayed: {out:?}");
    }

    #[track_caller]
    fn kept(r: &Redactor, text: &str) {
        assert!(matches!(r.redact(text), Cow::Borrowed(_)), "{text:?} became {:?}", r.redact(text));
    }

    #[test]
    fn base64_at_each_alignment_in_both_alphabets_with_and_without_padding() {
        let r = redactor();
        for prefix in ["", "x", "xy", "xyz", "a longer prefix"] {
            let data = format!("{prefix}{PW}");
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                let encoded = engine.encode(&data);
                let out = r.redact(&format!("token: {encoded}.")).into_owned();
                assert!(out.starts_with("token: ") && out.ends_with('.'), "{out}");
                // What may stay are the characters shared with the prefix and the padding.
                let left = out.trim_start_matches("token: ").trim_end_matches('.').replace(REDACTED, " ");
                let longest = left.split(' ').map(str::len).max().unwrap_or(0);
                assert!(longest <= prefix.len() * 4 / 3 + 3, "{prefix:?} {encoded}: {out}");
            }
        }
    }

    #[test]
    fn base64_of_eight_bytes_of_a_credential_is_a_piece_and_of_seven_is_not() {
        let r = Redactor::new([KEY.to_string()]);
        for start in 0..KEY.len() - 8 {
            for prefix in ["", "x", "xy"] {
                let eight = STANDARD.encode(format!("{prefix}{}", &KEY[start..start + 8]));
                hidden(&r, &eight);
                // Of seven bytes, the 9 characters that carry bits of the key alone.
                let seven = STANDARD_NO_PAD.encode(format!("{prefix}{}", &KEY[start..start + 7]));
                let p = prefix.len();
                kept(&r, &seven[(8 * p).div_ceil(6)..8 * (p + 7) / 6]);
            }
        }
    }

    #[test]
    fn hex_in_both_cases_whole_and_in_pieces_of_eight_bytes() {
        let r = redactor();
        let hex = hex::encode(PW);
        for form in [hex.clone(), hex.to_ascii_uppercase(), hex[6..22].to_string(), hex[6..22].to_ascii_uppercase()] {
            hidden(&r, &format!("0x{form}"));
        }
        // Seven bytes (14 digits) are not a piece.
        kept(&r, &hex[6..20]);
    }

    #[test]
    fn every_byte_percent_encoded_in_both_cases() {
        let r = redactor();
        let upper: String = PW.bytes().map(|b| format!("%{b:02X}")).collect();
        hidden(&r, &format!("https://x.example/?pw={upper}"));
        hidden(&r, &format!("https://x.example/?pw={}", upper.to_ascii_lowercase()));
        hidden(&r, &upper[9..33]);
        kept(&r, &upper[9..30]);
    }

    #[test]
    fn reversed_whole_and_in_pieces() {
        let r = redactor();
        let reversed: String = PW.chars().rev().collect();
        hidden(&r, &reversed);
        hidden(&r, &reversed[3..11]);
        kept(&r, &reversed[3..10]);
    }

    #[test]
    fn ordinary_text_and_encodings_of_other_data_are_kept() {
        let r = Redactor::new([KEY.to_string(), PW.to_string(), "hunter22".to_string()]);
        let other = "the quarterly figures for the north region, 2026";
        for text in [
            other.to_string(),
            STANDARD.encode(other),
            URL_SAFE_NO_PAD.encode(format!("x{other}")),
            hex::encode(other),
            hex::encode_upper(other),
            other.bytes().map(|b| format!("%{b:02X}")).collect(),
            "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a sha256 d41d8cd98f00b204e9800998ecf8427e".to_string(),
            "Authentication succeeded; ZGF0YSB0aGF0IGlzIG5vdCBhIHNlY3JldA== decoded fine".to_string(),
        ] {
            kept(&r, &text);
        }
    }

    #[test]
    fn identifiers_are_redacted_only_whole_in_every_form() {
        let r = Redactor::default();
        r.learn_with([("routines@example.com".to_string(), Strength::Whole)]);
        for prefix in ["", "x", "xy"] {
            hidden(&r, &STANDARD.encode(format!("{prefix}routines@example.com")));
            kept(&r, &STANDARD.encode(format!("{prefix}routines@example")));
        }
        hidden(&r, &hex::encode("routines@example.com"));
        kept(&r, &hex::encode("routines@example"));
        hidden(&r, "moc.elpmaxe@senituor");
        kept(&r, "moc.elpmaxe@seni");
    }

    #[test]
    fn the_smtp_login_and_password_as_auth_plain_and_auth_login_send_them() {
        let yaml = "provider: { base_url: 'http://127.0.0.1:9', model: m, api_key_env: UNIT_KEY }\n\
                    mail: { from: a@example.com, smtp: { host: 127.0.0.1, port: 25, security: none, \
                    username_env: UNIT_SMTP_USER, password_env: UNIT_SMTP_PASSWORD } }\n";
        let env = Vars(vec![("UNIT_SMTP_USER", "mailer-unit@example.test"), ("UNIT_SMTP_PASSWORD", "pw-4a2f")]);
        let config = crate::config::from_str(std::path::Path::new("/tmp/routines.yaml"), yaml, &env).unwrap();
        let r = Redactor::for_config(&config, &env);
        let plain = STANDARD.encode("\0mailer-unit@example.test\0pw-4a2f");
        assert_eq!(r.redact(&format!("535 AUTH PLAIN {plain}")), "535 AUTH PLAIN [redacted]");
        let login = format!("{} {}", STANDARD.encode("mailer-unit@example.test"), STANDARD.encode("pw-4a2f"));
        // The last character carries 2 bits of the password and 4 of padding.
        assert_eq!(r.redact(&format!("535 bad {login}")), "535 bad [redacted] [redacted]g==");
    }
}

#[test]
fn data_acted_on_later_loses_whole_secrets_in_every_form_and_keeps_shared_runs() {
    use base64::Engine as _;
    let r = Redactor::new([KEY.to_string()]);
    // A folder named like the start of the key: a record redacts it, the data keeps it.
    let path = "/srv/sk-live-4f9a-reports/in.csv";
    assert_eq!(r.redact(path), "/srv/[redacted]-reports/in.csv");
    assert!(matches!(r.redact_whole(path), Cow::Borrowed(_)));
    // The whole key, plain or encoded, is taken out of either.
    let b64 = base64::engine::general_purpose::STANDARD.encode(KEY);
    for text in [format!("k={KEY}"), format!("k={}", hex::encode(KEY)), format!("k={b64}")] {
        assert_eq!(r.redact_whole(&text), "k=[redacted]", "{text}");
    }
    let mut value = serde_json::json!({ "path": path, "body": format!("token {KEY}") });
    r.scrub_whole_json(&mut value);
    assert_eq!(value, serde_json::json!({ "path": path, "body": "token [redacted]" }));
}

#[test]
fn a_whole_credential_is_found_in_any_form_and_an_identifier_or_a_shared_run_is_not() {
    use base64::Engine as _;
    let r = Redactor::new([KEY.to_string()]);
    r.learn_with([("ops@example.com".to_string(), Strength::Whole)]);
    assert!(r.holds_credential(&format!("out/{KEY}.md")));
    assert!(r.holds_credential(&format!("out/{}.md", hex::encode(KEY))));
    assert!(r.holds_credential(&format!("out/{}.md", base64::engine::general_purpose::URL_SAFE.encode(KEY))));
    // A folder named like the start of the key, and the SMTP login as an address, are not.
    assert!(!r.holds_credential("sk-live-4f9a-reports/out.md"));
    assert!(!r.holds_credential("ops@example.com"));
    // A secret learned later (a webhook route's) counts from then on.
    r.learn(["whsec-9d8c7b6a5f4e3d2c".to_string()]);
    assert!(r.holds_credential("out/whsec-9d8c7b6a5f4e3d2c.md"));
}
