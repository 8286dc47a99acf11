use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// A thread that keeps exchanging `folder` with `link` (`renameat2` with `RENAME_EXCHANGE`)
/// until dropped: a path through `folder` names the real folder one moment and what `link`
/// points to the next.
pub(crate) struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    pub(crate) fn start(folder: &Path, link: &Path) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let (a, b) = (cstr(folder), cstr(link));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !flag.load(Ordering::Relaxed) {
                // SAFETY: two NUL-terminated paths; the flag is RENAME_EXCHANGE.
                let done = unsafe {
                    libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE)
                };
                assert_eq!(done, 0, "renameat2: {}", std::io::Error::last_os_error());
                swaps += 1;
            }
            swaps
        });
        Swapper { stop, thread: Some(thread) }
    }

    /// Stops, with both back where they were; how many exchanges were made.
    pub(crate) fn stop(mut self, folder: &Path, link: &Path) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let swaps = self.thread.take().map(|t| t.join().unwrap()).unwrap_or(0);
        if swaps % 2 == 1 {
            let (a, b) = (cstr(folder), cstr(link));
            // SAFETY: as in `start`.
            let done = unsafe {
                libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE)
            };
            assert_eq!(done, 0);
        }
        swaps
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn cstr(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// A workspace `ws` with `data/t/`, a link `data/l` to the folder `outside` beside `ws`.
pub(crate) fn swap_scene() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (ws, outside) = (base.join("ws"), base.join("outside"));
    std::fs::create_dir_all(ws.join("data/t")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    symlink(&outside, ws.join("data/l")).unwrap();
    (dir, ws, outside)
}

#[test]
fn writes_never_land_outside_while_a_folder_is_swapped_with_a_link() {
    let (_dir, ws, outside) = swap_scene();
    let fs = Confinement::open(&ws, Vec::new(), Vec::new()).unwrap();
    let (folder, link) = (ws.join("data/t"), ws.join("data/l"));
    let swapper = Swapper::start(&folder, &link);
    for i in 0..400 {
        if let Ok(target) = fs.write_target(&format!("data/t/w{i}.txt"), true) {
            // A write that started while the link was in place fails; none lands outside.
            let _ = target.write_atomic(b"x");
        }
    }
    assert!(swapper.stop(&folder, &link) > 0);
    let leaked: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(leaked.is_empty(), "{} files were written outside: {leaked:?}", leaked.len());
    // The benign counterpart: with the folder back in place, the same write lands in it.
    fs.write_target("data/t/after.txt", true).unwrap().write_atomic(b"x").unwrap();
    assert!(folder.join("after.txt").is_file());
}

#[test]
fn reads_and_writes_follow_links_only_while_they_stay_inside() {
    let (_dir, ws, outside) = swap_scene();
    std::fs::write(outside.join("secret.txt"), "s").unwrap();
    symlink("data/t", ws.join("latest")).unwrap();
    symlink(ws.join("data/t"), ws.join("abs")).unwrap();
    symlink("t/report.md", ws.join("data/current.md")).unwrap();
    let fs = Confinement::open(&ws, vec![ws.join("private")], vec![ws.join("routines")]).unwrap();
    for input in ["latest/a.md", "abs/b.md", "data/current.md", &ws.join("data/t/c.md").display().to_string()] {
        let target = fs.write_target(input, true).unwrap();
        target.write_atomic(input.as_bytes()).unwrap();
        let opened = fs.open_read(input).unwrap();
        assert!(opened.path.starts_with(ws.join("data/t")), "{input}: {}", opened.path.display());
        assert_eq!(std::io::read_to_string(opened.file).unwrap(), input);
    }
    assert!(ws.join("data/t/report.md").is_file(), "the link at the last component was written through");
    let refused = |r: Result<WriteTarget, OpenError>| matches!(r, Err(OpenError::Refused(_)));
    assert!(refused(fs.write_target("data/l/x.md", true)));
    assert!(refused(fs.write_target("../outside/x.md", true)));
    assert!(refused(fs.write_target("private/x.md", true)));
    assert!(refused(fs.write_target("routines/x.yaml", true)));
    assert!(!ws.join("routines").exists(), "no folder is made for a refused write");
    assert!(matches!(fs.open_read("data/l/secret.txt"), Err(OpenError::Refused(PathError::Outside { .. }))));
    symlink("../routines/r.yaml", ws.join("data/r.yaml")).unwrap();
    assert!(refused(fs.write_target("data/r.yaml", true)), "a link to the engine's files is refused");
    assert!(!ws.join("routines").exists(), "no folder is made through a link either");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
}
