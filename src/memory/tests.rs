//! Tests of storing, recalling and forgetting memories.

use super::*;
use crate::store::testing::{each_backend, execute};

fn keys(entries: &[MemoryEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.key.as_str()).collect()
}

fn seed(m: &Memory) {
    let items = [
        ("user.timezone", "The user lives in Berlin; their timezone is Europe/Berlin.", CORE),
        ("user.coffee", "Takes coffee black, no sugar. Favourite café: Bonanza in Berlin.", CORE),
        ("2025-03-01.standup", "Standup moved to 10:30 because of the dentist appointment.", DAILY),
        ("chat.holiday", "User asked about train tickets to Lisbon for the holiday in May.", CONVERSATION),
        ("project.deadline", "The report for the Lisbon client is due on Friday.", CORE),
    ];
    assert_eq!(m.store_many(&items).unwrap(), 5);
}

#[test]
fn store_and_get_round_trip() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        let saved = m.store("  user.name ", "Call me Sam.", " core ").unwrap();
        assert_eq!(saved.created_at, saved.updated_at);
        assert_eq!(
            saved,
            MemoryEntry {
                id: saved.id,
                key: "user.name".to_string(),
                content: "Call me Sam.".to_string(),
                category: CORE.to_string(),
                created_at: saved.created_at,
                updated_at: saved.updated_at,
                score: None,
            }
        );
        assert_eq!(m.get("user.name").unwrap(), Some(saved));
        assert_eq!(m.get("user.nickname").unwrap(), None);
        assert_eq!(m.count().unwrap(), 1);
    });
}

#[test]
fn upsert_keeps_created_at_and_reindexes() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        let first = m.store("user.city", "Lives in Berlin.", CORE).unwrap();
        let second = m.store("user.city", "Moved to Lisbon.", DAILY).unwrap();
        assert_eq!(
            (second.id, second.created_at, second.content.as_str(), second.category.as_str()),
            (first.id, first.created_at, "Moved to Lisbon.", DAILY)
        );
        assert!(second.updated_at >= first.updated_at);
        assert_eq!(m.count().unwrap(), 1);
        // The index follows the update: old words are gone, new ones found.
        assert_eq!(m.recall("berlin", 10).unwrap(), Vec::new());
        assert_eq!(keys(&m.recall("lisbon", 10).unwrap()), ["user.city"]);
    });
}

#[test]
fn invalid_input_is_rejected_with_guidance() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        for (key, content, category, needle) in [
            ("  ", "x", CORE, "memory key is empty"),
            ("k", " \n", CORE, "memory content for key \"k\" is empty"),
            ("k", "x", "", "memory category for key \"k\" is empty"),
        ] {
            match m.store(key, content, category) {
                Err(MemoryError::Invalid(msg)) => assert!(msg.starts_with(needle), "{msg}"),
                other => panic!("expected Invalid, got {other:?}"),
            }
        }
        // One bad item in a batch writes nothing.
        let batch = [("a", "fine", CORE), ("", "bad", CORE)];
        assert!(matches!(m.store_many(&batch), Err(MemoryError::Invalid(_))));
        assert_eq!(m.count().unwrap(), 0);
    });
}

#[test]
fn forget_deletes_from_table_and_index() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        seed(&m);
        assert!(m.forget("user.coffee").unwrap());
        assert!(!m.forget("user.coffee").unwrap());
        assert_eq!(m.get("user.coffee").unwrap(), None);
        assert_eq!(m.recall("coffee sugar", 10).unwrap(), Vec::new());
        assert_eq!(m.count().unwrap(), 4);
    });
}

#[test]
fn list_is_newest_first_and_filters_by_category() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        seed(&m);
        // Same timestamp for the whole batch: ties fall back to newest id.
        assert_eq!(keys(&m.list(None, 3).unwrap()), ["project.deadline", "chat.holiday", "2025-03-01.standup"]);
        // Backdate the batch so the next write is strictly newer without
        // depending on the clock advancing.
        execute(&m.store, "UPDATE memories SET updated_at = '2020-01-01T00:00:00.000Z'").unwrap();
        m.store("user.timezone", "Now in Lisbon, Europe/Lisbon.", CORE).unwrap();
        assert_eq!(keys(&m.list(Some(CORE), 10).unwrap()), ["user.timezone", "project.deadline", "user.coffee"]);
        assert_eq!(keys(&m.list(Some(DAILY), 10).unwrap()), ["2025-03-01.standup"]);
        assert_eq!(m.list(Some("nope"), 10).unwrap(), Vec::new());
        assert_eq!(m.list(None, 0).unwrap(), Vec::new());
    });
}

