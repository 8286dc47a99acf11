//! The deliveries of runs, each a row with its own status (SPEC §6), and who may attempt one.
//!
//! A delivery is identified by its run, its place in the list (`seq`) and the list
//! (`on_failure`), UNIQUE in the table (migration 9): recording the same delivery again never
//! makes a second row. Rows are written with the run's end, in the same transaction
//! ([`Store::end_run`]), so a run whose end is recorded has every delivery recorded, and a run
//! whose end is not has none. Before each attempt, the process that makes it claims the row
//! ([`Store::claim_delivery`]): a compare-and-set from the state it read to `sending`, owned by
//! this process, so two processes can never both attempt it. After the attempt the row is
//! finished (`delivered` or `failed`). A `sending` row whose owner is gone was cut off during
//! its attempt; what becomes of it is the delivery stage's decision (`delivery/attempts.rs`).

use chrono::Utc;
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;

use super::postgres::{OwnedDelivery, OwnedEnd};
use super::{RunOutcome, Store, StoreError, time_column, to_db_time};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Recorded, not attempted yet.
    Pending,
    /// Claimed for an attempt, which is under way (or its process died during it).
    Sending,
    Delivered,
    Failed,
    /// Its attempt was cut off after it may have arrived; never attempted
    /// again automatically (`routines deliver --retry --uncertain` does, when asked).
    Uncertain,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Sending => "sending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
            DeliveryStatus::Uncertain => "uncertain",
        }
    }

    pub(super) fn parse(s: &str) -> Self {
        match s {
            "delivered" => DeliveryStatus::Delivered,
            "failed" => DeliveryStatus::Failed,
            "sending" => DeliveryStatus::Sending,
            "uncertain" => DeliveryStatus::Uncertain,
            _ => DeliveryStatus::Pending,
        }
    }
}

/// A delivery to record before it is attempted.
#[derive(Debug, Clone)]
pub struct NewDelivery<'a> {
    pub run_id: i64,
    pub seq: u32,
    pub kind: &'a str,
    pub target: &'a str,
    pub on_failure: bool,
    /// JSON with everything needed to retry it without the agent.
    pub payload: &'a str,
    /// The top-level fields of `payload` that are acted on (a path, addresses): stored as
    /// given. Every other string of it is redacted like any text a person reads; a redacted
    /// value read back and acted on would send a delivery somewhere else.
    pub acted_on: &'a [&'a str],
    /// Why it cannot be attempted at all (a target that did not render): it is recorded
    /// `failed`, for good, instead of `pending`.
    pub failed: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeliveryRow {
    pub id: i64,
    pub run_id: i64,
    pub seq: u32,
    pub kind: String,
    pub target: String,
    pub on_failure: bool,
    #[serde(skip)]
    pub payload: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub error: Option<String>,
    pub updated_at: chrono::DateTime<Utc>,
    /// Its last failure was permanent: the daemon does not attempt it again.
    pub permanent: bool,
    /// The process that recorded or last claimed it (see `store/orphans.rs`).
    #[serde(skip)]
    pub owner: Option<i64>,
    /// That process's pid, which decides for stores without owner locks.
    #[serde(skip)]
    pub pid: Option<u32>,
}

/// A delivery as [`Store::end_run`] left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub row: DeliveryRow,
    /// Recorded by this end. `false`: an earlier attempt of the run had recorded it already,
    /// and the row says what became of it.
    pub new: bool,
}

pub(super) const DELIVERY_COLUMNS: &str =
    "id, run_id, seq, kind, target, on_failure, payload, status, attempts, error, updated_at, permanent, owner, pid";

fn delivery_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DeliveryRow> {
    let status: String = r.get(7)?;
    Ok(DeliveryRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        seq: r.get(2)?,
        kind: r.get(3)?,
        target: r.get(4)?,
        on_failure: r.get::<_, i64>(5)? != 0,
        payload: r.get(6)?,
        status: DeliveryStatus::parse(&status),
        attempts: r.get(8)?,
        error: r.get(9)?,
        updated_at: time_column(r, 10)?,
        permanent: r.get::<_, i64>(11)? != 0,
        owner: r.get(12)?,
        pid: r.get(13)?,
    })
}

/// Keeps the row of a delivery recorded already ([`Store::end_run`]).
const KEEP_RECORDED: &str = "ON CONFLICT (run_id, seq, on_failure) DO NOTHING";

