use std::collections::HashMap;

use chrono::{Duration, Utc};
use serde_json::json;

use super::*;
use crate::config::Autonomy;
use crate::policy::Policy;
use crate::tools::DynTool;

const CONFIG: &str = "timezone: Asia/Shanghai\nmail: { from: r@example.com, allowed_recipients: [me@example.com, \"*@team.example.org\"] }\nlimits: { max_agent_routines: 5 }\n";

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    tool: Schedule,
    ctx: ToolContext,
}

fn setup(creator_tools: &[&str], commands: &[&str]) -> Setup {
    setup_for(creator_tools, commands, &[])
}

fn setup_for(creator_tools: &[&str], commands: &[&str], recipients: &[&str]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("routines")).unwrap();
    let config = crate::config::from_str(&root.join("routines.yaml"), CONFIG, &HashMap::new()).unwrap();
    let mut ctx = ToolContext::for_test(Policy::new(Autonomy::Supervised, &root, &[]).unwrap());
    ctx.facts.tools = creator_tools.iter().map(|t| (*t).to_string()).collect();
    let tool = Schedule::new(ScheduleScope {
        config: Arc::new(config),
        creator: "routine `planner`".into(),
        commands: commands.iter().map(|c| (*c).to_string()).collect(),
        recipients: recipients.iter().map(|c| (*c).to_string()).collect(),
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

#[tokio::test]
async fn mail_goes_only_to_allowed_addresses_and_the_creators_own() {
    let s = setup_for(&["schedule"], &[], &["oncall@example.net"]);
    let add = |name: &str, mail: serde_json::Value| json!({"action": "add", "name": name, "prompt": "p", "every": "1h", "deliver_mail": mail});
    let m = match s.call(add("leak", json!(["me@example.com", "attacker@evil.example"]))).await {
        Err(ToolError::Refused(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(
        m,
        "the routine cannot mail attacker@evil.example: of addresses, it may mail only me@example.com, *@team.example.org, oncall@example.net; leave deliver_mail out or use one of those"
    );
    assert!(!s.root.join("routines/leak.yaml").exists());
    s.call(add("ok", json!(["Me <ME@example.com>", "dev@team.example.org", "oncall@example.net"]))).await.unwrap();
    assert!(s.read("routines/ok.yaml").contains("oncall@example.net"));

    // Without any allowed address, none.
    let none = setup(&["schedule"], &[]);
    let mut config = (*none.tool.scope.config).clone();
    config.mail = None;
    let tool = Schedule::new(ScheduleScope { config: Arc::new(config), ..(*none.tool.scope).clone() });
    let m = tool.invoke(add("x", json!("me@example.com")), &none.ctx).await.unwrap_err().to_string();
    assert!(
        m.contains(
            "it may mail none: a routine made by the agent mails only addresses listed in mail.allowed_recipients"
        ),
        "{m}"
    );
}

#[tokio::test]
async fn the_agent_makes_no_more_routines_than_the_limit_and_none_too_often() {
    let s = setup(&["schedule"], &[]);
    for name in ["a", "b", "c", "x", "y"] {
        s.call(json!({"action": "add", "name": name, "prompt": "p", "every": "1h"})).await.unwrap();
    }
    let m = s.call(json!({"action": "add", "name": "d", "prompt": "p", "every": "1h"})).await.unwrap_err();
    assert!(
        matches!(&m, ToolError::Refused(m) if m.starts_with("there are 5 routines made by the agent already")),
        "{m:?}"
    );
    // Replacing one of its own is no new routine; a user's routine does not count.
    s.call(json!({"action": "add", "name": "a", "prompt": "p", "every": "2h"})).await.unwrap();
    s.call(json!({"action": "remove", "name": "c"})).await.unwrap();
    std::fs::write(s.root.join("routines/mine.yaml"), "prompt: hand-written\n").unwrap();
    s.call(json!({"action": "add", "name": "d", "prompt": "p", "every": "1h"})).await.unwrap();

    let t = setup(&["schedule"], &[]);
    let invalid = |r: Result<String, ToolError>| match r {
        Err(ToolError::InvalidArgs(m)) => m,
        other => panic!("expected invalid arguments, got {other:?}"),
    };
    let m = invalid(t.call(json!({"action": "add", "name": "fast", "prompt": "p", "every": "1s"})).await);
    assert!(m.starts_with("the routine would not be valid: `every: 1s` is shorter than 15m (a routine made by the agent fires at most every 15m"), "{m}");
    let m = invalid(t.call(json!({"action": "add", "name": "fast", "prompt": "p", "cron": "* * * * * *"})).await);
    assert!(m.contains("`* * * * * *` has a seconds field"), "{m}");
    let m = invalid(t.call(json!({"action": "add", "name": "fast", "prompt": "p", "cron": "*/5 * * * *"})).await);
    assert!(m.contains("its triggers fire as little as 5m apart, less than 15m"), "{m}");
    assert!(!t.root.join("routines/fast.yaml").exists());
    t.call(json!({"action": "add", "name": "slow", "prompt": "p", "cron": "*/15 * * * *"})).await.unwrap();
    t.call(json!({"action": "add", "name": "slower", "prompt": "p", "every": "15m"})).await.unwrap();
}
