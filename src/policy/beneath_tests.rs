use std::os::unix::fs::symlink;

use super::*;

/// A folder `ws` with `a/f.txt`, and beside it `outside/secret.txt`; links in `ws`: `in`
/// (relative, to `a`), `abs` (absolute, to `ws/a`), `out` (relative, to `../outside`),
/// `abs_out` (absolute, to `outside`), `dotdot` (to `a/../..`).
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join("a")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(ws.join("a/f.txt"), "inside").unwrap();
    std::fs::write(base.join("outside/secret.txt"), "outside").unwrap();
    symlink("a", ws.join("in")).unwrap();
    symlink(ws.join("a"), ws.join("abs")).unwrap();
    symlink("../outside", ws.join("out")).unwrap();
    symlink(base.join("outside"), ws.join("abs_out")).unwrap();
    symlink("a/../..", ws.join("dotdot")).unwrap();
    (dir, ws)
}

fn read(b: &Beneath, rel: &str, walk: bool) -> Result<String, BeneathError> {
    let flags = OFlags::RDONLY;
    let fd = if walk { b.walk(Path::new(rel), flags | OFlags::CLOEXEC)? } else { b.open_at(Path::new(rel), flags)? };
    Ok(std::io::read_to_string(std::fs::File::from(fd)).unwrap())
}

#[test]
fn links_that_stay_inside_are_followed_and_no_way_out_is() {
    let (_dir, ws) = tree();
    let b = Beneath::open(&ws).unwrap();
    for walk in [false, true] {
        for rel in ["a/f.txt", "in/f.txt", "abs/f.txt", "./a/../a/f.txt", "in/../a/f.txt"] {
            assert_eq!(read(&b, rel, walk).unwrap(), "inside", "{rel} (walk: {walk})");
        }
        for rel in [
            "out/secret.txt",
            "abs_out/secret.txt",
            "../outside/secret.txt",
            "dotdot/outside/secret.txt",
            "/etc/hostname",
        ] {
            assert!(matches!(read(&b, rel, walk), Err(BeneathError::Escapes)), "{rel} (walk: {walk})");
        }
        assert!(
            matches!(read(&b, "a/missing", walk), Err(BeneathError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound)
        );
    }
    // The folder itself, and where an opened file is.
    let fd = b.open_at(Path::new("in/f.txt"), OFlags::RDONLY).unwrap();
    assert_eq!(b.relative_of(fd.as_fd()).unwrap(), Path::new("a/f.txt"));
    let fd = b.open_at(Path::new(""), OFlags::RDONLY | OFlags::DIRECTORY).unwrap();
    assert_eq!(b.relative_of(fd.as_fd()).unwrap(), Path::new(""));
}

#[test]
fn folders_are_created_beneath_and_never_through_a_link_out() {
    let (dir, ws) = tree();
    let b = Beneath::open(&ws).unwrap();
    let fd = b.create_dirs(Path::new("new/deep/er")).unwrap();
    assert_eq!(b.relative_of(fd.as_fd()).unwrap(), Path::new("new/deep/er"));
    let fd = b.create_dirs(Path::new("in/sub")).unwrap();
    assert_eq!(b.relative_of(fd.as_fd()).unwrap(), Path::new("a/sub"));
    assert!(matches!(b.create_dirs(Path::new("out/made")), Err(BeneathError::Escapes)));
    assert!(!dir.path().join("outside/made").exists());
}
