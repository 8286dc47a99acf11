//! Greetings (SPEC §7): at most `max_per_day` short, personal messages a
//! day, at random times inside active hours, never two within `min_gap`.
//!
//! The times of a day are drawn once, when its active hours begin (or when
//! the daemon starts inside them), and kept in the database, so a restart
//! keeps the plan instead of drawing again. Each planned time is claimed as
//! a run with that time as `scheduled_for` (UNIQUE per routine and instant),
//! so it is sent at most once. Before sending, the limits are checked again
//! against what was actually sent: greetings sent by hand count, and a
//! config changed during the day is obeyed.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::HeartbeatError;
use crate::clock::{Clock, sleep_for};
use crate::config::{Config, Window};
use crate::engine::{Cancel, Engine, RunOptions, RunReport};
use crate::routine::reserved::GREETING as NAME;
use crate::routine::{AgentOverrides, Overlap, Routine, RoutineFile, TriggerContext};
use crate::store::{RunKind, RunStatus, StoreError};

/// How late a planned greeting may still be sent (the daemon was busy or
/// just started). One later than this was missed: recorded, not sent.
pub const GRACE: Duration = Duration::minutes(15);

/// Why a greeting was not sent (column `reason` of its skipped run).
pub mod reason {
    /// Its time passed while the daemon was not running.
    pub const MISSED: &str = "missed";
    /// `max_per_day` greetings were already sent that day.
    pub const LIMIT: &str = "limit";
    /// The last greeting was sent less than `min_gap` before.
    pub const MIN_GAP: &str = "min_gap";
    /// Outside active hours (a greeting asked for by hand).
    pub const QUIET: &str = "quiet";
}

/// The window of local date `day` as instants: it starts on `day` and ends
/// the same day, or the next when it crosses midnight.
pub fn bounds(window: Window, zone: Tz, day: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = local_instant(zone, day, window.start);
    let end_day = if window.end <= window.start { day.succ_opt().unwrap_or(day) } else { day };
    (start, local_instant(zone, end_day, window.end))
}

/// The first instant of a local time: the earlier of an ambiguous one (the
/// hour repeated in autumn), and for one that does not exist (the hour
/// skipped in spring) the first existing local time after it.
fn local_instant(zone: Tz, day: NaiveDate, time: NaiveTime) -> DateTime<Utc> {
    let mut local = day.and_time(time);
    for _ in 0..(4 * 26) {
        if let Some(t) = zone.from_local_datetime(&local).earliest() {
            return t.with_timezone(&Utc);
        }
        local += Duration::minutes(15);
    }
    Utc.from_utc_datetime(&day.and_time(time))
}

/// Up to `n` instants in `[from, to)`, whole seconds, at least `gap` apart,
/// drawn uniformly among all such choices; fewer when fewer fit. Draw `n`
/// points in the room left after the gaps, sort them, and push the i-th
/// later by i gaps.
pub fn spread(from: DateTime<Utc>, to: DateTime<Utc>, n: u32, gap: Duration, rng: &mut impl Rng) -> Vec<DateTime<Utc>> {
    let span = (to - from).num_seconds();
    if span <= 0 || n == 0 {
        return Vec::new();
    }
    let gap = gap.num_seconds().max(0);
    let fit = if gap == 0 { i64::from(n) } else { (span - 1) / gap + 1 };
    let n = i64::from(n).min(fit);
    let room = span - 1 - (n - 1) * gap;
    let mut points: Vec<i64> = (0..n).map(|_| rng.random_range(0..=room)).collect();
    points.sort_unstable();
    points.iter().zip(0..).map(|(p, i)| from + Duration::seconds(p + i * gap)).collect()
}

/// The planned greetings of `day`: the kept plan, or one drawn now from
/// `now` (or the window's start) on, also keeping `min_gap` after the last
/// greeting sent, and kept.
fn plan(engine: &Engine, window: Window, day: NaiveDate, now: DateTime<Utc>) -> Result<Vec<DateTime<Utc>>, StoreError> {
    if let Some(slots) = engine.store.greeting_plan(day)? {
        return Ok(slots);
    }
    let settings = &engine.config.heartbeat.greeting;
    let gap = Duration::from_std(settings.min_gap().get()).unwrap_or(Duration::MAX);
    let (start, end) = bounds(window, engine.config.timezone, day);
    let mut from = start.max(now);
    if let Some(last) = engine.store.last_greeting_sent()? {
        from = from.max(last.checked_add_signed(gap).unwrap_or(end));
    }
    let slots = spread(from, end, settings.max_per_day(), gap, &mut rand::rng());
    tracing::info!(day = %day, slots = ?slots.iter().map(|s| s.with_timezone(&engine.config.timezone).format("%H:%M:%S").to_string()).collect::<Vec<_>>(), "Greetings planned.");
    engine.store.save_greeting_plan(day, &slots)
}

