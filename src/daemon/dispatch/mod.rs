//! From an accepted fire to a finished run: overlap per routine, the
//! concurrency limit across routines, jitter, and cancellation.
//!
//! Every accepted fire is first a `queued` row in the database (the durable
//! queue). Only a window of them lives in memory (`window.rs`): at most
//! `limits.queue_window` fires, each a [`QueuedFire`] without its trigger's
//! context, waiting for the routine's earlier run (`overlap: queue`/`replace`,
//! catch-up) and then for a slot of `limits.max_concurrent_runs` (`fire.rs`).
//! The others wait only as rows and are read oldest first, by run id, as places
//! free up; a jittered fire is read once its `not_before` has passed. A fire's
//! trigger, a webhook's body included, is read back from the database when its
//! run starts. A daemon that stops leaves fires that did not start `queued`;
//! the next one adopts them.

mod fire;
mod runlog;
mod takeover;
#[cfg(test)]
mod tests;
mod window;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::metrics::Metrics;
use crate::clock::Clock;
use crate::engine::{Cancel, Engine};
use crate::routine::overlap::{self, Activity, Admission};
use crate::routine::{Overlap, Routine, TriggerContext};
use crate::store::{
    FireClaim, NewFire, NewRun, PausedFire, QueuedFire, RunKind, RunOutcome, RunStatus, StoreError, reason,
};
use window::{Lane, State};

/// Why a queued fire of a routine that went away is recorded skipped.
const REMOVED_WHY: &str = "the routine was removed or disabled before this fire started";

/// Why a waiting fire replaced by a newer one is recorded skipped.
const REPLACED_WHY: &str = "replaced by a newer fire before it started";

/// A fire arriving at the dispatcher, from the timer loop, a file watcher
/// or the webhook listener.
#[derive(Debug, Clone)]
pub struct IncomingFire {
    pub routine: String,
    /// What fired it; claimed with it as the run's trigger and context.
    pub trigger: TriggerContext,
    /// One of several instants caught up at once: never skipped or
    /// replaced by `overlap`; they run one after another.
    pub catch_up: bool,
    /// The identity of a fire without an instant (a file event's path, size and mtime): a
    /// second fire with the same key, from this node or another, is a duplicate.
    pub key: Option<String>,
}

/// What became of a fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// Queued as this run.
    Queued(i64),
    /// Recorded as skipped (overlap, or the routine is paused) as this run.
    Skipped(i64),
    /// The instant was already claimed: nothing to do.
    Duplicate,
}

/// Shared state of the dispatcher.
pub struct Dispatcher {
    pub engine: Arc<Engine>,
    pub routines: RwLock<HashMap<String, Arc<Routine>>>,
    clock: Arc<dyn Clock>,
    /// The routines' lanes, the window and the slots (see `window.rs`).
    state: Mutex<State>,
    changed: Notify,
    /// Queued fires held in memory at most.
    window: usize,
    /// The store is shared with other nodes (PostgreSQL, SPEC §12): every queued fire enters
    /// the window through the pump's claim, and the pump also reads at intervals, for fires
    /// other nodes queued or gave back.
    cluster: bool,
    /// In a cluster: the fires queued in the database, as last read, plus those queued here since.
    shared_depth: AtomicUsize,
    /// The routines with `overlap: allow`, whose fires several nodes may run at once.
    parallel: RwLock<Vec<String>>,
    /// Wakes the task that reads fires from the database into the window.
    pump: Notify,
    pump_started: AtomicBool,
    /// Set when the daemon stops: fires that have not started stay queued.
    closing: CancellationToken,
    executing: AtomicUsize,
    /// Fires accepted that have not started (or been set aside) yet, in memory or not.
    pending: AtomicUsize,
    pub metrics: Metrics,
    pub accepted: AtomicU64,
    /// Every fire put in the window, as its task holds it.
    #[cfg(test)]
    spawned: Mutex<Vec<QueuedFire>>,
}

impl Dispatcher {
    /// A dispatcher running at most `max_concurrent` runs at once, holding at most
    /// `limits.queue_window` queued fires of the engine's config in memory.
    pub fn new(engine: Arc<Engine>, clock: Arc<dyn Clock>, max_concurrent: usize) -> Arc<Self> {
        let window = engine.config.limits.queue_window();
        let cluster = engine.store.is_shared();
        Arc::new(Dispatcher {
            engine,
            routines: RwLock::new(HashMap::new()),
            clock,
            state: Mutex::new(State::new(max_concurrent)),
            changed: Notify::new(),
            window,
            cluster,
            parallel: RwLock::new(Vec::new()),
            shared_depth: AtomicUsize::new(0),
            pump: Notify::new(),
            pump_started: AtomicBool::new(false),
            closing: CancellationToken::new(),
            executing: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            metrics: Metrics::default(),
            accepted: AtomicU64::new(0),
            #[cfg(test)]
            spawned: Mutex::new(Vec::new()),
        })
    }

