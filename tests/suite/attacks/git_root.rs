//! Git at the root of a workspace that is not a repository but holds one in a sub-folder: the
//! sandbox keeps a `.git` from being made at the root (it could carry a config that runs
//! programs), and git there answers as it does anywhere outside a repository, so a model is not
//! told that the repository in the sub-folder is broken or missing.

use std::process::Command;

use super::scene::shell_scene;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_at_a_root_that_is_no_repository_says_so_and_the_sub_folder_repository_works() {
    let s = shell_scene("git, ls").await;
    s.p.write("repo/a.txt", "a\n");
    for args in [
        &["init", "-q"][..],
        &["add", "a.txt"],
        &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"],
    ] {
        let out =
            Command::new("git").args(args).current_dir(s.inside("repo")).env("HOME", s.p.path()).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    s.shell(&["git log", "git -C repo log --format=%s", "git init -q ."]).await;
    assert!(s.seen(0).contains("not a git repository"), "{}", s.seen(0));
    assert!(!s.seen(0).contains("gitfile"), "{}", s.seen(0));
    assert!(s.seen(1).contains("first"), "{}", s.seen(1));
    assert!(!s.inside(".git").exists(), "a .git was made at the root");
}
