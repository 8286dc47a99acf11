//! What the CLI shows a person: the last line of a run with its time and cost, figures in
//! `history --json`, tool arguments as JSON in `show --json`, zones in `history`, cut cells
//! marked `…`, colour only when asked or on a terminal, durations as people write them, and
//! words that say what happened.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{DAILY, mock};
use crate::common::Routines;
use crate::common::mock_llm::{error, text, tool_call};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_ends_with_its_time_model_calls_and_tokens() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("notes.txt", "HERON\n").write("routines/notes.yaml", "prompt: Code word?\nagent: { tools: [file_read] }\n");
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})).with_usage(1200, 30), text("HERON")]);
    let o = p.run_async(["run", "notes"]).await;
    o.success().stdout_is("HERON\n");
    let last = o.stderr.lines().last().unwrap();
    assert!(last.starts_with("run 1: succeeded in "), "{o}");
    assert!(last.ends_with("s · 2 model calls · 1,245 tokens"), "{o}");

    let runs = p.history(&[]).await;
    let r = &runs[0];
    assert_eq!((&r["model_calls"], &r["tokens"]), (&json!(2), &json!(1245)));
    assert_eq!((&r["prompt_tokens"], &r["completion_tokens"]), (&json!(1210), &json!(35)));
    assert!(r["duration_ms"].as_i64().unwrap() >= 0, "{r}");
    assert_eq!(r["trigger"], "manual");

    // Tool arguments are JSON objects, not strings.
    let show = p.show(1).await;
    assert_eq!(show["events"][1]["arguments"], json!({"path": "notes.txt"}));
    let o = p.run_async(["show", "1"]).await;
    o.stdout_has("\ntrigger:   fired by hand, attempt 1\n");

    mock.push(error(400, "nope"));
    let o = p.run_async(["run", "notes"]).await;
    o.code(1).stderr_has("\nrun 2: failed in ").stderr_has(" · 0 model calls · 0 tokens\nerror: run 2 failed: ");
    mock.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_shows_the_zone_and_marks_a_cut_error() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY)
        .write("routines/gone.yaml", "prompt: Go.\nretry: { attempts: 1 }\n")
        .write("routines/berlin.yaml", "on: [{ cron: \"0 9 * * *\", timezone: Europe/Berlin }]\nprompt: Hi.\n");
    let long = "x".repeat(200);
    mock.push_all([text("one"), error(400, &long), text("three")]);
    for (name, code) in [("daily", 0), ("gone", 1), ("berlin", 0)] {
        p.run_async(["run", name]).await.code(code);
    }
    std::fs::remove_file(p.path().join("routines/gone.yaml")).unwrap();
    let o = p.run_async(["history"]).await;
    o.success();
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{o}");
    // The routine's zone, the engine's for one without its own, UTC for one whose file is gone.
    assert!(lines[1].contains(" CET ") || lines[1].contains(" CEST "), "{}", lines[1]);
    assert!(lines[2].contains(" UTC "), "{}", lines[2]);
    assert!(lines[3].contains(" CST "), "{}", lines[3]);
    assert!(lines[2].ends_with("…"), "a cut error ends with …: {}", lines[2]);
    assert!(!lines[2].contains(&"x".repeat(61)), "{}", lines[2]);

    // Narrower than the table: cells are cut to fit, each marked.
    let o = p.command(["history"]).env("COLUMNS", "70").run_async().await;
    o.success();
    for line in o.stdout.lines() {
        assert!(line.chars().count() <= 70, "{} chars: {line}", line.chars().count());
    }
    assert!(o.stdout.contains('…'), "{o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colour_only_when_asked_or_on_a_terminal_and_never_with_no_color() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", DAILY);
    mock.push(text("one"));
    let o = p.run_async(["run", "daily"]).await;
    assert!(!o.stderr.contains('\u{1b}'), "a pipe gets no colour: {o}");
    for args in [&["history", "--color", "always"][..], &["list", "--color=always"]] {
        let o = p.run_async(args).await;
        o.success();
        assert!(o.stdout.contains("\u{1b}[") && o.stdout.contains("succeeded"), "{o}");
    }
    let o = p.run_async(["show", "1", "--color", "always"]).await;
    o.success().stdout_has("\u{1b}[32msucceeded\u{1b}[0m");
    for o in [
        p.run_async(["history"]).await,
        p.command(["history", "--color", "auto"]).env("NO_COLOR", "1").run_async().await,
        p.run_async(["history", "--color", "never"]).await,
    ] {
        o.success();
        assert!(!o.stdout.contains('\u{1b}'), "{o}");
    }
    let o = p.run_async(["history", "--color", "sometimes"]).await;
    o.code(2);
}

