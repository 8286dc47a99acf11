//! Skills (SPEC §10) through the binary: found and listed by `routines skills`, broken front
//! matter reported by `validate` with its location, loaded by the `skill` tool (with
//! `file_read` reading the skill's files, also outside the workspace) and by a routine's
//! `skills:`, and files that resolve outside their folder refused.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, text, tool_call};
use crate::common::{Routines, content, last_message};

const NOTES: &str = "---\nname: notes\ndescription: Take meeting notes in the team's format\ntools: [file_read]\n---\n# Notes\n\nRead format.md, then write the notes in its shape.\n";
const TRIAGE: &str =
    "---\nname: triage\ndescription: Sort new issues by urgency\n---\nLabel each issue urgent, soon or later.\n";

/// A project whose skills are notes (with a resource file) and triage.
fn project(base_url: &str, extra: &str) -> Routines {
    let p = Routines::project(base_url, extra);
    p.write("skills/notes/SKILL.md", NOTES)
        .write("skills/notes/format.md", "## Decisions\n## Actions\n")
        .write("skills/triage/SKILL.md", TRIAGE);
    p
}

#[test]
fn skills_are_listed_and_one_is_printed() {
    let p = project("http://127.0.0.1:9/v1", "");
    p.run(["skills"]).success().stderr_is("").stdout_is(
        "NAME    DESCRIPTION                              FOLDER\n\
         notes   Take meeting notes in the team's format  skills/notes\n\
         triage  Sort new issues by urgency               skills/triage\n",
    );
    let o = p.run(["skills", "--json"]);
    o.success();
    assert_eq!(
        o.json(),
        json!([
            {"name": "notes", "description": "Take meeting notes in the team's format", "folder": "skills/notes", "tools": ["file_read"]},
            {"name": "triage", "description": "Sort new issues by urgency", "folder": "skills/triage", "tools": []},
        ])
    );
    p.run(["skills", "notes"]).success().stdout_is(NOTES);
    let o = p.run(["skills", "notes", "--json"]);
    o.success();
    let v = o.json();
    assert_eq!(v["body"], "# Notes\n\nRead format.md, then write the notes in its shape.");
    assert_eq!(v["resources"], json!(["skills/notes/format.md"]));
    p.run(["skills", "note"]).code(2).stdout_is("").stderr_is("error: no skill named `note`; did you mean `notes`?\n");

    let empty = Routines::offline();
    empty
        .run(["skills"])
        .success()
        .stdout_is("")
        .stderr_is("no skills in skills/ (a skill is a folder with a SKILL.md; `routines init` writes an example)\n");
    empty.run(["skills", "--json"]).success().stdout_is("[]\n");
}

#[test]
fn validate_reports_broken_skills_with_their_locations() {
    let p = Routines::offline();
    p.write("skills/bare/SKILL.md", "# Just Markdown\n")
        .write("skills/typo/SKILL.md", "---\nname: typo\ndescripton: Something\n---\nbody\n")
        .write("skills/moved/SKILL.md", "---\nname: old-name\ndescription: Moved\n---\nbody\n")
        .write("skills/empty/SKILL.md", "---\nname: empty\ndescription: \"\"\ntools: [shel]\n---\n")
        .write("skills/ok/SKILL.md", "---\nname: ok\ndescription: Fine\n---\nbody\n");
    p.run(["validate"]).code(2).stderr_is("error: 6 problems found\n").stdout_is(
        "skills/bare/SKILL.md:1:1: SKILL.md has no front matter\n  help: start SKILL.md with a front matter block:\n        ---\n        name: FOLDER-NAME\n        description: when this skill helps, in one line\n        ---\n      then the instructions in Markdown\n\
         skills/empty/SKILL.md:3:14: the description is empty\n  help: describe in one line when the skill helps, e.g. `description: Write release notes from the git history`; it is what the model reads to choose it\n\
         skills/empty/SKILL.md:4:9: unknown tool `shel`\n  help: did you mean `shell`?\n\
         skills/empty/SKILL.md:5:1: SKILL.md has no instructions after its front matter\n  help: write what the agent should do, in Markdown, below the closing `---`\n\
         skills/moved/SKILL.md:2:7: the skill is named `old-name` but its folder is `moved`\n  help: write `name: moved`, or rename the folder to `old-name`\n\
         skills/typo/SKILL.md:3:1: unknown field `descripton`\n  help: did you mean `description`?\n",
    );
    // The good one still loads; `skills` lists it and says there are problems.
    p.run(["skills"])
        .success()
        .stdout_is("NAME  DESCRIPTION  FOLDER\nok    Fine         skills/ok\n")
        .stderr_is("warning: 6 problem(s) in skills; see `routines validate`\n");
}

