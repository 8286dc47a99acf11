//! The store's side of a cluster (SPEC §12): this process as a node of a shared PostgreSQL
//! database, and the work of nodes that died. With SQLite there is one daemon per data folder
//! and these do nothing (see `postgres/cluster.rs` for how nodes work).

use std::time::Duration;

use super::postgres::cluster::Role;
use super::{Store, StoreError};

pub use super::postgres::cluster::NodeRow;

impl Store {
    /// Whether several processes on several machines may share this store (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        self.postgres().is_some()
    }

    /// The lease of this process's node and the clock skew it tolerates (`cluster`).
    pub fn set_cluster(&self, lease: Duration, max_skew: Duration) {
        if let Some(pg) = self.postgres() {
            pg.set_cluster(lease, max_skew);
        }
    }

    /// Registers this process as a daemon node and starts its heartbeat.
    pub fn join_cluster(&self) -> Result<(), StoreError> {
        match self.postgres() {
            Some(pg) => pg.join(super::orphans::own_id(), Role::Daemon),
            None => Ok(()),
        }
    }

    /// Ends this node: queued fires its window held go back to the queue, its row goes.
    pub fn leave_cluster(&self) -> Result<(), StoreError> {
        match self.postgres() {
            Some(pg) => pg.leave(super::orphans::own_id()),
            None => Ok(()),
        }
    }

    /// Gives the queued fires held by dead nodes back to the queue; returns how many.
    pub fn release_lost(&self) -> Result<u64, StoreError> {
        match self.postgres() {
            Some(pg) => pg.release_lost(super::orphans::own_id()),
            None => Ok(0),
        }
    }

    /// Whether the shared database answers now (always with SQLite, a local file).
    pub fn reachable(&self) -> Result<(), StoreError> {
        match self.postgres() {
            Some(pg) => pg.ping(),
            None => Ok(()),
        }
    }

    /// The nodes of the cluster, alive first; empty with SQLite.
    pub fn nodes(&self) -> Result<Vec<NodeRow>, StoreError> {
        match self.postgres() {
            Some(pg) => pg.nodes(),
            None => Ok(Vec::new()),
        }
    }

    /// Of `runs` (this process's running runs), those another node has taken over since this
    /// node's lease lapsed: they must stop, their results are not recorded.
    pub fn taken_over(&self, runs: Vec<i64>) -> Result<Vec<i64>, StoreError> {
        match self.postgres() {
            Some(pg) => pg.taken_over(super::orphans::own_id(), runs),
            None => Ok(Vec::new()),
        }
    }
}