/// Inserts `d`, owned by this process, and returns its id. `on_conflict` is empty (a delivery
/// recorded already is refused by the UNIQUE constraint) or [`KEEP_RECORDED`] (then no row
/// comes back: `QueryReturnedNoRows`).
fn insert(store: &Store, c: &rusqlite::Connection, d: &NewDelivery<'_>, on_conflict: &str) -> rusqlite::Result<i64> {
    let now = to_db_time(Utc::now());
    let (target, payload) = (store.clean(d.target), store.clean_payload(d.payload, d.acted_on));
    let error = store.clean_opt(d.failed);
    let (status, attempts) = if d.failed.is_some() { ("failed", 1) } else { ("pending", 0) };
    c.query_row(
        &format!(
            "INSERT INTO deliveries (run_id, seq, kind, target, on_failure, payload, status, attempts, error,
                                     permanent, owner, pid, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13) {on_conflict} RETURNING id"
        ),
        params![
            d.run_id,
            d.seq,
            d.kind,
            target,
            i64::from(d.on_failure),
            payload,
            status,
            attempts,
            error,
            d.failed.is_some(),
            store.owner_id(),
            std::process::id(),
            now
        ],
        |r| r.get(0),
    )
}

impl Store {
    /// `d` with its texts cleaned, as the PostgreSQL backend writes it.
    fn owned_delivery(&self, d: &NewDelivery<'_>) -> OwnedDelivery {
        OwnedDelivery {
            run_id: d.run_id,
            seq: i64::from(d.seq),
            kind: d.kind.to_string(),
            target: self.clean(d.target).into_owned(),
            on_failure: d.on_failure,
            payload: self.clean_payload(d.payload, d.acted_on).into_owned(),
            failed: self.clean_opt(d.failed).map(|e| e.into_owned()),
        }
    }

