//! `routines daemon`: every trigger of every routine, until told to stop
//! (SPEC §5).
//!
//! - The timer loop keeps the next instant of each routine in a heap, sleeps
//!   until the earliest (never more than a minute, so a wall clock that
//!   jumps is noticed), and hands the due instants to [`plan`], which
//!   decides what fires and what was missed.
//! - Each fire is claimed in the database (UNIQUE(routine, scheduled_for))
//!   before it runs, and the newest handled instant is persisted, so no
//!   instant runs twice and downtime is caught up per `catch_up`.
//! - [`dispatch`] applies overlap, jitter and the concurrency limit.
//! - File events and webhooks become fires through the same path.
//! - Routine files are reloaded when they change; an invalid edit keeps
//!   the routine's last valid version.
//! - On SIGINT/SIGTERM nothing new starts; running runs get a grace period,
//!   then are cancelled and recorded `interrupted` for the next start.

pub mod cluster;
mod db_watch;
pub mod dispatch;
mod error;
pub mod lock;
pub mod metrics;
mod owners;
pub mod plan;
pub mod prune;
pub mod redeliver;
pub mod service;
pub mod watch;
pub mod webhook;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::clock::{Clock, sleep_for};
use crate::routine::schedule::{self, Occurrence};
use crate::routine::{LoadedRoutines, Routine, TimeKind, TriggerContext};
use crate::store::{StoreError, reason};
use dispatch::{Dispatcher, IncomingFire};

pub use error::DaemonError;

/// Something the daemon loop reacts to besides time.
#[derive(Debug)]
pub enum Signal {
    /// New routines to use (hot reload); the loop applies them.
    Reload(LoadedRoutines),
    /// A fire from a file watcher (or any other source).
    Fire(IncomingFire),
}

/// The timer loop and the routines it schedules.
pub struct Scheduler {
    pub dispatcher: Arc<Dispatcher>,
    clock: Arc<dyn Clock>,
    /// Next instant per routine; entries whose generation is old are stale.
    heap: BinaryHeap<Reverse<(DateTime<Utc>, String, u64)>>,
    generation: HashMap<String, u64>,
    /// Instants up to this one are handled, per routine.
    handled: HashMap<String, DateTime<Utc>>,
    /// Told the routines whenever they change (file watches, webhook routes).
    pub on_change: Option<OnChange>,
    /// Claims that failed in a row, per routine: the next try waits 1 s, doubling up to
    /// [`MAX_RETRY`], so a database back after a few seconds costs seconds, not a minute.
    failures: HashMap<String, u32>,
    /// Fires from watchers whose claim failed, waiting to be tried again.
    held: HeldFires,
}

/// See [`Scheduler::take_fires`].
#[derive(Debug)]
struct HeldFires {
    fires: Vec<IncomingFire>,
    /// When they are tried again.
    until: Option<tokio::time::Instant>,
    /// The wait after the next failure.
    wait: Duration,
}

impl HeldFires {
    const FIRST_WAIT: Duration = Duration::from_secs(1);
}

/// The longest wait before a failed claim of a routine's instant is tried again.
const MAX_RETRY: chrono::Duration = chrono::Duration::seconds(60);

/// See [`Scheduler::on_change`].
pub type OnChange = Box<dyn FnMut(&HashMap<String, Arc<Routine>>) + Send>;

impl Scheduler {
    pub fn new(dispatcher: Arc<Dispatcher>, clock: Arc<dyn Clock>) -> Self {
        Scheduler {
            dispatcher,
            clock,
            heap: BinaryHeap::new(),
            generation: HashMap::new(),
            handled: HashMap::new(),
            on_change: None,
            failures: HashMap::new(),
            held: HeldFires { fires: Vec::new(), until: None, wait: HeldFires::FIRST_WAIT },
        }
    }

    /// How long until a routine whose claim just failed is tried again (see `failures`).
    fn retry_delay(&mut self, name: &str) -> chrono::Duration {
        let failed = self.failures.entry(name.to_string()).or_default();
        let wait = chrono::Duration::seconds(1i64 << (*failed).min(6)).min(MAX_RETRY);
        *failed = failed.saturating_add(1);
        wait
    }

