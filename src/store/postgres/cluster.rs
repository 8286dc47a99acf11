//! The nodes of a cluster on PostgreSQL (SPEC §12): each process that owns runs keeps a row in
//! `nodes` and renews its heartbeat every quarter of its lease from a thread of its own. A run, a
//! queued fire held in a node's window and a delivery being sent all name their owner; an owner
//! whose heartbeat is older than its lease, or whose row is gone, is dead, and other nodes take
//! its work over.
//!
//! Every time compared here is the database's (`now()`): a lease never depends on the clocks of
//! the nodes. Each heartbeat also measures how far the node's clock is from the database's and
//! warns beyond `cluster.max_skew`.

use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use super::{Inner, Pg, rows};
use crate::store::queue::DAEMON_FIRE;
use crate::store::{QueuedFire, StoreError, to_db_time};

/// How long the row of a node whose lease lapsed stays for `routines cluster` to show.
const KEEP_LOST: &str = "1 hour";

/// Whether the node `n` is alive: its heartbeat is younger than its lease.
const ALIVE: &str = "n.heartbeat + n.lease_ms * interval '1 millisecond' > now()";

/// Whether the node `j` may judge others dead now: it renewed its own heartbeat within half a
/// lease, and has renewed it without a gap of half a lease for at least one lease
/// (`live_since`). A node beats every quarter lease, so another node's lease lapses only when
/// the database was out of its reach for three quarters of a lease; when the database was out
/// of everyone's reach (a restart, a cut at the database's side), the judge's own beats had
/// that gap too, and it waits a whole lease after it came back, by when every live node has
/// renewed. Evaluated in the statement that judges, at the database's time, so no judgement
/// rests on what a node knew before an outage began.
const SETTLED: &str = "j.heartbeat + j.lease_ms * interval '1 millisecond' / 2 > now()
     AND j.live_since + j.lease_ms * interval '1 millisecond' <= now()";

/// How often a node renews its heartbeat: every quarter of its lease (see [`SETTLED`]).
fn beat_every(lease: Duration) -> Duration {
    (lease / 4).max(Duration::from_millis(100))
}

/// Whether node `target` (an SQL expression) is dead by the judgement of node `judge` (an SQL
/// expression): its lease lapsed (or its row is gone) and the judge is [`SETTLED`]. A process
/// that is no node (a command that owns nothing yet) judges once the database has been up for
/// the target's lease, so a database that just restarted never makes a live node look dead.
fn dead(target: &str, judge: &str) -> String {
    format!(
        "(NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = {target} AND {ALIVE})
          AND CASE WHEN EXISTS (SELECT 1 FROM nodes j WHERE j.id = {judge})
                   THEN EXISTS (SELECT 1 FROM nodes j WHERE j.id = {judge} AND {SETTLED})
                   ELSE pg_postmaster_start_time()
                        + COALESCE((SELECT n.lease_ms FROM nodes n WHERE n.id = {target}), 0)
                          * interval '1 millisecond' <= now()
              END)"
    )
}

/// What kind of process a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `routines daemon`.
    Daemon,
    /// Any other command that owns runs (`routines run`, `heartbeat`, `deliver --retry`).
    Command,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Daemon => "daemon",
            Role::Command => "command",
        }
    }
}

/// How this process takes part: its lease, the skew it tolerates, its role, and whether its
/// heartbeat thread runs.
#[derive(Debug)]
pub(super) struct Presence {
    lease: Duration,
    max_skew: Duration,
    role: Role,
    started_at: DateTime<Utc>,
    beating: bool,
    /// The node left: its heartbeat stops.
    left: bool,
}

impl Default for Presence {
    fn default() -> Self {
        Presence {
            lease: Duration::from_secs(30),
            max_skew: Duration::from_secs(5),
            role: Role::Command,
            started_at: Utc::now(),
            beating: false,
            left: false,
        }
    }
}

/// A node as `routines cluster` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NodeRow {
    pub id: i64,
    pub host: String,
    pub pid: i64,
    pub version: String,
    pub role: String,
    pub started_at: DateTime<Utc>,
    /// The last heartbeat, in the database's time.
    pub heartbeat: DateTime<Utc>,
    /// Whether the heartbeat is younger than the node's lease.
    pub alive: bool,
    /// How far the node's clock was ahead of the database's at its last heartbeat (behind when
    /// negative), in milliseconds.
    pub skew_ms: i64,
    /// Runs the node is running now.
    pub running: i64,
}

