//! Recall: free user text in, ranked memories out, in bounded time.
//!
//! **Sanitizing.** Raw text is never passed to `MATCH`: quotes, `*`, `:`,
//! `-`, parentheses and the keywords `AND`/`OR`/`NOT`/`NEAR` all mean
//! something to FTS5. The text is split on every character that is not
//! alphanumeric, lowercased, filtered and deduplicated, and each surviving
//! token is double-quoted (a token holds only alphanumerics, so it contains
//! no quote) and joined with `OR`.
//!
//! **Bounding the work.** FTS5's bm25 costs about 1.5 µs per matching row
//! plus, for each word, one pass over every row containing it (for the IDF).
//! A word found in most memories would make that tens of milliseconds on a
//! large store, so [`plan`] first counts, with a cheap capped probe, how
//! many memories each word matches, and then:
//! - ignores words matching more than [`Budget::common`] memories when
//!   rarer words are present (such words carry little information: their
//!   IDF is small);
//! - ranks by the rarest words whose match counts add up to at most
//!   [`Budget::idf`];
//! - scores only the newest [`Budget::window`] memories matching those
//!   words when there are more;
//! - when every word is very common, returns the newest matching memories
//!   (score 0.0) instead of a bm25 ranking.
//!
//! On a store with fewer memories than these budgets (the usual case)
//! none of this applies and the result is the exact bm25 ranking over all
//! query words.

use rusqlite::{Connection, OptionalExtension, params};

use super::{MemoryEntry, scored_entry_from_row};

/// At most this many tokens are searched for; the rest of the text is ignored.
pub const MAX_TOKENS: usize = 16;

/// Tokens shorter than this many characters are dropped.
pub const MIN_TOKEN_CHARS: usize = 2;

/// Common English words that would match almost every memory. Sorted, so it
/// can be binary-searched.
const STOPWORDS: &[&str] = &[
    "about", "after", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could",
    "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "if", "in", "into",
    "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "should", "so", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "us", "was", "we", "were", "what",
    "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// The search tokens of `text`: lowercased alphanumeric runs of at least
/// [`MIN_TOKEN_CHARS`] characters, minus stopwords, first occurrence order,
/// at most [`MAX_TOKENS`].
pub fn tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if out.len() == MAX_TOKENS {
            break;
        }
        if raw.chars().count() < MIN_TOKEN_CHARS {
            continue;
        }
        let token = raw.to_lowercase();
        if STOPWORDS.binary_search(&token.as_str()).is_ok() || out.contains(&token) {
            continue;
        }
        out.push(token);
    }
    out
}

/// The FTS5 `MATCH` expression for `text`, e.g. `"coffee" OR "berlin"`, or
/// `None` when the text has no usable token.
pub fn fts_query(text: &str) -> Option<String> {
    let tokens = tokens(text);
    let words: Vec<&str> = tokens.iter().map(String::as_str).collect();
    (!words.is_empty()).then(|| or_query(&words))
}

/// Work limits for one recall; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// A word matching more memories than this is "very common".
    pub common: usize,
    /// Rows all per-word probes together may step through; words left
    /// unprobed when it runs out count as very common.
    pub probe_total: usize,
    /// Largest sum of per-word match counts ranked with bm25.
    pub idf: usize,
    /// Most matching memories scored with bm25 (the newest ones).
    pub window: usize,
}

/// The limits used by [`super::Memory::recall`]. Scanning a word's list of
/// matches costs roughly 50 ns per memory and bm25 about 1.5 µs per scored
/// memory, so one recall does at most ~0.8 ms of probing, ~0.5 ms of IDF
/// passes and ~1.5 ms of scoring, whatever the store size.
pub const BUDGET: Budget = Budget { common: 5_000, probe_total: 15_000, idf: 10_000, window: 1_000 };

/// What [`plan`] decided to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// No word matches anything.
    Empty,
    /// bm25 over `fts`, only rows with `rowid >= floor` when set.
    Ranked { fts: String, floor: Option<i64> },
    /// Every word is very common: newest rows matching `fts`.
    Newest { fts: String },
}

fn or_query(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|t| format!("\"{t}\"")).collect();
    quoted.join(" OR ")
}

