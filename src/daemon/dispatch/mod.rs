//! From an accepted fire to a finished run: overlap per routine, the
//! concurrency limit across routines, jitter, and cancellation.
//!
//! Every accepted fire is first a `queued` row in the database (the durable
//! queue); a task then waits for its turn: `not_before` (jitter), the
//! routine's earlier run (`overlap: queue`/`replace`), a slot of
//! `limits.max_concurrent_runs`. A daemon that stops leaves fires that did
//! not start `queued`; the next one adopts them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, Utc};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use super::metrics::Metrics;
use crate::clock::Clock;
use crate::engine::{Cancel, Engine, RunOptions};
use crate::routine::overlap::{self, Activity, Admission};
use crate::routine::{Overlap, Routine, StoredTriggerError, TriggerContext};
use crate::store::{FireClaim, NewFire, NewRun, QueuedRun, RunKind, RunOutcome, RunStatus, StoreError, reason};

/// Why a queued fire of a routine that went away is recorded skipped.
const REMOVED_WHY: &str = "the routine was removed or disabled before this fire started";

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

#[derive(Debug, Default)]
struct Active {
    /// Runs started or holding the routine's turn, with their cancellation.
    running: HashMap<i64, Cancel>,
    /// Fires accepted and waiting for their turn.
    /// Ordered by run id: the first is the oldest.
    waiting: BTreeMap<i64, Cancel>,
}

/// Shared state of the dispatcher.
pub struct Dispatcher {
    pub engine: Arc<Engine>,
    pub routines: RwLock<HashMap<String, Arc<Routine>>>,
    clock: Arc<dyn Clock>,
    slots: Semaphore,
    active: Mutex<HashMap<String, Active>>,
    changed: Notify,
    /// Set when the daemon stops: fires that have not started stay queued.
    closing: CancellationToken,
    executing: AtomicUsize,
    /// Fires accepted that have not started (or been set aside) yet.
    pending: AtomicUsize,
    pub metrics: Metrics,
    pub accepted: AtomicU64,
}

impl Dispatcher {
    pub fn new(engine: Arc<Engine>, clock: Arc<dyn Clock>, max_concurrent: usize) -> Arc<Self> {
        Arc::new(Dispatcher {
            engine,
            routines: RwLock::new(HashMap::new()),
            clock,
            slots: Semaphore::new(max_concurrent.max(1)),
            active: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            closing: CancellationToken::new(),
            executing: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            metrics: Metrics::default(),
            accepted: AtomicU64::new(0),
        })
    }

    pub fn routine(&self, name: &str) -> Option<Arc<Routine>> {
        self.routines.read().ok().and_then(|r| r.get(name).cloned())
    }