impl Pg {
    /// Sets the lease and the tolerated skew of this process's node (from `cluster`).
    pub(crate) fn set_cluster(&self, lease: Duration, max_skew: Duration) {
        let mut p = self.inner.presence.lock().unwrap_or_else(PoisonError::into_inner);
        p.lease = lease;
        p.max_skew = max_skew;
    }

    /// Makes this process a node with `role` now: its row is written and its heartbeat starts.
    pub(crate) fn join(&self, id: i64, role: Role) -> Result<(), StoreError> {
        self.inner.presence.lock().unwrap_or_else(PoisonError::into_inner).role = role;
        self.beat(id)?;
        self.start_heartbeat(id);
        Ok(())
    }

    /// Makes sure this process is a node before it owns anything: the first call writes its
    /// row and starts its heartbeat. A failed write is logged and tried again by the heartbeat.
    pub(crate) fn be_present(&self, id: i64) {
        if self.inner.presence.lock().unwrap_or_else(PoisonError::into_inner).beating {
            return;
        }
        if let Err(e) = self.beat(id) {
            tracing::warn!(error = %e, "Cannot register this process as a node; trying again at the next heartbeat.");
        }
        self.start_heartbeat(id);
    }

    fn start_heartbeat(&self, id: i64) {
        let lease = {
            let mut p = self.inner.presence.lock().unwrap_or_else(PoisonError::into_inner);
            if p.beating {
                return;
            }
            p.beating = true;
            p.lease
        };
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let spawned = std::thread::Builder::new().name("routines-heartbeat".into()).spawn(move || {
            heartbeat_loop(&weak, id, lease);
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "Cannot start the heartbeat thread; this node will look dead to the others.");
            self.inner.presence.lock().unwrap_or_else(PoisonError::into_inner).beating = false;
        }
    }

    /// Writes this node's row with a fresh heartbeat (the database's time) and the skew of this
    /// machine's clock, and warns when the skew is beyond `max_skew`.
    fn beat(&self, id: i64) -> Result<(), StoreError> {
        let (lease, max_skew, role, started_at) = {
            let p = self.inner.presence.lock().unwrap_or_else(PoisonError::into_inner);
            (p.lease, p.max_skew, p.role, p.started_at)
        };
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        let host = host_name();
        let pid = i64::from(std::process::id());
        let started = to_db_time(started_at);
        let sent = Utc::now();
        let skew_ms = self.call(move |c| async move {
            let local_ms = Utc::now().timestamp_millis();
            let row = c
                .query_one(
                    "INSERT INTO nodes AS n (id, host, pid, version, role, started_at, heartbeat, lease_ms, skew_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, now(), $7,
                             $8 - (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT)
                     ON CONFLICT (id) DO UPDATE SET heartbeat = now(), role = excluded.role,
                         lease_ms = excluded.lease_ms, skew_ms = excluded.skew_ms,
                         live_since = CASE
                             WHEN n.heartbeat + n.lease_ms * interval '1 millisecond' / 2 > now()
                             THEN n.live_since ELSE now() END
                     RETURNING skew_ms",
                    &[&id, &host, &pid, &env!("CARGO_PKG_VERSION"), &role.as_str(), &started, &lease_ms, &local_ms],
                )
                .await?;
            Ok(row.try_get::<_, i64>(0)?)
        })?;
        // The round trip blurs the measure by at most its own length.
        let blur = (Utc::now() - sent).num_milliseconds().abs();
        if let Some(warning) = skew_warning(skew_ms, max_skew, blur) {
            tracing::warn!(skew_ms, "{warning}");
        }
        Ok(())
    }

    /// Whether node `id` counts as alive for node `me`: it is, unless its lease lapsed and `me`
    /// may judge (see [`dead`]).
    pub(crate) fn node_alive(&self, id: i64, me: i64) -> Result<bool, StoreError> {
        self.call(move |c| async move {
            let sql = format!("SELECT NOT {}", dead("$1", "$2"));
            Ok(c.query_one(&sql, &[&id, &me]).await?.try_get(0)?)
        })
    }