    /// Before the first tick: fires interrupted by a crash or a stop are
    /// queued again if `retry` allows it (and their instant is still inside
    /// `catch_up_window`); fires an earlier daemon queued are resumed.
    pub fn recover(&self) -> Result<(), StoreError> {
        let store = &self.dispatcher.engine.store;
        self.dispatcher.requeue_interrupted()?;
        let queued = store.adopt_queued()?;
        let count: usize = queued.values().sum();
        if count > 0 {
            tracing::info!(count, "Resuming fires that were queued before the daemon stopped.");
        }
        self.dispatcher.resume(queued);
        Ok(())
    }

    /// Replaces the routines (at start and on reload) and schedules their
    /// next instants. A routine seen for the first time starts from now:
    /// instants before the daemon first knew it are not missed.
    pub fn set_routines(&mut self, routines: Vec<Routine>) -> Result<(), StoreError> {
        let store = self.dispatcher.engine.store.clone();
        let now = self.clock.now();
        let map: HashMap<String, Arc<Routine>> = routines.into_iter().map(|r| (r.name.clone(), Arc::new(r))).collect();
        self.handled.retain(|name, _| map.contains_key(name));
        for r in map.values() {
            let generation = self.generation.entry(r.name.clone()).or_default();
            *generation += 1;
            if !r.spec.enabled || r.time_triggers.is_empty() {
                continue;
            }
            let handled = match self.handled.get(&r.name) {
                Some(h) => *h,
                None => match store.last_scheduled(&r.name)? {
                    Some(last) => last,
                    None => {
                        store.set_last_scheduled(&r.name, now)?;
                        now
                    }
                },
            };
            self.handled.insert(r.name.clone(), handled);
            if let Some(next) = schedule::next_after(r, handled) {
                self.heap.push(Reverse((next, r.name.clone(), *generation)));
            }
        }
        if let Some(on_change) = self.on_change.as_mut() {
            on_change(&map);
        }
        if let Ok(mut current) = self.dispatcher.routines.write() {
            *current = map;
        }
        self.dispatcher.routines_changed();
        Ok(())
    }

