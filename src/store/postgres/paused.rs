//! The fires of a paused routine on PostgreSQL; the statements of `store/pause.rs`.

use super::Pg;
use crate::store::StoreError;
use crate::store::pause::{SPAN_INSERT, SPAN_UPDATE, already_counted, placeholders, span_message, span_sql};

impl Pg {
    /// Adds a fire to the stretch of the pause that the routine's newest run is (locked, so
    /// two nodes firing the same instant count it once), else inserts a new `skipped` row.
    pub(crate) fn record_paused_fire(
        &self,
        routine: String,
        trigger: String,
        at: Option<String>,
        why: String,
        now: String,
    ) -> Result<Option<i64>, StoreError> {
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            let sql = format!("{} FOR UPDATE OF r", span_sql("$1::text"));
            let span = tx.query_opt(&sql, &[&routine]).await?;
            let id = match span {
                Some(row) if row.try_get::<_, bool>(3)? => {
                    let (id, fires, newest): (i64, i64, Option<String>) =
                        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                    if already_counted(at.as_deref(), newest.as_deref()) {
                        return Ok(None);
                    }
                    let message = span_message(&why, fires + 1, &now);
                    tx.execute(&placeholders(SPAN_UPDATE, '$'), &[&id, &(fires + 1), &at, &now, &message]).await?;
                    Some(id)
                }
                _ => {
                    let row =
                        tx.query_opt(&placeholders(SPAN_INSERT, '$'), &[&routine, &trigger, &at, &now, &why]).await?;
                    row.map(|r| r.try_get(0)).transpose()?
                }
            };
            tx.commit().await?;
            Ok(id)
        })
    }

    pub(crate) fn skipped_while_paused(&self, routine: &str, since: String) -> Result<u64, StoreError> {
        let routine = routine.to_string();
        self.call(move |c| async move {
            let row = c
                .query_one(
                    "SELECT COALESCE(SUM(COALESCE(fires, 1)), 0)::BIGINT FROM runs
                     WHERE routine = $1 AND status = 'skipped' AND reason = 'paused' AND created_at >= $2",
                    &[&routine, &since],
                )
                .await?;
            Ok(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0))
        })
    }
}
