use std::path::Path;

use super::*;

const TOOLS: [&str; 3] = ["shell", "file_read", "file_list"];

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn messages(c: &Catalog) -> Vec<String> {
    c.diagnostics().0.iter().map(|d| format!("{}:{}:{}: {}", d.file.display(), d.line, d.col, d.message)).collect()
}

#[test]
fn loads_skills_with_their_documents_and_resources() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    write(
        &base,
        "skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Take notes\ntools: [file_read]\n---\nRead format.md.\n",
    );
    write(&base, "skills/notes/format.md", "# Format\n");
    write(&base, "skills/notes/examples/one.md", "one\n");
    write(&base, "skills/notes/.hidden", "x\n");
    write(&base, "skills/README.md", "not a skill\n");
    std::fs::create_dir_all(base.join("skills/empty")).unwrap();
    let c = Catalog::load(&base.join("skills"), &base, &TOOLS);
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    assert_eq!(c.names(), ["notes"]);
    let s = c.get("notes").unwrap();
    assert_eq!((s.description.as_str(), s.tools.as_slice()), ("Take notes", &["file_read".to_string()][..]));
    assert_eq!(s.shown_dir, Path::new("skills/notes"));
    assert_eq!(c.dirs(), vec![base.join("skills/notes")]);
    let doc = c.document("notes").unwrap();
    assert_eq!(doc.body, "Read format.md.");
    assert_eq!(doc.resources, vec![base.join("skills/notes/examples/one.md"), base.join("skills/notes/format.md")]);
    assert!(matches!(c.document("nope"), Err(SkillError::Unknown(_))));
    // A folder that does not exist holds no skills and no problems.
    let none = Catalog::load(&base.join("missing"), &base, &TOOLS);
    assert!(none.is_empty() && none.diagnostics().is_empty());
}

#[test]
fn refuses_files_that_resolve_outside_their_folder() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    write(&base, "elsewhere/SKILL.md", "---\nname: linked\ndescription: d\n---\nbody\n");
    write(&base, "secret.txt", "TOKEN=abc\n");
    std::fs::create_dir_all(base.join("skills/environ")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", base.join("skills/environ/SKILL.md")).unwrap();
    std::fs::create_dir_all(base.join("skills/outside")).unwrap();
    std::os::unix::fs::symlink(base.join("elsewhere/SKILL.md"), base.join("skills/outside/SKILL.md")).unwrap();
    std::os::unix::fs::symlink(base.join("elsewhere"), base.join("skills/linked")).unwrap();
    write(&base, "skills/ok/SKILL.md", "---\nname: ok\ndescription: d\n---\nbody\n");
    std::os::unix::fs::symlink(base.join("secret.txt"), base.join("skills/ok/secret.txt")).unwrap();
    write(&base, "skills/lower/skill.md", "---\nname: lower\ndescription: d\n---\nbody\n");

    let c = Catalog::load(&base.join("skills"), &base, &TOOLS);
    assert_eq!(c.names(), ["ok"]);
    let problems = messages(&c);
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].starts_with("skills/environ/SKILL.md:1:1: SKILL.md is not read: "), "{problems:#?}");
    assert!(problems[0].contains("outside"), "{problems:#?}");
    assert!(problems[1].starts_with("skills/linked/SKILL.md:1:1: the skill folder is not read"), "{problems:#?}");
    assert_eq!(problems[2], "skills/lower/skill.md:1:1: `skill.md` is not read as a skill");
    assert!(problems[3].starts_with("skills/outside/SKILL.md:1:1: SKILL.md is not read"), "{problems:#?}");
    assert!(c.is_broken("environ") && c.is_broken("linked") && c.is_broken("lower") && !c.is_broken("ok"));
    // A resource that links outside is not listed.
    assert!(c.document("ok").unwrap().resources.is_empty());
}

#[test]
fn a_document_is_read_again_when_used() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    write(&base, "skills/a/SKILL.md", "---\nname: a\ndescription: d\n---\nfirst\n");
    let c = Catalog::load(&base.join("skills"), &base, &TOOLS);
    write(&base, "skills/a/SKILL.md", "---\nname: a\ndescription: d\n---\nsecond\n");
    assert_eq!(c.document("a").unwrap().body, "second");
    // Replaced by a link to a file outside after loading: refused when used.
    std::fs::remove_file(base.join("skills/a/SKILL.md")).unwrap();
    write(&base, "secret.txt", "TOKEN=abc\n");
    std::os::unix::fs::symlink(base.join("secret.txt"), base.join("skills/a/SKILL.md")).unwrap();
    let err = c.document("a").unwrap_err();
    assert!(matches!(err, SkillError::Read { source: ReadError::Outside { .. }, .. }), "{err}");
    write(&base, "skills/a/SKILL.md.new", "no front matter\n");
    std::fs::rename(base.join("skills/a/SKILL.md.new"), base.join("skills/a/SKILL.md")).unwrap();
    assert!(matches!(c.document("a"), Err(SkillError::FrontMatter { .. })));
}