    /// Records a delivery, `pending` (or `failed` for good, see [`NewDelivery::failed`]) and
    /// owned by this process. A delivery recorded already (the same run, `seq` and
    /// `on_failure`) is refused by the database's UNIQUE constraint.
    pub fn add_delivery(&self, d: &NewDelivery<'_>) -> Result<i64, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.add_delivery(self.owned_delivery(d), self.owner_id());
        }
        self.with_conn(|c| insert(self, c, d, ""))
    }

    /// Records how run `id` ended together with its deliveries, in one transaction: either the
    /// run's end and all of its deliveries are recorded, or nothing is. Deliveries recorded
    /// already by an earlier attempt of the run keep their rows (never a second one); each is
    /// returned as it stands, in the order given.
    pub fn end_run(
        &self,
        id: i64,
        outcome: &RunOutcome,
        deliveries: &[NewDelivery<'_>],
    ) -> Result<Vec<Recorded>, StoreError> {
        if let Some(pg) = self.postgres() {
            let owned = |t: Option<std::borrow::Cow<'_, str>>| t.map(|t| t.into_owned());
            let end = OwnedEnd::new(
                outcome,
                owned(self.clean_opt(outcome.output.as_deref())),
                owned(self.clean_opt(outcome.error.as_deref())),
            );
            let deliveries = deliveries.iter().map(|d| self.owned_delivery(d)).collect();
            return pg.end_run(id, end, deliveries, self.owner_id())?.ok_or(StoreError::RunNotFound(id));
        }
        let recorded = self.with_conn(|c| {
            let tx = Transaction::new_unchecked(c, TransactionBehavior::Immediate)?;
            if self.write_end(&tx, id, outcome)? == 0 {
                return Ok(None);
            }
            let mut recorded = Vec::with_capacity(deliveries.len());
            for d in deliveries {
                let new = insert(self, &tx, d, KEEP_RECORDED).optional()?.is_some();
                let row = tx.query_row(
                    &format!(
                        "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE run_id = ?1 AND seq = ?2 AND on_failure = ?3"
                    ),
                    params![d.run_id, d.seq, i64::from(d.on_failure)],
                    delivery_from_row,
                )?;
                recorded.push(Recorded { row, new });
            }
            tx.commit()?;
            Ok(Some(recorded))
        })?;
        recorded.ok_or(StoreError::RunNotFound(id))
    }

    /// Claims a delivery for an attempt by this process: it becomes `sending`, owned by this
    /// process, only if it is still exactly as `seen` was read (status, attempts, owner). Returns
    /// whether it was claimed; `false` means another process claimed or finished it first, and
    /// it must not be attempted.
    pub fn claim_delivery(&self, seen: &DeliveryRow) -> Result<bool, StoreError> {
        self.settle(seen, "sending", None, false)
    }

    /// Marks a delivery whose attempt was cut off (`seen`, left `sending` by a process that is
    /// gone) as `uncertain`, with `why`, counting the cut-off attempt; only if it is still
    /// exactly as `seen` was read. Returns whether it was marked.
    pub fn mark_uncertain(&self, seen: &DeliveryRow, why: &str) -> Result<bool, StoreError> {
        self.settle(seen, "uncertain", Some(why), true)
    }

    /// The compare-and-set of [`Store::claim_delivery`] and [`Store::mark_uncertain`].
    fn settle(
        &self,
        seen: &DeliveryRow,
        status: &'static str,
        error: Option<&str>,
        counted: bool,
    ) -> Result<bool, StoreError> {
        let error = self.clean_opt(error);
        if let Some(pg) = self.postgres() {
            let changed = pg.settle_delivery(seen, status, error.map(|e| e.into_owned()), counted, self.owner_id())?;
            return Ok(changed == 1);
        }
        let changed = self.with_conn(|c| {
            c.execute(
                "UPDATE deliveries SET status = ?6, owner = ?7, pid = ?8, updated_at = ?9,
                        error = COALESCE(?10, error), attempts = attempts + ?11
                 WHERE id = ?1 AND status = ?2 AND attempts = ?3 AND owner IS ?4 AND pid IS ?5",
                params![
                    seen.id,
                    seen.status.as_str(),
                    seen.attempts,
                    seen.owner,
                    seen.pid,
                    status,
                    self.owner_id(),
                    std::process::id(),
                    to_db_time(Utc::now()),
                    error,
                    i64::from(counted)
                ],
            )
        })?;
        Ok(changed == 1)
    }

    /// Records one attempt of a delivery.
    pub fn set_delivery(&self, id: i64, status: DeliveryStatus, error: Option<&str>) -> Result<(), StoreError> {
        self.finish_delivery(id, status, error, false)
    }

    /// [`Store::set_delivery`], saying whether a failure is permanent (not attempted again by
    /// the daemon).
    pub fn finish_delivery(
        &self,
        id: i64,
        status: DeliveryStatus,
        error: Option<&str>,
        permanent: bool,
    ) -> Result<(), StoreError> {
        let error = self.clean_opt(error);
        if let Some(pg) = self.postgres() {
            return pg.finish_delivery(id, status, error.map(|e| e.into_owned()), permanent);
        }
        self.with_conn(|c| {
            c.execute(
                "UPDATE deliveries SET status = ?2, error = ?3, attempts = attempts + 1, updated_at = ?4, permanent = ?5
                 WHERE id = ?1",
                params![id, status.as_str(), error, to_db_time(Utc::now()), permanent],
            )
        })?;
        Ok(())
    }

    /// The deliveries of a run, in the order they were recorded.
    pub fn deliveries(&self, run_id: i64) -> Result<Vec<DeliveryRow>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.deliveries(run_id);
        }
        self.with_conn(|c| {
            let mut stmt =
                c.prepare(&format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE run_id = ?1 ORDER BY id"))?;
            let rows = stmt.query_map([run_id], delivery_from_row)?;
            rows.collect()
        })
    }

    /// Deliveries not (known to be) delivered: waiting, failed, claimed (in flight, or cut off
    /// by a process that died), or uncertain; oldest first.
    pub fn undelivered(&self) -> Result<Vec<DeliveryRow>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.undelivered();
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE status IN ('pending', 'failed', 'sending', 'uncertain')
                 ORDER BY id"
            ))?;
            let rows = stmt.query_map([], delivery_from_row)?;
            rows.collect()
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::store::migrations::apply;
    use crate::store::schema::MIGRATIONS;
    use crate::store::testing::{Kind, each_backend, execute};
    use crate::store::{NewRun, RunKind, RunStatus};

    fn run(store: &Store) -> i64 {
        let new = NewRun {
            kind: RunKind::Routine,
            routine: Some("report".into()),
            trigger: "manual".into(),
            scheduled_for: None,
            status: RunStatus::Running,
        };
        store.create_run(&new).unwrap()
    }

    fn delivery(run_id: i64, seq: u32, on_failure: bool) -> NewDelivery<'static> {
        NewDelivery {
            run_id,
            seq,
            kind: "file",
            target: "out.md",
            on_failure,
            payload: "{}",
            acted_on: &[],
            failed: None,
        }
    }

    fn succeeded() -> RunOutcome {
        RunOutcome { output: Some("done".into()), ..RunOutcome::new(RunStatus::Succeeded, None) }
    }

    #[test]
    fn the_database_keeps_one_row_per_run_seq_and_list() {
        each_backend(|kind, _dir, store| {
            let id = run(&store);
            store.add_delivery(&delivery(id, 0, false)).unwrap();
            let again = store.add_delivery(&delivery(id, 0, false)).unwrap_err();
            let refusal = match (&again, kind) {
                (StoreError::Postgres(e), Kind::Postgres) => {
                    e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
                }
                (e, _) => e.to_string().contains("UNIQUE constraint failed"),
            };
            assert!(refusal, "{kind:?}: {again:?}");
            // The same place in the other list is another delivery.
            store.add_delivery(&delivery(id, 0, true)).unwrap();
            // Also a write that goes around the store is refused.
            let raw = execute(
                &store,
                &format!(
                    "INSERT INTO deliveries (run_id, seq, kind, target, on_failure, payload, status, created_at,
                                             updated_at)
                     VALUES ({id}, 0, 'mail', 'x', TRUE, '{{}}', 'pending', 'now', 'now')"
                ),
            );
            assert!(raw.is_err(), "{kind:?}");
            assert_eq!(store.deliveries(id).unwrap().len(), 2, "{kind:?}");
        });
    }

    #[test]
    fn a_run_ends_with_its_deliveries_at_once_and_a_second_end_adds_none() {
        each_backend(|_kind, _dir, store| {
            let id = run(&store);
            let first = store.end_run(id, &succeeded(), &[delivery(id, 0, false), delivery(id, 1, false)]).unwrap();
            assert!(first.iter().all(|r| r.new && r.row.status == DeliveryStatus::Pending), "{first:?}");
            assert_eq!(first[0].row.pid, Some(std::process::id()));
            assert_eq!(store.get_run(id).unwrap().unwrap().status, RunStatus::Succeeded);
            store.finish_delivery(first[0].row.id, DeliveryStatus::Delivered, None, false).unwrap();
            // An end written again (a run attempted again) finds the rows there and keeps them.
            let second = store.end_run(id, &succeeded(), &[delivery(id, 0, false), delivery(id, 1, false)]).unwrap();
            assert_eq!(
                second.iter().map(|r| (r.new, r.row.id)).collect::<Vec<_>>(),
                [(false, first[0].row.id), (false, first[1].row.id)]
            );
            assert_eq!(second[0].row.status, DeliveryStatus::Delivered);
            assert_eq!(store.deliveries(id).unwrap().len(), 2);
            // No run, no deliveries: the transaction is all or nothing.
            let missing = store.end_run(id + 1, &succeeded(), &[delivery(id, 2, false)]).unwrap_err();
            assert!(matches!(missing, StoreError::RunNotFound(_)), "{missing}");
            assert_eq!(store.deliveries(id).unwrap().len(), 2);
            // A target that did not render is recorded failed for good.
            let failed = NewDelivery { failed: Some("bad template"), ..delivery(id, 0, true) };
            let row = &store.end_run(id, &succeeded(), &[failed]).unwrap()[0].row;
            assert_eq!((row.status, row.permanent, row.attempts), (DeliveryStatus::Failed, true, 1));
        });
    }

    #[test]
    fn a_delivery_is_claimed_by_one_attempt_and_a_second_claim_fails() {
        each_backend(|_kind, _dir, store| {
            let id = run(&store);
            let seen = store.end_run(id, &succeeded(), &[delivery(id, 0, false)]).unwrap().remove(0).row;
            assert!(store.claim_delivery(&seen).unwrap());
            assert!(!store.claim_delivery(&seen).unwrap(), "claimed twice from the same read");
            let claimed = store.deliveries(id).unwrap().remove(0);
            assert_eq!(claimed.status, DeliveryStatus::Sending);
            store.finish_delivery(claimed.id, DeliveryStatus::Failed, Some("timed out"), false).unwrap();
            // A read from before the attempt ended claims nothing, nor marks it.
            assert!(!store.claim_delivery(&claimed).unwrap());
            assert!(!store.mark_uncertain(&claimed, "cut off").unwrap());
            let failed = store.deliveries(id).unwrap().remove(0);
            assert!(store.claim_delivery(&failed).unwrap());
            let sending = store.deliveries(id).unwrap().remove(0);
            assert!(store.mark_uncertain(&sending, "cut off").unwrap());
            let row = store.deliveries(id).unwrap().remove(0);
            assert_eq!(
                (row.status, row.attempts, row.error.as_deref()),
                (DeliveryStatus::Uncertain, 2, Some("cut off"))
            );
        });
    }

    #[test]
    fn migration_9_keeps_the_deliveries_and_gives_them_their_runs_owner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("routines.db");
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        apply(&mut conn, &MIGRATIONS[..8]).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (id, kind, routine, trigger, status, created_at, owner, pid)
             VALUES (7, 'routine', 'report', 'manual', 'succeeded', '2026-01-01T00:00:00.000Z', 42, 4242);
             INSERT INTO deliveries (run_id, seq, kind, target, on_failure, payload, status, attempts, created_at,
                                     updated_at, permanent)
             VALUES (7, 0, 'mail', 'ops@example.com', 0, '{}', 'failed', 3, '2026-01-01T00:00:00.000Z',
                     '2026-01-01T00:00:01.000Z', 1);",
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&path).unwrap();
        let row = store.deliveries(7).unwrap().remove(0);
        assert_eq!(
            (row.seq, row.status, row.attempts, row.permanent, row.owner, row.pid),
            (0, DeliveryStatus::Failed, 3, true, Some(42), Some(4242))
        );
        assert!(store.add_delivery(&delivery(7, 0, false)).is_err());
        store.add_delivery(&delivery(7, 0, true)).unwrap();
    }
}
