//! The whole daemon wired together: timer loop, file watchers, webhook
//! listener, hot reload of routine files, and the orderly stop.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{self, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::dispatch::{Accepted, Dispatcher, IncomingFire};
use super::watch::{FileFire, WatchSpec, Watcher};
use super::webhook::{self, Intake, IntakeError, Route, RouteTable};
use super::{DaemonError, Scheduler, Signal};
use crate::clock::Clock;
use crate::config::{self, Config, Env, ProcessEnv};
use crate::engine::Engine;
use crate::policy::Redactor;
use crate::routine::{FileContext, LoadedRoutines, Routine, TriggerContext, WebhookAuth, WebhookRequest, load_all};
use crate::status::{self, RoutineList, StatusState};
use crate::store::{Location, Store, StoreError};
use crate::tools::tool_names;

/// How long routine files must be quiet before they are reloaded.
const RELOAD_DEBOUNCE: Duration = Duration::from_millis(300);

/// Runs the daemon until `stop` resolves, then stops in order: no new
/// fires, running runs get `limits.shutdown_grace`, the rest are cancelled
/// (recorded `interrupted`, reason shutdown, and queued again per `retry`).
/// `hurry` (a second SIGTERM or SIGINT) cuts the grace period short.
pub async fn run(
    engine: Engine,
    loaded: LoadedRoutines,
    clock: Arc<dyn Clock>,
    stop: impl std::future::Future<Output = ()>,
    hurry: CancellationToken,
) -> Result<(), DaemonError> {
    let config = engine.config.clone();
    let engine = Arc::new(engine);
    let (mut scheduler, routines) = start_scheduler(&engine, loaded, &clock)?;
    let dispatcher = scheduler.dispatcher.clone();
    let (signals_tx, signals_rx) = unbounded_channel::<Signal>();
    let files = watch_files(&config, &routines, signals_tx.clone())?;
    let flushed = (files.watcher.clone(), files.poller.clone());
    let http = listen(&config, &dispatcher, &routines).await?;
    let tasks = Background::start(&engine, &clock, &dispatcher, &http.stop)?;

    // Hot reload; what changed also goes to the watchers and the webhook table.
    let reload_watch = watch_routine_files(&config, signals_tx.clone());
    scheduler.on_change = Some(follow_changes(files.watcher, files.poller, http.table, http.page_routines));
    announce_started(routines.len(), &http.address);

    let db_gone = http.db_gone;
    let stop = async move {
        tokio::select! {
            () = stop => {}
            () = db_gone.cancelled() => {}
        }
    };
    // A file change still in its debounce fires as the daemon stops, and reaches the scheduler
    // before it returns, which queues it for the next start rather than dropping it.
    scheduler.run_loop(signals_rx, stop, last_fires(flushed, files.barrier)).await;

    tracing::info!("Stopping: no new fires; running runs get {}.", config.limits.shutdown_grace);
    drop(reload_watch);
    http.stop.cancel();
    tasks.join().await;
    scheduler.on_change = None;
    dispatcher.shut_down(config.limits.shutdown_grace.get(), &hurry).await;
    if let Err(e) = engine.store.leave_cluster() {
        tracing::warn!(error = %e, "Could not leave the cluster; other nodes take this node's queued fires once its lease lapses.");
    }
    match tokio::time::timeout(Duration::from_secs(5), http.server).await {
        Ok(Ok(Err(e))) => tracing::warn!(error = %e, "The webhook listener stopped with an error."),
        Err(_) => tracing::warn!("The webhook listener did not stop within 5 s."),
        _ => {}
    }
    super::announce("routines daemon: stopped");
    match http.db.reason() {
        Some(why) => Err(DaemonError::DatabaseGone(why.to_string())),
        None => Ok(()),
    }
}

