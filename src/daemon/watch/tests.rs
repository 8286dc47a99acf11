//! Tests of the file watcher with real file-system events.

use super::debounce::{Change, changes_of};
use super::*;
use notify::event::{EventKind, ModifyKind, RemoveKind, RenameMode};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{sleep, timeout};

const DEBOUNCE: Duration = Duration::from_millis(200);

fn spec(routine: &str, patterns: &[&str], events: &[FileEvent]) -> WatchSpec {
    WatchSpec {
        routine: routine.to_owned(),
        patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
        events: events.to_vec(),
        debounce: DEBOUNCE,
    }
}

fn fire(routine: &str, path: &str, event: FileEvent) -> FileFire {
    FileFire { routine: routine.to_owned(), path: path.to_owned(), event, stamp: None }
}

/// The fire without its stamp, to compare with [`fire`].
fn plain(f: FileFire) -> FileFire {
    FileFire { stamp: None, ..f }
}

fn workspace(dirs: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = fs::canonicalize(tmp.path()).unwrap();
    for d in dirs {
        fs::create_dir_all(ws.join(d)).unwrap();
    }
    (tmp, ws)
}

fn start(ws: &Path, specs: Vec<WatchSpec>, poll: Option<Duration>) -> (Watcher, UnboundedReceiver<FileFire>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let watcher = Watcher::start(ws.to_path_buf(), specs, tx, poll).unwrap();
    (watcher, rx)
}

async fn next(rx: &mut UnboundedReceiver<FileFire>) -> FileFire {
    timeout(Duration::from_secs(10), rx.recv()).await.expect("no fire within 10 s").expect("channel closed")
}

async fn assert_quiet(rx: &mut UnboundedReceiver<FileFire>) {
    if let Ok(extra) = timeout(DEBOUNCE * 3, rx.recv()).await {
        panic!("unexpected fire: {extra:?}");
    }
}

#[test]
fn targets_are_the_literal_folders_of_globs() {
    let t = |dir: &str, recursive| Target { dir: PathBuf::from(dir), recursive };
    assert_eq!(target_of("inbox/*.csv"), t("inbox", false));
    assert_eq!(target_of("inbox/data.csv"), t("inbox", false));
    assert_eq!(target_of("*.csv"), t("", false));
    assert_eq!(target_of("**/x"), t("", true));
    assert_eq!(target_of("a/b/**"), t("a/b", true));
    assert_eq!(target_of("a/*/b.csv"), t("a", true));
    assert_eq!(target_of("{a/x,b/y}"), t("", true));
    assert_eq!(normalize("./inbox/*.csv"), "inbox/*.csv");
}

#[test]
fn relative_paths_use_slashes_and_stay_inside() {
    let ws = Path::new("/w");
    assert_eq!(relative(ws, Path::new("/w/inbox/a.csv")).as_deref(), Some("inbox/a.csv"));
    assert_eq!(relative(ws, Path::new("/w")), None);
    assert_eq!(relative(ws, Path::new("/other/a.csv")), None);
}

#[test]
fn bad_globs_are_refused_with_the_routine_named() {
    for bad in ["/etc/*", "../x/*", "inbox/[", ""] {
        let err = compile(&spec("r", &[bad], &[FileEvent::Create])).err().unwrap();
        assert!(err.to_string().starts_with("routine `r`: file glob"), "{err}");
    }
}

#[test]
fn single_star_does_not_cross_folders() {
    let c = compile(&spec("r", &["inbox/*.csv", "deep/**/*.csv"], &[])).unwrap();
    assert!(c.matcher.is_match("inbox/a.csv"));
    assert!(!c.matcher.is_match("inbox/sub/a.csv"));
    assert!(c.matcher.is_match("deep/a.csv"));
    assert!(c.matcher.is_match("deep/x/y/a.csv"));
}

#[test]
fn renames_into_a_folder_create_and_out_of_it_remove() {
    let ev = |kind, paths: &[&str]| {
        let mut e = Event::new(kind);
        e.paths = paths.iter().map(PathBuf::from).collect();
        changes_of(e)
    };
    let kinds = |changes: Vec<Change>| {
        changes
            .into_iter()
            .map(|c| match c {
                Change::Appeared(p) => format!("+{}", p.display()),
                Change::Modified(p) => format!("~{}", p.display()),
                Change::Gone { path, folder } => format!("-{}{}", path.display(), if folder { "/" } else { "" }),
            })
            .collect::<Vec<_>>()
    };
    let name = |mode| EventKind::Modify(ModifyKind::Name(mode));
    assert_eq!(kinds(ev(name(RenameMode::To), &["/w/a"])), ["+/w/a"]);
    assert_eq!(kinds(ev(name(RenameMode::From), &["/w/a"])), ["-/w/a"]);
    assert_eq!(kinds(ev(name(RenameMode::Both), &["/w/a", "/w/b"])), ["-/w/a", "+/w/b"]);
    assert_eq!(kinds(ev(EventKind::Remove(RemoveKind::Folder), &["/w/d"])), ["-/w/d/"]);
    let write = EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any));
    assert_eq!(kinds(ev(write, &["/w/a"])), ["~/w/a"]);
    let open = EventKind::Access(notify::event::AccessKind::Open(notify::event::AccessMode::Any));
    assert!(kinds(ev(open, &["/w/a"])).is_empty());
}

