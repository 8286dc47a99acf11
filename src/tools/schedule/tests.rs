use std::collections::HashMap;

use chrono::{Duration, Utc};
use serde_json::json;

use super::*;
use crate::config::Autonomy;
use crate::policy::Policy;
use crate::tools::DynTool;

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    tool: Schedule,
    ctx: ToolContext,
}

fn setup(creator_tools: &[&str], commands: &[&str]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("routines")).unwrap();
    let config =
        crate::config::from_str(&root.join("routines.yaml"), "timezone: Asia/Shanghai\n", &HashMap::new()).unwrap();
    let mut ctx = ToolContext::for_test(Policy::new(Autonomy::Supervised, &root, &[]).unwrap());
    ctx.facts.tools = creator_tools.iter().map(|t| (*t).to_string()).collect();
    let tool = Schedule::new(ScheduleScope {
        config: Arc::new(config),
        creator: "routine `planner`".into(),
        commands: commands.iter().map(|c| (*c).to_string()).collect(),
    });
    Setup { _dir: dir, root, tool, ctx }
}

impl Setup {
    async fn call(&self, args: serde_json::Value) -> Result<String, ToolError> {
        self.tool.invoke(args, &self.ctx).await
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }
}

fn tomorrow_at_nine() -> (String, String) {
    let zone: Tz = "Asia/Shanghai".parse().unwrap();
    let day = (Utc::now().with_timezone(&zone) + Duration::days(1)).date_naive();
    (format!("{day}T09:00"), format!("{day}T09:00:00+08:00"))
}

#[tokio::test]
async fn add_writes_a_checked_routine_in_the_users_zone() {
    let s = setup(&["shell", "file_read", "schedule"], &["git"]);
    let (local, offset) = tomorrow_at_nine();
    let out = s
        .call(json!({"action": "add", "name": "check-release", "prompt": "Remind me to check the release branch.", "at": local, "cron": "", "tools": ["shell"]}))
        .await
        .unwrap();
    assert!(out.starts_with("Scheduled routine `check-release` (routines/check-release.yaml): once, at "), "{out}");
    assert!(out.contains("09:00 +08:00 (Asia/Shanghai)"), "{out}");
    assert!(out.contains("It delivers nothing"), "{out}");
    assert!(out.ends_with("start one with `routines daemon`."), "{out}");
    let text = s.read("routines/check-release.yaml");
    assert!(text.starts_with("# Created by the agent (routine `planner`) with the schedule tool on "), "{text}");
    assert!(text.contains("created_by: agent\n"), "{text}");
    assert!(text.contains(&format!("  - at: \"{offset}\"\n")), "{text}");
    // The creator's commands go with `shell`; its autonomy is written out.
    assert!(
        text.contains("agent:\n  autonomy: supervised\n  tools: [\"shell\"]\n  allow_commands: [\"git\"]\n"),
        "{text}"
    );

    // The same name again replaces the agent's own routine.
    let out =
        s.call(json!({"action": "add", "name": "check-release", "prompt": "Again.", "every": "1d"})).await.unwrap();
    assert!(out.starts_with("Replaced routine `check-release`"), "{out}");
    assert!(s.read("routines/check-release.yaml").contains("  - every: \"1d\"\n"));
}