    /// The earliest scheduled instant.
    pub fn next_instant(&mut self) -> Option<DateTime<Utc>> {
        while let Some(Reverse((at, name, generation))) = self.heap.peek() {
            if self.generation.get(name) == Some(generation) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }

    /// Handles every routine whose next instant has come: missed instants
    /// recorded, the fires of all routines claimed in one transaction, the
    /// newest handled instants persisted in another.
    pub fn tick(&mut self) {
        let now = self.clock.now();
        let mut due: Vec<(Arc<Routine>, u64)> = Vec::new();
        while let Some(at) = self.next_instant() {
            if at > now {
                break;
            }
            let Some(Reverse((_, name, generation))) = self.heap.pop() else { break };
            if let Some(routine) = self.dispatcher.routine(&name) {
                due.push((routine, generation));
            }
        }
        if due.is_empty() {
            return;
        }
        let mut fires = Vec::new();
        let mut handled: Vec<(String, DateTime<Utc>)> = Vec::new();
        let mut ok: Vec<(Arc<Routine>, u64)> = Vec::new();
        for (routine, generation) in due {
            let since = self.handled.get(&routine.name).copied().unwrap_or(now);
            let p = plan::plan(&routine, since, now);
            if let Err(e) = self.record_missed(&routine, &p) {
                let wait = self.retry_delay(&routine.name);
                tracing::error!(routine = %routine.name, error = %e, "Could not record missed instants; retrying in {} s.", wait.num_seconds());
                self.heap.push(Reverse((now + wait, routine.name.clone(), generation)));
                continue;
            }
            let catch_up = p.fire.len() > 1;
            for instant in &p.fire {
                fires.push(IncomingFire {
                    routine: routine.name.clone(),
                    trigger: TriggerContext::Schedule { kind: instant.kind, scheduled_for: instant.utc() },
                    catch_up,
                    key: None,
                });
            }
            if let Some(newest) = p.newest {
                handled.push((routine.name.clone(), newest));
            }
            ok.push((routine, generation));
        }
        let instants: Vec<(String, DateTime<Utc>)> =
            fires.iter().map(|f| (f.routine.clone(), f.trigger.scheduled_for().unwrap_or(now))).collect();
        let mut failed: Vec<String> = Vec::new();
        for ((name, at), result) in instants.iter().zip(self.dispatcher.accept_many(fires)) {
            match result {
                Ok(dispatch::Accepted::Duplicate) => {
                    tracing::debug!(routine = %name, %at, "Instant already claimed; not run again.")
                }
                Ok(dispatch::Accepted::Queued(id) | dispatch::Accepted::Skipped(id)) => {
                    tracing::debug!(routine = %name, run_id = id, %at, "Fired.")
                }
                Err(e) => {
                    tracing::error!(routine = %name, %at, error = %e, "Could not claim a fire; retrying soon (1 s, doubling up to a minute).");
                    failed.push(name.clone());
                }
            }
        }
        // The store answered: fires held back since an earlier claim failed are tried now.
        if failed.len() < instants.len() && !self.held.fires.is_empty() {
            self.held.until = Some(tokio::time::Instant::now());
        }
        handled.retain(|(name, _)| !failed.contains(name));
        let rows: Vec<(&str, DateTime<Utc>)> = handled.iter().map(|(n, at)| (n.as_str(), *at)).collect();
        if let Err(e) = self.dispatcher.engine.store.set_last_scheduled_many(&rows) {
            // The claims hold: a restart sees these instants again and the
            // UNIQUE claim refuses them.
            tracing::error!(error = %e, "Could not persist the last scheduled instants.");
        }
        for (routine, generation) in ok {
            if failed.contains(&routine.name) {
                let wait = self.retry_delay(&routine.name);
                self.heap.push(Reverse((now + wait, routine.name.clone(), generation)));
                continue;
            }
            self.failures.remove(&routine.name);
            self.handled.insert(routine.name.clone(), now);
            if let Some(next) = schedule::next_after(&routine, now) {
                self.heap.push(Reverse((next, routine.name.clone(), generation)));
            }
        }
    }

    fn record_missed(&self, routine: &Routine, p: &plan::Plan) -> Result<(), StoreError> {
        let store = &self.dispatcher.engine.store;
        if !p.missed.is_empty() {
            let policy = match routine.spec.catch_up {
                crate::routine::CatchUp::Latest => "catch_up: latest runs only the most recent missed instant",
                crate::routine::CatchUp::All => "catch_up: all runs at most 100 missed instants",
                crate::routine::CatchUp::None => "catch_up: none",
            };
            let message = format!(
                "missed: the daemon was not running (or the machine was asleep) at this instant; {policy}, \
                 within catch_up_window {}",
                routine.spec.catch_up_window
            );
            for kind in [TimeKind::Cron, TimeKind::Every, TimeKind::At] {
                let instants: Vec<DateTime<Utc>> =
                    p.missed.iter().filter(|i| i.kind == kind).map(Occurrence::utc).collect();
                if !instants.is_empty() {
                    store.record_skipped(&routine.name, kind.as_str(), &instants, reason::MISSED, &message)?;
                }
            }
            tracing::warn!(routine = %routine.name, missed = p.missed.len() as u64 + p.unrecorded, "Instants were missed; {policy}.");
        }
        if p.unrecorded > 0 {
            if let Some(newest) = p.newest {
                store.add_unrecorded_missed(&routine.name, p.unrecorded, newest)?;
            }
        }
        Ok(())
    }

    /// Runs the timer loop until `stop` resolves, also reacting to
    /// `signals` (reloads and fires from watchers). Then it starts no more runs, awaits
    /// `last_fires` (which sends the fires still on their way, such as file changes in their
    /// debounce), and queues those and the held fires for the next start.
    pub async fn run_loop(
        &mut self,
        mut signals: tokio::sync::mpsc::UnboundedReceiver<Signal>,
        stop: impl std::future::Future<Output = ()>,
        last_fires: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(stop);
        loop {
            self.tick();
            if self.held.until.is_some_and(|at| at <= tokio::time::Instant::now()) {
                self.held.until = None;
                let fires = std::mem::take(&mut self.held.fires);
                self.take_fires(fires);
            }
            let mut wait = sleep_for(self.clock.now(), self.next_instant());
            if let Some(at) = self.held.until {
                wait = wait.min(at.saturating_duration_since(tokio::time::Instant::now()));
            }
            tokio::select! {
                _ = &mut stop => {
                    // The fires that reach the loop as it stops (file changes flushed from
                    // their debounce), and those held back, are queued for the next start.
                    self.dispatcher.close();
                    last_fires.await;
                    let mut last = std::mem::take(&mut self.held.fires);
                    while let Ok(signal) = signals.try_recv() {
                        if let Signal::Fire(fire) = signal {
                            last.push(fire);
                        }
                    }
                    self.last_try(last);
                    return;
                }
                _ = tokio::time::sleep(wait) => {}
                signal = signals.recv() => match signal {
                    Some(Signal::Reload(loaded)) => self.reload(loaded),
                    Some(Signal::Fire(fire)) => self.take_fires(vec![fire]),
                    None => {}
                },
            }
        }
    }

    /// Queues `fires` as the daemon stops, after the dispatcher closed, so none starts now:
    /// they run at the next start. Held fires get their last try here (the database may be
    /// back before their next try was due). Each one that cannot be queued is logged as lost,
    /// with what it was, since nothing else records it.
    fn last_try(&mut self, fires: Vec<IncomingFire>) {
        if fires.is_empty() {
            return;
        }
        for (fire, result) in fires.clone().into_iter().zip(self.dispatcher.accept_many(fires)) {
            if let Err(e) = result {
                tracing::error!(
                    routine = %fire.routine,
                    key = fire.key.as_deref().unwrap_or_default(),
                    error = %e,
                    "A fire could not be queued before the daemon stopped; it is lost."
                );
            }
        }
    }

    /// Claims fires from watchers. One whose claim failed for a reason that passes (the
    /// database out of reach, a full disk) is held back and tried again after 1 s, doubling up
    /// to a minute, or at once when a later claim succeeds (the store is back): a file event is
    /// not dropped for a database that comes back.
    fn take_fires(&mut self, fires: Vec<IncomingFire>) {
        let mut again = Vec::new();
        let mut stored = false;
        for (fire, result) in fires.clone().into_iter().zip(self.dispatcher.accept_many(fires)) {
            stored |= result.is_ok();
            match result {
                Ok(dispatch::Accepted::Duplicate) => tracing::info!(
                    routine = %fire.routine,
                    key = fire.key.as_deref().unwrap_or_default(),
                    "This file change was already fired (by another node sharing the folder); not fired again."
                ),
                Ok(_) => {}
                Err(e) if e.is_transient() => {
                    tracing::error!(routine = %fire.routine, error = %e, "Could not queue a fire; trying again in {:?}.", self.held.wait);
                    again.push(fire);
                }
                Err(e) => tracing::error!(routine = %fire.routine, error = %e, "Could not queue a fire."),
            }
        }
        if again.is_empty() {
            if self.held.fires.is_empty() {
                self.held.wait = HeldFires::FIRST_WAIT;
            } else if stored {
                self.held.until = Some(tokio::time::Instant::now());
            }
            return;
        }
        self.held.fires.extend(again);
        if self.held.until.is_none() {
            self.held.until = Some(tokio::time::Instant::now() + self.held.wait);
            self.held.wait = (self.held.wait * 2).min(Duration::from_secs(60));
        }
    }

    /// Applies reloaded routines. A routine whose file now has problems
    /// keeps its last valid version; the problems are logged.
    pub fn reload(&mut self, loaded: LoadedRoutines) {
        let mut next: Vec<Routine> = loaded.routines;
        let current: Vec<Arc<Routine>> =
            self.dispatcher.routines.read().map(|m| m.values().cloned().collect()).unwrap_or_default();
        for old in current {
            let broken: Vec<String> =
                loaded.diagnostics.0.iter().filter(|d| d.file == old.file).map(|d| d.to_string()).collect();
            if !broken.is_empty() && !next.iter().any(|r| r.name == old.name) {
                tracing::warn!(
                    routine = %old.name,
                    "The routine's file is invalid; keeping its last valid version:\n{}",
                    broken.join("\n")
                );
                next.push((*old).clone());
            }
        }
        for d in &loaded.diagnostics.0 {
            tracing::debug!("{d}");
        }
        // Logged once in effect: schedules, file watches and webhook routes.
        let count = next.len();
        match self.set_routines(next) {
            Ok(()) => tracing::info!(routines = count, "Routines reloaded."),
            Err(e) => tracing::error!(error = %e, "Could not apply the reloaded routines."),
        }
    }
}

/// How long a stopping daemon lets running runs finish.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// Whether stderr carries JSON log lines only (`routines daemon --log-format json`).
static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes [`announce`] write log events instead of plain lines.
pub fn use_json_logs(json: bool) {
    JSON_LOGS.store(json, std::sync::atomic::Ordering::Relaxed);
}

/// A line for the person who started the daemon (ready, stopping, stopped): plain text on
/// stderr, or an INFO event where every line of stderr must be JSON.
pub fn announce(line: &str) {
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::info!("{line}");
    } else {
        eprintln!("{line}");
    }
}
