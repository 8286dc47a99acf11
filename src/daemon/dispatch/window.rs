//! The window: the part of the durable queue held in memory.
//!
//! At most `limits.queue_window` queued fires are in memory, each a [`QueuedFire`] (ids,
//! routine name, times; never the trigger's context) with its task waiting for the
//! routine's turn and a slot. Every other queued fire is only a row. A new fire goes straight
//! into the window when there is room, it is due, and no due fire waits in the database
//! before it; otherwise it is counted in its routine's lane and left in the database. The
//! pump (one task) reads due fires into the window, oldest first by run id, when places free
//! up, and wakes when the earliest jittered fire that waits in the database becomes due.
//!
//! A cursor keeps the reads cheap: every queued fire with an id up to it is in memory, or was
//! not yet due when it was read past. When a fire behind the cursor becomes due (the earliest
//! `not_before` of the queue, from the partial index `runs_queued`, has passed), the cursor
//! goes back to the start and the fires already in memory are passed over.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::Dispatcher;
use crate::engine::Cancel;
use crate::store::QueuedFire;

/// Longest sleep of the pump while a jittered fire waits: a wall clock that jumps (a machine
/// waking from sleep) is noticed within this.
const MAX_NAP: Duration = Duration::from_secs(60);

/// How long the pump waits before reading again after the database failed it.
const RETRY_AFTER_ERROR: chrono::Duration = chrono::Duration::seconds(1);

/// In a cluster, how often the pump reads the queue although nothing woke it: fires another
/// node queued for a routine this node holds, or gave back when it stopped or died.
const CLUSTER_POLL: Duration = Duration::from_secs(1);

/// What the dispatcher knows of the queue, under one lock.
#[derive(Debug)]
pub(super) struct State {
    /// Per routine: its runs, and its queued fires in memory or not.
    pub lanes: HashMap<String, Lane>,
    /// Fires in memory that have not started: the window's occupied places.
    pub loaded: usize,
    /// Every queued fire with an id up to this one is in memory, or was not due when read.
    pub cursor: i64,
    /// The database may hold due fires that are not in memory.
    pub backlog: bool,
    /// No later than when the earliest fire that waits only in the database becomes due.
    pub next_due: Option<DateTime<Utc>>,
    /// Slots of `limits.max_concurrent_runs` not taken.
    pub free_slots: usize,
    /// Fires holding their routine's turn and waiting for a slot: the oldest takes the next.
    pub ready: BTreeSet<i64>,
}

/// One routine's fires in the dispatcher.
#[derive(Debug, Default)]
pub(super) struct Lane {
    /// Runs started or holding the routine's turn, with their cancellation.
    pub running: HashMap<i64, Cancel>,
    /// Fires in memory waiting for their turn, ordered by run id: the first is the oldest.
    pub waiting: BTreeMap<i64, Cancel>,
    /// Queued fires of the routine that wait only in the database.
    pub unloaded: usize,
}

impl Lane {
    /// Fires queued and not holding the turn, in memory or not.
    pub fn waiting_count(&self) -> usize {
        self.waiting.len() + self.unloaded
    }

    /// The runs held in memory.
    pub fn held(&self) -> Vec<i64> {
        self.running.keys().chain(self.waiting.keys()).copied().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty() && self.unloaded == 0
    }
}

fn is_due(fire: &QueuedFire, now: DateTime<Utc>) -> bool {
    fire.not_before.is_none_or(|at| at <= now)
}

impl State {
    pub fn new(slots: usize) -> State {
        State {
            lanes: HashMap::new(),
            loaded: 0,
            cursor: 0,
            backlog: false,
            next_due: None,
            free_slots: slots.max(1),
            ready: BTreeSet::new(),
        }
    }

    /// Whether a new fire may go straight into the window: room, due, and nothing due older
    /// than it waits in the database.
    pub fn may_hold(&self, fire: &QueuedFire, now: DateTime<Utc>, window: usize) -> bool {
        self.loaded < window && !self.backlog && self.next_due.is_none_or(|at| at > now) && is_due(fire, now)
    }

    /// Puts a fire in the window.
    pub fn hold(&mut self, fire: &QueuedFire, cancel: Cancel) {
        self.lanes.entry(fire.routine.clone()).or_default().waiting.insert(fire.run_id, cancel);
        self.loaded += 1;
        self.cursor = self.cursor.max(fire.run_id);
    }

    /// Leaves a fire in the database only. Returns whether the pump must look at the time
    /// it sleeps until again (the fire is due earlier than it knew).
    pub fn spill(&mut self, fire: &QueuedFire, now: DateTime<Utc>) -> bool {
        self.lanes.entry(fire.routine.clone()).or_default().unloaded += 1;
        match fire.not_before.filter(|at| *at > now) {
            None => {
                self.backlog = true;
                false
            }
            Some(at) if self.next_due.is_none_or(|due| at < due) => {
                self.next_due = Some(at);
                true
            }
            Some(_) => false,
        }
    }

    /// Reads the whole queue again at the next refill: fires behind the cursor may be due.
    pub fn look_again(&mut self) {
        self.backlog = true;
        self.cursor = 0;
        self.next_due = None;
    }

    /// Forgets the lanes of `routines` that hold nothing (made for a fire that was skipped or
    /// already claimed), so [`Dispatcher::idle`] sees an empty dispatcher.
    pub fn drop_empty_lanes<'a>(&mut self, routines: impl Iterator<Item = &'a str>) {
        for name in routines {
            if self.lanes.get(name).is_some_and(Lane::is_empty) {
                self.lanes.remove(name);
            }
        }
    }

    fn holds(&self, fire: &QueuedFire) -> bool {
        self.lanes
            .get(&fire.routine)
            .is_some_and(|l| l.waiting.contains_key(&fire.run_id) || l.running.contains_key(&fire.run_id))
    }

    fn unloaded(&self) -> usize {
        self.lanes.values().map(|l| l.unloaded).sum()
    }
}

