//! The durable queue as the daemon reads it, on PostgreSQL; the statements of
//! `store/queue.rs` (an array parameter where SQLite reads a JSON list with `json_each`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{Pg, rows};
use crate::store::queue::DAEMON_FIRE;
use crate::store::{StoreError, StoredTrigger, to_db_time};

impl Pg {
    pub(crate) fn adopt_queued(&self) -> Result<HashMap<String, usize>, StoreError> {
        self.call(|c| async move {
            let sql = format!(
                "SELECT routine, COUNT(*) FROM runs WHERE {DAEMON_FIRE} AND routine IS NOT NULL GROUP BY routine"
            );
            c.query(&sql, &[])
                .await?
                .iter()
                .map(|r| Ok((r.try_get(0)?, usize::try_from(rows::count(r, 1)?).unwrap_or(usize::MAX))))
                .collect()
        })
    }

    pub(crate) fn next_not_before(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, StoreError> {
        let now = to_db_time(now);
        self.call(move |c| async move {
            let row = c
                .query_one("SELECT MIN(not_before) FROM runs WHERE status = 'queued' AND not_before > $1", &[&now])
                .await?;
            rows::opt_time(&row, 0)
        })
    }

    pub(crate) fn queued_trigger(&self, id: i64) -> Result<Option<StoredTrigger>, StoreError> {
        self.call(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT trigger, scheduled_for, trigger_context FROM runs WHERE id = $1 AND status = 'queued'",
                    &[&id],
                )
                .await?;
            row.map(|r| {
                Ok(StoredTrigger { kind: r.try_get(0)?, scheduled_for: rows::opt_time(&r, 1)?, context: r.try_get(2)? })
            })
            .transpose()
        })
    }

    pub(crate) fn skip_queued_fires(
        &self,
        routine: &str,
        keep: Vec<i64>,
        reason: String,
        error: String,
    ) -> Result<u64, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            let sql = format!(
                "UPDATE runs SET status = 'skipped', reason = $3, error = $4, finished_at = $5
                 WHERE routine = $1 AND {DAEMON_FIRE} AND id <> ALL($2)"
            );
            Ok(c.execute(&sql, &[&routine, &keep, &reason, &error, &to_db_time(Utc::now())]).await?)
        })
    }
}