/// The timer loop and its dispatcher with the loaded routines, joined to the cluster and
/// with the runs a stopped process left behind recovered; returns the routines it schedules.
fn start_scheduler(
    engine: &Arc<Engine>,
    loaded: LoadedRoutines,
    clock: &Arc<dyn Clock>,
) -> Result<(Scheduler, Vec<Arc<Routine>>), DaemonError> {
    let max = usize::try_from(engine.config.limits.max_concurrent_runs).unwrap_or(usize::MAX);
    let dispatcher = Dispatcher::new(engine.clone(), clock.clone(), max);
    let mut scheduler = Scheduler::new(dispatcher.clone(), clock.clone());
    for d in &loaded.diagnostics.0 {
        tracing::warn!("{d}");
    }
    scheduler.set_routines(loaded.routines)?;
    // A node of a cluster is one before it takes any work (SPEC §12).
    engine.store.join_cluster()?;
    scheduler.recover()?;
    release_freed_memory();
    let routines = dispatcher.routines.read().map(|m| m.values().cloned().collect::<Vec<_>>()).unwrap_or_default();
    Ok((scheduler, routines))
}

/// File triggers: one watcher on events, one polling for triggers with `poll`.
struct FileWatches {
    watcher: Arc<Watcher>,
    poller: Arc<Watcher>,
    /// A request here is answered once every fire sent before it has been passed on.
    barrier: UnboundedSender<oneshot::Sender<()>>,
}

fn watch_files(
    config: &Config,
    routines: &[Arc<Routine>],
    signals: UnboundedSender<Signal>,
) -> Result<FileWatches, DaemonError> {
    let (files_tx, files_rx) = unbounded_channel::<FileFire>();
    let (evented, polled, interval) = watch_specs(routines);
    let watcher = Arc::new(Watcher::start(config.workspace.clone(), evented, files_tx.clone(), None)?);
    let poller = Arc::new(Watcher::start(config.workspace.clone(), polled, files_tx, Some(interval))?);
    let (barrier, barriers) = unbounded_channel::<oneshot::Sender<()>>();
    forward_file_fires(files_rx, barriers, signals);
    Ok(FileWatches { watcher, poller, barrier })
}

/// Passes each file fire on to the timer loop as a fire, and answers each barrier request
/// once the fires sent before it have been passed on.
fn forward_file_fires(
    mut files_rx: mpsc::UnboundedReceiver<FileFire>,
    mut barriers: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    forward: UnboundedSender<Signal>,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                f = files_rx.recv() => {
                    let Some(f) = f else { return };
                    let key = f.key();
                    let trigger = TriggerContext::File(FileContext { path: f.path, event: f.event });
                    let fire = IncomingFire { routine: f.routine, trigger, catch_up: false, key };
                    if forward.send(Signal::Fire(fire)).is_err() {
                        return;
                    }
                }
                Some(passed) = barriers.recv() => {
                    let _ = passed.send(());
                }
            }
        }
    });
}

/// Waits until the file watchers have sent what they hold and the fires sent so far have
/// been passed on to the timer loop.
async fn last_fires(watchers: (Arc<Watcher>, Arc<Watcher>), barrier: UnboundedSender<oneshot::Sender<()>>) {
    watchers.0.flush().await;
    watchers.1.flush().await;
    let (passed, answered) = oneshot::channel();
    if barrier.send(passed).is_ok() {
        let _ = answered.await;
    }
}

/// The listener of webhooks, /healthz, /metrics and the status page, and what it shares
/// with the rest of the daemon.
struct Listening {
    address: String,
    table: RouteTable,
    page_routines: RoutineList,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Stops the listener and every task beside the timer loop.
    stop: CancellationToken,
    /// Cancelled when the database file disappears.
    db_gone: CancellationToken,
    db: super::db_watch::DbGone,
}