#[tokio::test]
async fn add_refuses_what_the_session_lacks_and_what_is_not_its_own() {
    let s = setup(&["file_read", "schedule"], &[]);
    let add = |extra: serde_json::Value| {
        let mut args = json!({"action": "add", "name": "r", "prompt": "p", "every": "1h"});
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        args
    };
    let refused = |r: Result<String, ToolError>| match r {
        Err(ToolError::Refused(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let m = refused(s.call(add(json!({"tools": ["shell"]}))).await);
    assert_eq!(m, "the routine cannot get `shell`: it may only get tools you have (file_read, schedule)");
    let m = refused(s.call(add(json!({"tools": ["schedule"]}))).await);
    assert!(m.contains("cannot get the schedule tool itself"), "{m}");
    std::fs::write(s.root.join("routines/mine.yaml"), "prompt: hand-written\n").unwrap();
    let m = refused(s.call(add(json!({"name": "mine"}))).await);
    assert!(m.starts_with("routines/mine.yaml exists and was not made by the agent"), "{m}");
    assert_eq!(s.read("routines/mine.yaml"), "prompt: hand-written\n");

    let invalid = |r: Result<String, ToolError>| match r {
        Err(ToolError::InvalidArgs(m)) => m,
        other => panic!("expected invalid arguments, got {other:?}"),
    };
    // The loader's own checks, as for a hand-written file.
    let m = invalid(s.call(json!({"action": "add", "name": "c", "prompt": "p", "cron": "61 * * * *"})).await);
    assert!(m.starts_with("the routine would not be valid: invalid cron expression `61 * * * *`"), "{m}");
    let m = invalid(s.call(json!({"action": "add", "name": "c", "prompt": "p", "every": "1"})).await);
    assert!(m.starts_with("the routine would not be valid: invalid duration `1`"), "{m}");
    let m = invalid(
        s.call(json!({"action": "add", "name": "d", "prompt": "p", "every": "1h", "deliver_file": "{{ nope }}"})).await,
    );
    assert!(m.contains("uses `nope`, which is not defined"), "{m}");
    let m = invalid(
        s.call(json!({"action": "add", "name": "e", "prompt": "p", "every": "1h", "at": "2099-01-01T09:00"})).await,
    );
    assert_eq!(
        m,
        "give only one of `at` (once, e.g. a reminder), `cron` and `every` (repeating), and leave the others out"
    );
    let m = invalid(s.call(json!({"action": "add", "name": "e", "prompt": "p"})).await);
    assert!(
        m.starts_with("add needs a time: call schedule again with `at` for something that happens once (e.g. \""),
        "{m}"
    );
    let m = invalid(s.call(json!({"action": "add", "name": "f", "prompt": "p", "at": "2000-01-01T09:00"})).await);
    assert!(m.starts_with("2000-01-01T09:00 has already passed"), "{m}");
    let m = invalid(
        s.call(
            json!({"action": "add", "name": "g", "prompt": "p", "at": "2099-01-01T09:00", "timezone": "Europe/Berln"}),
        )
        .await,
    );
    assert_eq!(m, "unknown time zone `Europe/Berln`; did you mean `Europe/Berlin`?");
    let files: Vec<String> = std::fs::read_dir(s.root.join("routines"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, ["mine.yaml"], "nothing invalid was written");
}

#[tokio::test]
async fn list_and_remove_touch_only_the_agents_routines() {
    let s = setup(&["schedule"], &[]);
    std::fs::write(s.root.join("routines/mine.yaml"), "prompt: hand-written\n").unwrap();
    s.call(json!({"action": "add", "name": "nightly", "prompt": "p", "cron": "0 2 * * *", "deliver_mail": "me@example.com"}))
        .await
        .unwrap();
    assert!(s.read("routines/nightly.yaml").contains("  - mail: { to: [\"me@example.com\"] }\n"));
    let list = s.call(json!({"action": "list"})).await.unwrap();
    assert!(list.contains("- mine (manual; no next fire; the user's)"), "{list}");
    assert!(list.contains("- nightly (cron, manual; next "), "{list}");
    assert!(list.contains("+08:00; made by the agent)"), "{list}");
    assert!(matches!(s.call(json!({"action": "remove", "name": "mine"})).await, Err(ToolError::Refused(_))));
    assert!(s.root.join("routines/mine.yaml").exists());
    let out = s.call(json!({"action": "remove", "name": "nightly"})).await.unwrap();
    assert_eq!(out, "Removed routine `nightly` (routines/nightly.yaml).");
    assert!(!s.root.join("routines/nightly.yaml").exists());
    let err = s.call(json!({"action": "remove", "name": "nightly"})).await.unwrap_err();
    assert_eq!(err, ToolError::failed("there is no routine named `nightly`"));
    // Listing changes nothing, so it needs no approval.
    assert_eq!(s.tool.inspect(&json!({"action": "list"})).unwrap().effect, Some(Effect::ReadOnly));
    assert_eq!(s.tool.inspect(&json!({"action": "remove", "name": "x"})).unwrap().effect, None);
}

#[tokio::test]
async fn a_missing_or_loose_name_becomes_a_valid_one() {
    let s = setup(&["schedule"], &[]);
    let add = |args: serde_json::Value| s.call(args);
    let out =
        add(json!({"action": "add", "prompt": "Remind me to check the release branch.", "every": "1d"})).await.unwrap();
    assert!(out.starts_with("Scheduled routine `check-release-branch` (routines/check-release-branch.yaml)"), "{out}");
    // A name of its own making never replaces a routine: the next free one.
    let out =
        add(json!({"action": "add", "prompt": "Remind me to check the release branch.", "every": "2d"})).await.unwrap();
    assert!(out.starts_with("Scheduled routine `check-release-branch-2`"), "{out}");
    let out =
        add(json!({"action": "add", "prompt": "Remind the user to water the plants.", "every": "1d"})).await.unwrap();
    assert!(out.starts_with("Scheduled routine `water-plants`"), "{out}");
    let out = add(json!({"action": "add", "name": "Water The Plants", "prompt": "p", "every": "1d"})).await.unwrap();
    assert!(out.starts_with("Scheduled routine `water-the-plants`"), "{out}");
    let info = s
        .tool
        .inspect(
            &json!({"action": "add", "prompt": "Remind me to call Bob", "at": "2099-01-01T09:00", "cron": "0 9 * * *"}),
        )
        .unwrap();
    assert_eq!(info.summary, "add call-bob (at 2099-01-01T09:00, cron 0 9 * * *)");
    let info =
        s.tool.inspect(&json!({"action": "add", "name": "x", "every": "1d", "tools": ["shell", "file_read"]})).unwrap();
    assert_eq!(info.summary, "add x (every 1d; tools: shell, file_read)");
}
