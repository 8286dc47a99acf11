//! When time triggers fire: cron (croner, in the trigger's IANA zone),
//! `every` (aligned to multiples of the interval since the Unix epoch, so
//! every process computes the same instants), and `at` (once).
//!
//! The one home of this arithmetic: `routines list` and `next`, the
//! daemon's timer loop and its catch-up, and the heartbeat's beats all
//! compute their instants here.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;

use super::{Routine, TimeKind, TimeTrigger};

/// Cron instants looked at per range; a longer range (a per-second
/// expression over weeks of downtime) is cut there.
const MAX_STEPS: u64 = 2_000_000;

/// One instant a time trigger fires at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Occurrence {
    /// In the zone of the trigger: a cron trigger's own, else the routine's.
    pub at: DateTime<Tz>,
    pub kind: TimeKind,
}

impl Occurrence {
    /// The instant in UTC.
    pub fn utc(&self) -> DateTime<Utc> {
        self.at.with_timezone(&Utc)
    }
}

/// The instants of an `every` trigger: the multiples of its interval since
/// the Unix epoch (at least 1 ms apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Every {
    step_ms: i64,
}

impl Every {
    pub fn new(interval: std::time::Duration) -> Every {
        Every { step_ms: i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1) }
    }

    /// The first instant strictly after `t`.
    pub fn next_after(self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.instant(self.first_after(t))
    }

    /// The instants strictly after `t`, earliest first.
    fn after(self, t: DateTime<Utc>) -> impl Iterator<Item = DateTime<Utc>> {
        (self.first_after(t)..).map_while(move |k| self.instant(k))
    }

    /// The number of the first multiple strictly after `t`.
    fn first_after(self, t: DateTime<Utc>) -> i64 {
        t.timestamp_millis().div_euclid(self.step_ms) + 1
    }

    /// The number of the last multiple at or before `t`.
    fn last_until(self, t: DateTime<Utc>) -> i64 {
        t.timestamp_millis().div_euclid(self.step_ms)
    }

    /// The `k`-th multiple, if it is a representable instant.
    fn instant(self, k: i64) -> Option<DateTime<Utc>> {
        DateTime::<Utc>::from_timestamp_millis(k.saturating_mul(self.step_ms))
    }
}

/// The instants of `cron` in `zone` strictly after `after`, earliest first.
fn cron_after(cron: Cron, zone: Tz, after: DateTime<Utc>) -> impl Iterator<Item = DateTime<Tz>> {
    let mut from = after.with_timezone(&zone);
    std::iter::from_fn(move || {
        let next = cron.find_next_occurrence(&from, false).ok()?;
        from = next;
        Some(next)
    })
}

/// The next `n` fires of a routine's time triggers strictly after `after`,
/// earliest first, without duplicates (of two triggers firing at the same
/// instant, the first listed is shown).
pub fn next_fires(routine: &Routine, after: DateTime<Utc>, n: usize) -> Vec<Occurrence> {
    let mut fires: Vec<Occurrence> = Vec::new();
    for t in &routine.time_triggers {
        match t {
            TimeTrigger::Cron { zone, .. } => {
                let Some(cron) = t.cron() else { continue };
                fires.extend(cron_after(cron, *zone, after).take(n).map(|at| Occurrence { at, kind: TimeKind::Cron }));
            }
            TimeTrigger::Every(every) => {
                let local =
                    |at: DateTime<Utc>| Occurrence { at: at.with_timezone(&routine.zone), kind: TimeKind::Every };
                fires.extend(Every::new(*every).after(after).take(n).map(local));
            }
            TimeTrigger::At(at) => {
                if at.with_timezone(&Utc) > after {
                    fires.push(Occurrence { at: at.with_timezone(&routine.zone), kind: TimeKind::At });
                }
            }
        }
    }
    fires.sort_by_key(Occurrence::utc);
    fires.dedup_by_key(|f| f.utc());
    fires.truncate(n);
    fires
}

/// The first instant of `routine` strictly after `after`.
pub fn next_after(routine: &Routine, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    next_fires(routine, after, 1).first().map(Occurrence::utc)
}

/// The instants of `routine`'s time triggers in `(after, until]`, oldest
/// first, without duplicates (of two triggers firing at the same instant,
/// the kind first by name is kept): at most the newest `keep`, and how many
/// there are in all.
pub fn between(routine: &Routine, after: DateTime<Utc>, until: DateTime<Utc>, keep: usize) -> (Vec<Occurrence>, u64) {
    if until <= after {
        return (Vec::new(), 0);
    }
    let mut all: Vec<Occurrence> = Vec::new();
    let mut total: u64 = 0;
    for t in &routine.time_triggers {
        match t {
            TimeTrigger::Every(every) => {
                // Counted, not walked: a per-second trigger over weeks of
                // downtime has millions of instants.
                let every = Every::new(*every);
                let (first, last) = (every.first_after(after), every.last_until(until));
                if last < first {
                    continue;
                }
                let count = u64::try_from(last - first + 1).unwrap_or(u64::MAX);
                total = total.saturating_add(count);
                let from = last.saturating_sub(i64::try_from(keep.min(1_000_000)).unwrap_or(i64::MAX) - 1).max(first);
                for k in from..=last {
                    if let Some(at) = every.instant(k) {
                        all.push(Occurrence { at: at.with_timezone(&routine.zone), kind: TimeKind::Every });
                    }
                }
            }
            TimeTrigger::Cron { zone, .. } => {
                let Some(cron) = t.cron() else { continue };
                let mut found: Vec<Occurrence> = Vec::new();
                let mut count: u64 = 0;
                for at in cron_after(cron, *zone, after) {
                    if at.with_timezone(&Utc) > until || count >= MAX_STEPS {
                        break;
                    }
                    count += 1;
                    found.push(Occurrence { at, kind: TimeKind::Cron });
                    if found.len() > keep.saturating_mul(2).max(1024) {
                        found.drain(..found.len() - keep);
                    }
                }
                total = total.saturating_add(count);
                all.extend(found);
            }
            TimeTrigger::At(at) => {
                let utc = at.with_timezone(&Utc);
                if utc > after && utc <= until {
                    total += 1;
                    all.push(Occurrence { at: at.with_timezone(&routine.zone), kind: TimeKind::At });
                }
            }
        }
    }
    all.sort();
    let before = all.len();
    all.dedup_by_key(|i| i.utc());
    total = total.saturating_sub((before - all.len()) as u64);
    if all.len() > keep {
        all.drain(..all.len() - keep);
    }
    (all, total)
}