async fn listen(
    config: &Config,
    dispatcher: &Arc<Dispatcher>,
    routines: &[Arc<Routine>],
) -> Result<Listening, DaemonError> {
    // Idle connections must not starve the rest of the daemon of file descriptors.
    let open_files = webhook::raise_open_files_limit();
    tracing::debug!(open_files, "Open files limit.");
    let table = RouteTable::new(routes(routines, &ProcessEnv));
    let listener = tokio::net::TcpListener::bind(&config.server.listen)
        .await
        .map_err(|source| DaemonError::Listen { address: config.server.listen.clone(), source })?;
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| config.server.listen.clone());
    let settings = webhook::Settings {
        body_limit: 1024 * 1024,
        rate_per_second: config.server.rate_limit,
        burst: config.server.rate_burst,
    };
    let stop = CancellationToken::new();
    let db_gone = CancellationToken::new();
    let location = Location::resolve(&config.store.url_env, config.store_url(&ProcessEnv), config.database_path())?;
    let db = watch_database(&location, &db_gone, &stop);
    let intake: Arc<dyn Intake> = Arc::new(DaemonIntake {
        dispatcher: dispatcher.clone(),
        writer: start_writer(dispatcher.clone()),
        db: db.clone(),
        max_queued: usize::try_from(config.limits.max_queued).unwrap_or(usize::MAX),
    });
    // The status page, with a store connection of its own, beside the webhooks.
    let token = config.ui_token(&ProcessEnv)?;
    let page_routines = RoutineList::new(routines.iter().cloned());
    let page_store = Store::open_at(&location)?.with_scrub(Arc::new(Redactor::for_config(config, &ProcessEnv)));
    let outbox_only = crate::delivery::configured_smtp(config).is_none();
    let page = StatusState::new(page_store, page_routines.clone(), config.timezone, token.clone(), outbox_only)?;
    let server = {
        let stop = stop.clone();
        let router = webhook::router(table.clone(), intake, settings, token).merge(status::router(page));
        let limits = webhook::Limits::default();
        tokio::spawn(
            async move { webhook::serve(listener, router, async move { stop.cancelled().await }, limits).await },
        )
    };
    Ok(Listening { address, table, page_routines, server, stop, db_gone, db })
}

/// Only a database file can disappear under the daemon; a PostgreSQL server reports its
/// own failures as errors of each write.
fn watch_database(location: &Location, gone: &CancellationToken, stop: &CancellationToken) -> super::db_watch::DbGone {
    match location {
        Location::Sqlite(path) => super::db_watch::watch(path, gone.clone(), stop.clone()),
        Location::Postgres { .. } => super::db_watch::DbGone::default(),
    }
}

/// The tasks beside the timer loop, each ending once the listener's `stop` is cancelled.
struct Background {
    retries: tokio::task::JoinHandle<()>,
    pruning: tokio::task::JoinHandle<()>,
    sweeps: Option<tokio::task::JoinHandle<()>>,
    owners: Option<tokio::task::JoinHandle<()>>,
    beats: Option<tokio::task::JoinHandle<()>>,
    greetings: Option<tokio::task::JoinHandle<()>>,
}

impl Background {
    fn start(
        engine: &Arc<Engine>,
        clock: &Arc<dyn Clock>,
        dispatcher: &Arc<Dispatcher>,
        stop: &CancellationToken,
    ) -> Result<Self, DaemonError> {
        let config = &engine.config;
        // Failed deliveries, attempted again with backoff (and, at start, those
        // a stopped process left behind).
        let retries = tokio::spawn(super::redeliver::run_loop(
            engine.clone(),
            clock.clone(),
            super::redeliver::Backoff::default(),
            stop.clone(),
        ));

        // The history within `history`: pruned now (after the recovery above) and every hour.
        let pruning = tokio::spawn(super::prune::run_loop(engine.clone(), super::prune::PRUNE_EVERY, stop.clone()));

        // In a cluster: the work of nodes whose lease lapsed, taken over.
        let sweeps = engine.store.is_shared().then(|| {
            let lease = config.cluster.lease.get();
            let every = super::cluster::sweep_interval(lease);
            tokio::spawn(super::cluster::sweep_loop(dispatcher.clone(), every, lease, stop.clone()))
        });

        // Runs of a process that was still ending at start, judged again once it has ended.
        let owners = super::owners::watch(dispatcher.clone(), stop.clone())?;

        let (beats, greetings) = start_heartbeat(engine, clock, stop);
        Ok(Background { retries, pruning, sweeps, owners, beats, greetings })
    }