/// Sends every planned greeting that is due at `now`, records the missed
/// ones, and returns when to look again.
pub async fn step(engine: &Engine, now: DateTime<Utc>) -> Result<DateTime<Utc>, HeartbeatError> {
    let window = engine.config.heartbeat.greeting_window()?;
    let zone = engine.config.timezone;
    let today = now.with_timezone(&zone).date_naive();
    let mut wake = now + Duration::days(1);
    for day in [today.pred_opt(), Some(today), today.succ_opt()].into_iter().flatten() {
        let (start, end) = bounds(window, zone, day);
        if now < start {
            wake = wake.min(start);
            continue;
        }
        // A day whose window has ended is only looked at for what its
        // plan left unsent; no plan is drawn for it.
        let slots = if now < end {
            plan(engine, window, day, now)?
        } else {
            engine.store.greeting_plan(day)?.unwrap_or_default()
        };
        if slots.is_empty() {
            continue;
        }
        let recorded: Vec<DateTime<Utc>> = engine.store.greeting_runs(start, end)?.iter().map(|g| g.at).collect();
        for slot in slots.into_iter().filter(|s| !recorded.contains(s)) {
            if slot > now {
                wake = wake.min(slot);
            } else if now - slot > GRACE {
                let local = slot.with_timezone(&zone).format("%H:%M %Z");
                let why = format!("the greeting planned for {local} passed while the daemon was not running");
                let missed = super::Skipped {
                    kind: RunKind::Greeting,
                    trigger: NAME,
                    scheduled_for: Some(slot),
                    reason: reason::MISSED,
                };
                missed.record(engine, &why)?;
            } else {
                let report = send_planned(engine, slot, (start, end)).await?;
                if let Some(r) = report {
                    tracing::info!(run_id = r.run_id, status = %r.status, "Greeting.");
                }
                // Look again at once, with the time after the run.
                return Ok(now);
            }
        }
    }
    Ok(wake)
}