    /// Ends this node: the fires its window held go back to the queue for the other nodes, and
    /// its row goes.
    pub(crate) fn leave(&self, id: i64) -> Result<(), StoreError> {
        self.inner.presence.lock().unwrap_or_else(PoisonError::into_inner).left = true;
        let at = to_db_time(Utc::now());
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            let sql = format!("UPDATE runs SET owner = NULL WHERE {DAEMON_FIRE} AND owner = $1");
            tx.execute(&sql, &[&id]).await?;
            // A run this node still runs as it leaves (one that outlasted the stop's grace) ends
            // with it: interrupted by the stop, so the nodes that stay queue it again per its
            // `retry`, rather than finding it running as nobody's and taking it for a crash.
            tx.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = $2, reason = 'shutdown',
                        error = COALESCE(error, 'the node running it stopped before it finished')
                 WHERE owner = $1 AND status = 'running'",
                &[&id, &at],
            )
            .await?;
            tx.execute("DELETE FROM nodes WHERE id = $1", &[&id]).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    /// Gives the queued fires held by nodes that are dead back to the queue, and forgets daemons
    /// lost for more than [`KEEP_LOST`] and other commands as soon as they are gone. Returns
    /// how many fires came back.
    pub(crate) fn release_lost(&self, me: i64) -> Result<u64, StoreError> {
        self.call(move |c| async move {
            let sql = format!(
                "UPDATE runs SET owner = NULL WHERE {DAEMON_FIRE} AND owner IS NOT NULL AND owner <> $1
                   AND {}",
                dead("runs.owner", "$1")
            );
            let released = c.execute(&sql, &[&me]).await?;
            let forget = format!(
                "DELETE FROM nodes l WHERE l.id <> $1 AND {} AND (l.role <> 'daemon'
                   OR l.heartbeat + l.lease_ms * interval '1 millisecond' + interval '{KEEP_LOST}' < now())",
                dead("l.id", "$1")
            );
            c.execute(&forget, &[&me]).await?;
            Ok(released)
        })
    }

    /// The daemons (and the other commands while they live), alive first, each with the runs it
    /// is running.
    pub(crate) fn nodes(&self) -> Result<Vec<NodeRow>, StoreError> {
        self.call(|c| async move {
            let sql = format!(
                "SELECT n.id, n.host, n.pid, n.version, n.role, n.started_at,
                        (extract(epoch FROM n.heartbeat) * 1000)::BIGINT, {ALIVE}, n.skew_ms,
                        (SELECT COUNT(*) FROM runs r WHERE r.owner = n.id AND r.status = 'running')
                 FROM nodes n WHERE n.role = 'daemon' OR {ALIVE}
                 ORDER BY {ALIVE} DESC, n.host, n.started_at, n.id"
            );
            c.query(&sql, &[])
                .await?
                .iter()
                .map(|r| {
                    let millis: i64 = r.try_get(6)?;
                    Ok(NodeRow {
                        id: r.try_get(0)?,
                        host: r.try_get(1)?,
                        pid: r.try_get(2)?,
                        version: r.try_get(3)?,
                        role: r.try_get(4)?,
                        started_at: rows::time(r, 5)?,
                        heartbeat: Utc.timestamp_millis_opt(millis).single().unwrap_or_default(),
                        alive: r.try_get(7)?,
                        skew_ms: r.try_get(8)?,
                        running: r.try_get(9)?,
                    })
                })
                .collect()
        })
    }

    /// Of `runs`, those that are no longer running as this node's: another node took them
    /// over after this node's lease lapsed.
    pub(crate) fn taken_over(&self, me: i64, runs: Vec<i64>) -> Result<Vec<i64>, StoreError> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        self.call(move |c| async move {
            c.query(
                "SELECT id FROM runs WHERE id = ANY($2) AND status = 'running' AND owner IS DISTINCT FROM $1",
                &[&me, &runs],
            )
            .await?
            .iter()
            .map(|r| Ok(r.try_get(0)?))
            .collect()
        })
    }

    /// Takes up to `limit` due queued fires with an id above `after` for node `me`'s window,
    /// oldest first, of those no node holds yet. A routine whose fires another
    /// node holds (queued in its window or running) is passed over, so a routine's fires run
    /// one node at a time and `overlap` holds across the cluster; the routines in `parallel`
    /// (`overlap: allow`) are not, so a flood of their fires spreads over the nodes. Rows another claimer has
    /// locked are skipped (`FOR UPDATE SKIP LOCKED`), and one advisory lock makes the claims of
    /// all nodes one at a time, so two nodes never take two fires of one routine at once.
    pub(crate) fn claim_due(
        &self,
        me: i64,
        after: i64,
        now: DateTime<Utc>,
        limit: i64,
        parallel: Vec<String>,
    ) -> Result<Vec<QueuedFire>, StoreError> {
        let now = to_db_time(now);
        self.call(move |mut c| async move {
            let tx = c.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock(hashtext('routines.queue'))", &[]).await?;
            let sql = "WITH picked AS (
                     SELECT q.id FROM runs q
                     WHERE q.status = 'queued' AND q.kind = 'routine' AND q.trigger <> 'manual'
                       AND q.routine IS NOT NULL AND q.id > $2
                       AND (q.not_before IS NULL OR q.not_before <= $3)
                       AND q.owner IS NULL
                       AND (q.routine = ANY($5) OR NOT EXISTS (
                           SELECT 1 FROM runs o
                           WHERE o.routine = q.routine AND o.status IN ('queued', 'running')
                             AND o.kind = 'routine' AND o.trigger <> 'manual'
                             AND o.owner IS NOT NULL AND o.owner <> $1))
                     ORDER BY q.id LIMIT $4
                     FOR UPDATE OF q SKIP LOCKED)
                 UPDATE runs r SET owner = $1 FROM picked WHERE r.id = picked.id
                 RETURNING r.id, r.routine, r.attempt, r.scheduled_for, r.not_before";
            let mut fires = tx
                .query(sql, &[&me, &after, &now, &limit, &parallel])
                .await?
                .iter()
                .map(|r| {
                    Ok(QueuedFire {
                        run_id: r.try_get(0)?,
                        routine: r.try_get(1)?,
                        attempt: rows::small(r, 2)?.max(1),
                        scheduled_for: rows::opt_time(r, 3)?,
                        not_before: rows::opt_time(r, 4)?,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            tx.commit().await?;
            fires.sort_by_key(|f| f.run_id);
            Ok(fires)
        })
    }
}

/// What to say about a clock `skew_ms` ahead of the database's (behind when negative), measured
/// within `blur_ms`: nothing while it may be within `max_skew`.
fn skew_warning(skew_ms: i64, max_skew: Duration, blur_ms: i64) -> Option<String> {
    let limit = i64::try_from(max_skew.as_millis()).unwrap_or(i64::MAX);
    (skew_ms.abs() > limit.saturating_add(blur_ms)).then(|| {
        format!(
            "This machine's clock is {} ms {} the database's, more than cluster.max_skew ({limit} ms); fix its \
             time synchronisation (NTP): its time triggers fire that much off.",
            skew_ms.abs(),
            if skew_ms > 0 { "ahead of" } else { "behind" }
        )
    })
}

/// Renews node `id`'s heartbeat every quarter of `lease` until the last handle of its database
/// is dropped.
fn heartbeat_loop(weak: &Weak<Inner>, id: i64, lease: Duration) {
    let every = beat_every(lease);
    loop {
        std::thread::sleep(every);
        let Some(inner) = weak.upgrade() else { return };
        if inner.presence.lock().unwrap_or_else(PoisonError::into_inner).left {
            return;
        }
        let pg = Pg { inner };
        if let Err(e) = pg.beat(id) {
            tracing::warn!(error = %e, "Cannot renew this node's lease; other nodes take its runs over once it lapses.");
        }
    }
}

/// This machine's host name, or `unknown`.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into a buffer this function owns.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::store::testing::{execute, postgres_store};
    use crate::store::{NewFire, RunOutcome, RunStatus, Store};

    fn fire<'a>(routine: &'a str) -> NewFire<'a> {
        NewFire {
            routine,
            trigger: "webhook",
            scheduled_for: None,
            context: "{}",
            not_before: None,
            skip_if_active: None,
            key: None,
        }
    }

    /// A node row for `id`, its last heartbeat `ago` in the past, with a lease of 10 s.
    fn node(store: &Store, id: i64, ago: &str) {
        execute(
            store,
            &format!(
                "INSERT INTO nodes (id, host, pid, version, role, started_at, heartbeat, lease_ms)
                 VALUES ({id}, 'host-{id}', 1, '0', 'daemon', '2026-01-01T00:00:00.000Z',
                         now() - interval '{ago}', 10000)"
            ),
        )
        .unwrap();
    }

    /// This process as a node that may judge others: its heartbeat fresh, unbroken for an hour.
    fn settled_judge(store: &Store) -> i64 {
        let me = crate::store::orphans::own_id();
        node(store, me, "0 seconds");
        execute(store, &format!("UPDATE nodes SET live_since = now() - interval '1 hour' WHERE id = {me}")).unwrap();
        me
    }

    /// `(status, reason)` of run `id`.
    fn status_reason(store: &Store, id: i64) -> (String, Option<String>) {
        store
            .postgres()
            .unwrap()
            .call(move |c| async move {
                let row = c.query_one("SELECT status, reason FROM runs WHERE id = $1", &[&id]).await?;
                Ok((row.get(0), row.get(1)))
            })
            .unwrap()
    }

    fn claim(store: &Store, me: i64, limit: i64) -> Vec<(i64, String)> {
        let pg = store.postgres().unwrap();
        pg.claim_due(me, 0, Utc::now(), limit, Vec::new()).unwrap().into_iter().map(|f| (f.run_id, f.routine)).collect()
    }

    #[test]
    fn a_routines_fires_go_to_one_node_at_a_time_and_a_lost_nodes_come_back() {
        let store = postgres_store(None);
        let me = settled_judge(&store);
        node(&store, 1, "0 seconds");
        node(&store, 2, "0 seconds");
        let a1 = store.claim_fire(&fire("a")).unwrap().unwrap();
        let a2 = store.claim_fire(&fire("a")).unwrap().unwrap();
        let b1 = store.claim_fire(&fire("b")).unwrap().unwrap();
        assert_eq!(claim(&store, 1, 1), [(a1, "a".to_string())]);
        // Node 1 holds `a`: node 2 passes over a2 and takes b1.
        assert_eq!(claim(&store, 2, 10), [(b1, "b".to_string())]);
        assert_eq!(claim(&store, 2, 10), []);
        assert_eq!(claim(&store, 1, 10), [(a2, "a".to_string())]);

        // A routine with `overlap: allow` spreads: node 2 takes a fire of it while node 1 holds one.
        let c1 = store.claim_fire(&fire("c")).unwrap().unwrap();
        let c2 = store.claim_fire(&fire("c")).unwrap().unwrap();
        let pg = store.postgres().unwrap();
        let parallel = vec!["c".to_string()];
        let ids = |fires: Vec<QueuedFire>| fires.into_iter().map(|f| f.run_id).collect::<Vec<_>>();
        assert_eq!(ids(pg.claim_due(1, 0, Utc::now(), 1, parallel.clone()).unwrap()), [c1]);
        assert_eq!(ids(pg.claim_due(2, 0, Utc::now(), 1, Vec::new()).unwrap()), Vec::<i64>::new());
        assert_eq!(ids(pg.claim_due(2, 0, Utc::now(), 1, parallel).unwrap()), [c2]);

        // Only the owner starts a fire it holds.
        assert_eq!(store.postgres().unwrap().start_run(a1, Some(2)).unwrap(), 0);
        assert_eq!(store.postgres().unwrap().start_run(a1, Some(1)).unwrap(), 1);
        assert_eq!(store.postgres().unwrap().start_run(a1, Some(1)).unwrap(), 0, "started once");

        // Node 1 dies: its lease lapses. Its queued fire goes back to the queue, its running run
        // is interrupted by the next sweep (`interrupt_orphans`), and node 2 may take `a`.
        execute(&store, "UPDATE nodes SET heartbeat = now() - interval '1 minute' WHERE id = 1").unwrap();
        assert!(!store.postgres().unwrap().node_alive(1, me).unwrap());
        assert!(store.postgres().unwrap().node_alive(2, me).unwrap());
        assert_eq!(store.release_lost().unwrap(), 2, "a2 and c1");
        assert_eq!(claim(&store, 2, 10), [(c1, "c".to_string())], "a run of `a` still runs as node 1's");
        assert_eq!(store.interrupt_orphans().unwrap(), [a1]);
        assert_eq!(claim(&store, 2, 10), [(a2, "a".to_string())]);
        // Node 1 comes back late: its run was taken over, so its end is not recorded.
        let late = store
            .postgres()
            .unwrap()
            .end_run(
                a1,
                super::super::OwnedEnd::new(&RunOutcome::new(RunStatus::Succeeded, None), None, None),
                vec![],
                Some(1),
            )
            .unwrap_err();
        assert!(matches!(late, StoreError::TakenOver(id) if id == a1), "{late}");
        assert_eq!(store.get_run(a1).unwrap().unwrap().status, RunStatus::Interrupted);
        // Nor are the events it goes on making (a tool call it finished meanwhile).
        let event = || super::super::OwnedEvent {
            kind: "tool_call",
            tool: Some("shell".into()),
            status: "success".into(),
            arguments: None,
            detail: None,
            prompt_tokens: None,
            completion_tokens: None,
            duration_ms: 1,
        };
        let late = store.postgres().unwrap().record_event(a1, event(), Some(1)).unwrap_err();
        assert!(matches!(late, StoreError::TakenOver(id) if id == a1), "{late}");
        assert!(store.run_events(a1).unwrap().is_empty());
        assert_eq!(store.postgres().unwrap().taken_over(1, vec![a1, a2]).unwrap(), Vec::<i64>::new());
        store.postgres().unwrap().start_run(a2, Some(2)).unwrap();
        assert_eq!(store.postgres().unwrap().taken_over(1, vec![a2]).unwrap(), [a2]);
        // Node 2 now runs it: node 1 records nothing in it, node 2 does.
        let late = store.postgres().unwrap().record_event(a2, event(), Some(1)).unwrap_err();
        assert!(matches!(late, StoreError::TakenOver(id) if id == a2), "{late}");
        assert_eq!(store.postgres().unwrap().record_event(a2, event(), Some(2)).unwrap(), 1);
    }

    #[test]
    fn a_clock_further_off_than_max_skew_is_named_with_its_direction() {
        let max = Duration::from_secs(5);
        assert_eq!(skew_warning(4_999, max, 0), None);
        assert_eq!(skew_warning(-5_400, max, 500), None, "within the round trip's blur");
        let ahead = skew_warning(7_250, max, 20).unwrap();
        assert!(ahead.starts_with("This machine's clock is 7250 ms ahead of the database's"), "{ahead}");
        assert!(ahead.contains("cluster.max_skew (5000 ms)"), "{ahead}");
        let behind = skew_warning(-9_000, max, 20).unwrap();
        assert!(behind.contains("9000 ms behind the database's"), "{behind}");
    }

    #[test]
    fn nodes_are_listed_alive_first_with_their_runs_and_a_leaving_node_gives_its_fires_back() {
        let store = postgres_store(None);
        node(&store, 7, "1 minute");
        let pg = store.postgres().unwrap();
        pg.set_cluster(Duration::from_secs(30), Duration::from_secs(5));
        let me = crate::store::orphans::own_id();
        pg.join(me, Role::Daemon).unwrap();
        let id = store.claim_fire(&fire("a")).unwrap().unwrap();
        store.claim_fire(&fire("b")).unwrap().unwrap();
        store.due_fires(0, Utc::now(), 10, &[]).unwrap();
        store.start_run(id).unwrap();
        let nodes = store.nodes().unwrap();
        let seen: Vec<(i64, bool, i64, &str)> =
            nodes.iter().map(|n| (n.id, n.alive, n.running, n.role.as_str())).collect();
        assert_eq!(seen, [(me, true, 1, "daemon"), (7, false, 0, "daemon")]);
        assert_eq!(nodes[0].host, host_name());
        assert!(nodes[0].skew_ms.abs() < 5000, "{nodes:?}");
        // Leaving: the fire held but not started goes back; the run it still runs ends as
        // interrupted by the stop (for the nodes that stay to queue again); the node's row goes.
        store.leave_cluster().unwrap();
        assert_eq!(claim(&store, 3, 10).len(), 1);
        assert_eq!(status_reason(&store, id), ("interrupted".to_string(), Some("shutdown".to_string())));
        assert_eq!(store.nodes().unwrap().iter().map(|n| n.id).collect::<Vec<_>>(), [7]);
    }

    /// After the database was out of everyone's reach, every lease lapsed: the first node back
    /// must not take the others for dead before they could renew. A node judges only after a
    /// lease of unbroken beats of its own, and only while its own heartbeat is fresh; the check
    /// is in the statement that judges.
    #[test]
    fn a_node_judges_others_dead_only_after_a_lease_of_its_own_unbroken_beats() {
        let store = postgres_store(None);
        let pg = store.postgres().unwrap();
        let me = settled_judge(&store);
        node(&store, 1, "1 minute");
        let run = store.claim_fire(&fire("a")).unwrap().unwrap();
        execute(&store, &format!("UPDATE runs SET status = 'running', owner = 1 WHERE id = {run}")).unwrap();
        let fire_held = store.claim_fire(&fire("b")).unwrap().unwrap();
        execute(&store, &format!("UPDATE runs SET owner = 1 WHERE id = {fire_held}")).unwrap();

        // Back from an outage: this node's beats broke off a moment ago.
        execute(&store, &format!("UPDATE nodes SET live_since = now() WHERE id = {me}")).unwrap();
        assert!(pg.node_alive(1, me).unwrap(), "not judged: this node's own beats just resumed");
        assert_eq!(store.interrupt_orphans().unwrap(), Vec::<i64>::new());
        assert_eq!(store.release_lost().unwrap(), 0);
        assert_eq!(status_reason(&store, run).0, "running");

        // Its own heartbeat older than half its lease (30 s, this process's, written when it
        // claimed a fire): it missed beats, and does not judge either.
        execute(
            &store,
            &format!(
                "UPDATE nodes SET live_since = now() - interval '1 hour', heartbeat = now() - interval '20 seconds'
                 WHERE id = {me}"
            ),
        )
        .unwrap();
        assert!(pg.node_alive(1, me).unwrap(), "not judged: this node's own heartbeat is stale");
        assert_eq!(store.interrupt_orphans().unwrap(), Vec::<i64>::new());

        // A lease of unbroken beats: node 1 is dead, its run interrupted, its fire given back.
        execute(&store, &format!("UPDATE nodes SET heartbeat = now() WHERE id = {me}")).unwrap();
        assert!(!pg.node_alive(1, me).unwrap());
        assert_eq!(store.interrupt_orphans().unwrap(), [run]);
        assert_eq!(store.release_lost().unwrap(), 1);
        assert_eq!(status_reason(&store, run), ("interrupted".to_string(), Some("crash".to_string())));

        // A process that is no node judges by how long the database has been up: a node whose
        // lease is longer than that is never taken for dead.
        node(&store, 2, "2 days");
        execute(&store, "UPDATE nodes SET lease_ms = 86400000 WHERE id = 2").unwrap();
        assert!(pg.node_alive(2, 424_242).unwrap(), "the database is younger than node 2's lease");
        assert!(!pg.node_alive(2, me).unwrap(), "a settled node judges by the lease alone");
    }

    /// A beat keeps `live_since` while the beats come within half a lease, and starts it again
    /// after a longer gap.
    #[test]
    fn a_gap_of_half_a_lease_in_a_nodes_beats_starts_its_live_since_again() {
        let store = postgres_store(None);
        let pg = store.postgres().unwrap();
        pg.set_cluster(Duration::from_secs(10), Duration::from_secs(5));
        let me = crate::store::orphans::own_id();
        pg.beat(me).unwrap();
        let since = |store: &Store| -> f64 {
            store
                .postgres()
                .unwrap()
                .call(move |c| async move {
                    let sql = "SELECT extract(epoch FROM now() - live_since)::FLOAT8 FROM nodes WHERE id = $1";
                    Ok(c.query_one(sql, &[&me]).await?.get::<_, f64>(0))
                })
                .unwrap()
        };
        let set = |heartbeat: &str| {
            execute(
                &store,
                &format!(
                    "UPDATE nodes SET live_since = now() - interval '1 hour',
                            heartbeat = now() - interval '{heartbeat}' WHERE id = {me}"
                ),
            )
            .unwrap();
        };
        set("2 seconds");
        pg.beat(me).unwrap();
        assert!(since(&store) > 3000.0, "kept after a beat 2 s late of a 10 s lease");
        set("6 seconds");
        pg.beat(me).unwrap();
        assert!(since(&store) < 60.0, "started again after a gap of 6 s");
    }
}
