//! Paths that change while a call runs: another process keeps exchanging a folder of the
//! workspace with a symlink to a folder outside it (`renameat2` with `RENAME_EXCHANGE`) while
//! the model writes into that folder, call after call, and while a routine delivers into it.
//! Nothing may be created outside; links that stay inside still work.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::scene::{scene, scene_with, write};
use crate::common::mock_llm::text;

/// Exchanges two paths over and over on a thread until stopped.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

fn exchange(a: &std::ffi::CStr, b: &std::ffi::CStr) {
    // SAFETY: two NUL-terminated paths; the flag is RENAME_EXCHANGE.
    let done =
        unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
    assert_eq!(done, 0, "renameat2: {}", std::io::Error::last_os_error());
}

fn cstr(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

impl Swapper {
    fn start(folder: &Path, link: &Path) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let (a, b, flag) = (cstr(folder), cstr(link), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !flag.load(Ordering::Relaxed) {
                exchange(&a, &b);
                swaps += 1;
            }
            // Leave both where they were.
            if swaps % 2 == 1 {
                exchange(&a, &b);
            }
            swaps
        });
        Swapper { stop, thread }
    }

    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// Entries of a folder.
fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_write_never_lands_outside_while_its_folder_is_swapped_with_a_link() {
    let s = scene_with("file_write, file_read", "", ", max_iterations: 50").await;
    std::fs::create_dir_all(s.inside("data/t")).unwrap();
    std::fs::create_dir_all(s.inside("reports")).unwrap();
    std::os::unix::fs::symlink(s.outside.path(), s.inside("data/l")).unwrap();
    // The benign counterpart: a link that stays inside, written through.
    std::os::unix::fs::symlink("reports", s.inside("latest")).unwrap();
    let mut calls: Vec<_> = (0..40).map(|i| write(&format!("data/t/w{i}.txt"), "x")).collect();
    calls.push(write("latest/summary.md", "fine"));
    let swapper = Swapper::start(&s.inside("data/t"), &s.inside("data/l"));
    s.play(calls).await;
    assert!(swapper.stop() > 0, "nothing was swapped");
    assert_eq!(count(s.outside.path()), 0, "files were written outside the workspace");
    assert_eq!(s.p.read("reports/summary.md"), "fine");
    assert!(std::fs::symlink_metadata(s.inside("latest")).unwrap().file_type().is_symlink());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_delivery_never_lands_outside_while_its_folder_is_swapped_with_a_link() {
    let s = scene("file_read", "").await;
    s.p.write(
        "routines/report.yaml",
        "prompt: Report.\ndeliver:\n  - file: { path: \"data/t/{{ run.id }}.md\" }\n  - file: { path: \"latest/{{ run.id }}.md\" }\n",
    );
    std::fs::create_dir_all(s.inside("data/t")).unwrap();
    std::fs::create_dir_all(s.inside("reports")).unwrap();
    std::os::unix::fs::symlink(s.outside.path(), s.inside("data/l")).unwrap();
    std::os::unix::fs::symlink("reports", s.inside("latest")).unwrap();
    let swapper = Swapper::start(&s.inside("data/t"), &s.inside("data/l"));
    for _ in 0..8 {
        s.mock.push(text("All good."));
        s.p.run_async(["run", "report", "--json"]).await.success();
    }
    assert!(swapper.stop() > 0, "nothing was swapped");
    assert_eq!(count(s.outside.path()), 0, "a delivery was written outside the workspace");
    assert_eq!(count(&s.inside("reports")), 8, "each run delivered through the link that stays inside");
}
