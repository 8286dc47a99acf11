//! Memory on PostgreSQL: the same API as on SQLite, with recall by `tsvector` and `ts_rank`.
//!
//! **Words.** PostgreSQL's parser and its `lower()` depend on the database's locale (in the
//! `C` locale `lower('É')` is `É`), so the engine makes the words itself, the way FTS5's
//! `unicode61 remove_diacritics 2` tokenizer does on SQLite: text is split on every character
//! that is not alphanumeric, lowercased, and stripped of diacritics ([`words`]); the
//! `search` column holds `to_tsvector('simple', …)` of those words, the key weighted `A`, the
//! content `B` and the category `C`. A query is reduced by the same [`super::query::tokens`]
//! (stopwords and one-letter words dropped) and folded alike, so "CAFE" finds "café" on both
//! backends.
//!
//! **Ranking.** `ts_rank` with the weights key 1.0, content 0.5, category 0.25 (the 2 : 1 :
//! 0.5 of SQLite's bm25), best first, ties to the older memory. What differs from bm25:
//! `ts_rank` counts how often and where the query's words occur but has no inverse document
//! frequency, so a rare word does not outweigh a common one, and it does not normalize by
//! length; scores are on another scale (both are > 0, higher is better). The query planner of
//! [`super::query`] that bounds bm25's work on very large stores is SQLite's only: on
//! PostgreSQL the GIN index finds the matches and every match is ranked.

use chrono::Utc;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::{COLUMNS, MemoryEntry};
use crate::store::postgres::{Client, Pg, time};
use crate::store::{StoreError, to_db_time};

/// The search words of `text`: alphanumeric runs, lowercased, diacritics removed, joined by
/// spaces.
pub fn words(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric()).map(fold).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// One word lowercased without its diacritics (`Café` → `cafe`).
fn fold(word: &str) -> String {
    word.to_lowercase().nfd().filter(|c| !is_combining_mark(*c)).collect()
}

const SEARCH: &str = "setweight(to_tsvector('simple', $5), 'A') || setweight(to_tsvector('simple', $6), 'B') \
     || setweight(to_tsvector('simple', $7), 'C')";

/// `ts_rank`'s weights, in its order D, C, B, A.
const WEIGHTS: &str = "'{0.0, 0.25, 0.5, 1.0}'";

fn entry(row: &tokio_postgres::Row, scored: bool) -> Result<MemoryEntry, StoreError> {
    Ok(MemoryEntry {
        id: row.try_get(0)?,
        key: row.try_get(1)?,
        content: row.try_get(2)?,
        category: row.try_get(3)?,
        created_at: time(row, 4)?,
        updated_at: time(row, 5)?,
        score: if scored { Some(row.try_get(6)?) } else { None },
    })
}

/// Saves each `(key, content, category)` (already checked), in one transaction.
pub(super) fn store_many(pg: &Pg, items: Vec<(String, String, String)>) -> Result<Vec<MemoryEntry>, StoreError> {
    let now = to_db_time(Utc::now());
    pg.call(move |mut c: Client| async move {
        let tx = c.transaction().await?;
        let sql = format!(
            "INSERT INTO memories (key, content, category, created_at, updated_at, search)
             VALUES ($1, $2, $3, $4, $4, {SEARCH})
             ON CONFLICT (key) DO UPDATE SET content = excluded.content, category = excluded.category,
                 updated_at = excluded.updated_at, search = excluded.search
             RETURNING {COLUMNS}"
        );
        let stmt = tx.prepare_cached(&sql).await?;
        let mut saved = Vec::with_capacity(items.len());
        for (key, content, category) in &items {
            let search = [words(key), words(content), words(category)];
            let row = tx.query_one(&stmt, &[key, content, category, &now, &search[0], &search[1], &search[2]]).await?;
            saved.push(entry(&row, false)?);
        }
        tx.commit().await?;
        Ok(saved)
    })
}

pub(super) fn get(pg: &Pg, key: String) -> Result<Option<MemoryEntry>, StoreError> {
    pg.call(move |c| async move {
        let row = c.query_opt(&format!("SELECT {COLUMNS} FROM memories WHERE key = $1"), &[&key]).await?;
        row.map(|r| entry(&r, false)).transpose()
    })
}

pub(super) fn forget(pg: &Pg, key: String) -> Result<bool, StoreError> {
    pg.call(move |c| async move { Ok(c.execute("DELETE FROM memories WHERE key = $1", &[&key]).await? > 0) })
}

pub(super) fn list(pg: &Pg, category: Option<String>, limit: i64) -> Result<Vec<MemoryEntry>, StoreError> {
    pg.call(move |c| async move {
        let sql = format!(
            "SELECT {COLUMNS} FROM memories WHERE ($1::text IS NULL OR category = $1)
             ORDER BY updated_at DESC, id DESC LIMIT $2"
        );
        c.query(&sql, &[&category, &limit]).await?.iter().map(|r| entry(r, false)).collect()
    })
}

pub(super) fn count(pg: &Pg) -> Result<u64, StoreError> {
    pg.call(|c| async move {
        let n: i64 = c.query_one("SELECT COUNT(*) FROM memories", &[]).await?.try_get(0)?;
        Ok(u64::try_from(n).unwrap_or(0))
    })
}

/// The memories matching any of `tokens` (from [`super::query::tokens`]), best first.
pub(super) fn recall(
    pg: &Pg,
    tokens: &[String],
    category: Option<String>,
    limit: i64,
) -> Result<Vec<MemoryEntry>, StoreError> {
    // Each folded token is alphanumeric, so quoting it makes it one operand of to_tsquery.
    let folded: Vec<String> = tokens.iter().map(|t| fold(t)).filter(|t| !t.is_empty()).collect();
    if folded.is_empty() {
        return Ok(Vec::new());
    }
    let query = folded.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(" | ");
    pg.call(move |c| async move {
        let sql = format!(
            "SELECT {COLUMNS}, ts_rank({WEIGHTS}, search, q)::float8 AS score
             FROM memories, to_tsquery('simple', $1) AS q
             WHERE search @@ q AND ($2::text IS NULL OR category = $2)
             ORDER BY score DESC, id LIMIT $3"
        );
        c.query(&sql, &[&query, &category, &limit]).await?.iter().map(|r| entry(r, true)).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_lowercase_and_fold_like_unicode61() {
        assert_eq!(words("Favourite café: Bonanza"), "favourite cafe bonanza");
        assert_eq!(words("user.timezone"), "user timezone");
        assert_eq!(words("Ünïcödé ÇAFÉ naïve 日本語"), "unicode cafe naive 日本語");
        assert_eq!(words("\"quoted\" NEAR(a b) *"), "quoted near a b");
    }
}