/// The shortest time between two fires of `triggers` after `after`, looking at the first `n`
/// instants of each (across triggers, only as far as all of them were followed): `None` when
/// they fire fewer than twice. Instants that coincide fire once.
pub fn shortest_gap(triggers: &[TimeTrigger], after: DateTime<Utc>, n: usize) -> Option<chrono::TimeDelta> {
    let lists: Vec<Vec<DateTime<Utc>>> = triggers
        .iter()
        .map(|t| match t {
            TimeTrigger::Cron { zone, .. } => t
                .cron()
                .map(|cron| cron_after(cron, *zone, after).take(n).map(|at| at.with_timezone(&Utc)).collect())
                .unwrap_or_default(),
            TimeTrigger::Every(every) => Every::new(*every).after(after).take(n).collect(),
            TimeTrigger::At(at) => Some(at.with_timezone(&Utc)).filter(|at| *at > after).into_iter().collect(),
        })
        .collect();
    let gap = |fires: &[DateTime<Utc>]| fires.windows(2).map(|w| w[1] - w[0]).min();
    let own = lists.iter().filter_map(|l| gap(l)).min();
    // A list cut at `n` says nothing past its last instant.
    let end = lists.iter().filter(|l| l.len() >= n).filter_map(|l| l.last().copied()).min();
    let mut all: Vec<DateTime<Utc>> = lists.concat();
    all.retain(|at| end.is_none_or(|end| *at <= end));
    all.sort();
    all.dedup();
    [own, gap(&all)].into_iter().flatten().min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap()
    }

    #[test]
    fn every_counts_multiples_of_its_interval_since_the_epoch() {
        let every = Every::new(std::time::Duration::from_secs(3600));
        assert_eq!(every.next_after(t("2026-03-02T08:00:00Z")), Some(t("2026-03-02T09:00:00Z")));
        assert_eq!(every.next_after(t("2026-03-02T08:59:59Z")), Some(t("2026-03-02T09:00:00Z")));
        let after: Vec<_> = every.after(t("2026-03-02T08:30:00Z")).take(2).collect();
        assert_eq!(after, [t("2026-03-02T09:00:00Z"), t("2026-03-02T10:00:00Z")]);
        // A zero interval is one millisecond, never a division by zero.
        let tiny = Every::new(std::time::Duration::ZERO);
        assert_eq!(tiny.next_after(t("2026-03-02T08:00:00Z")), Some(t("2026-03-02T08:00:00.001Z")));
    }

    #[test]
    fn the_shortest_gap_is_found_within_and_across_triggers() {
        let cron = |expr: &str| TimeTrigger::Cron { expr: expr.into(), zone: Tz::UTC };
        let every = |s: u64| TimeTrigger::Every(std::time::Duration::from_secs(s));
        let from = t("2026-03-02T08:00:00Z");
        let gap = |ts: &[TimeTrigger]| shortest_gap(ts, from, 512).map(|d| d.num_seconds());
        assert_eq!(gap(&[cron("*/5 * * * *")]), Some(300));
        assert_eq!(gap(&[cron("* * * * * *")]), Some(1));
        assert_eq!(gap(&[cron("0 9 * * *")]), Some(86_400));
        // A burst once a year is found: the first fires from now reach it.
        assert_eq!(gap(&[cron("*/2 0 1 1 *")]), Some(120));
        // Two minutes apart only across the end of the day.
        assert_eq!(gap(&[cron("59 23,0 * * *")]), Some(3600));
        assert_eq!(gap(&[cron("0,58 0,23 * * *")]), Some(120));
        assert_eq!(gap(&[every(3600)]), Some(3600));
        // Two slow triggers that fire close together.
        assert_eq!(gap(&[every(960), every(900)]), Some(60));
        assert_eq!(gap(&[every(900), every(900)]), Some(900), "the same instant fires once");
        let at = |s: &str| TimeTrigger::At(DateTime::parse_from_rfc3339(s).unwrap());
        assert_eq!(gap(&[at("2026-03-03T09:00:00Z"), at("2026-03-03T09:00:01Z")]), Some(1));
        assert_eq!(gap(&[at("2026-03-03T09:00:00Z")]), None);
    }
}
