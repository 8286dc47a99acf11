//! Reading PostgreSQL rows into the store's types: the same columns and the same text
//! timestamps as the SQLite backend reads.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use tokio_postgres::Row;

use crate::store::runs::{EventRow, RunRow, UnknownVariant};
use crate::store::{DeliveryRow, DeliveryStatus, StoreError, from_db_int};

/// Reads a NOT NULL timestamp column written by `to_db_time`.
pub fn time(row: &Row, idx: usize) -> Result<DateTime<Utc>, StoreError> {
    let text: String = row.try_get(idx)?;
    parse(&text)
}

/// Reads a nullable timestamp column written by `to_db_time`.
pub fn opt_time(row: &Row, idx: usize) -> Result<Option<DateTime<Utc>>, StoreError> {
    let text: Option<String> = row.try_get(idx)?;
    text.as_deref().map(parse).transpose()
}

fn parse(text: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| StoreError::Unreadable(format!("the time {text:?}: {e}")))
}

/// Reads a text column holding one of an enum's names.
pub(crate) fn enum_value<T: FromStr<Err = UnknownVariant>>(row: &Row, idx: usize) -> Result<T, StoreError> {
    let text: String = row.try_get(idx)?;
    text.parse().map_err(|e: UnknownVariant| StoreError::Unreadable(e.to_string()))
}

/// A count stored as BIGINT.
pub(crate) fn count(row: &Row, idx: usize) -> Result<u64, StoreError> {
    Ok(from_db_int(row.try_get(idx)?))
}

/// A small number stored as BIGINT (attempts, iterations, sequence numbers).
pub(crate) fn small(row: &Row, idx: usize) -> Result<u32, StoreError> {
    Ok(u32::try_from(row.try_get::<_, i64>(idx)?).unwrap_or(0))
}

/// A run, from the columns of `RUN_COLUMNS` at 0..14.
pub(crate) fn run(row: &Row) -> Result<RunRow, StoreError> {
    Ok(RunRow {
        id: row.try_get(0)?,
        kind: enum_value(row, 1)?,
        routine: row.try_get(2)?,
        trigger: row.try_get(3)?,
        scheduled_for: opt_time(row, 4)?,
        status: enum_value(row, 5)?,
        started_at: opt_time(row, 6)?,
        finished_at: opt_time(row, 7)?,
        output: row.try_get(8)?,
        error: row.try_get(9)?,
        prompt_tokens: count(row, 10)?,
        completion_tokens: count(row, 11)?,
        iterations: small(row, 12)?,
        created_at: time(row, 13)?,
    })
}

/// An event, from the columns of `EVENT_COLUMNS`.
pub(crate) fn event(row: &Row) -> Result<EventRow, StoreError> {
    Ok(EventRow {
        id: row.try_get(0)?,
        run_id: row.try_get(1)?,
        seq: row.try_get(2)?,
        at: time(row, 3)?,
        kind: row.try_get(4)?,
        tool: row.try_get(5)?,
        status: row.try_get(6)?,
        arguments: row.try_get(7)?,
        detail: row.try_get(8)?,
        prompt_tokens: row.try_get::<_, Option<i64>>(9)?.map(from_db_int),
        completion_tokens: row.try_get::<_, Option<i64>>(10)?.map(from_db_int),
        duration_ms: count(row, 11)?,
    })
}

/// A delivery, from the columns of `DELIVERY_COLUMNS`.
pub(crate) fn delivery(row: &Row) -> Result<DeliveryRow, StoreError> {
    let status: String = row.try_get(7)?;
    Ok(DeliveryRow {
        id: row.try_get(0)?,
        run_id: row.try_get(1)?,
        seq: small(row, 2)?,
        kind: row.try_get(3)?,
        target: row.try_get(4)?,
        on_failure: row.try_get(5)?,
        payload: row.try_get(6)?,
        status: DeliveryStatus::parse(&status),
        attempts: small(row, 8)?,
        error: row.try_get(9)?,
        updated_at: time(row, 10)?,
        permanent: row.try_get(11)?,
        owner: row.try_get(12)?,
        pid: row.try_get::<_, Option<i64>>(13)?.and_then(|p| u32::try_from(p).ok()),
    })
}