#[test]
fn a_routines_skills_are_checked_and_tools_it_lacks_are_a_warning() {
    let p = project("http://127.0.0.1:9/v1", "");
    p.write("skills/broken/SKILL.md", "no front matter\n");
    p.write("routines/bad.yaml", "prompt: hi\nskills: [note, broken, zzz]\n");
    p.write("routines/lean.yaml", "prompt: hi\nagent: { tools: [shell] }\nskills: [notes, triage]\n");
    p.run(["validate"]).code(2).stderr_is("error: 4 problems found (1 warning)\n").stdout_is(
        "routines/bad.yaml:2:10: unknown skill `note`\n  help: did you mean `notes`?\n\
         routines/bad.yaml:2:16: skill `broken` cannot be loaded: its SKILL.md has problems\n  help: fix skills/broken/SKILL.md; `routines validate` shows where\n\
         routines/bad.yaml:2:24: unknown skill `zzz`\n  help: skills: notes, triage\n\
         routines/lean.yaml:3:10: warning: skill `notes` uses the tool `file_read`, which this routine does not have\n  help: a skill never grants tools: add `file_read` to agent.tools if the routine should use it\n\
         skills/broken/SKILL.md:1:1: SKILL.md has no front matter\n  help: start SKILL.md with a front matter block:\n        ---\n        name: FOLDER-NAME\n        description: when this skill helps, in one line\n        ---\n      then the instructions in Markdown\n",
    );
    // Warnings alone leave the exit code at 0.
    std::fs::remove_file(p.path().join("routines/bad.yaml")).unwrap();
    std::fs::remove_dir_all(p.path().join("skills/broken")).unwrap();
    p.run(["validate"])
        .success()
        .stderr_is("ok: the config and 1 routine are valid (1 warning)\n")
        .stdout_has("routines/lean.yaml:3:10: warning: skill `notes` uses the tool `file_read`");
}

/// `skills_dir` outside the workspace: the `skill` tool loads the body and names the files,
/// `file_read` reads them there (and nothing else outside the workspace).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_tool_loads_a_body_and_file_read_reads_its_files() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "workspace: ws\nskills_dir: shared/skills\n");
    p.write("ws/README.md", "workspace\n")
        .write("shared/skills/notes/SKILL.md", NOTES)
        .write("shared/skills/notes/format.md", "## Decisions\n## Actions\n")
        .write("shared/secret.txt", "not for the agent\n");
    p.write("routines/minutes.yaml", "prompt: Write the minutes.\nagent: { tools: [skill, file_read] }\n");
    let root = p.path().canonicalize().unwrap();
    let format = root.join("shared/skills/notes/format.md").display().to_string();
    let secret = root.join("shared/secret.txt").display().to_string();
    mock.push_all([
        tool_call("skill", json!({"name": "notes"})),
        tool_call("file_read", json!({"path": format})),
        tool_call("file_read", json!({"path": secret})),
        text("Minutes written."),
    ]);
    p.run_async(["run", "minutes"]).await.success().stdout_is("Minutes written.\n");
    let reqs = mock.requests();
    let system = content(&reqs[0], 0);
    assert!(
        system.contains(
            "\n## Skills\nInstructions for particular tasks. When a task matches one, load it with the skill tool first:\n- notes: Take meeting notes in the team's format\n\n## Safety\n"
        ),
        "{system}"
    );
    let tools: Vec<&str> =
        reqs[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["file_read", "skill"]);
    assert_eq!(
        last_message(&reqs[1])["content"],
        format!(
            "# Skill notes\n# Notes\n\nRead format.md, then write the notes in its shape.\n\nIts files (read them with file_read when the instructions need them):\n- {format}\n"
        )
    );
    assert_eq!(last_message(&reqs[2])["content"], "## Decisions\n## Actions\n");
    let refused = last_message(&reqs[3])["content"].as_str().unwrap().to_string();
    assert!(refused.starts_with("[failed] ") && refused.contains("is outside the workspace"), "{refused}");
    mock.assert_clean();
}

