//! Bounded history on PostgreSQL; the statements of `store/prune.rs`.

use super::Pg;
use crate::store::StoreError;
use crate::store::prune::{PRUNABLE, PRUNE_BATCH, candidates_sql};

impl Pg {
    /// Reads the runs beyond the limits, then deletes them a batch per statement, each run
    /// checked again as it goes. Returns how many were deleted.
    pub(crate) fn prune_history(&self, cutoff: Option<String>, max_runs: i64) -> Result<u64, StoreError> {
        let ids: Vec<i64> = self.call(move |c| async move {
            let rows = c.query(&candidates_sql("$1::text", "$2::bigint"), &[&cutoff, &max_runs]).await?;
            rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
        })?;
        let mut deleted = 0u64;
        for chunk in ids.chunks(PRUNE_BATCH) {
            let chunk = chunk.to_vec();
            deleted += self.call(move |c| async move {
                let sql = format!("DELETE FROM runs AS r WHERE r.id = ANY($1) AND {PRUNABLE}");
                Ok(c.execute(&sql, &[&chunk]).await?)
            })?;
        }
        Ok(deleted)
    }
}
