//! One fire in the window, from its place to its run: it waits for its routine's turn, then
//! for a slot of `limits.max_concurrent_runs` (the oldest fire waiting takes the next one),
//! then reads its trigger back from the database and runs.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::window::State;
use super::{Dispatcher, REMOVED_WHY, REPLACED_WHY};
use crate::engine::{Cancel, RunOptions};
use crate::routine::{Overlap, TriggerContext};
use crate::store::{QueuedFire, reason};

impl Dispatcher {
    /// Starts the task of a fire just put in the window.
    pub(super) fn spawn(self: &Arc<Self>, fire: QueuedFire, cancel: Cancel) {
        #[cfg(test)]
        if let Ok(mut spawned) = self.spawned.lock() {
            spawned.push(fire.clone());
        }
        let me = self.clone();
        tokio::spawn(async move { me.drive(fire, cancel).await });
    }

    /// One fire's task: waits for its turn and a slot, then runs it.
    async fn drive(self: Arc<Self>, fire: QueuedFire, cancel: Cancel) {
        let name = fire.routine.clone();
        let run_id = fire.run_id;
        let slot = self.wait_for_turn(&fire, &cancel).await && self.wait_for_slot(&fire).await;
        let started = slot && self.run(fire, &cancel).await;
        // The slot and the routine's turn go to the next fires in one step, so the oldest
        // fire waiting gets the slot.
        if let Ok(mut state) = self.state.lock() {
            if slot {
                state.free_slots += 1;
            }
            state.ready.remove(&run_id);
            if let Some(lane) = state.lanes.get_mut(&name) {
                lane.running.remove(&run_id);
                lane.waiting.remove(&run_id);
                if lane.is_empty() {
                    state.lanes.remove(&name);
                }
            }
            self.promote(&mut state, &name);
        }
        if started {
            self.executing.fetch_sub(1, Ordering::SeqCst);
            if self.cluster {
                // A slot is free: take the next fire of the cluster's queue.
                self.wake_pump();
            }
        } else {
            self.less_pending(1);
            self.free_place();
        }
        self.changed.notify_waiters();
    }

