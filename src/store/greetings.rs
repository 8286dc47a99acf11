//! Greetings: the planned times of each day, and the greetings recorded.
//!
//! A greeting is a run of kind `greeting` under the routine name
//! `greeting`; a planned one has its slot as `scheduled_for`, so the
//! UNIQUE(routine, scheduled_for) of `runs` makes each slot fire at most
//! once, across restarts and processes.

use chrono::{DateTime, NaiveDate, Utc};
use rusqlite::{OptionalExtension, params};

use super::runs::enum_column;
use super::{RunStatus, Store, StoreError, opt_time_column, time_column, to_db_time};

/// A greeting run: when it was planned for (or created, for one sent by
/// hand) and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GreetingRun {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub status: RunStatus,
}

/// The time a greeting counts at: its slot, or when it was sent by hand.
const AT: &str = "COALESCE(scheduled_for, created_at)";

impl Store {
    /// The planned greeting times of local date `day`, if they were decided.
    pub fn greeting_plan(&self, day: NaiveDate) -> Result<Option<Vec<DateTime<Utc>>>, StoreError> {
        let text: Option<String> = match self.postgres() {
            Some(pg) => pg.greeting_plan(day.to_string())?,
            None => self.with_conn(|c| {
                c.query_row("SELECT slots FROM greeting_plans WHERE day = ?1", [day.to_string()], |r| r.get(0))
                    .optional()
            })?,
        };
        text.map(|t| parse_slots(day, &t)).transpose()
    }

    /// Keeps `slots` as the plan of `day` unless one was kept already;
    /// returns the plan in effect (the first one written wins).
    pub fn save_greeting_plan(
        &self,
        day: NaiveDate,
        slots: &[DateTime<Utc>],
    ) -> Result<Vec<DateTime<Utc>>, StoreError> {
        let json = serde_json::Value::from(slots.iter().map(|s| to_db_time(*s)).collect::<Vec<_>>()).to_string();
        if let Some(pg) = self.postgres() {
            pg.save_greeting_plan(day.to_string(), json)?;
            return Ok(self.greeting_plan(day)?.unwrap_or_default());
        }
        self.with_conn(|c| {
            c.execute(
                "INSERT INTO greeting_plans (day, slots, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (day) DO NOTHING",
                params![day.to_string(), json, to_db_time(Utc::now())],
            )
        })?;
        Ok(self.greeting_plan(day)?.unwrap_or_default())
    }

    /// Greetings whose time is in `[from, to)`, oldest first.
    pub fn greeting_runs(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<GreetingRun>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.greeting_runs(to_db_time(from), to_db_time(to));
        }
        self.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT id, {AT}, status FROM runs
                 WHERE kind = 'greeting' AND {AT} >= ?1 AND {AT} < ?2 ORDER BY 2, id"
            ))?;
            let rows = stmt.query_map(params![to_db_time(from), to_db_time(to)], greeting_from_row)?;
            rows.collect()
        })
    }

    /// The time of the newest greeting that reached the user (`succeeded`).
    pub fn last_greeting_sent(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        if let Some(pg) = self.postgres() {
            return pg.last_greeting_sent();
        }
        self.with_conn(|c| {
            c.query_row(
                &format!("SELECT MAX({AT}) FROM runs WHERE kind = 'greeting' AND status = 'succeeded'"),
                [],
                |r| opt_time_column(r, 0),
            )
        })
    }
}

fn greeting_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<GreetingRun> {
    Ok(GreetingRun { id: row.get(0)?, at: time_column(row, 1)?, status: enum_column(row, 2)? })
}

fn parse_slots(day: NaiveDate, text: &str) -> Result<Vec<DateTime<Utc>>, StoreError> {
    let bad = |why: String| {
        StoreError::Batch(format!(
            "the greeting plan of {day} in the database is unreadable ({why}); delete its row in greeting_plans to plan the day again"
        ))
    };
    let list: Vec<String> = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    list.iter()
        .map(|s| DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).map_err(|e| bad(e.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::each_backend;
    use crate::store::{NewRun, RunKind, RunOutcome};

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_first_plan_of_a_day_is_kept() {
        each_backend(|_kind, _dir, store| {
            let day = NaiveDate::from_ymd_opt(2026, 3, 2).unwrap();
            assert_eq!(store.greeting_plan(day).unwrap(), None);
            let first = vec![t("2026-03-02T09:13:05Z"), t("2026-03-02T15:40:00Z")];
            assert_eq!(store.save_greeting_plan(day, &first).unwrap(), first);
            assert_eq!(store.save_greeting_plan(day, &[t("2026-03-02T10:00:00Z")]).unwrap(), first);
            assert_eq!(store.greeting_plan(day).unwrap(), Some(first));
            let empty = NaiveDate::from_ymd_opt(2026, 3, 3).unwrap();
            assert_eq!(store.save_greeting_plan(empty, &[]).unwrap(), Vec::<DateTime<Utc>>::new());
            assert_eq!(store.greeting_plan(empty).unwrap(), Some(vec![]));
        });
    }

    #[test]
    fn a_slot_is_claimed_once_and_only_sent_greetings_count_as_sent() {
        each_backend(|_kind, _dir, store| {
            let new = |at: &str| NewRun {
                kind: RunKind::Greeting,
                routine: Some("greeting".into()),
                trigger: "greeting".into(),
                scheduled_for: Some(t(at)),
                status: RunStatus::Queued,
            };
            let a = store.create_run(&new("2026-03-02T09:00:00Z")).unwrap();
            assert!(matches!(store.create_run(&new("2026-03-02T09:00:00Z")), Err(StoreError::DuplicateFire { .. })));
            let b = store.create_run(&new("2026-03-02T14:00:00Z")).unwrap();
            let outcome = |status| RunOutcome::new(status, None);
            store.finish_run(a, &outcome(RunStatus::Succeeded)).unwrap();
            store.finish_run(b, &outcome(RunStatus::Failed)).unwrap();
            assert_eq!(store.last_greeting_sent().unwrap(), Some(t("2026-03-02T09:00:00Z")));
            let runs = store.greeting_runs(t("2026-03-02T00:00:00Z"), t("2026-03-03T00:00:00Z")).unwrap();
            assert_eq!(
                runs,
                vec![
                    GreetingRun { id: a, at: t("2026-03-02T09:00:00Z"), status: RunStatus::Succeeded },
                    GreetingRun { id: b, at: t("2026-03-02T14:00:00Z"), status: RunStatus::Failed },
                ]
            );
            assert!(store.greeting_runs(t("2026-03-02T09:00:01Z"), t("2026-03-02T14:00:00Z")).unwrap().is_empty());
        });
    }
}