/// A debouncer without a backend, driven by hand with tokio's paused clock.
fn debouncer(ws: &Path, specs: &[WatchSpec]) -> (Debouncer, UnboundedReceiver<FileFire>) {
    let shared = Shared {
        workspace: ws.to_path_buf(),
        backend: Box::new(notify::NullWatcher),
        specs: compile_all(specs).unwrap(),
        watched: HashMap::new(),
        failed: HashSet::new(),
        warned_missing_workspace: false,
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let d =
        Debouncer { shared: Arc::new(Mutex::new(shared)), pending: HashMap::new(), settled: HashMap::new(), fires: tx };
    (d, rx)
}

fn report(d: &mut Debouncer, path: PathBuf, event: FileEvent) {
    let shared = Arc::clone(&d.shared);
    let shared = lock(&shared);
    d.record(&shared, path, event);
}

async fn after_debounce(d: &mut Debouncer) {
    tokio::time::advance(DEBOUNCE).await;
    d.flush(false);
}

#[tokio::test(start_paused = true)]
async fn a_file_that_grows_without_events_waits_until_its_size_settles() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let all = [FileEvent::Create, FileEvent::Modify, FileEvent::Remove];
    let (mut d, mut rx) = debouncer(&ws, &[spec("r", &["inbox/*"], &all)]);
    let path = ws.join("inbox/a");
    fs::write(&path, "1").unwrap();
    report(&mut d, path.clone(), FileEvent::Create);
    fs::write(&path, "12").unwrap();
    after_debounce(&mut d).await;
    assert!(rx.try_recv().is_err(), "fired although the size changed since the event");
    after_debounce(&mut d).await;
    assert_eq!(plain(rx.try_recv().unwrap()), fire("r", "inbox/a", FileEvent::Create));
    assert!(d.pending.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_flush_as_the_daemon_stops_fires_every_waiting_change_as_the_file_is() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let all = [FileEvent::Create, FileEvent::Modify, FileEvent::Remove];
    let (mut d, mut rx) = debouncer(&ws, &[spec("r", &["inbox/*"], &all)]);
    let (grows, gone) = (ws.join("inbox/a"), ws.join("inbox/b"));
    fs::write(&grows, "1").unwrap();
    report(&mut d, grows.clone(), FileEvent::Create);
    fs::write(&grows, "12").unwrap();
    fs::write(&gone, "x").unwrap();
    report(&mut d, gone.clone(), FileEvent::Create);
    fs::remove_file(&gone).unwrap();
    d.flush(false);
    assert!(rx.try_recv().is_err(), "the debounce has not passed");
    // Before the debounce, with a size that differs from the one at the event: it fires all the same.
    d.flush(true);
    let fired = rx.try_recv().unwrap();
    assert_eq!(plain(fired.clone()), fire("r", "inbox/a", FileEvent::Create));
    assert_eq!(fired.stamp.map(|s| s.size), Some(2), "the file as it is now");
    assert!(rx.try_recv().is_err(), "a file created and removed within the debounce still fires nothing");
    assert!(d.pending.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_creation_reported_again_after_it_fired_does_not_fire_again() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let all = [FileEvent::Create, FileEvent::Modify, FileEvent::Remove];
    let (mut d, mut rx) = debouncer(&ws, &[spec("r", &["inbox/*"], &all)]);
    let path = ws.join("inbox/a");
    fs::write(&path, "1").unwrap();
    report(&mut d, path.clone(), FileEvent::Create);
    after_debounce(&mut d).await;
    assert_eq!(plain(rx.try_recv().unwrap()), fire("r", "inbox/a", FileEvent::Create));
    // A late duplicate, or a scan of a folder watched again, finds the same file.
    report(&mut d, path.clone(), FileEvent::Create);
    after_debounce(&mut d).await;
    assert!(rx.try_recv().is_err());
    // A real change still fires, and so does the removal.
    fs::write(&path, "12").unwrap();
    report(&mut d, path.clone(), FileEvent::Modify);
    after_debounce(&mut d).await;
    assert_eq!(plain(rx.try_recv().unwrap()), fire("r", "inbox/a", FileEvent::Modify));
    fs::remove_file(&path).unwrap();
    report(&mut d, path.clone(), FileEvent::Remove);
    after_debounce(&mut d).await;
    assert_eq!(plain(rx.try_recv().unwrap()), fire("r", "inbox/a", FileEvent::Remove));
}

#[tokio::test(start_paused = true)]
async fn a_burst_fires_its_strongest_event() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let all = [FileEvent::Create, FileEvent::Modify, FileEvent::Remove];
    let (mut d, mut rx) = debouncer(&ws, &[spec("r", &["inbox/*"], &all)]);
    let path = ws.join("inbox/a");
    // Created, then written: one Create.
    fs::write(&path, "1").unwrap();
    report(&mut d, path.clone(), FileEvent::Create);
    report(&mut d, path.clone(), FileEvent::Modify);
    after_debounce(&mut d).await;
    assert_eq!(plain(rx.try_recv().unwrap()), fire("r", "inbox/a", FileEvent::Create));
    // Written, then removed: one Remove.
    report(&mut d, path.clone(), FileEvent::Modify);
    fs::remove_file(&path).unwrap();
    report(&mut d, path.clone(), FileEvent::Remove);
    after_debounce(&mut d).await;
    assert_eq!(plain(rx.try_recv().unwrap()), fire("r", "inbox/a", FileEvent::Remove));
    // Replaced (removed and created again): one Create.
    fs::write(&path, "new").unwrap();
    report(&mut d, path.clone(), FileEvent::Remove);
    report(&mut d, path.clone(), FileEvent::Create);
    after_debounce(&mut d).await;
    assert_eq!(plain(rx.try_recv().unwrap()), fire("r", "inbox/a", FileEvent::Create));
    assert!(rx.try_recv().is_err());
}

#[tokio::test]
async fn outside_a_runtime_start_is_an_error_not_a_panic() {
    let (_tmp, ws) = workspace(&[]);
    let (tx, _rx) = mpsc::unbounded_channel();
    let res = std::thread::spawn(move || Watcher::start(ws, vec![], tx, None).err()).join().unwrap();
    assert!(matches!(res, Some(WatchError::NoRuntime)));
}

#[tokio::test]
async fn a_created_file_fires_one_create() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let (_w, mut rx) = start(&ws, vec![spec("r", &["inbox/*.csv"], &[FileEvent::Create])], None);
    fs::write(ws.join("inbox/a.csv"), "x,y\n").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("r", "inbox/a.csv", FileEvent::Create));
    assert_quiet(&mut rx).await;
}