    /// Waits for every task to end.
    async fn join(self) {
        let _ = self.retries.await;
        for task in [self.beats, self.greetings, self.sweeps, self.owners, Some(self.pruning)].into_iter().flatten() {
            let _ = task.await;
        }
    }
}

/// Heartbeat check-ins, at multiples of `heartbeat.every` (like `every`),
/// and greetings at the day's planned times.
fn start_heartbeat(
    engine: &Arc<Engine>,
    clock: &Arc<dyn Clock>,
    stop: &CancellationToken,
) -> (Option<tokio::task::JoinHandle<()>>, Option<tokio::task::JoinHandle<()>>) {
    let beats = engine.config.heartbeat.enabled.then(|| {
        let stop = stop.clone();
        let engine = engine.clone();
        let clock = clock.clone();
        tokio::spawn(async move { crate::heartbeat::run_loop(engine, clock, stop).await })
    });
    let greetings = engine.config.heartbeat.greeting.enabled.then(|| {
        let stop = stop.clone();
        let engine = engine.clone();
        let clock = clock.clone();
        tokio::spawn(async move { crate::heartbeat::greeting::run_loop(engine, clock, stop).await })
    });
    (beats, greetings)
}

/// What a reload changed goes to the file watchers, the webhook table and the status page.
fn follow_changes(
    watcher: Arc<Watcher>,
    poller: Arc<Watcher>,
    table: RouteTable,
    page_routines: RoutineList,
) -> super::OnChange {
    Box::new(move |routines: &HashMap<String, Arc<Routine>>| {
        let list: Vec<Arc<Routine>> = routines.values().cloned().collect();
        let (evented, polled, _) = watch_specs(&list);
        if let Err(e) = watcher.update(evented).and_then(|()| poller.update(polled)) {
            tracing::error!(error = %e, "Could not update the file watches.");
        }
        table.replace(routes(&list, &ProcessEnv));
        page_routines.replace(list);
    })
}

fn announce_started(routines: usize, address: &str) {
    tracing::info!(
        routines,
        listen = %address,
        "Daemon started; the status page, webhooks, /healthz and /metrics on http://{address}."
    );
    super::announce(&format!(
        "routines daemon: {routines} routine(s); listening on http://{address}; stop with Ctrl-C"
    ));
}

/// Loading thousands of routine files leaves freed parser memory in the
/// allocator's arenas; give it back to the system before idling.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The file triggers of enabled routines: those on events, those polled,
/// and the shortest poll interval.
fn watch_specs(routines: &[Arc<Routine>]) -> (Vec<WatchSpec>, Vec<WatchSpec>, Duration) {
    let (mut evented, mut polled) = (Vec::new(), Vec::new());
    let mut interval = Duration::from_secs(2);
    let mut polls = false;
    for r in routines.iter().filter(|r| r.spec.enabled) {
        for f in r.spec.triggers.iter().filter_map(|t| t.file.as_ref()) {
            let spec = WatchSpec {
                routine: r.name.clone(),
                patterns: f.paths.clone(),
                events: f.events.clone(),
                debounce: f.debounce.get(),
            };
            match f.poll {
                Some(p) => {
                    interval = if polls { interval.min(p.get()) } else { p.get() };
                    polls = true;
                    polled.push(spec);
                }
                None => evented.push(spec),
            }
        }
    }
    (evented, polled, interval.max(Duration::from_millis(100)))
}