#[test]
fn recall_ranks_the_relevant_memory_first() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        seed(&m);
        // "user" matches three memories; "timezone" lifts the right one.
        let hits = m.recall("What is the user's timezone?", 10).unwrap();
        assert_eq!(keys(&hits), ["user.timezone", "user.coffee", "chat.holiday"]);

        // Several words: the memory matching more of them (and in its key)
        // comes first; scores are positive and descending.
        let hits = m.recall("coffee in Berlin", 10).unwrap();
        assert_eq!(keys(&hits), ["user.coffee", "user.timezone"]);
        let scores: Vec<f64> = hits.iter().map(|h| h.score.unwrap()).collect();
        assert!(scores[0] > scores[1] && scores[1] > 0.0, "{scores:?}");

        // Diacritics and case are folded: "CAFE" finds "café".
        assert_eq!(keys(&m.recall("CAFE", 10).unwrap()), ["user.coffee"]);
        assert_eq!(keys(&m.recall("lisbon", 1).unwrap()).len(), 1);
        assert_eq!(m.recall("lisbon", 0).unwrap(), Vec::new());
    });
}

#[test]
fn recall_in_filters_by_category() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        seed(&m);
        let all = m.recall("Lisbon", 10).unwrap();
        let mut all_keys = keys(&all);
        all_keys.sort_unstable();
        assert_eq!(all_keys, ["chat.holiday", "project.deadline"]);
        assert_eq!(keys(&m.recall_in("Lisbon", Some(CONVERSATION), 10).unwrap()), ["chat.holiday"]);
        assert_eq!(keys(&m.recall_in("Lisbon", Some(CORE), 10).unwrap()), ["project.deadline"]);
        assert_eq!(m.recall_in("Lisbon", Some(DAILY), 10).unwrap(), Vec::new());
        assert_eq!(m.recall_in("Lisbon", None, 10).unwrap(), all, "no category means all categories");
    });
}

#[test]
fn hostile_queries_never_error() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        seed(&m);
        let hostile = [
            "",
            "   ",
            "\"",
            "\"\"\"",
            "'; DROP TABLE memories; --",
            "*",
            "berlin*",
            "^berlin",
            "key:berlin",
            "{key content}: berlin",
            "-berlin",
            "NOT berlin",
            "berlin AND",
            "OR OR OR",
            "AND",
            "NEAR(berlin lisbon, 2)",
            "NEAR",
            "(((berlin",
            "berlin)))",
            "\"unterminated phrase berlin",
            "berlin + lisbon",
            "a b c d e f",
            "🙂🙃 ☕ 🇩🇪",
            "☕berlin☕",
            "日本語のテキスト",
            "Ünïcödé ÇAFÉ naïve",
            "İstanbul ǅ ß ﬁ",
            "\u{0}\u{1}\u{7f}",
            "tab\tnew\nline\r",
            "\u{200b}berlin\u{200b}",
            "x\u{301}y\u{301}",
            "%_\\/[]",
            "rank MATCH bm25()",
            // Alphabetic to Rust but not a token character to unicode61:
            // becomes an empty FTS5 phrase.
            "\u{93e}\u{93e}",
            "\u{93e}\u{93e} berlin",
            "\u{2160}\u{2161} \u{bc}\u{bd}",
        ];
        for q in hostile {
            let res = m.recall(q, 5);
            assert!(res.is_ok(), "query {q:?} failed: {res:?}");
            let res = m.recall_in(q, Some(CORE), 5);
            assert!(res.is_ok(), "query {q:?} in core failed: {res:?}");
        }
        // Operators are just punctuation: these all look for "berlin".
        for q in ["berlin*", "^berlin", "-berlin", "NOT berlin", "(((berlin", "☕berlin☕", "\u{93e}\u{93e} berlin"] {
            assert_eq!(keys(&m.recall(q, 10).unwrap()), ["user.timezone", "user.coffee"], "query {q:?}");
        }
        // Nothing searchable: empty, not an error.
        for q in ["", "\"", "OR OR OR", "🙂🙃", "the a is"] {
            assert_eq!(m.recall(q, 10).unwrap(), Vec::new(), "query {q:?}");
        }
        // A long query is capped, not rejected.
        let long = "berlin ".repeat(10_000) + &"zz".repeat(50_000);
        assert_eq!(m.recall(&long, 10).unwrap().len(), 2);
    });
}

#[test]
fn hostile_content_round_trips() {
    each_backend(|_kind, _dir, store| {
        let m = Memory::new(store);
        let content = "\"quoted\" NEAR(a b) * -x key:value 🙂 日本語";
        m.store("weird \"key\" *", content, "cat: \"x\"").unwrap();
        let got = m.get("weird \"key\" *").unwrap().unwrap();
        assert_eq!((got.content.as_str(), got.category.as_str()), (content, "cat: \"x\""));
        assert_eq!(keys(&m.recall("日本語", 5).unwrap()), ["weird \"key\" *"]);
        assert_eq!(keys(&m.recall_in("quoted", Some("cat: \"x\""), 5).unwrap()), ["weird \"key\" *"]);
    });
}
