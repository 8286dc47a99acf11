//! The deliveries of runs, each a row with its own status (SPEC §6).

use chrono::Utc;
use rusqlite::params;
use serde::Serialize;

use super::{Store, StoreError, time_column, to_db_time};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Recorded, not attempted yet.
    Pending,
    /// An attempt is under way (or the process died during it).
    Sending,
    Delivered,
    Failed,
    /// Its attempt was cut off after it may have arrived; never attempted
    /// again automatically.
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

    fn parse(s: &str) -> Self {
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
}

const DELIVERY_COLUMNS: &str =
    "id, run_id, seq, kind, target, on_failure, payload, status, attempts, error, updated_at, permanent";

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
    })
}

impl Store {
    pub fn add_delivery(&self, d: &NewDelivery<'_>) -> Result<i64, StoreError> {
        let now = to_db_time(Utc::now());
        let (target, payload) = (self.clean(d.target), self.clean_json(d.payload));
        self.with_conn(|c| {
            c.query_row(
                "INSERT INTO deliveries (run_id, seq, kind, target, on_failure, payload, status, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?7) RETURNING id",
                params![d.run_id, d.seq, d.kind, target, i64::from(d.on_failure), payload, now],
                |r| r.get(0),
            )
        })
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
        self.with_conn(|c| {
            c.execute(
                "UPDATE deliveries SET status = ?2, error = ?3, attempts = attempts + 1, updated_at = ?4, permanent = ?5
                 WHERE id = ?1",
                params![id, status.as_str(), error, to_db_time(Utc::now()), permanent],
            )
        })?;
        Ok(())
    }

    pub fn deliveries(&self, run_id: i64) -> Result<Vec<DeliveryRow>, StoreError> {
        self.with_conn(|c| {
            let mut stmt =
                c.prepare(&format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE run_id = ?1 ORDER BY seq"))?;
            let rows = stmt.query_map([run_id], delivery_from_row)?;
            rows.collect()
        })
    }

    /// Marks a delivery's attempt as under way.
    pub fn set_delivery_sending(&self, id: i64) -> Result<(), StoreError> {
        self.with_conn(|c| {
            c.execute(
                "UPDATE deliveries SET status = 'sending', updated_at = ?2 WHERE id = ?1",
                params![id, to_db_time(Utc::now())],
            )
        })?;
        Ok(())
    }

    /// Deliveries waiting, failed, or cut off during an attempt, oldest first.
    pub fn undelivered(&self) -> Result<Vec<DeliveryRow>, StoreError> {
        self.with_conn(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE status IN ('pending', 'failed', 'sending') ORDER BY id"
            ))?;
            let rows = stmt.query_map([], delivery_from_row)?;
            rows.collect()
        })
    }
}
