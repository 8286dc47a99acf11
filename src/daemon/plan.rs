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

use crate::routine::schedule::{self, Occurrence};
use crate::routine::{CatchUp, Routine};

/// How late an instant may be and still count as on time.
pub const ON_TIME: std::time::Duration = std::time::Duration::from_secs(60);
/// `catch_up: all` runs at most this many missed instants (SPEC §5).
pub const MAX_CATCH_UP: usize = 100;
/// Missed instants recorded one by one per gap; older ones are counted.
pub const MAX_RECORDED: usize = 1000;

/// The decision for one routine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Instants to fire, oldest first.
    pub fire: Vec<Occurrence>,
    /// Instants to record as missed, oldest first.
    pub missed: Vec<Occurrence>,
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
    let (mut old, old_count) = schedule::between(routine, last, window_start, MAX_RECORDED);
    let (recent, _) = schedule::between(routine, window_start, now, usize::MAX);
    let mut plan = Plan { newest: recent.last().or(old.last()).map(Occurrence::utc), ..Plan::default() };
    let Some(newest) = recent.last().copied() else {
        plan.unrecorded = old_count.saturating_sub(old.len() as u64);
        plan.missed = old;
        return plan;
    };
    let on_time = (now - newest.utc()).to_std().map(|late| late <= ON_TIME).unwrap_or(true);
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
