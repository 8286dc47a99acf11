//! The example routines of the repository validate and run.

use std::path::Path;
use std::process::Command;

use crate::common::bin;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The repository's config, routines and templates, copied into a tempdir
/// so nothing is written into the repository.
fn project() -> tempfile::TempDir {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo.join("routines.example.yaml"), dir.path().join("routines.yaml")).unwrap();
    copy_dir(&repo.join("routines"), &dir.path().join("routines"));
    copy_dir(&repo.join("templates"), &dir.path().join("templates"));
    dir
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_config_and_routines_validate() {
    let dir = project();
    let (code, stdout, stderr) = run(dir.path(), &["validate"]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert_eq!(stderr, "ok: the config and 4 routines are valid\n");
    let (code, stdout, _) = run(dir.path(), &["list", "--json"]);
    assert_eq!(code, 0);
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["daily-git-report", "health-check", "inbox-summary", "page-watch"]);
}

#[test]
fn init_scaffolds_a_project_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = run(dir.path(), &["init"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(dir.path(), &["validate"]);
    assert_eq!((code, stderr.as_str()), (0, "ok: the config and 1 routine are valid\n"));
}
