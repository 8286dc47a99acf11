use std::path::Path;

use super::*;
use crate::config::Autonomy;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn workspace() -> (tempfile::TempDir, Policy) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let ws = dir.path().join("ws");
    let policy = Policy::new(Autonomy::Supervised, &ws, &[ws.join("private")]).unwrap();
    (dir, policy)
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

fn patterns(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| (*s).to_string()).collect()
}

#[test]
fn recognizes_images_by_their_first_bytes() {
    assert_eq!(sniff(PNG), Some("image/png"));
    assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
    assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
    assert_eq!(sniff(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(sniff(b"RIFF\x10\0\0\0WAVEfmt "), None);
    assert_eq!(sniff(b"<svg xmlns=...>"), None);
    assert_eq!(sniff(b""), None);
}

#[test]
fn collects_globs_and_paths_with_their_digest() {
    let (_dir, policy) = workspace();
    let ws = policy.workspace().to_path_buf();
    put(&ws, "inbox/b.png", PNG);
    put(&ws, "inbox/a.png", PNG);
    put(&ws, "inbox/deep/c.png", PNG);
    put(&ws, "shots/d.gif", b"GIF87a-pixels");
    let found = collect(&policy, &patterns(&["inbox/*.png", "./shots/d.gif", "inbox/a.png"])).unwrap();
    let paths: Vec<&str> = found.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, ["inbox/a.png", "inbox/b.png", "shots/d.gif"]);
    assert_eq!(found[0].bytes, PNG.len() as u64);
    assert_eq!(found[0].sha256, hex::encode(Sha256::digest(PNG)));
    assert_eq!(found[0].image.media_type, "image/png");
    assert_eq!(
        found[0].image.data_url(),
        format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(PNG))
    );
    assert_eq!(found[2].image.media_type, "image/gif");
    let deep = collect(&policy, &patterns(&["inbox/**/*.png"])).unwrap();
    assert_eq!(
        deep.iter().map(|a| a.path.as_str()).collect::<Vec<_>>(),
        ["inbox/a.png", "inbox/b.png", "inbox/deep/c.png"]
    );
    // A glob without a match adds nothing; a missing path is an error.
    assert!(collect(&policy, &patterns(&["empty/*.png"])).unwrap().is_empty());
    assert!(
        matches!(collect(&policy, &patterns(&["inbox/zz.png"])), Err(AttachError::Missing(p)) if p == "inbox/zz.png")
    );
}

#[test]
fn refuses_what_breaks_a_limit_before_reading_everything() {
    let (dir, policy) = workspace();
    let ws = policy.workspace().to_path_buf();
    put(&ws, "notes.png", b"just text, named like a picture");
    assert!(matches!(load(&policy, "notes.png"), Err(AttachError::NotAnImage(p)) if p == "notes.png"));
    let mut big = PNG.to_vec();
    big.resize(usize::try_from(MAX_IMAGE_BYTES).unwrap() + 1, 0);
    put(&ws, "big.png", &big);
    assert!(
        matches!(load(&policy, "big.png"), Err(AttachError::TooLarge { bytes, .. }) if bytes == MAX_IMAGE_BYTES + 1)
    );
    for i in 0..9 {
        put(&ws, &format!("many/{i}.png"), PNG);
    }
    assert!(matches!(collect(&policy, &patterns(&["many/*.png"])), Err(AttachError::TooMany(9))));
    // Outside the workspace, through a link or a path, and forbidden paths are refused.
    put(dir.path(), "outside.png", PNG);
    std::os::unix::fs::symlink(dir.path().join("outside.png"), ws.join("link.png")).unwrap();
    assert!(matches!(load(&policy, "link.png"), Err(AttachError::Path(PathError::Outside { .. }))));
    assert!(matches!(load(&policy, "../outside.png"), Err(AttachError::Path(PathError::Outside { .. }))));
    assert!(matches!(collect(&policy, &patterns(&["../*.png"])), Err(AttachError::Path(PathError::Outside { .. }))));
    assert!(matches!(collect(&policy, &patterns(&["l*.png"])), Err(AttachError::Path(PathError::Outside { .. }))));
    put(&ws, "private/p.png", PNG);
    assert!(matches!(load(&policy, "private/p.png"), Err(AttachError::Path(PathError::Forbidden { .. }))));
    assert!(matches!(collect(&policy, &patterns(&["inbox/[.png"])), Err(AttachError::Pattern { .. })));
    assert!(matches!(load(&policy, "many"), Err(AttachError::NotAFile(_))));
}