#[tokio::test]
async fn a_file_written_in_chunks_fires_once_after_the_last_write() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let mut s = spec("r", &["inbox/*.csv"], &[FileEvent::Create, FileEvent::Modify]);
    s.debounce = Duration::from_millis(500);
    let (_w, mut rx) = start(&ws, vec![s], None);
    let path = ws.join("inbox/big.csv");
    let mut file = fs::File::create(&path).unwrap();
    for _ in 0..5 {
        io::Write::write_all(&mut file, &[b'x'; 1000]).unwrap();
        io::Write::flush(&mut file).unwrap();
        sleep(Duration::from_millis(100)).await;
        assert!(rx.try_recv().is_err(), "fired while the file was still being written");
    }
    drop(file);
    let fired = next(&mut rx).await;
    // The fire's identity is the file as it settled: its size and mtime.
    let meta = fs::metadata(&path).unwrap();
    let mtime = meta.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let stamp = super::FileStamp { size: 5000, mtime_ns: i128::try_from(mtime).unwrap() };
    assert_eq!(fired.stamp, Some(stamp));
    assert_eq!(fired.key().unwrap(), format!("file:create:5000:{mtime}:inbox/big.csv"));
    assert_eq!(plain(fired), fire("r", "inbox/big.csv", FileEvent::Create));
    assert_eq!(meta.len(), 5000);
    if let Ok(extra) = timeout(Duration::from_millis(1500), rx.recv()).await {
        panic!("unexpected fire: {extra:?}");
    }
}

#[tokio::test]
async fn files_that_do_not_match_do_not_fire() {
    let (_tmp, ws) = workspace(&["inbox/sub"]);
    let (_w, mut rx) = start(&ws, vec![spec("r", &["inbox/*.csv"], &[FileEvent::Create, FileEvent::Modify])], None);
    fs::write(ws.join("inbox/notes.txt"), "no").unwrap();
    fs::write(ws.join("inbox/sub/deep.csv"), "no").unwrap();
    fs::write(ws.join("top.csv"), "no").unwrap();
    fs::write(ws.join("inbox/yes.csv"), "yes").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("r", "inbox/yes.csv", FileEvent::Create));
    assert_quiet(&mut rx).await;
}

