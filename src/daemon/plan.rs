//! What the timer loop does with the instants of a routine that came due:
//! which fire, and which are missed, with why (SPEC §5 catch-up).
//!
//! Rules, for the instants in `(last, now]` (`last` is the newest instant
//! already handled, persisted in `schedule_state`):
//! - the newest one fires if it is at most [`ON_TIME`] late, whatever the
//!   policy: the timer loop woke for it;
//! - the others, and a newest one that is later than that, were missed
//!   (daemon down, machine asleep) and `catch_up` decides: `latest` fires
//!   the newest once, `all` fires each (the newest [`MAX_CATCH_UP`]),
//!   `none` fires none; only instants inside `catch_up_window` may fire;
//! - every instant that does not fire is recorded as missed, each with a
//!   row of its own up to [`MAX_RECORDED`] per gap; beyond that the oldest
//!   are only counted.

use chrono::{DateTime, Utc};

use crate::routine::{CatchUp, Routine, TimeTrigger};

/// How late an instant may be and still count as on time.
pub const ON_TIME: std::time::Duration = std::time::Duration::from_secs(60);
/// `catch_up: all` runs at most this many missed instants (SPEC §5).
pub const MAX_CATCH_UP: usize = 100;
/// Missed instants recorded one by one per gap; older ones are counted.
pub const MAX_RECORDED: usize = 1000;
/// Cron instants looked at per range; a longer range (a per-second
/// expression over weeks of downtime) is cut there.
const MAX_STEPS: u64 = 2_000_000;

/// One instant of a time trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant {
    pub at: DateTime<Utc>,
    /// `cron`, `every` or `at`.
    pub kind: &'static str,
}

/// The decision for one routine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Instants to fire, oldest first.
    pub fire: Vec<Instant>,
    /// Instants to record as missed, oldest first.
    pub missed: Vec<Instant>,
    /// Missed instants beyond [`MAX_RECORDED`], only counted.
    pub unrecorded: u64,
    /// The newest instant handled, to persist as `last_scheduled`.
    pub newest: Option<DateTime<Utc>>,
}

/// Decides the instants of `routine` in `(last, now]`.
pub fn plan(routine: &Routine, last: DateTime<Utc>, now: DateTime<Utc>) -> Plan {
    let window = chrono::Duration::from_std(routine.spec.catch_up_window.get()).unwrap_or(chrono::Duration::MAX);
    let window_start = now.checked_sub_signed(window).unwrap_or(DateTime::<Utc>::MIN_UTC).max(last);
    // Instants older than the window never fire: count them.
    let (mut old, old_count) = instants(routine, last, window_start, MAX_RECORDED);
    let (recent, _) = instants(routine, window_start, now, usize::MAX);
    let mut plan = Plan { newest: recent.last().or(old.last()).map(|i| i.at), ..Plan::default() };
    let Some(newest) = recent.last().copied() else {
        plan.unrecorded = old_count.saturating_sub(old.len() as u64);
        plan.missed = old;
        return plan;
    };
    let on_time = (now - newest.at).to_std().map(|late| late <= ON_TIME).unwrap_or(true);
    let fire_count = match routine.spec.catch_up {
        CatchUp::All => MAX_CATCH_UP.min(recent.len()),
        CatchUp::Latest => 1,
        CatchUp::None => usize::from(on_time),
    };
    let split = recent.len() - fire_count;
    plan.fire = recent[split..].to_vec();
    let mut missed = recent[..split].to_vec();
    // Keep the newest MAX_RECORDED missed instants as rows.
    old.append(&mut missed);
    let total_missed = old_count + split as u64;
    if old.len() > MAX_RECORDED {
        old.drain(..old.len() - MAX_RECORDED);
    }
    plan.unrecorded = total_missed.saturating_sub(old.len() as u64);
    plan.missed = old;
    plan
}

/// The instants of `routine`'s time triggers in `(after, until]`, oldest
/// first, without duplicates: at most the newest `keep`, and how many
/// there are in all.
pub fn instants(routine: &Routine, after: DateTime<Utc>, until: DateTime<Utc>, keep: usize) -> (Vec<Instant>, u64) {
    if until <= after {
        return (Vec::new(), 0);
    }
    let mut all: Vec<Instant> = Vec::new();
    let mut total: u64 = 0;
    for t in &routine.time_triggers {
        match t {
            TimeTrigger::Every(every) => {
                let step = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
                let first = after.timestamp_millis().div_euclid(step) + 1;
                let last = until.timestamp_millis().div_euclid(step);
                if last < first {
                    continue;
                }
                let count = u64::try_from(last - first + 1).unwrap_or(u64::MAX);
                total = total.saturating_add(count);
                let from = last.saturating_sub(i64::try_from(keep.min(1_000_000)).unwrap_or(i64::MAX) - 1).max(first);
                for k in from..=last {
                    if let Some(at) = DateTime::<Utc>::from_timestamp_millis(k.saturating_mul(step)) {
                        all.push(Instant { at, kind: "every" });
                    }
                }
            }
            TimeTrigger::Cron { zone, .. } => {
                let Some(cron) = t.cron() else { continue };
                let mut from = after.with_timezone(zone);
                let mut found: Vec<Instant> = Vec::new();
                let mut count: u64 = 0;
                while let Ok(next) = cron.find_next_occurrence(&from, false) {
                    let at = next.with_timezone(&Utc);
                    if at > until || count >= MAX_STEPS {
                        break;
                    }
                    count += 1;
                    found.push(Instant { at, kind: "cron" });
                    if found.len() > keep.saturating_mul(2).max(1024) {
                        found.drain(..found.len() - keep);
                    }
                    from = next;
                }
                total = total.saturating_add(count);
                all.extend(found);
            }
            TimeTrigger::At(at) => {
                let at = at.with_timezone(&Utc);
                if at > after && at <= until {
                    total += 1;
                    all.push(Instant { at, kind: "at" });
                }
            }
        }
    }
    all.sort();
    let before = all.len();
    all.dedup_by_key(|i| i.at);
    total = total.saturating_sub((before - all.len()) as u64);
    if all.len() > keep {
        all.drain(..all.len() - keep);
    }
    (all, total)
}

/// The first instant of `routine` strictly after `after`.
pub fn next_after(routine: &Routine, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    crate::routine::schedule::next_fires(routine, after, 1).first().map(|f| f.at.with_timezone(&Utc))
}