/// Webhook routes of enabled routines, with their secrets read from the
/// environment. A secret variable that is not set leaves the route
/// refusing every request (and says so in the log).
fn routes(routines: &[Arc<Routine>], env: &dyn Env) -> Vec<Route> {
    let mut routes = Vec::new();
    for r in routines.iter().filter(|r| r.spec.enabled) {
        for w in r.spec.triggers.iter().filter_map(|t| t.webhook.as_ref()) {
            let read = |var: &str| {
                // Secrets read for a route are redacted like the config's.
                Redactor::process().learn_vars([var], env);
                env.var(var).unwrap_or_else(|| {
                    tracing::error!(routine = %r.name, variable = var, "The webhook's secret variable is not set; the route refuses every request until it is.");
                    String::new()
                })
            };
            let auth = match (&w.secret_env, &w.token_env, w.auth) {
                (Some(var), _, _) => webhook::Auth::Hmac(read(var)),
                (None, Some(var), _) => webhook::Auth::Bearer(read(var)),
                (None, None, Some(WebhookAuth::None)) => webhook::Auth::None,
                // Refused at validation; never reached with a loaded routine.
                (None, None, None) => webhook::Auth::Hmac(String::new()),
            };
            routes.push(Route { routine: r.name.clone(), path: w.path.clone(), auth });
        }
    }
    routes
}

/// A fire waiting to be claimed by the writer, and where its result goes.
type Claim = (IncomingFire, oneshot::Sender<Result<Accepted, StoreError>>);

/// Most fires claimed in one transaction.
const MAX_BATCH: usize = 512;

/// Webhook fires are claimed by one writer task: everything that arrived
/// while the previous batch was being committed goes in the next
/// transaction, so a burst costs one commit per batch, not per request.
fn start_writer(dispatcher: Arc<Dispatcher>) -> mpsc::Sender<Claim> {
    let (tx, mut rx) = mpsc::channel::<Claim>(4 * MAX_BATCH);
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(claim) => batch.push(claim),
                    Err(_) => break,
                }
            }
            let (fires, replies): (Vec<IncomingFire>, Vec<_>) = batch.into_iter().unzip();
            let d = dispatcher.clone();
            match tokio::task::spawn_blocking(move || d.accept_many(fires)).await {
                Ok(results) => {
                    for (result, reply) in results.into_iter().zip(replies) {
                        let _ = reply.send(result);
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(StoreError::Batch(format!("claiming fires failed: {e}"))));
                    }
                }
            }
        }
    });
    tx
}

/// Webhook requests become fires, durably queued before the 202.
struct DaemonIntake {
    dispatcher: Arc<Dispatcher>,
    writer: mpsc::Sender<Claim>,
    db: super::db_watch::DbGone,
    max_queued: usize,
}

#[async_trait::async_trait]
impl Intake for DaemonIntake {
    async fn enqueue(&self, routine: &str, request: WebhookRequest) -> Result<i64, IntakeError> {
        let Some(r) = self.dispatcher.routine(routine) else {
            return Err(IntakeError::Refused(format!("routine `{routine}` no longer exists")));
        };
        if !r.spec.enabled {
            return Err(IntakeError::Refused(format!("routine `{routine}` is disabled")));
        }
        if let Some(why) = self.db.reason() {
            return Err(IntakeError::Unavailable(format!("{why}; the daemon is stopping")));
        }
        if self.dispatcher.queue_depth() >= self.max_queued {
            return Err(IntakeError::Full {
                message: format!(
                    "the queue holds {} fires, its limit (limits.max_queued); try again later",
                    self.max_queued
                ),
                retry_after: 10,
            });
        }
        let fire = IncomingFire {
            routine: routine.to_string(),
            trigger: TriggerContext::Webhook(request),
            catch_up: false,
            key: None,
        };
        let (reply, result) = oneshot::channel();
        let unavailable = || IntakeError::Unavailable("the daemon is stopping".into());
        self.writer.send((fire, reply)).await.map_err(|_| unavailable())?;
        match result.await.map_err(|_| unavailable())? {
            Ok(Accepted::Queued(id) | Accepted::Skipped(id)) => Ok(id),
            Ok(Accepted::Duplicate) => Err(IntakeError::Unavailable("the fire was already recorded".into())),
            Err(e) => Err(IntakeError::Unavailable(e.to_string())),
        }
    }