/// On a terminal (the pseudo-terminal of `script`), `run` shows a spinner with the time spent
/// above which the tool lines print, clears it, and colours its last line; a table fits the
/// terminal's width.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_a_run_shows_a_spinner_and_colour() {
    let mock = mock().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write("routines/daily.yaml", &format!("{DAILY}retry: {{ attempts: 2, backoff: 1s }}\n"));
    // Replies slow enough for the spinner, which ticks every 120 ms, to be drawn; the first
    // fails, and the attempt's failure is logged while the spinner turns.
    let slow = std::time::Duration::from_millis(400);
    mock.push_all([error(500, "boom").with_delay(slow), text("Done.").with_delay(slow)]);
    let line = format!("stty cols 60 rows 20; {0} run daily; {0} history --color never", Routines::binary());
    let o = p.program("script").args(["-qec", &line, "/dev/null"]).env("TERM", "xterm-256color").run_async().await;
    o.success();
    let screen = &o.stdout;
    assert!(screen.contains(" running daily... 0s"), "{screen}");
    assert!(screen.contains("\r\u{1b}[2K"), "the spinner is redrawn in place: {screen}");
    // A log line takes the spinner away first: never on the spinner's line.
    let logs: Vec<&str> = screen.split(['\r', '\n']).filter(|l| l.contains("WARN")).collect();
    assert!(!logs.is_empty(), "{screen}");
    assert!(logs.iter().all(|l| !l.contains("running daily...")), "{logs:?}");
    assert!(screen.contains("Done.\r\n"), "{screen}");
    assert!(screen.contains("run 1: \u{1b}[32msucceeded\u{1b}[0m in "), "{screen}");
    let table: Vec<&str> = screen.lines().skip_while(|l| !l.contains("RUN")).collect();
    assert!(table.len() == 2 && table.iter().all(|l| l.chars().count() <= 60), "{table:?}");
    assert!(table[1].contains('…'), "{table:?}");
}

#[test]
fn durations_are_accepted_as_people_write_them() {
    let p = Routines::offline();
    p.write("routines/often.yaml", "on: [{ every: 10min }]\ntimeout: 1h 30m\nprompt: hi\n")
        .write("routines/daily.yaml", "on: [{ every: 2 days }]\ntimeout: 5 minutes\nprompt: hi\n");
    p.run(["validate"]).success().stderr_is("ok: the config and 2 routines are valid\n");
    let o = p.run(["next", "often", "-n", "2", "--json"]);
    o.success();
    let at: Vec<chrono::DateTime<chrono::FixedOffset>> = o
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|f| chrono::DateTime::parse_from_rfc3339(f["at"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!((at[1] - at[0]).num_seconds(), 600);

    p.write("routines/bad.yaml", "on: [{ every: 10 fortnights }]\nprompt: hi\n");
    let o = p.run(["validate"]);
    o.code(2).stdout_has(
        "routines/bad.yaml:1:15: invalid duration `10 fortnights`: unknown unit `fortnights` (use ms, s, min, h, d or w, or their words); write a number with a unit",
    );
}