/// How many memories match `fts`, counting no further than `cap + 1`.
fn capped_count(c: &Connection, fts: &str, cap: usize) -> rusqlite::Result<usize> {
    let n: i64 = c
        .prepare_cached("SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?1 LIMIT ?2)")?
        .query_row(params![fts, to_i64(cap.saturating_add(1))], |r| r.get(0))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Decides which words to rank by and how; see the module documentation.
pub fn plan(c: &Connection, words: &[String], budget: Budget) -> rusqlite::Result<Plan> {
    let mut counted: Vec<(usize, &str)> = Vec::new();
    let mut very_common: Vec<&str> = Vec::new();
    let mut probe_left = budget.probe_total;
    for word in words {
        let cap = budget.common.min(probe_left);
        if cap == 0 {
            very_common.push(word);
            continue;
        }
        let n = capped_count(c, &or_query(&[word]), cap)?;
        probe_left = probe_left.saturating_sub(n);
        match n {
            0 => {}
            n if n > cap => very_common.push(word),
            n => counted.push((n, word)),
        }
    }
    counted.sort_by_key(|(n, _)| *n);
    let mut chosen: Vec<&str> = Vec::new();
    let mut total = 0;
    for (n, word) in counted {
        if !chosen.is_empty() && total + n > budget.idf {
            break;
        }
        total += n;
        chosen.push(word);
    }
    if chosen.is_empty() {
        return Ok(if very_common.is_empty() { Plan::Empty } else { Plan::Newest { fts: or_query(&very_common) } });
    }
    let fts = or_query(&chosen);
    let floor = if total > budget.window {
        c.prepare_cached(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1
             ORDER BY rowid DESC LIMIT 1 OFFSET ?2",
        )?
        .query_row(params![fts, to_i64(budget.window.saturating_sub(1))], |r| r.get(0))
        .optional()?
    } else {
        None
    };
    Ok(Plan::Ranked { fts, floor })
}

/// bm25 weights: key, content, category.
const BM25: &str = "bm25(memories_fts, 2.0, 1.0, 0.5)";

/// Runs a plan. The score is bm25 negated (higher is better), or 0.0 for
/// [`Plan::Newest`].
pub fn execute(
    c: &Connection,
    plan: &Plan,
    category: Option<&str>,
    limit: usize,
    budget: Budget,
) -> rusqlite::Result<Vec<MemoryEntry>> {
    const COLS: &str = "m.id, m.key, m.content, m.category, m.created_at, m.updated_at";
    let (fts, floor) = match plan {
        Plan::Empty => return Ok(Vec::new()),
        Plan::Ranked { fts, floor } => (fts, floor.unwrap_or(i64::MIN)),
        Plan::Newest { fts } => (fts, i64::MIN),
    };
    let Some(category) = category else {
        // Fast path: the FTS table ranks and limits; only `limit` rows are
        // joined to `memories`.
        let sql = match plan {
            Plan::Newest { .. } => format!(
                "SELECT {COLS}, 0.0 FROM (
                     SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 AND rowid >= ?2
                     ORDER BY rowid DESC LIMIT ?3
                 ) AS f JOIN memories AS m ON m.id = f.rowid
                 ORDER BY m.id DESC"
            ),
            _ => format!(
                "SELECT {COLS}, -f.score FROM (
                     SELECT rowid, {BM25} AS score FROM memories_fts
                     WHERE memories_fts MATCH ?1 AND rowid >= ?2 ORDER BY score, rowid LIMIT ?3
                 ) AS f JOIN memories AS m ON m.id = f.rowid
                 ORDER BY f.score, m.id"
            ),
        };
        return c.prepare_cached(&sql)?.query_map(params![fts, floor, to_i64(limit)], scored_entry_from_row)?.collect();
    };
    // With a category: take the candidates best first from the FTS table,
    // then look each up until `limit` of that category are found (joining
    // every candidate first would cost a lookup per candidate).
    let candidates_sql = match plan {
        Plan::Newest { .. } => "SELECT rowid, 0.0 FROM memories_fts WHERE memories_fts MATCH ?1 AND rowid >= ?2
             ORDER BY rowid DESC LIMIT ?3"
            .to_string(),
        _ => format!(
            "SELECT rowid, {BM25} AS score FROM memories_fts
             WHERE memories_fts MATCH ?1 AND rowid >= ?2 ORDER BY score, rowid LIMIT ?3"
        ),
    };
    let candidates: Vec<(i64, f64)> = c
        .prepare_cached(&candidates_sql)?
        .query_map(params![fts, floor, to_i64(budget.window)], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut lookup =
        c.prepare_cached(&format!("SELECT {COLS}, ?3 FROM memories AS m WHERE m.id = ?1 AND m.category = ?2"))?;
    let mut found = Vec::new();
    for (id, score) in candidates {
        if found.len() >= limit {
            break;
        }
        let entry = lookup.query_row(params![id, category, -score], scored_entry_from_row).optional()?;
        found.extend(entry);
    }
    Ok(found)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::memory::{CORE, DAILY, Memory};
    use crate::store::Store;

    /// Seven memories, k1..k7; word counts: alpha 5, gamma 3, beta 2,
    /// delta 1, zeta 1.
    fn small_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("q.db")).unwrap();
        let docs = [
            ("k1", "alpha beta", CORE),
            ("k2", "alpha gamma", DAILY),
            ("k3", "alpha", CORE),
            ("k4", "alpha gamma", DAILY),
            ("k5", "alpha delta", CORE),
            ("k6", "gamma beta", DAILY),
            ("k7", "zeta", CORE),
        ];
        Memory::new(store.clone()).store_many(&docs).unwrap();
        (dir, store)
    }

    const TINY: Budget = Budget { common: 3, probe_total: 100, idf: 5, window: 3 };

    fn plan_for(store: &Store, text: &str, budget: Budget) -> Plan {
        store.with_conn(|c| plan(c, &tokens(text), budget)).unwrap()
    }

    fn run(store: &Store, text: &str, category: Option<&str>, budget: Budget) -> Vec<(String, f64)> {
        store
            .with_conn(|c| {
                let p = plan(c, &tokens(text), budget)?;
                execute(c, &p, category, 2, budget)
            })
            .unwrap()
            .into_iter()
            .map(|e| (e.key, e.score.unwrap()))
            .collect()
    }

    fn ranked(fts: &str, floor: Option<i64>) -> Plan {
        Plan::Ranked { fts: fts.to_string(), floor }
    }

    #[test]
    fn within_budget_every_word_is_ranked() {
        let (_dir, store) = small_store();
        assert_eq!(plan_for(&store, "alpha beta", BUDGET), ranked("\"beta\" OR \"alpha\"", None));
        assert_eq!(plan_for(&store, "omega", BUDGET), Plan::Empty);
    }

    #[test]
    fn very_common_words_are_dropped_when_rarer_ones_exist() {
        let (_dir, store) = small_store();
        assert_eq!(plan_for(&store, "alpha beta", TINY), ranked("\"beta\"", None));
        // Rarest first, until their match counts exceed the idf budget.
        assert_eq!(plan_for(&store, "gamma beta delta omega", TINY), ranked("\"delta\" OR \"beta\"", None));
        // Probing stops when its budget is spent; unprobed words count as
        // very common.
        let stingy = Budget { probe_total: 2, ..TINY };
        assert_eq!(plan_for(&store, "beta gamma", stingy), ranked("\"beta\"", None));
    }

    #[test]
    fn many_matches_are_scored_within_the_newest_window() {
        let (_dir, store) = small_store();
        let narrow = Budget { window: 2, ..TINY };
        // beta|gamma match k1, k2, k4, k6: the two newest are k6 and k4.
        let k4 =
            store.with_conn(|c| c.query_row("SELECT id FROM memories WHERE key = 'k4'", [], |r| r.get(0))).unwrap();
        assert_eq!(plan_for(&store, "beta gamma", narrow), ranked("\"beta\" OR \"gamma\"", Some(k4)));
        let got = run(&store, "beta gamma", None, narrow);
        assert_eq!(got.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["k6", "k4"]);
        assert!(got[0].1 > got[1].1 && got[1].1 > 0.0, "{got:?}");
        let daily_only = run(&store, "beta gamma", Some(DAILY), narrow);
        assert_eq!(daily_only.len(), 2);
        let core_only = run(&store, "beta gamma", Some(CORE), narrow);
        assert_eq!(core_only, Vec::new(), "k1 is outside the window");
    }

    #[test]
    fn only_very_common_words_return_newest_matches() {
        let (_dir, store) = small_store();
        assert_eq!(plan_for(&store, "alpha", TINY), Plan::Newest { fts: "\"alpha\"".to_string() });
        let as_pairs =
            |v: &[(&str, f64)]| -> Vec<(String, f64)> { v.iter().map(|(k, s)| (k.to_string(), *s)).collect() };
        assert_eq!(run(&store, "alpha", None, TINY), as_pairs(&[("k5", 0.0), ("k4", 0.0)]));
        assert_eq!(run(&store, "alpha", Some(CORE), TINY), as_pairs(&[("k5", 0.0), ("k3", 0.0)]));
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn splits_lowercases_filters_and_dedupes() {
        assert_eq!(
            tokens("What's the user's FAVOURITE coffee? coffee-shop: Café \"Noir\" (NEAR) a 42"),
            ["user", "favourite", "coffee", "shop", "café", "noir", "near", "42"]
        );
    }

    #[test]
    fn caps_the_number_of_tokens() {
        let text: Vec<String> = (0..40).map(|i| format!("word{i}")).collect();
        let got = tokens(&text.join(" "));
        assert_eq!(got.len(), MAX_TOKENS);
        assert_eq!(got[0], "word0");
        assert_eq!(got[MAX_TOKENS - 1], format!("word{}", MAX_TOKENS - 1));
    }

    #[test]
    fn builds_quoted_or_query() {
        assert_eq!(fts_query("AND berlin OR -timezone*").as_deref(), Some("\"berlin\" OR \"timezone\""));
        assert_eq!(fts_query("the a I ? 🙂 \"\" *"), None);
        assert_eq!(fts_query(""), None);
    }
}