impl Dispatcher {
    /// How many more fires the pump may read into the window now. In a cluster, no more than
    /// this node can start soon (its free slots): what it cannot start stays in the queue for
    /// the other nodes.
    fn room(&self, state: &State) -> usize {
        let room = self.window.saturating_sub(state.loaded);
        if self.cluster { room.min(state.free_slots.saturating_sub(state.loaded)) } else { room }
    }

    /// Wakes the pump (starting it the first time).
    pub(super) fn wake_pump(self: &Arc<Self>) {
        if !self.pump_started.swap(true, Ordering::SeqCst) {
            let me = self.clone();
            tokio::spawn(async move { me.run_pump().await });
        }
        self.pump.notify_one();
    }

    /// A fire leaves the window (it starts, or ends without starting): its place is free.
    pub(super) fn free_place(self: &Arc<Self>) {
        let backlog = match self.state.lock() {
            Ok(mut state) => {
                state.loaded = state.loaded.saturating_sub(1);
                state.backlog
            }
            Err(_) => false,
        };
        if backlog {
            self.wake_pump();
        }
    }

    /// Reads due fires into the window whenever it is woken or a jittered fire becomes due,
    /// until the daemon stops.
    async fn run_pump(self: Arc<Self>) {
        loop {
            if self.closing.is_cancelled() {
                return;
            }
            let mut nap = self.refill().map(|at| (at - self.clock.now()).to_std().unwrap_or_default().min(MAX_NAP));
            if self.cluster {
                nap = Some(nap.map_or(CLUSTER_POLL, |n| n.min(CLUSTER_POLL)));
            }
            tokio::select! {
                () = self.pump.notified() => {}
                () = async {
                    match nap {
                        Some(nap) => tokio::time::sleep(nap).await,
                        None => std::future::pending().await,
                    }
                } => {}
                () = self.closing.cancelled() => return,
            }
            if self.cluster
                && let Ok(mut state) = self.state.lock()
            {
                state.look_again();
            }
        }
    }

    /// Fills the window's free places with due fires from the database, oldest first, and
    /// starts their tasks. Returns when to look again for a jittered fire.
    fn refill(self: &Arc<Self>) -> Option<DateTime<Utc>> {
        let store = &self.engine.store;
        let now = self.clock.now();
        let mut start = Vec::new();
        let mut resynced = false;
        let next_due = {
            let Ok(mut state) = self.state.lock() else { return None };
            if state.next_due.is_some_and(|at| at <= now) {
                state.look_again();
            }
            let mut read_all = false;
            let mut failed = false;
            while state.backlog && self.room(&state) > 0 {
                let room = self.room(&state);
                // Only a shared store reads it.
                let parallel =
                    if self.cluster { self.parallel.read().map(|p| p.clone()).unwrap_or_default() } else { Vec::new() };
                let fires = match store.due_fires(state.cursor, now, room, &parallel) {
                    Ok(fires) => fires,
                    Err(e) => {
                        tracing::error!(error = %e, "Could not read queued fires; trying again in a second.");
                        failed = true;
                        break;
                    }
                };
                if fires.len() < room {
                    state.backlog = false;
                    read_all = true;
                }
                for fire in fires {
                    state.cursor = state.cursor.max(fire.run_id);
                    if state.holds(&fire) {
                        continue;
                    }
                    let cancel = Cancel::default();
                    let lane = state.lanes.entry(fire.routine.clone()).or_default();
                    lane.unloaded = lane.unloaded.saturating_sub(1);
                    lane.waiting.insert(fire.run_id, cancel.clone());
                    state.loaded += 1;
                    self.promote(&mut state, &fire.routine);
                    start.push((fire, cancel));
                }
            }
            if self.cluster && read_all {
                // Every fire this node may take was read: those left belong to other nodes
                // (they hold the routine) or wait for their time. Counted here are only the
                // fires in memory that have not started.
                state.lanes.retain(|_, lane| {
                    lane.unloaded = 0;
                    !lane.is_empty()
                });
                self.pending.store(state.loaded, Ordering::SeqCst);
                match store.queued_count() {
                    Ok(n) => self.shared_depth.store(n, Ordering::SeqCst),
                    Err(e) => tracing::warn!(error = %e, "Could not count the cluster's queued fires."),
                }
                resynced = true;
            }
            if failed {
                state.next_due = Some(now + RETRY_AFTER_ERROR);
            } else if state.unloaded() == 0 {
                state.next_due = None;
            } else if !state.backlog || read_all {
                match store.next_not_before(now) {
                    Ok(at) => state.next_due = at,
                    Err(e) => {
                        tracing::error!(error = %e, "Could not read when queued fires are due; trying again in a second.");
                        state.next_due = Some(now + RETRY_AFTER_ERROR);
                    }
                }
                if read_all && state.next_due.is_none() {
                    // Every due fire was read and none waits for its time: nothing is left in
                    // the database, whatever the counts say (a row ended by hand).
                    let left = state.unloaded();
                    tracing::warn!(left, "Queued fires counted but not found in the database; counted as gone.");
                    self.less_pending(left);
                    state.lanes.retain(|_, lane| {
                        lane.unloaded = 0;
                        !lane.is_empty()
                    });
                    resynced = true;
                }
            }
            state.next_due
        };
        // Whoever waits on the dispatcher looks again: fires entered the window, or the counts
        // were set right.
        let loaded_some = !start.is_empty();
        for (fire, cancel) in start {
            self.spawn(fire, cancel);
        }
        if resynced || loaded_some {
            self.changed.notify_waiters();
        }
        next_due
    }
}
