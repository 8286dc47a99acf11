//! A run that ends while the data folder's disk is full: its end, with its deliveries, is
//! written once space is back, so it is neither left `running` nor taken for a crash and run
//! (and delivered) again, and its deliveries are made once, after the end is recorded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text};

/// A small tmpfs, unmounted on drop; `None` (with the reason printed) where mounting fails.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path) -> Option<SmallDisk> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"]).arg(dir).output();
        match out {
            Ok(o) if o.status.success() => Some(SmallDisk(dir.to_path_buf())),
            Ok(o) => {
                eprintln!("SKIPPED: cannot mount a tmpfs here: {}", String::from_utf8_lossy(&o.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("SKIPPED: mount is not available: {e}");
                None
            }
        }
    }

    /// Fills the disk to the last byte with `filler`.
    fn fill(&self) -> PathBuf {
        let filler = self.0.join("filler");
        let _ = Command::new("dd").args(["if=/dev/zero", "bs=64k"]).arg(format!("of={}", filler.display())).output();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ends_on_a_full_disk_is_recorded_once_space_is_back() {
    let mock = MockLlm::start().await;
    let data = tempfile::tempdir().unwrap();
    let Some(disk) = SmallDisk::mount(&data.path().join("data")) else { return };
    let p = Routines::project(&mock.base_url(), &format!("data_dir: {}\n", disk.0.display()));
    p.write(
        "routines/report.yaml",
        "prompt: Report.\nagent: { tools: [] }\ndeliver:\n  - file: { path: out/report.md, mode: append }\n",
    );
    mock.push(text("the report").with_delay(Duration::from_millis(800)));
    let running = p.command(["-v", "run", "report"]).spawn().await;
    mock.wait_for_requests(1).await;
    let filler = disk.fill();
    running.wait_for_stderr("the retried end", |l| l.contains("Cannot record the end of the run")).await;
    assert!(running.stderr().contains("the data folder's disk is full"), "{}", running.stderr());
    std::fs::remove_file(&filler).unwrap();
    let out = running.finish(Duration::from_secs(60)).await;
    out.success();
    let runs = p.history(&["report"]).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    // Opened again later (a restart): nothing is taken for a crash and run again.
    let runs = p.history(&["report"]).await;
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(mock.request_count(), 1);
    // The deliveries are recorded with the end, so they wait for it: delivered once, after.
    assert_eq!(p.read("out/report.md"), "the report\n");
    let d = &p.show(1).await["deliveries"][0];
    assert_eq!((d["status"].as_str(), d["attempts"].as_u64()), (Some("delivered"), Some(1)), "{d}");
}