#[tokio::test]
async fn only_listed_events_fire() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let specs = vec![
        spec("created", &["inbox/*.csv"], &[FileEvent::Create]),
        spec("modified", &["inbox/*.csv"], &[FileEvent::Modify]),
    ];
    let (_w, mut rx) = start(&ws, specs, None);
    let path = ws.join("inbox/a.csv");
    fs::write(&path, "1").unwrap();
    // The creation fires for `created` only; it also ends the burst for `modified`.
    assert_eq!(plain(next(&mut rx).await), fire("created", "inbox/a.csv", FileEvent::Create));
    fs::write(&path, "22").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("modified", "inbox/a.csv", FileEvent::Modify));
    assert_quiet(&mut rx).await;
}

#[tokio::test]
async fn a_removed_file_fires_remove() {
    let (_tmp, ws) = workspace(&["inbox"]);
    fs::write(ws.join("inbox/old.csv"), "x").unwrap();
    let (_w, mut rx) = start(&ws, vec![spec("r", &["inbox/*.csv"], &[FileEvent::Remove])], None);
    fs::remove_file(ws.join("inbox/old.csv")).unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("r", "inbox/old.csv", FileEvent::Remove));
    assert_quiet(&mut rx).await;
}

#[tokio::test]
async fn a_file_created_and_removed_within_the_debounce_fires_nothing() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let all = [FileEvent::Create, FileEvent::Modify, FileEvent::Remove];
    let (_w, mut rx) = start(&ws, vec![spec("r", &["inbox/*"], &all)], None);
    fs::write(ws.join("inbox/tmp~"), "x").unwrap();
    fs::remove_file(ws.join("inbox/tmp~")).unwrap();
    fs::write(ws.join("inbox/real"), "x").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("r", "inbox/real", FileEvent::Create));
    assert_quiet(&mut rx).await;
}

#[tokio::test]
async fn watching_survives_the_folder_being_deleted_and_recreated() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let (_w, mut rx) = start(&ws, vec![spec("r", &["inbox/*.csv"], &[FileEvent::Create])], None);
    for round in 0..2 {
        fs::remove_dir_all(ws.join("inbox")).unwrap();
        fs::create_dir(ws.join("inbox")).unwrap();
        let name = format!("inbox/after{round}.csv");
        fs::write(ws.join(&name), "x").unwrap();
        assert_eq!(plain(next(&mut rx).await), fire("r", &name, FileEvent::Create));
        assert_quiet(&mut rx).await;
    }
}

#[tokio::test]
async fn a_folder_that_does_not_exist_yet_is_watched_once_created() {
    let (_tmp, ws) = workspace(&[]);
    let (_w, mut rx) = start(&ws, vec![spec("r", &["later/in/*.csv"], &[FileEvent::Create])], None);
    fs::create_dir_all(ws.join("later/in")).unwrap();
    fs::write(ws.join("later/in/a.csv"), "x").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("r", "later/in/a.csv", FileEvent::Create));
    assert_quiet(&mut rx).await;
}

#[tokio::test]
async fn double_star_reaches_new_subfolders() {
    let (_tmp, ws) = workspace(&["data"]);
    let (_w, mut rx) = start(&ws, vec![spec("r", &["data/**/*.csv"], &[FileEvent::Create])], None);
    fs::create_dir_all(ws.join("data/x/y")).unwrap();
    fs::write(ws.join("data/x/y/z.csv"), "x").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("r", "data/x/y/z.csv", FileEvent::Create));
    assert_quiet(&mut rx).await;
}

#[tokio::test]
async fn update_adds_a_spec() {
    let (_tmp, ws) = workspace(&["a", "b"]);
    let first = spec("one", &["a/*.txt"], &[FileEvent::Create]);
    let (w, mut rx) = start(&ws, vec![first.clone()], None);
    fs::write(ws.join("b/early.txt"), "x").unwrap();
    w.update(vec![first, spec("two", &["b/*.txt"], &[FileEvent::Create])]).unwrap();
    fs::write(ws.join("b/x.txt"), "x").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("two", "b/x.txt", FileEvent::Create));
    fs::write(ws.join("a/y.txt"), "x").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("one", "a/y.txt", FileEvent::Create));
    assert_quiet(&mut rx).await;
    assert!(w.update(vec![spec("bad", &["[oops"], &[FileEvent::Create])]).is_err());
}

#[tokio::test]
async fn the_polling_watcher_fires_too() {
    let (_tmp, ws) = workspace(&["inbox"]);
    let (_w, mut rx) =
        start(&ws, vec![spec("r", &["inbox/*.csv"], &[FileEvent::Create])], Some(Duration::from_millis(100)));
    fs::write(ws.join("inbox/polled.csv"), "x").unwrap();
    assert_eq!(plain(next(&mut rx).await), fire("r", "inbox/polled.csv", FileEvent::Create));
    assert_quiet(&mut rx).await;
}