    fn metrics(&self) -> String {
        let d = &self.dispatcher;
        d.metrics.render(&d.engine.store, d.queue_depth(), d.executing())
    }
}

/// Watches the routine folder and the config file; after a quiet
/// [`RELOAD_DEBOUNCE`] it loads them again and sends the result.
fn watch_routine_files(
    config: &Config,
    signals: UnboundedSender<Signal>,
) -> Option<Arc<std::sync::Mutex<notify::RecommendedWatcher>>> {
    use notify::Watcher as _;
    let (tx, mut rx) = unbounded_channel::<()>();
    let config_file = config.file.clone();
    let routines_dir = std::path::absolute(&config.routines_dir).unwrap_or_else(|_| config.routines_dir.clone());
    let watched_dir = routines_dir.clone();
    // The folder itself counts too: `rm -rf routines; mkdir routines` removes the watch on it,
    // and its parent's watch sees it come back.
    let relevant = move |p: &std::path::Path| {
        Some(p) == config_file.as_deref()
            || p == routines_dir
            || (p.parent() == Some(routines_dir.as_path()) && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
    };
    let mut watcher = match notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(event) = res {
            if !event.kind.is_access() && event.paths.iter().any(|p| relevant(p)) {
                let _ = tx.send(());
            }
        }
    }) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "Cannot watch routine files; restart the daemon to apply changes.");
            return None;
        }
    };
    let mut dirs: Vec<PathBuf> = vec![config.routines_dir.clone()];
    if let Some(dir) = config.file.as_ref().and_then(|f| f.parent()) {
        dirs.push(dir.to_path_buf());
    }
    if let Some(parent) = watched_dir.parent() {
        dirs.push(parent.to_path_buf());
    }
    dirs.dedup();
    for dir in &dirs {
        if dir.is_dir() {
            if let Err(e) = watcher.watch(dir, notify::RecursiveMode::NonRecursive) {
                tracing::warn!(folder = %dir.display(), error = %e, "Cannot watch a folder for routine changes.");
            }
        }
    }
    let file = config.file.clone();
    let cwd = config.file.as_ref().and_then(|f| f.parent()).map(PathBuf::from).unwrap_or_default();
    let watcher = Arc::new(std::sync::Mutex::new(watcher));
    let rewatch = watcher.clone();
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            // Quiet period: take every event until none comes for a while.
            while let Ok(Some(())) = tokio::time::timeout(RELOAD_DEBOUNCE, rx.recv()).await {}
            // A routines folder made anew needs a new watch (watching it again is harmless).
            if watched_dir.is_dir() {
                if let Ok(mut w) = rewatch.lock() {
                    if let Err(e) = w.watch(&watched_dir, notify::RecursiveMode::NonRecursive) {
                        tracing::warn!(folder = %watched_dir.display(), error = %e, "Cannot watch the routines folder again.");
                    }
                }
            }
            let loaded = match config::load(file.as_deref(), &cwd, &ProcessEnv) {
                Ok(config) => {
                    let inline = config.source.as_ref().map(|s| (config.inline_routines.as_slice(), s));
                    load_all(&config, inline, &tool_names())
                }
                Err(e) => {
                    tracing::warn!("The config file is invalid; keeping every routine as it was:\n{e}");
                    continue;
                }
            };
            if signals.send(Signal::Reload(loaded)).is_err() {
                return;
            }
        }
    });
    Some(watcher)
}
