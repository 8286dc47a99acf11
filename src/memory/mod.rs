//! The agent's long-term memory: keyed notes with full-text recall.
//!
//! Memories live in the `memories` table of the [`Store`] database (created
//! by store migration 1). On SQLite, an FTS5 external-content index, `memories_fts`,
//! is kept in sync by triggers and ranks matches with bm25, weighting a
//! match in the key 2×, the content 1× and the category 0.5×. On PostgreSQL a
//! `tsvector` column ranks them with `ts_rank` in the same proportions; what
//! differs is written in [`postgres`].

mod postgres;
pub mod query;

use chrono::Utc;
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use crate::store::{Store, StoreError, time_column, to_db_time};

/// Category for lasting facts about the user and their world.
pub const CORE: &str = "core";
/// Category for notes about a particular day.
pub const DAILY: &str = "daily";
/// Category for things said in a conversation.
pub const CONVERSATION: &str = "conversation";

/// Errors from the memory API.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The caller (often the model) passed something unusable; the message
    /// says what to change.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for MemoryError {
    fn from(e: rusqlite::Error) -> Self {
        MemoryError::Store(StoreError::Sqlite(e))
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryEntry {
    pub id: i64,
    pub key: String,
    pub content: String,
    pub category: String,
    pub created_at: chrono::DateTime<Utc>,
    pub updated_at: chrono::DateTime<Utc>,
    /// Relevance from [`Memory::recall`]: the bm25 score negated, so higher
    /// is more relevant (> 0 for a ranked match; 0.0 when the query had only
    /// very common words and results are simply the newest matches, see
    /// [`query`]). `None` outside recall.
    pub score: Option<f64>,
}

/// Long-term memory on top of a [`Store`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Memory {
    store: Store,
}

const COLUMNS: &str = "id, key, content, category, created_at, updated_at";

const UPSERT: &str = "INSERT INTO memories (key, content, category, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?4)
     ON CONFLICT (key) DO UPDATE SET
         content = excluded.content,
         category = excluded.category,
         updated_at = excluded.updated_at
     RETURNING id, key, content, category, created_at, updated_at";

fn entry_from_row(row: &Row<'_>) -> rusqlite::Result<MemoryEntry> {
    Ok(MemoryEntry {
        id: row.get(0)?,
        key: row.get(1)?,
        content: row.get(2)?,
        category: row.get(3)?,
        created_at: time_column(row, 4)?,
        updated_at: time_column(row, 5)?,
        score: None,
    })
}

/// An entry followed by its score in column 6.
fn scored_entry_from_row(row: &Row<'_>) -> rusqlite::Result<MemoryEntry> {
    Ok(MemoryEntry { score: Some(row.get(6)?), ..entry_from_row(row)? })
}

/// Checks and normalizes one memory: key and category are trimmed, content
/// is kept as given but must not be blank.
fn validate<'a>(key: &'a str, content: &'a str, category: &'a str) -> Result<(&'a str, &'a str, &'a str), MemoryError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(MemoryError::Invalid(
            "memory key is empty; give a short, stable name such as \"user.timezone\" so the \
             memory can be updated or forgotten later"
                .to_string(),
        ));
    }
    if content.trim().is_empty() {
        return Err(MemoryError::Invalid(format!(
            "memory content for key {key:?} is empty; write the fact to remember, or use \
             forget to delete the key"
        )));
    }
    let category = category.trim();
    if category.is_empty() {
        return Err(MemoryError::Invalid(format!(
            "memory category for key {key:?} is empty; use \"{CORE}\" for lasting facts, \
             \"{DAILY}\" for notes about today, or \"{CONVERSATION}\""
        )));
    }
    Ok((key, content, category))
}

fn to_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

impl Memory {
    pub fn new(store: Store) -> Memory {
        Memory { store }
    }

    /// Saves `content` under `key`, replacing content and category of an
    /// existing key (its `created_at` is kept, `updated_at` is bumped).
    /// Key and category are trimmed of surrounding whitespace.
    pub fn store(&self, key: &str, content: &str, category: &str) -> Result<MemoryEntry, MemoryError> {
        let (key, content, category) = validate(key, content, category)?;
        if let Some(pg) = self.store.postgres() {
            let saved = postgres::store_many(pg, vec![(key.into(), content.into(), category.into())])?;
            return saved.into_iter().next().ok_or_else(|| {
                MemoryError::Store(StoreError::Unreadable(format!("saving memory {key:?} returned no row")))
            });
        }
        let now = to_db_time(Utc::now());
        Ok(self
            .store
            .with_conn(|c| c.prepare_cached(UPSERT)?.query_row(params![key, content, category, now], entry_from_row))?)
    }