/// A routine's `skills:` puts the bodies into its system prompt; without the `skill` tool
/// the catalogue is not listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routines_skills_go_into_its_system_prompt() {
    let mock = MockLlm::start().await;
    let p = project(&mock.base_url(), "");
    p.write(
        "routines/issues.yaml",
        "prompt: Sort today's issues.\nagent: { tools: [file_read] }\nskills: [triage, notes]\n",
    );
    let o = p.run_async(["run", "issues", "--dry-run", "--json"]).await;
    o.success();
    let dry = o.json()["system_prompt"].as_str().unwrap().to_string();
    let expected = "\n## Skills\n\n### Skill triage\nLabel each issue urgent, soon or later.\n\n### Skill notes\n# Notes\n\nRead format.md, then write the notes in its shape.\nIts files (read them with file_read when needed): skills/notes/format.md\n\n## Safety\n";
    assert!(dry.contains(expected), "{dry}");
    mock.push(text("Sorted."));
    p.run_async(["run", "issues"]).await.success();
    let system = content(&mock.requests()[0], 0);
    assert!(system.contains(expected), "{system}");
    assert!(!system.contains("load it with the skill tool"), "{system}");
    // Without a tools list the routine has the skill tool and sees the catalogue too.
    p.write("routines/open.yaml", "prompt: Anything.\nskills: [triage]\n");
    let o = p.run_async(["run", "open", "--dry-run", "--json"]).await;
    let dry = o.json()["system_prompt"].as_str().unwrap().to_string();
    assert!(dry.contains("load it with the skill tool first:\n- notes: Take meeting notes in the team's format\n- triage: Sort new issues by urgency\n\n### Skill triage\n"), "{dry}");
    mock.assert_clean();
}

/// A SKILL.md that links to /proc/self/environ or outside its folder is never read, and a
/// routine that names it does not load.
#[test]
fn skill_files_that_link_outside_their_folder_are_refused() {
    let p = Routines::offline();
    p.write("secret.txt", "TOKEN=abc\n").write("skills/ok/SKILL.md", "---\nname: ok\ndescription: Fine\n---\nbody\n");
    std::fs::create_dir_all(p.path().join("skills/environ")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", p.path().join("skills/environ/SKILL.md")).unwrap();
    std::fs::create_dir_all(p.path().join("skills/leak")).unwrap();
    std::os::unix::fs::symlink(p.path().join("secret.txt"), p.path().join("skills/leak/SKILL.md")).unwrap();
    p.write("routines/r.yaml", "prompt: hi\nskills: [environ]\n");
    let o = p.run(["validate"]);
    o.code(2);
    let lines: Vec<&str> = o.stdout.lines().filter(|l| !l.starts_with("  ")).collect();
    assert_eq!(lines.len(), 3, "{o}");
    assert!(lines[0].starts_with("routines/r.yaml:2:10: skill `environ` cannot be loaded"), "{o}");
    assert!(lines[1].starts_with("skills/environ/SKILL.md:1:1: SKILL.md is not read: "), "{o}");
    assert!(lines[1].contains("outside"), "{o}");
    assert!(lines[2].starts_with("skills/leak/SKILL.md:1:1: SKILL.md is not read: "), "{o}");
    assert!(!o.stdout.contains("TOKEN"), "{o}");
    p.run(["skills"]).success().stdout_is("NAME  DESCRIPTION  FOLDER\nok    Fine         skills/ok\n");
    p.run(["skills", "leak"]).code(2).stderr_is("error: skill `leak` has problems; see `routines validate`\n");
}

#[test]
fn init_writes_an_example_skill_and_never_overwrites_it() {
    let p = Routines::new();
    p.run(["init"]).success().stderr_has("created  ").stderr_has("skills/release-notes/SKILL.md\n");
    let o = p.run(["skills", "--json"]);
    o.success();
    let list: Vec<Value> = o.json().as_array().unwrap().clone();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["name"], "release-notes");
    assert_eq!(list[0]["tools"], json!(["shell", "file_read"]));
    p.run(["validate"]).success().stderr_is("ok: the config and 1 routine are valid\n");
    p.write("skills/release-notes/SKILL.md", "---\nname: release-notes\ndescription: Mine now\n---\nmine\n");
    p.run(["init"]).success().stderr_has("kept     ").stderr_has("skills/release-notes/SKILL.md (already exists)\n");
    assert!(p.read("skills/release-notes/SKILL.md").contains("Mine now"));
}