    pub fn routine(&self, name: &str) -> Option<Arc<Routine>> {
        self.routines.read().ok().and_then(|r| r.get(name).cloned())
    }

    /// Fires waiting for their turn, in all routines, in memory or only in the database; in a
    /// cluster, also those of the other nodes (the database's count, read at every pass of the
    /// pump, at most a second old, plus what this node queued since).
    pub fn queue_depth(&self) -> usize {
        let mine = self.pending.load(Ordering::SeqCst);
        if self.cluster { mine.max(self.shared_depth.load(Ordering::SeqCst)) } else { mine }
    }

    /// `n` fires left the queue. Never below zero: a count that went wrong must not make the
    /// queue look full.
    fn less_pending(&self, n: usize) {
        let _ = self.pending.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |p| Some(p.saturating_sub(n)));
    }

    /// Runs executing now.
    pub fn executing(&self) -> usize {
        self.executing.load(Ordering::SeqCst)
    }

    /// Waits until every accepted fire has run or been set aside.
    pub async fn idle(&self) {
        loop {
            let notified = self.changed.notified();
            if self.state.lock().map(|s| s.lanes.is_empty()).unwrap_or(true) {
                return;
            }
            notified.await;
        }
    }

    /// Wakes every waiting fire to look again: the routines changed (a removed routine's fires
    /// give up their place). The fires of a removed routine that wait only in the database
    /// are recorded skipped at once.
    pub fn routines_changed(&self) {
        if let (Ok(routines), Ok(mut parallel)) = (self.routines.read(), self.parallel.write()) {
            *parallel =
                routines.values().filter(|r| r.spec.overlap == Overlap::Allow).map(|r| r.name.clone()).collect();
        }
        self.skip_removed();
        self.changed.notify_waiters();
    }

    /// Accepts a fire: applies `overlap` against the routine's active runs,
    /// claims the fire in the database and starts its task. Returns once
    /// the fire is durably recorded.
    pub fn accept(self: &Arc<Self>, fire: IncomingFire) -> Result<Accepted, StoreError> {
        self.accept_many(vec![fire]).pop().unwrap_or(Err(StoreError::RunNotFound(0)))
    }

    /// [`Dispatcher::accept`] for many fires, claimed in one transaction:
    /// one commit for all the fires of a tick or a batch of webhook
    /// requests. Results are in the order of `fires`; a fire sees the
    /// earlier fires of the batch as active runs of its routine.
    pub fn accept_many(self: &Arc<Self>, fires: Vec<IncomingFire>) -> Vec<Result<Accepted, StoreError>> {
        let mut results: Vec<Option<Result<Accepted, StoreError>>> = (0..fires.len()).map(|_| None).collect();
        // A database file deleted or replaced since the start takes no fire: each would be
        // acknowledged into a file nobody reads again (`db_watch.rs` then stops the daemon).
        if let Err(e) = self.engine.store.still_there() {
            let message = e.to_string();
            tracing::error!("{message}");
            return fires.iter().map(|_| Err(StoreError::Gone(message.clone()))).collect();
        }
        let Ok(mut state) = self.state.lock() else {
            return fires.iter().map(|_| Err(StoreError::Poisoned)).collect();
        };
        // Asked at every batch, so a pause or resume from another process counts at once.
        let paused = match self.engine.store.paused_routines() {
            Ok(paused) => paused,
            Err(e) => {
                let message = e.to_string();
                return fires.iter().map(|_| Err(StoreError::Batch(message.clone()))).collect();
            }
        };
        let planned = self.plan(&mut state, &fires, &paused, &mut results);
        let claimed = match self.claim_planned(&fires, &planned) {
            Ok(ids) => ids,
            Err(e) => {
                state.drop_empty_lanes(fires.iter().map(|f| f.routine.as_str()));
                drop(state);
                let message = e.to_string();
                for (i, ..) in &planned {
                    results[*i] = Some(Err(StoreError::Batch(message.clone())));
                }
                return answers(results);
            }
        };
        let (start, rearm) = self.place_claimed(&mut state, &fires, planned, claimed, &mut results);
        state.drop_empty_lanes(fires.iter().map(|f| f.routine.as_str()));
        drop(state);
        for (fire, cancel) in start {
            self.spawn(fire, cancel);
        }
        if rearm {
            self.wake_pump();
        }
        answers(results)
    }

    /// Applies `overlap` to each fire of a batch, against the routine's runs and the fires of
    /// the batch planned before it, and returns the fires to claim. A fire of an unknown or
    /// paused routine, or one that `overlap` skips, gets its result here.
    fn plan(
        &self,
        state: &mut State,
        fires: &[IncomingFire],
        paused: &HashSet<String>,
        results: &mut [Option<Result<Accepted, StoreError>>],
    ) -> Vec<Planned> {
        let mut planned: Vec<Planned> = Vec::new();
        // The places in `planned` of each routine's fires: a tick of 10,000 routines must not
        // scan the whole batch for each fire.
        let mut planned_of: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, fire) in fires.iter().enumerate() {
            let Some(routine) = self.routine(&fire.routine) else {
                results[i] = Some(Err(StoreError::RunNotFound(0)));
                continue;
            };
            if paused.contains(&routine.name) {
                results[i] = Some(self.record_paused(&routine, fire));
                continue;
            }
            let lane = state.lanes.entry(routine.name.clone()).or_default();
            let planned_here: Vec<&Cancel> =
                planned_of.get(&routine.name).into_iter().flatten().map(|&at| &planned[at].3).collect();
            if let Some(skipped) = self.admit(lane, &routine, fire, planned_here) {
                results[i] = Some(skipped);
                continue;
            }
            let not_before = self.jittered(&routine, fire.trigger.scheduled_for());
            planned_of.entry(routine.name.clone()).or_default().push(planned.len());
            planned.push((i, routine, not_before, Cancel::default(), fire.trigger.to_stored()));
        }
        planned
    }

    /// Records a fire of a paused routine as skipped.
    fn record_paused(&self, routine: &Routine, fire: &IncomingFire) -> Result<Accepted, StoreError> {
        let why = format!("`{}` is paused; `routines resume {}` fires it again", routine.name, routine.name);
        let recorded = self.engine.store.record_paused_fire(&PausedFire {
            routine: &routine.name,
            trigger: fire.trigger.kind(),
            scheduled_for: fire.trigger.scheduled_for(),
            why: &why,
        });
        recorded.map(|id| id.map_or(Accepted::Duplicate, Accepted::Skipped))
    }

    /// `overlap` for one fire against the routine's runs and waiting fires and those of the
    /// batch planned before it (`planned_here`): `Some` with the fire's result when it is
    /// skipped, `None` when it is to be claimed.
    fn admit(
        &self,
        lane: &mut Lane,
        routine: &Routine,
        fire: &IncomingFire,
        planned_here: Vec<&Cancel>,
    ) -> Option<Result<Accepted, StoreError>> {
        let waiting = lane.waiting_count() + planned_here.len();
        let activity = Activity {
            active: !lane.running.is_empty() || waiting > 0,
            run: lane.running.keys().min().copied(),
            waiting: waiting > 0,
        };
        match overlap::admit(&routine.name, routine.spec.overlap, activity, fire.catch_up) {
            Admission::Skip(why) => {
                let recorded = self.record_skip(routine, fire, reason::OVERLAP, &why.to_string());
                Some(recorded.map(|id| id.map_or(Accepted::Duplicate, Accepted::Skipped)))
            }
            Admission::Replace => {
                self.replace(lane, &routine.name, planned_here);
                None
            }
            // A fire that may start or must wait takes its turn in `take_turn`.
            Admission::Start | Admission::Queue => None,
        }
    }

    /// `overlap: replace`: cancels the routine's runs, its waiting fires and those of the
    /// batch planned before (`planned_here`).
    fn replace(&self, lane: &mut Lane, name: &str, planned_here: Vec<&Cancel>) {
        let why = format!("replaced by a newer fire of `{name}` (overlap: replace)");
        for cancel in lane.running.values().chain(lane.waiting.values()).chain(planned_here) {
            cancel.cancel(reason::REPLACED, why.clone());
        }
        // Fires that wait only in the database end there.
        if lane.unloaded > 0 {
            match self.engine.store.skip_queued_fires(name, &lane.held(), reason::REPLACED, &why) {
                Ok(_) => {
                    self.less_pending(lane.unloaded);
                    lane.unloaded = 0;
                }
                Err(e) => {
                    tracing::error!(routine = %name, error = %e, "Could not skip the replaced fires.")
                }
            }
        }
    }

    /// Claims the planned fires in one transaction. `overlap: skip` also holds against runs of
    /// other processes (`routines run`): the claim checks the database for them in the same
    /// transaction.
    fn claim_planned(&self, fires: &[IncomingFire], planned: &[Planned]) -> Result<Vec<FireClaim>, StoreError> {
        let skip_whys: Vec<Option<String>> = planned
            .iter()
            .map(|(i, routine, ..)| {
                (routine.spec.overlap == Overlap::Skip && !fires[*i].catch_up)
                    .then(|| format!("a run of `{}` is still active in another process (overlap: skip)", routine.name))
            })
            .collect();
        let claims: Vec<NewFire<'_>> = planned
            .iter()
            .zip(&skip_whys)
            .map(|((i, routine, not_before, _, context), why)| NewFire {
                routine: &routine.name,
                trigger: fires[*i].trigger.kind(),
                scheduled_for: fires[*i].trigger.scheduled_for(),
                context,
                not_before: *not_before,
                skip_if_active: why.as_deref(),
                key: fires[*i].key.as_deref(),
            })
            .collect();
        self.engine.store.claim_fires(&claims)
    }

    /// Gives each claimed fire its result and its place: skipped when a later fire of the batch
    /// replaced it, held in memory when the window has room, or else left in the database for
    /// the pump. Returns the fires to start once the lock is released, and whether the pump
    /// must look again.
    fn place_claimed(
        &self,
        state: &mut State,
        fires: &[IncomingFire],
        planned: Vec<Planned>,
        claimed: Vec<FireClaim>,
        results: &mut [Option<Result<Accepted, StoreError>>],
    ) -> (Vec<(QueuedFire, Cancel)>, bool) {
        let now = self.clock.now();
        let mut start = Vec::new();
        let mut rearm = false;
        for ((i, routine, not_before, cancel, _), claim) in planned.into_iter().zip(claimed) {
            let run_id = match claim {
                FireClaim::Queued(id) => id,
                FireClaim::Skipped(id) => {
                    tracing::info!(routine = %routine.name, run_id = id, "Skipped: a run is active in another process.");
                    results[i] = Some(Ok(Accepted::Skipped(id)));
                    continue;
                }
                FireClaim::Duplicate => {
                    results[i] = Some(Ok(Accepted::Duplicate));
                    continue;
                }
            };
            results[i] = Some(Ok(Accepted::Queued(run_id)));
            self.accepted.fetch_add(1, Ordering::Relaxed);
            if cancel.is_cancelled() {
                // Replaced by a later fire of the same batch.
                if let Err(e) = self.engine.store.skip_queued(run_id, reason::REPLACED, REPLACED_WHY) {
                    tracing::error!(routine = %routine.name, run_id, error = %e, "Could not skip a replaced fire.");
                }
                continue;
            }
            self.pending.fetch_add(1, Ordering::SeqCst);
            self.shared_depth.fetch_add(1, Ordering::SeqCst);
            let fire = QueuedFire {
                run_id,
                routine: routine.name.clone(),
                attempt: 1,
                scheduled_for: fires[i].trigger.scheduled_for(),
                not_before,
            };
            if !self.cluster && state.may_hold(&fire, now, self.window) {
                state.hold(&fire, cancel.clone());
                self.promote(state, &fire.routine);
                start.push((fire, cancel));
            } else {
                // In a cluster the pump claims it, here or on another node.
                rearm |= state.spill(&fire, now) || self.cluster;
            }
        }
        (start, rearm)
    }

    /// The earliest start of a fire: its instant (or now) plus a random
    /// delay in `[0, jitter]`; `None` without jitter.
    fn jittered(&self, routine: &Routine, scheduled_for: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
        let jitter = routine.spec.jitter.get();
        (!jitter.is_zero()).then(|| {
            let ms = u64::try_from(jitter.as_millis()).unwrap_or(u64::MAX);
            let delay = rand::random_range(0..=ms);
            let base = scheduled_for.unwrap_or_else(|| self.clock.now());
            base + chrono::Duration::milliseconds(i64::try_from(delay).unwrap_or(i64::MAX))
        })
    }

    /// Takes up the fires an earlier daemon left queued (`counts`: how many per routine):
    /// they are read into the window oldest first, like any fire that waited in the
    /// database; those of routines that are gone are recorded skipped.
    pub fn resume(self: &Arc<Self>, counts: HashMap<String, usize>) {
        if let Ok(mut state) = self.state.lock() {
            let mut total = 0;
            for (name, n) in counts {
                state.lanes.entry(name).or_default().unloaded += n;
                total += n;
            }
            self.pending.fetch_add(total, Ordering::SeqCst);
            state.look_again();
        }
        self.skip_removed();
        self.wake_pump();
    }

    /// Records the fires of routines that are gone and wait only in the database `skipped`
    /// (reason `removed`); those in memory are woken by [`Dispatcher::routines_changed`] and
    /// record it themselves.
    fn skip_removed(&self) {
        let Ok(mut state) = self.state.lock() else { return };
        let gone: Vec<String> = state
            .lanes
            .iter()
            .filter(|(name, lane)| lane.unloaded > 0 && self.routine(name).is_none())
            .map(|(name, _)| name.clone())
            .collect();
        for name in gone {
            let Some(lane) = state.lanes.get_mut(&name) else { continue };
            match self.engine.store.skip_queued_fires(&name, &lane.held(), reason::REMOVED, REMOVED_WHY) {
                Ok(n) => {
                    tracing::info!(routine = %name, skipped = n, "{REMOVED_WHY}");
                    self.less_pending(lane.unloaded);
                    lane.unloaded = 0;
                    if lane.is_empty() {
                        state.lanes.remove(&name);
                    }
                }
                Err(e) => {
                    tracing::error!(routine = %name, error = %e, "Could not skip the fires of a removed routine.")
                }
            }
        }
    }

    /// A queued fire that cannot be started (its stored trigger is unreadable, a damaged
    /// database) is recorded `failed` with why.
    fn set_aside(&self, run_id: i64, routine: &str, why: &str) {
        tracing::error!(%routine, run_id, "{why}");
        if let Err(e) = self.engine.store.finish_run(run_id, &RunOutcome::new(RunStatus::Failed, Some(why.into()))) {
            tracing::error!(%routine, run_id, error = %e, "Could not record the fire as failed.");
        }
    }

    fn record_skip(
        &self,
        routine: &Routine,
        fire: &IncomingFire,
        reason: &'static str,
        why: &str,
    ) -> Result<Option<i64>, StoreError> {
        let store = &self.engine.store;
        let id = match store.create_run(&NewRun {
            kind: RunKind::Routine,
            routine: Some(routine.name.clone()),
            trigger: fire.trigger.kind().into(),
            scheduled_for: fire.trigger.scheduled_for(),
            status: RunStatus::Queued,
        }) {
            Ok(id) => id,
            Err(StoreError::DuplicateFire { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        store.finish_run(id, &RunOutcome::skipped(reason, why))?;
        tracing::info!(routine = %routine.name, run_id = id, "{why}");
        Ok(Some(id))
    }

    /// Waits until no run is executing.
    async fn none_executing(&self) {
        loop {
            let notified = self.changed.notified();
            if self.executing() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Starts no more runs: a fire accepted from now on stays queued for the next start, and
    /// fires waiting for their turn stay queued. Runs that run go on ([`Dispatcher::shut_down`]).
    pub fn close(&self) {
        self.closing.cancel();
        self.changed.notify_waiters();
    }

    /// Stops starting fires, waits up to `grace` for running ones, then
    /// cancels those still running (recorded `interrupted`, reason
    /// `shutdown`) and waits for them to record it.
    pub async fn shut_down(&self, grace: std::time::Duration, hurry: &CancellationToken) {
        self.close();
        let finished = tokio::select! {
            done = tokio::time::timeout(grace, self.none_executing()) => done.is_ok(),
            () = hurry.cancelled() => false,
        };
        if finished {
            return;
        }
        let message = if hurry.is_cancelled() {
            "the daemon was told a second time to stop and stopped at once".to_string()
        } else {
            format!("the daemon stopped and the run did not finish within the grace period of {grace:?}")
        };
        if let Ok(state) = self.state.lock() {
            for lane in state.lanes.values() {
                for cancel in lane.running.values() {
                    cancel.cancel(reason::SHUTDOWN, message.clone());
                }
            }
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), self.none_executing()).await;
    }
}

/// A fire of a batch about to be claimed: its index in the batch, its
/// routine, `not_before`, its cancellation and its context as JSON text.
type Planned = (usize, Arc<Routine>, Option<DateTime<Utc>>, Cancel, String);

/// Each fire's result, in the order of the batch; a fire that got none was not found.
fn answers(results: Vec<Option<Result<Accepted, StoreError>>>) -> Vec<Result<Accepted, StoreError>> {
    results.into_iter().map(|r| r.unwrap_or(Err(StoreError::RunNotFound(0)))).collect()
}