    /// Saves many `(key, content, category)` memories in one transaction
    /// (same rules as [`Memory::store`]; nothing is written if any item is
    /// invalid). Returns the number of items; a key repeated in the batch
    /// counts each time and its last item wins.
    pub fn store_many<K, C, G>(&self, items: &[(K, C, G)]) -> Result<usize, MemoryError>
    where
        K: AsRef<str>,
        C: AsRef<str>,
        G: AsRef<str>,
    {
        let checked = items
            .iter()
            .map(|(k, c, g)| validate(k.as_ref(), c.as_ref(), g.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(pg) = self.store.postgres() {
            let owned = checked.iter().map(|(k, c, g)| (k.to_string(), c.to_string(), g.to_string())).collect();
            return Ok(postgres::store_many(pg, owned)?.len());
        }
        let now = to_db_time(Utc::now());
        Ok(self.store.with_conn(|c| {
            let tx = c.unchecked_transaction()?;
            {
                let mut stmt = tx.prepare_cached(UPSERT)?;
                for (key, content, category) in &checked {
                    stmt.query_row(params![key, content, category, now], |_| Ok(()))?;
                }
            }
            tx.commit()?;
            Ok(checked.len())
        })?)
    }

    /// The memory stored under `key` (trimmed), if any.
    pub fn get(&self, key: &str) -> Result<Option<MemoryEntry>, MemoryError> {
        if let Some(pg) = self.store.postgres() {
            return Ok(postgres::get(pg, key.trim().to_string())?);
        }
        Ok(self.store.with_conn(|c| {
            c.prepare_cached(&format!("SELECT {COLUMNS} FROM memories WHERE key = ?1"))?
                .query_row([key.trim()], entry_from_row)
                .optional()
        })?)
    }

    /// Deletes the memory under `key` (trimmed); true if there was one.
    pub fn forget(&self, key: &str) -> Result<bool, MemoryError> {
        if let Some(pg) = self.store.postgres() {
            return Ok(postgres::forget(pg, key.trim().to_string())?);
        }
        let deleted =
            self.store.with_conn(|c| c.prepare_cached("DELETE FROM memories WHERE key = ?1")?.execute([key.trim()]))?;
        Ok(deleted > 0)
    }

    /// Up to `limit` memories, most recently updated first, optionally only
    /// those of one category.
    pub fn list(&self, category: Option<&str>, limit: usize) -> Result<Vec<MemoryEntry>, MemoryError> {
        let limit = to_limit(limit);
        if let Some(pg) = self.store.postgres() {
            return Ok(postgres::list(pg, category.map(|c| c.trim().to_string()), limit)?);
        }
        Ok(self.store.with_conn(|c| match category {
            Some(cat) => c
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM memories WHERE category = ?1
                     ORDER BY updated_at DESC, id DESC LIMIT ?2"
                ))?
                .query_map(params![cat.trim(), limit], entry_from_row)?
                .collect(),
            None => c
                .prepare_cached(&format!("SELECT {COLUMNS} FROM memories ORDER BY updated_at DESC, id DESC LIMIT ?1"))?
                .query_map([limit], entry_from_row)?
                .collect(),
        })?)
    }

    /// Number of stored memories.
    pub fn count(&self) -> Result<u64, MemoryError> {
        if let Some(pg) = self.store.postgres() {
            return Ok(postgres::count(pg)?);
        }
        let n: i64 = self.store.with_conn(|c| c.query_row("SELECT COUNT(*) FROM memories", [], |r| r.get(0)))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Full-text search over key, content and category; best match first
    /// (see [`MemoryEntry::score`]). Any text is accepted: it is reduced to
    /// plain search words, and text without any usable word returns no
    /// results rather than an error. On very large stores the work is
    /// bounded by approximations described in [`query`].
    pub fn recall(&self, query: &str, limit: usize) -> Result<Vec<MemoryEntry>, MemoryError> {
        self.recall_in(query, None, limit)
    }

    /// [`Memory::recall`], optionally restricted to one category.
    pub fn recall_in(
        &self,
        query: &str,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let words = query::tokens(query);
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let category = category.map(str::trim);
        if let Some(pg) = self.store.postgres() {
            return Ok(postgres::recall(pg, &words, category.map(str::to_string), to_limit(limit))?);
        }
        Ok(self.store.with_conn(|c| {
            let plan = query::plan(c, &words, query::BUDGET)?;
            query::execute(c, &plan, category, limit, query::BUDGET)
        })?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