/// Claims the planned greeting at `slot` and sends it if the limits allow;
/// `None` when another process or an earlier attempt claimed it.
async fn send_planned(
    engine: &Engine,
    slot: DateTime<Utc>,
    day: (DateTime<Utc>, DateTime<Utc>),
) -> Result<Option<RunReport>, HeartbeatError> {
    let trigger = TriggerContext::Greeting { scheduled_for: slot };
    let run_id = match engine.queue_run(NAME, RunKind::Greeting, &trigger) {
        Ok(id) => id,
        Err(StoreError::DuplicateFire { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if let Some((why, text)) = refusal(engine, slot, day, run_id)? {
        engine.store.skip_queued(run_id, why, &text)?;
        return Ok(Some(super::skipped_report(NAME, run_id, text)));
    }
    execute(engine, run_id, trigger, slot).await.map(Some)
}

/// Why a greeting at `at` may not be sent, checked against the greetings
/// actually sent: the day's limit and the gap since the last one.
fn refusal(
    engine: &Engine,
    at: DateTime<Utc>,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
    this: i64,
) -> Result<Option<(&'static str, String)>, HeartbeatError> {
    let settings = &engine.config.heartbeat.greeting;
    let sent = engine
        .store
        .greeting_runs(start, end)?
        .iter()
        .filter(|g| g.id != this && matches!(g.status, RunStatus::Succeeded | RunStatus::Running))
        .count();
    if sent >= usize::try_from(settings.max_per_day()).unwrap_or(usize::MAX) {
        let text = format!("{sent} greeting(s) were already sent today (max_per_day: {})", settings.max_per_day());
        return Ok(Some((reason::LIMIT, text)));
    }
    let gap = Duration::from_std(settings.min_gap().get()).unwrap_or(Duration::MAX);
    if let Some(last) = engine.store.last_greeting_sent()? {
        if at < last.checked_add_signed(gap).unwrap_or(DateTime::<Utc>::MAX_UTC) {
            let local = last.with_timezone(&engine.config.timezone).format("%H:%M %Z");
            let text =
                format!("the last greeting was sent at {local}, less than min_gap ({}) before", settings.min_gap());
            return Ok(Some((reason::MIN_GAP, text)));
        }
    }
    Ok(None)
}

/// One greeting now, by hand (`routines heartbeat --greeting`). It counts
/// toward the day's limit; unless `force`, it is refused outside active
/// hours, over the limit or within `min_gap` of the last one (recorded as
/// skipped with the reason).
pub async fn greet_now(engine: &Engine, now: DateTime<Utc>, force: bool) -> Result<RunReport, HeartbeatError> {
    let window = engine.config.heartbeat.greeting_window()?;
    let zone = engine.config.timezone;
    let local = now.with_timezone(&zone);
    let run_id = engine.queue_run(NAME, RunKind::Greeting, &TriggerContext::Manual)?;
    if !force {
        let refused = if window.contains(local.time()) {
            let mut day = local.date_naive();
            if window.end <= window.start && local.time() < window.end {
                day = day.pred_opt().unwrap_or(day);
            }
            refusal(engine, now, bounds(window, zone, day), run_id)?
        } else {
            let text = format!(
                "outside the greeting hours ({}–{} {}); it is {}",
                window.start.format("%H:%M"),
                window.end.format("%H:%M"),
                zone.name(),
                local.format("%H:%M %Z")
            );
            Some((reason::QUIET, text))
        };
        if let Some((why, text)) = refused {
            engine.store.skip_queued(run_id, why, &text)?;
            return Ok(super::skipped_report(NAME, run_id, text));
        }
    }
    execute(engine, run_id, TriggerContext::Manual, now).await
}

/// Runs the agent for greeting `run_id`, due at `at`, and delivers the greeting.
async fn execute(
    engine: &Engine,
    run_id: i64,
    trigger: TriggerContext,
    at: DateTime<Utc>,
) -> Result<RunReport, HeartbeatError> {
    let routine = routine(&engine.config);
    let opts = RunOptions { kind: Some(RunKind::Greeting), vars: vars(engine, at)?, ..RunOptions::default() };
    Ok(engine.execute(&routine, run_id, trigger, 1, &opts, None, &Cancel::default()).await?)
}

/// The greeting prompt. What the user has been working on comes from
/// memory (their conversations and lasting facts, not the routines' own
/// notes), and the previous greeting is shown so the next one differs.
const PROMPT: &str = "\
It is {{ vars.part_of_day }} ({{ vars.local_time }}). Write a short, warm greeting for the \
{{ vars.part_of_day }} to the user, like a colleague saying hello in passing: one or two sentences.
{% if vars.recent %}
Lately the user has been working on:
{{ vars.recent }}

Refer to one of these in your own words, for example: \"Hi! Hope the database migration is going \
smoothly.\"
{% else %}For example: \"Hi! Hope your week is going well.\"
{% endif %}{% if vars.previous %}
Do not repeat your previous greeting: \"{{ vars.previous }}\"
{% endif %}
This is a greeting, not a conversation: no questions, no offers of help. Reply with the greeting only.";

/// Memories a greeting may mention: the newest that are about the user
/// (not routine approaches or routine turns, which are the agent's own).
const RECENT: usize = 6;

fn vars(engine: &Engine, at: DateTime<Utc>) -> Result<BTreeMap<String, String>, HeartbeatError> {
    let now = at.with_timezone(&engine.config.timezone);
    let recent: Vec<String> = engine
        .memory
        .list(None, 100)?
        .into_iter()
        .filter(|m| !m.key.starts_with("routine:") && !m.key.starts_with("turn:routine:"))
        .take(RECENT)
        .map(|m| format!("- {}", clip(&m.content, 240)))
        .collect();
    let previous = engine
        .store
        .list_runs(&crate::store::RunFilter { routine: Some(NAME), status: Some(RunStatus::Succeeded), limit: 1 })?
        .into_iter()
        .find_map(|r| r.output)
        .map(|o| clip(&o, 300))
        .unwrap_or_default();
    Ok(BTreeMap::from([
        ("local_time".to_string(), now.format("%A %H:%M").to_string()),
        ("part_of_day".to_string(), part_of_day(now.hour()).to_string()),
        ("recent".to_string(), recent.join("\n")),
        ("previous".to_string(), previous),
    ]))
}

/// What a greeting at `hour` o'clock says good … to.
fn part_of_day(hour: u32) -> &'static str {
    match hour {
        5..=11 => "morning",
        12..=16 => "afternoon",
        17..=21 => "evening",
        _ => "night",
    }
}

fn clip(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// The routine a greeting runs as: no tools, at most two model calls, the
/// heartbeat's deliveries.
fn routine(config: &Config) -> Routine {
    let spec = RoutineFile {
        prompt: Some(PROMPT.into()),
        timeout: crate::config::Duration::from_secs(2 * 60),
        overlap: Overlap::Allow,
        agent: AgentOverrides { tools: Some(Vec::new()), max_iterations: Some(2), ..AgentOverrides::default() },
        ..RoutineFile::default()
    };
    super::builtin_routine(config, NAME, spec)
}

/// Sends the planned greetings until `stop`, on the injected clock.
pub async fn run_loop(engine: Arc<Engine>, clock: Arc<dyn Clock>, stop: CancellationToken) {
    loop {
        let next = match step(&engine, clock.now()).await {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e, "The greetings could not be planned or sent.");
                clock.now() + Duration::minutes(1)
            }
        };
        while clock.now() < next {
            tokio::select! {
                _ = tokio::time::sleep(sleep_for(clock.now(), Some(next))) => {}
                _ = stop.cancelled() => return,
            }
        }
        if stop.is_cancelled() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn spread_keeps_the_gap_and_the_window_and_draws_fewer_when_fewer_fit() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let (from, to) = (t("2026-03-02T08:00:00Z"), t("2026-03-02T22:00:00Z"));
        let gap = Duration::hours(4);
        let mut firsts = Vec::new();
        for _ in 0..2000 {
            let s = spread(from, to, 3, gap, &mut rng);
            assert_eq!(s.len(), 3);
            assert!(s[0] >= from && s[2] < to, "{s:?}");
            assert!(s.windows(2).all(|w| w[1] - w[0] >= gap), "{s:?}");
            assert!(s.iter().all(|x| x.timestamp_subsec_nanos() == 0));
            firsts.push(s[0]);
        }
        // Random, not fixed: the first greeting lands at many times.
        firsts.sort();
        firsts.dedup();
        assert!(firsts.len() > 1000, "{}", firsts.len());
        // 14 h hold at most 4 greetings 4 h apart.
        assert_eq!(spread(from, to, 9, gap, &mut rng).len(), 4);
        assert_eq!(spread(from, from + Duration::hours(4), 2, gap, &mut rng).len(), 1);
        assert!(spread(to, from, 2, gap, &mut rng).is_empty());
        assert!(spread(from, to, 0, gap, &mut rng).is_empty());
        assert_eq!(spread(from, to, 5, Duration::zero(), &mut rng).len(), 5);
    }

    #[test]
    fn a_window_may_cross_midnight_and_daylight_saving_changes() {
        let tm = |s| NaiveTime::parse_from_str(s, "%H:%M").unwrap();
        let zone: Tz = "Europe/Berlin".parse().unwrap();
        let night = Window { start: tm("22:00"), end: tm("06:00") };
        let day = NaiveDate::from_ymd_opt(2026, 3, 28).unwrap();
        // The night the clocks go forward is an hour shorter.
        assert_eq!(bounds(night, zone, day), (t("2026-03-28T21:00:00Z"), t("2026-03-29T04:00:00Z")));
        // 02:30 does not exist on 29 March in Berlin: the window starts at 03:00 CEST.
        let early = Window { start: tm("02:30"), end: tm("10:00") };
        let spring = NaiveDate::from_ymd_opt(2026, 3, 29).unwrap();
        assert_eq!(bounds(early, zone, spring).0, t("2026-03-29T01:00:00Z"));
        // 02:30 happens twice on 25 October: the first one counts.
        let autumn = NaiveDate::from_ymd_opt(2026, 10, 25).unwrap();
        assert_eq!(bounds(early, zone, autumn).0, t("2026-10-25T00:30:00Z"));
    }
}