    /// Waits until the fire holds its routine's turn. `false` when it must not run (the
    /// daemon stops, it was replaced, its routine is gone).
    async fn wait_for_turn(&self, fire: &QueuedFire, cancel: &Cancel) -> bool {
        let store = &self.engine.store;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.closing.is_cancelled() {
                return false;
            }
            if cancel.is_cancelled() {
                let _ = store.skip_queued(fire.run_id, reason::REPLACED, REPLACED_WHY);
                return false;
            }
            if self.routine(&fire.routine).is_none() {
                let _ = store.skip_queued(fire.run_id, reason::REMOVED, REMOVED_WHY);
                return false;
            }
            match self.take_turn(fire) {
                Some(true) => return true,
                Some(false) => {}
                None => return false,
            }
            tokio::select! {
                _ = notified => {}
                _ = self.closing.cancelled() => return false,
            }
        }
    }

    /// Waits until the fire holds a slot of max_concurrent_runs. `false` when it must not
    /// run (the daemon stops, its routine is gone).
    async fn wait_for_slot(&self, fire: &QueuedFire) -> bool {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.routine(&fire.routine).is_none() {
                let _ = self.engine.store.skip_queued(fire.run_id, reason::REMOVED, REMOVED_WHY);
                return false;
            }
            match self.take_slot(fire.run_id) {
                Some(true) => {
                    // The next oldest may take another free slot.
                    self.changed.notify_waiters();
                    return true;
                }
                Some(false) => {}
                None => return false,
            }
            tokio::select! {
                _ = notified => {}
                _ = self.closing.cancelled() => return false,
            }
        }
    }

    /// Runs a fire that holds its turn and a slot: its trigger, a webhook's body included, is
    /// read from the database only now. Returns whether the run started.
    async fn run(self: &Arc<Self>, fire: QueuedFire, cancel: &Cancel) -> bool {
        let store = &self.engine.store;
        // A stopping daemon leaves the fire queued (its cancellation is the stop's, not a
        // newer fire's).
        if self.closing.is_cancelled() {
            return false;
        }
        if cancel.is_cancelled() {
            let _ = store.skip_queued(fire.run_id, reason::REPLACED, REPLACED_WHY);
            return false;
        }
        let Some(routine) = self.routine(&fire.routine) else { return false };
        let trigger = match store.queued_trigger(fire.run_id) {
            Ok(Some(stored)) => {
                match TriggerContext::from_stored(&stored.kind, stored.scheduled_for, stored.context.as_deref()) {
                    Ok(trigger) => trigger,
                    Err(e) => {
                        let why = format!("the fire's trigger could not be read back from the database: {e}");
                        self.set_aside(fire.run_id, &routine.name, &why);
                        return false;
                    }
                }
            }
            Ok(None) => {
                tracing::info!(routine = %routine.name, run_id = fire.run_id, "The fire ended before it started.");
                return false;
            }
            Err(e) => {
                let why = format!("the fire's trigger could not be read from the database: {e}");
                self.set_aside(fire.run_id, &routine.name, &why);
                return false;
            }
        };
        self.executing.fetch_add(1, Ordering::SeqCst);
        self.less_pending(1);
        self.free_place();
        if let Some(at) = fire.scheduled_for {
            let due = fire.not_before.unwrap_or(at);
            let late = (self.clock.now() - due).to_std().unwrap_or_default();
            self.metrics.observe_lateness(late);
        }
        // Boxed: the run's future is large, and inline it would make every
        // waiting fire's task as large as a running one.
        let opts = RunOptions::default();
        let kind = trigger.kind();
        super::runlog::started(&routine.name, fire.run_id, kind, fire.attempt);
        let began = std::time::Instant::now();
        let result =
            Box::pin(self.engine.execute(&routine, fire.run_id, trigger, fire.attempt, &opts, None, cancel)).await;
        match result {
            Ok(report) => super::runlog::finished(&self.engine, &report, kind, began.elapsed()),
            Err(e) => tracing::error!(
                routine = %routine.name,
                run_id = fire.run_id,
                error = %e,
                hint = e.hint().as_deref(),
                "Run {} of {} could not be recorded: {e}", fire.run_id, routine.name
            ),
        }
        true
    }

    /// Whether `fire` holds its routine's turn (see [`Dispatcher::promote`]). `None` if the
    /// state is unusable.
    fn take_turn(&self, fire: &QueuedFire) -> Option<bool> {
        let mut state = self.state.lock().ok()?;
        self.promote(&mut state, &fire.routine);
        Some(state.lanes.get(&fire.routine).is_some_and(|lane| lane.running.contains_key(&fire.run_id)))
    }

    /// Gives the routine's turn to the fires in memory that may have it now: all of them with
    /// `overlap: allow`, else the oldest once no run of the routine is active. They wait for
    /// a slot, which goes to the oldest of all. Called under the lock whenever a fire enters
    /// the window or a run ends, so the order does not depend on which task runs first.
    pub(super) fn promote(&self, state: &mut State, name: &str) {
        let allow = self.routine(name).is_some_and(|r| r.spec.overlap == Overlap::Allow);
        let State { lanes, ready, .. } = state;
        let Some(lane) = lanes.get_mut(name) else { return };
        while lane.running.is_empty() || allow {
            let Some((id, cancel)) = lane.waiting.pop_first() else { break };
            lane.running.insert(id, cancel);
            ready.insert(id);
        }
    }

    /// Takes a slot if one is free and `run_id` is the oldest fire waiting for one.
    fn take_slot(&self, run_id: i64) -> Option<bool> {
        let mut state = self.state.lock().ok()?;
        if state.free_slots > 0 && state.ready.first() == Some(&run_id) {
            state.free_slots -= 1;
            state.ready.remove(&run_id);
            Some(true)
        } else {
            Some(false)
        }
    }
}
