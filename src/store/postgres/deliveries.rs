//! Deliveries and their claims on PostgreSQL; the statements of `store/deliveries.rs`.
//!
//! The claim is the same compare-and-set as on SQLite: one `UPDATE` whose `WHERE` holds the
//! row to what was read (`IS NOT DISTINCT FROM` is PostgreSQL's spelling of SQLite's `IS` for
//! values that may be NULL). A run's end and its deliveries are one transaction
//! ([`Pg::end_run`]).

use chrono::Utc;

use super::runs::{Fence, OwnedEnd, write_end};
use super::{Pg, rows};
use crate::store::deliveries::DELIVERY_COLUMNS;
use crate::store::{DeliveryRow, DeliveryStatus, Recorded, StoreError, to_db_time};

/// A delivery with its texts already cleaned, as [`Pg::add_delivery`] and [`Pg::end_run`]
/// write it.
pub(crate) struct OwnedDelivery {
    pub run_id: i64,
    pub seq: i64,
    pub kind: String,
    pub target: String,
    pub on_failure: bool,
    pub payload: String,
    /// The cleaned reason it cannot be attempted at all (`NewDelivery::failed`).
    pub failed: Option<String>,
}

/// Keeps the row of a delivery recorded already ([`Pg::end_run`]).
const KEEP_RECORDED: &str = "ON CONFLICT (run_id, seq, on_failure) DO NOTHING";

/// Inserts `d`, owned by `owner` and this process's pid, and returns its id; with
/// [`KEEP_RECORDED`], `None` when the delivery was recorded already.
async fn insert<C: deadpool_postgres::GenericClient>(
    c: &C,
    d: &OwnedDelivery,
    owner: Option<i64>,
    on_conflict: &str,
) -> Result<Option<i64>, tokio_postgres::Error> {
    let (status, attempts) = if d.failed.is_some() { ("failed", 1_i64) } else { ("pending", 0) };
    let pid = i64::from(std::process::id());
    let row = c
        .query_opt(
            &format!(
                "INSERT INTO deliveries (run_id, seq, kind, target, on_failure, payload, status, attempts, error,
                                         permanent, owner, pid, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13) {on_conflict} RETURNING id"
            ),
            &[
                &d.run_id,
                &d.seq,
                &d.kind,
                &d.target,
                &d.on_failure,
                &d.payload,
                &status,
                &attempts,
                &d.failed,
                &d.failed.is_some(),
                &owner,
                &pid,
                &to_db_time(Utc::now()),
            ],
        )
        .await?;
    row.map(|r| r.try_get(0)).transpose()
}

impl Pg {
    pub(crate) fn add_delivery(&self, d: OwnedDelivery, owner: Option<i64>) -> Result<i64, StoreError> {
        self.call(move |c| async move {
            let id = insert(&c, &d, owner, "").await?;
            // Without ON CONFLICT an insert returns its row or fails.
            id.ok_or_else(|| StoreError::Unreadable("an insert returned no id".into()))
        })
    }

    /// The run's end and its deliveries in one transaction; `None` when there is no run `id`
    /// (then nothing is written).
    pub(crate) fn end_run(
        &self,
        id: i64,
        end: OwnedEnd,
        deliveries: Vec<OwnedDelivery>,
        owner: Option<i64>,
    ) -> Result<Option<Vec<Recorded>>, StoreError> {
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            // Fenced by the owner: a node whose lease lapsed and whose run another node took
            // over writes nothing, however late it comes back.
            if write_end(&tx, id, &end, Fence::Owner(owner)).await? == 0 {
                let exists = tx.query_opt("SELECT 1 FROM runs WHERE id = $1", &[&id]).await?.is_some();
                return if exists { Err(StoreError::TakenOver(id)) } else { Ok(None) };
            }
            let select =
                format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE run_id = $1 AND seq = $2 AND on_failure = $3");
            let mut recorded = Vec::with_capacity(deliveries.len());
            for d in &deliveries {
                let new = insert(&tx, d, owner, KEEP_RECORDED).await?.is_some();
                let row = tx.query_one(&select, &[&d.run_id, &d.seq, &d.on_failure]).await?;
                recorded.push(Recorded { row: rows::delivery(&row)?, new });
            }
            tx.commit().await?;
            Ok(Some(recorded))
        })
    }

    /// The compare-and-set of `Store::claim_delivery` and `Store::mark_uncertain`: returns
    /// how many rows changed.
    pub(crate) fn settle_delivery(
        &self,
        seen: &DeliveryRow,
        status: &'static str,
        error: Option<String>,
        counted: bool,
        owner: Option<i64>,
    ) -> Result<u64, StoreError> {
        let (id, seen_status, seen_attempts) = (seen.id, seen.status.as_str(), i64::from(seen.attempts));
        let (seen_owner, seen_pid) = (seen.owner, seen.pid.map(i64::from));
        let pid = i64::from(std::process::id());
        let counted = i64::from(counted);
        self.call(move |c| async move {
            Ok(c.execute(
                "UPDATE deliveries SET status = $6, owner = $7, pid = $8, updated_at = $9,
                        error = COALESCE($10, error), attempts = attempts + $11
                 WHERE id = $1 AND status = $2 AND attempts = $3
                   AND owner IS NOT DISTINCT FROM $4 AND pid IS NOT DISTINCT FROM $5",
                &[
                    &id,
                    &seen_status,
                    &seen_attempts,
                    &seen_owner,
                    &seen_pid,
                    &status,
                    &owner,
                    &pid,
                    &to_db_time(Utc::now()),
                    &error,
                    &counted,
                ],
            )
            .await?)
        })
    }

    pub(crate) fn finish_delivery(
        &self,
        id: i64,
        status: DeliveryStatus,
        error: Option<String>,
        permanent: bool,
    ) -> Result<(), StoreError> {
        self.call(move |c| async move {
            c.execute(
                "UPDATE deliveries SET status = $2, error = $3, attempts = attempts + 1, updated_at = $4,
                        permanent = $5
                 WHERE id = $1",
                &[&id, &status.as_str(), &error, &to_db_time(Utc::now()), &permanent],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) fn deliveries(&self, run_id: i64) -> Result<Vec<DeliveryRow>, StoreError> {
        self.call(move |c| async move {
            let sql = format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE run_id = $1 ORDER BY id");
            c.query(&sql, &[&run_id]).await?.iter().map(rows::delivery).collect()
        })
    }

    pub(crate) fn undelivered(&self) -> Result<Vec<DeliveryRow>, StoreError> {
        self.call(|c| async move {
            let sql = format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE status IN ('pending', 'failed', 'sending', 'uncertain')
                 ORDER BY id"
            );
            c.query(&sql, &[]).await?.iter().map(rows::delivery).collect()
        })
    }
}
