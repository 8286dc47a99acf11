//! `show last`, `show NAME` and routine names that name no routine: `history NAME` and `show
//! NAME` are usage errors with a did-you-mean, unless the database still has the name's runs.

use pretty_assertions::assert_eq;

use super::{DAILY, mock};
use crate::common::Routines;
use crate::common::mock_llm::text;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_last_and_show_name_pick_the_newest_run() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY).write("routines/watch.yaml", "prompt: Anything?\n");
    let o = p.run_async(["show", "last"]).await;
    o.code(2).stderr_is("error: no runs yet\n");
    mock.push_all([text("one"), text("two"), text("three")]);
    for name in ["daily", "daily", "watch"] {
        p.run_async(["run", name]).await.success();
    }
    let run_of = |args: [&str; 3]| {
        let o = p.run(args);
        o.success();
        (o.json()["run_id"].as_i64().unwrap(), o.json()["output"].as_str().unwrap().to_string())
    };
    assert_eq!(run_of(["show", "last", "--json"]), (3, "three".to_string()));
    assert_eq!(run_of(["show", "daily", "--json"]), (2, "two".to_string()));
    assert_eq!(run_of(["show", "1", "--json"]), (1, "one".to_string()));
    let o = p.run_async(["show", "daily"]).await;
    assert!(o.stdout.starts_with("run 2  daily  succeeded\n"), "{o}");

    let o = p.run_async(["show", "dialy"]).await;
    o.code(2).stdout_is("").stderr_is("error: no routine named `dialy`; did you mean `daily`?\n");
    p.write("routines/fresh.yaml", "prompt: hi\n");
    let o = p.run_async(["show", "fresh"]).await;
    o.code(2).stderr_is("error: routine `fresh` has no runs yet; run it with `routines run fresh`\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_of_an_unknown_name_is_a_usage_error_but_a_removed_routine_keeps_its_runs() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY).write("routines/old.yaml", "prompt: Old.\n");
    mock.push(text("done"));
    p.run_async(["run", "old"]).await.success();

    let o = p.run_async(["history", "dialy"]).await;
    o.code(2).stdout_is("").stderr_is("error: no routine named `dialy`; did you mean `daily`?\n");
    for command in ["run", "next", "pause", "resume", "show"] {
        let o = p.run_async([command, "dialy"]).await;
        o.code(2).stderr_is("error: no routine named `dialy`; did you mean `daily`?\n");
    }
    let o = p.run_async(["history", "nosuch", "--json"]).await;
    o.code(2).stderr_is("error: no routine named `nosuch`; routines: daily, old\n");
    // A routine without runs yet is known by its file.
    let o = p.run_async(["history", "daily"]).await;
    o.success().stderr_is("no runs yet\n");

    std::fs::remove_file(p.path().join("routines/old.yaml")).unwrap();
    let runs = p.history(&["old"]).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["routine"], "old");
    let o = p.run_async(["show", "old", "--json"]).await;
    o.success();
    assert_eq!(o.json()["run_id"], 1);
    let o = p.run_async(["run", "old"]).await;
    o.code(2).stderr_is("error: no routine named `old`; routines: daily\n");
}