    /// Fires waiting for their turn, in all routines.
    pub fn queue_depth(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Runs executing now.
    pub fn executing(&self) -> usize {
        self.executing.load(Ordering::SeqCst)
    }

    /// Waits until every accepted fire has run or been set aside.
    pub async fn idle(&self) {
        loop {
            let notified = self.changed.notified();
            if self.active.lock().map(|a| a.is_empty()).unwrap_or(true) {
                return;
            }
            notified.await;
        }
    }

    /// Wakes every waiting fire to look again: the routines changed (a removed routine's fires
    /// give up their place).
    pub fn routines_changed(&self) {
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
        let Ok(mut active) = self.active.lock() else {
            return fires.iter().map(|_| Err(StoreError::Poisoned)).collect();
        };
        let mut planned: Vec<Planned> = Vec::new();
        // Asked at every batch, so a pause or resume from another process counts at once.
        let paused = match self.engine.store.paused_routines() {
            Ok(paused) => paused,
            Err(e) => {
                let message = e.to_string();
                return fires.iter().map(|_| Err(StoreError::Batch(message.clone()))).collect();
            }
        };
        for (i, fire) in fires.iter().enumerate() {
            let Some(routine) = self.routine(&fire.routine) else {
                results[i] = Some(Err(StoreError::RunNotFound(0)));
                continue;
            };
            if paused.contains(&routine.name) {
                let why = format!("`{}` is paused; `routines resume {}` fires it again", routine.name, routine.name);
                let recorded = self.record_skip(&routine, fire, reason::PAUSED, &why);
                results[i] = Some(recorded.map(|id| id.map_or(Accepted::Duplicate, Accepted::Skipped)));
                continue;
            }
            let entry = active.entry(routine.name.clone()).or_default();
            let planned_here: Vec<&Cancel> =
                planned.iter().filter(|p| p.1.name == routine.name).map(|p| &p.3).collect();
            let waiting = entry.waiting.len() + planned_here.len();
            let activity = Activity {
                active: !entry.running.is_empty() || waiting > 0,
                run: entry.running.keys().min().copied(),
                waiting: waiting > 0,
            };
            match overlap::admit(&routine.name, routine.spec.overlap, activity, fire.catch_up) {
                Admission::Skip(why) => {
                    let recorded = self.record_skip(&routine, fire, reason::OVERLAP, &why.to_string());
                    results[i] = Some(recorded.map(|id| id.map_or(Accepted::Duplicate, Accepted::Skipped)));
                    continue;
                }
                Admission::Replace => {
                    let why = format!("replaced by a newer fire of `{}` (overlap: replace)", routine.name);
                    for cancel in entry.running.values().chain(entry.waiting.values()).chain(planned_here) {
                        cancel.cancel(reason::REPLACED, why.clone());
                    }
                }
                // A fire that may start or must wait takes its turn in `take_turn`.
                Admission::Start | Admission::Queue => {}
            }
            let not_before = self.jittered(&routine, fire.trigger.scheduled_for());
            planned.push((i, routine, not_before, Cancel::default(), fire.trigger.to_stored()));
        }
        // `overlap: skip` also holds against runs of other processes (`routines run`): the claim
        // checks the database for them in the same transaction.
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
            })
            .collect();
        let claimed = match self.engine.store.claim_fires(&claims) {
            Ok(ids) => ids,
            Err(e) => {
                drop(active);
                let message = e.to_string();
                for (i, ..) in &planned {
                    results[*i] = Some(Err(StoreError::Batch(message.clone())));
                }
                return results.into_iter().map(|r| r.unwrap_or(Err(StoreError::RunNotFound(0)))).collect();
            }
        };
        drop(claims);
        let mut start = Vec::new();
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
            active.entry(routine.name.clone()).or_default().waiting.insert(run_id, cancel.clone());
            let trigger = fires[i].trigger.clone();
            start.push((QueuedFire { run_id, routine: routine.name.clone(), trigger, attempt: 1, not_before }, cancel));
            results[i] = Some(Ok(Accepted::Queued(run_id)));
        }
        drop(active);
        self.accepted.fetch_add(start.len() as u64, Ordering::Relaxed);
        for (fire, cancel) in start {
            self.spawn(fire, cancel);
        }
        results.into_iter().map(|r| r.unwrap_or(Err(StoreError::RunNotFound(0)))).collect()
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

    /// Starts the tasks of fires an earlier daemon queued.
    pub fn resume(self: &Arc<Self>, queued: Vec<QueuedRun>) {
        for q in queued {
            let Some(name) = q.run.routine.clone() else { continue };
            let trigger = match TriggerContext::from_stored(&q.run.trigger, q.run.scheduled_for, q.context.as_deref()) {
                Ok(trigger) => trigger,
                Err(e) => {
                    self.set_aside_unreadable(q.run.id, &name, &e);
                    continue;
                }
            };
            let fire = QueuedFire {
                run_id: q.run.id,
                routine: name.clone(),
                trigger,
                attempt: q.attempt.max(1),
                not_before: q.not_before,
            };
            let cancel = Cancel::default();
            if let Ok(mut active) = self.active.lock() {
                active.entry(name).or_default().waiting.insert(q.run.id, cancel.clone());
            }
            self.spawn(fire, cancel);
        }
    }

    /// A queued fire whose stored trigger cannot be read back (a damaged
    /// database) is not run: it is recorded `failed` with why.
    fn set_aside_unreadable(&self, run_id: i64, routine: &str, error: &StoredTriggerError) {
        let why = format!("the fire's trigger could not be read back from the database: {error}");
        tracing::error!(%routine, run_id, "{why}");
        if let Err(e) = self.engine.store.finish_run(run_id, &RunOutcome::new(RunStatus::Failed, Some(why))) {
            tracing::error!(%routine, run_id, error = %e, "Could not record the unreadable fire as failed.");
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

    fn spawn(self: &Arc<Self>, fire: QueuedFire, cancel: Cancel) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        tokio::spawn(async move { me.drive(fire, cancel).await });
    }

    /// One fire's task: waits for its turn, then runs it.
    async fn drive(self: Arc<Self>, fire: QueuedFire, cancel: Cancel) {
        let name = fire.routine.clone();
        let run_id = fire.run_id;
        let started = self.wait_and_run(fire, &cancel).await;
        if let Ok(mut active) = self.active.lock() {
            if let Some(entry) = active.get_mut(&name) {
                entry.running.remove(&run_id);
                entry.waiting.remove(&run_id);
                if entry.running.is_empty() && entry.waiting.is_empty() {
                    active.remove(&name);
                }
            }
        }
        if started {
            self.executing.fetch_sub(1, Ordering::SeqCst);
        } else {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
        self.changed.notify_waiters();
    }

    /// Returns whether the run started.
    async fn wait_and_run(&self, fire: QueuedFire, cancel: &Cancel) -> bool {
        let store = &self.engine.store;
        // Jitter.
        if let Some(at) = fire.not_before {
            let wait = (at - self.clock.now()).to_std().unwrap_or_default();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.closing.cancelled() => return false,
            }
        }
        // The routine's turn.
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.closing.is_cancelled() {
                return false;
            }
            if cancel.is_cancelled() {
                let _ = store.skip_queued(fire.run_id, reason::REPLACED, "replaced by a newer fire before it started");
                return false;
            }
            let Some(routine) = self.routine(&fire.routine) else {
                let _ = store.skip_queued(fire.run_id, reason::REMOVED, REMOVED_WHY);
                return false;
            };
            let my_turn = self.take_turn(&fire, &routine, cancel);
            match my_turn {
                Some(true) => break,
                Some(false) => {}
                None => return false,
            }
            tokio::select! {
                _ = notified => {}
                _ = self.closing.cancelled() => return false,
            }
        }
        // A slot of max_concurrent_runs; a routine removed meanwhile gives up its fires.
        let permit = loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.routine(&fire.routine).is_none() {
                let _ = store.skip_queued(fire.run_id, reason::REMOVED, REMOVED_WHY);
                return false;
            }
            tokio::select! {
                p = self.slots.acquire() => break p,
                _ = notified => {}
                _ = self.closing.cancelled() => return false,
            }
        };
        let Ok(_permit) = permit else { return false };
        if cancel.is_cancelled() {
            let _ = store.skip_queued(fire.run_id, reason::REPLACED, "replaced by a newer fire before it started");
            return false;
        }
        let Some(routine) = self.routine(&fire.routine) else { return false };
        self.executing.fetch_add(1, Ordering::SeqCst);
        self.pending.fetch_sub(1, Ordering::SeqCst);
        if let Some(at) = fire.trigger.scheduled_for() {
            let due = fire.not_before.unwrap_or(at);
            let late = (self.clock.now() - due).to_std().unwrap_or_default();
            self.metrics.observe_lateness(late);
        }
        // Boxed: the run's future is large, and inline it would make every
        // waiting fire's task as large as a running one.
        let opts = RunOptions::default();
        let result =
            Box::pin(self.engine.execute(&routine, fire.run_id, fire.trigger, fire.attempt, &opts, None, cancel)).await;
        match result {
            Ok(report) => {
                tracing::info!(routine = %routine.name, run_id = report.run_id, status = %report.status, "Run finished.");
            }
            Err(e) => {
                tracing::error!(routine = %routine.name, run_id = fire.run_id, error = %e, "Run could not be recorded.")
            }
        }
        true
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

    /// Whether `fire` may start now as far as its routine is concerned:
    /// no other run active (unless `overlap: allow`), and the oldest
    /// waiting. If so it becomes the routine's running run. `None` if the
    /// state is unusable.
    fn take_turn(&self, fire: &QueuedFire, routine: &Routine, cancel: &Cancel) -> Option<bool> {
        let mut active = self.active.lock().ok()?;
        let entry = active.entry(fire.routine.clone()).or_default();
        let allow = routine.spec.overlap == Overlap::Allow;
        let free = allow || entry.running.is_empty();
        let first = entry.waiting.keys().next() == Some(&fire.run_id);
        if free && (first || allow) {
            entry.waiting.remove(&fire.run_id);
            entry.running.insert(fire.run_id, cancel.clone());
            Some(true)
        } else {
            Some(false)
        }
    }

    /// Stops starting fires, waits up to `grace` for running ones, then
    /// cancels those still running (recorded `interrupted`, reason
    /// `shutdown`) and waits for them to record it.
    pub async fn shut_down(&self, grace: std::time::Duration, hurry: &CancellationToken) {
        self.closing.cancel();
        self.changed.notify_waiters();
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
        if let Ok(active) = self.active.lock() {
            for entry in active.values() {
                for cancel in entry.running.values() {
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

/// A fire with its run, waiting for its turn.
#[derive(Debug, Clone)]
struct QueuedFire {
    run_id: i64,
    routine: String,
    trigger: TriggerContext,
    attempt: u32,
    not_before: Option<DateTime<Utc>>,
}
