//! The code check of a silent reply (bench/agent-notebook.md, "A silence is checked by code"):
//! after a look, a silent token is believed only when a function the model writes finds
//! nothing to report in what the tools returned; the engine runs it in the OS sandbox
//! (bubblewrap here and in CI). A check that cannot decide leaves it to the review.

use std::net::TcpListener;

use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, Reply, text, tool_call};

const WATCH: &str = "prompt: Check notes.txt for errors. If there are any, quote them. If there are none, reply NO_REPLY.\n\
                     agent: { tools: [file_read, file_list] }\ndeliver:\n  - file: { path: out.md }\n";

/// A function that returns the ERROR lines, as a model writes it.
const ERRORS: &str =
    "```python\ndef findings(output: str) -> list:\n    return [l for l in output.splitlines() if 'ERROR' in l]\n```";

fn notes(show: &Value) -> Vec<String> {
    show["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "note" && e["detail"].as_str().unwrap_or_default().contains("code check"))
        .map(|e| e["detail"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_next_to_the_problem_is_found_by_the_code_and_reported() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH)
        .write("notes.txt", "09:10 INFO started\n09:12 ERROR payment provider unreachable\n09:13 INFO ok\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        text(ERRORS),
        text("ANSWER: 09:12 ERROR payment provider unreachable"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "succeeded");
    assert_eq!(o.json()["output"], "09:12 ERROR payment provider unreachable");
    assert_eq!(p.read("out.md"), "09:12 ERROR payment provider unreachable\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4);
    // The code request: the task without the token's sentence, the call, the result as the
    // example; no tools, temperature 0.
    let code = crate::common::content(&reqs[2], 1);
    assert!(code.starts_with("Task: Check notes.txt for errors. If there are any, quote them.\n\nWrite a Python function `findings(output: str) -> list`"), "{code}");
    assert!(code.contains("09:12 ERROR payment provider unreachable") && !code.contains("NO_REPLY"), "{code}");
    assert!(reqs[2].get("tools").is_none_or(|t| t.as_array().is_none_or(|a| a.is_empty())));
    assert_eq!(reqs[2]["temperature"], 0.0);
    // The report: the task and the data, with what the check found; the token is not offered.
    let report = crate::common::content(&reqs[3], 1);
    assert!(
        report.contains(
            "(The data above shows only the lines of the results that the task asks about. Quote each of them.)"
        ),
        "{report}"
    );
    assert!(report.contains("09:12 ERROR payment provider unreachable") && !report.contains("NO_REPLY"), "{report}");
    assert!(!report.contains("INFO"), "the report reads only the lines the function found: {report}");
    assert_eq!(notes(&p.show(1).await), ["the code check found something the task asks to report"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_the_code_confirms_stays_silent_without_a_review() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "09:10 INFO started\n09:13 INFO ok\n");
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("NO_REPLY"), text(ERRORS)]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "silent");
    assert!(!p.path().join("out.md").exists());
    assert_eq!(mock.request_count(), 3, "no review after the check decided");
    mock.assert_clean();
    assert_eq!(notes(&p.show(1).await), ["the code check found nothing to report"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_with_only_empty_lists_in_it_found_nothing() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "{\"checked_at\": \"07:00\", \"services\": []}\n");
    // As the 1.5B model wrote it for a health check where every service was up.
    let code = "```python\nimport json\ndef findings(output):\n    data = json.loads(output)\n    return {'checked_at': data['checked_at'], 'down': [s for s in data['services'] if s['state'] != 'up']}\n```";
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("NO_REPLY"), text(code)]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    assert_eq!(o.json()["status"], "silent");
    assert_eq!(mock.request_count(), 3);
    assert_eq!(notes(&p.show(1).await), ["the code check found nothing to report"]);
}

/// Runs the watch routine over `notes` with `code` as the reply to the code request and the
/// review keeping the silence: the run must end `silent` after exactly four requests (look,
/// silence, code, review), nothing delivered. The run's code-check notes.
async fn left_to_the_review(notes_txt: &str, code: &str) -> Vec<String> {
    left_to_the_review_after(notes_txt, &[code]).await
}

/// [`left_to_the_review`] where the code request is answered `codes` in turn: a function that
/// failed is asked for again, once, told why.
async fn left_to_the_review_after(notes_txt: &str, codes: &[&str]) -> Vec<String> {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", notes_txt);
    mock.push_all([tool_call("file_read", json!({"path": "notes.txt"})), text("NO_REPLY")]);
    mock.push_all(codes.iter().map(|c| text(c)));
    mock.push(text("NO_REPLY"));
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "silent", "the review decided: {}", o.stdout);
    assert!(!p.path().join("out.md").exists(), "nothing was reported");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3 + codes.len(), "the review came after the check");
    for (k, req) in reqs[3..2 + codes.len()].iter().enumerate() {
        let again = super::last_text(req);
        assert!(again.starts_with("Your function failed on the output: it exited 1: "), "{k}: {again}");
        assert!(again.ends_with("Write the function again."), "{again}");
    }
    assert!(
        crate::common::content(&reqs[2 + codes.len()], 1).starts_with("Task:\n"),
        "the review decided, not a report"
    );
    mock.assert_clean();
    notes(&p.show(1).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_fails_leaves_the_silence_to_the_review() {
    // int('93%') raises, as the 1.5B model's checks of `df -h` did.
    let code =
        "```python\ndef findings(output):\n    return [l for l in output.splitlines() if int(l.split()[1]) > 90]\n```";
    let notes = left_to_the_review_after("usage 93%\n", &[code, code]).await;
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].starts_with("the code check could not decide: it exited 1: ValueError: invalid literal for int()"),
        "{notes:?}"
    );
}

/// The 1.5B model's check of a certificate table, word for word: it parses every line,
/// the header too (`int('days_left')` raises).
const DAYS: &str = "```python\nimport re\n\ndef findings(output: str) -> list:\n    findings = []\n    lines = output.split('\\n')\n    for line in lines:\n        if line.strip():\n            domain, days_left = line.split()\n            if int(days_left) < 14:\n                findings.append((domain, days_left))\n    return findings\n```";

/// A function that fails only on a table's header runs again without it: the certificate that
/// expires in 6 days is found and reported, where the failure left the silence to a review that
/// kept it (the probe's cert-expiry task, bench/README.md, stop 38).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_fails_only_on_the_header_runs_again_without_it() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH)
        .write("notes.txt", "domain               days_left\nshop.example.com     83\napi.example.com      6\n\n----\nmail.example.com     41\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        text(DAYS),
        text("ANSWER: api.example.com expires in 6 days."),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("out.md"), "api.example.com expires in 6 days.\n");
    let report = crate::common::content(&mock.requests()[3], 1);
    assert!(report.contains("api.example.com      6") && !report.contains("shop.example.com"), "{report}");
    assert_eq!(notes(&p.show(1).await), ["the code check found something the task asks to report"]);
    assert_eq!(
        super::note_details(&p.show(1).await, "code_check_lines_left_out"),
        ["the function failed on the whole output; it ran again without the 2 lines it cannot take on their own"]
    );
    mock.assert_clean();
}

/// A data line the function cannot take is not left out: it could hold what the task asks
/// about, so the failure stands and the review decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_fails_on_a_data_line_leaves_the_silence_to_the_review() {
    let notes =
        left_to_the_review_after("domain days_left\nshop.example.com 83\napi.example.com soon\n", &[DAYS, DAYS]).await;
    assert_eq!(notes.len(), 1);
    assert!(notes[0].starts_with("the code check could not decide: it exited 1: ValueError"), "{notes:?}");
    // Nor a first line that holds a number of its own: a log's first line is data, not a header.
    let notes = left_to_the_review_after(
        "09:12 api.example.com soon\nshop.example.com 83\nmail.example.com 41\n",
        &[DAYS, DAYS],
    )
    .await;
    assert!(notes[0].starts_with("the code check could not decide"), "{notes:?}");
    // Nor the only line there is.
    let code =
        "```python\ndef findings(output):\n    return [l for l in output.splitlines() if int(l.split()[1]) > 90]\n```";
    let notes = left_to_the_review_after("usage 93%\n", &[code, code]).await;
    assert!(notes[0].starts_with("the code check could not decide"), "{notes:?}");
}

/// A function that answers in words of its own found nothing in the data: the silence is
/// left to the review, never turned into a report of nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finding_in_the_functions_own_words_leaves_the_silence_to_the_review() {
    // As the 1.5B model wrote it for a checklist where all was well.
    let code = "```python\ndef findings(output):\n    errors = [l for l in output.splitlines() if 'ERROR' in l]\n    return errors or ['No findings']\n```";
    let notes = left_to_the_review("09:10 INFO started\n09:13 INFO ok\n", code).await;
    assert_eq!(notes, ["the code check could not decide: what it found is not in the results (\"No findings\")"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_without_a_function_leaves_the_silence_to_the_review() {
    let notes = left_to_the_review("all fine\n", "NO_REPLY").await;
    assert_eq!(notes, ["the code check could not decide: the reply held no `findings` function"]);
}

/// The model's function is hostile like any tool argument. It tries to write the workspace, the
/// engine's files and the host's /tmp, to reach a port on this host, and to run past its time;
/// the disk and the listener show none of it happened, and the run goes on to the review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_function_runs_contained() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "09:12 ERROR disk\n");
    let host_tmp = std::env::temp_dir().join(format!("routines-check-escape-{port}"));
    let root = p.path().display().to_string();
    let code = format!(
        "```python\nimport os, socket\ndef findings(output):\n    for path in ['{root}/pwned', '{root}/routines/evil.yaml', '{root}/notes.txt', '{tmp}']:\n        try:\n            open(path, 'w').write('x')\n        except Exception:\n            pass\n    try:\n        socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    except Exception:\n        pass\n    while True:\n        pass\n```",
        tmp = host_tmp.display()
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        text(&code),
        text("NO_REPLY"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    assert_eq!(o.json()["status"], "silent", "the review decided: {}", o.stdout);
    assert!(!p.path().join("pwned").exists());
    assert!(!p.path().join("routines/evil.yaml").exists());
    assert_eq!(p.read("notes.txt"), "09:12 ERROR disk\n");
    assert!(!host_tmp.exists(), "the sandbox's /tmp is its own");
    assert!(listener.accept().is_err(), "no connection reached the host");
    let notes = notes(&p.show(1).await);
    assert!(notes[0].starts_with("the code check could not decide: it was killed"), "{notes:?}");
    assert_eq!(mock.request_count(), 4, "the review came after the check");
}

/// A function that forks without end would fill the host's process table until its timeout
/// (the limits of CPU time and memory are per process): it cannot start a single process. The
/// first fork is refused (without the filter the loop ran until the CPU limit killed it), and
/// the run goes on to the review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_function_cannot_start_processes() {
    let code = "```python\nimport os\ndef findings(output):\n    while True:\n        if os.fork() == 0:\n            print('a child ran')\n            os._exit(0)\n```";
    let notes = left_to_the_review_after("09:12 ERROR disk\n", &[code, code]).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("the code check could not decide: it exited 1: PermissionError: [Errno 13]"),
        "the first fork was refused: {notes:?}"
    );
}

/// A routine that asks about the last line of a three-line disk log, the mock scripted with
/// `before` the replies up to the silence that asks for the rest of the file, then the whole
/// read, the silence, a function that finds the last line above 90%, and the report; its
/// output must be the report. The requests the model got.
async fn disk_check(before: Vec<Reply>) -> Vec<Value> {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/disk.yaml",
        "prompt: Read the last line of disk.log. If the usage is above 90%, tell me the usage. Otherwise reply NO_REPLY.\n\
         agent: { tools: [file_read] }\n",
    )
    // No `%` in the log: the engine's comparison of percentages (`threshold.rs`) has nothing to
    // compare, and the model's function decides.
    .write("disk.log", "07:00 usage 71\n08:00 usage 78\n09:00 usage 93\n");
    let last_line = "```python\ndef findings(output):\n    last = output.split('\\n')[-1]\n    return [last] if int(last.split()[-1].rstrip('%')) > 90 else []\n```";
    mock.push_all(before.into_iter().chain([
        tool_call("file_read", json!({"path": "disk.log", "offset": 1})),
        text("NO_REPLY"),
        text(last_line),
        text("ANSWER: The usage is 93%."),
    ]));
    let o = p.run_async(["run", "disk", "--json"]).await;
    o.success();
    assert_eq!(
        (o.json()["status"].as_str(), o.json()["output"].as_str()),
        (Some("succeeded"), Some("The usage is 93%."))
    );
    mock.requests()
}

/// "All is well" is not known from part of a file: a silent reply after a read of its first line
/// asks once for the rest, and the function then parses the whole file, without the range line
/// the tool adds and without the final newline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_after_part_of_a_file_asks_for_the_rest_first() {
    let reqs =
        disk_check(vec![tool_call("file_read", json!({"path": "disk.log", "limit": 1})), text("NO_REPLY")]).await;
    assert_eq!(reqs.len(), 6);
    assert_eq!(
        crate::common::last_message(&reqs[2])["content"],
        "You read only lines 1-1 of the 3 lines of `disk.log`. Read the lines the task asks about, then answer."
    );
    assert_eq!(reqs[2]["tool_choice"], "required");
    let code = crate::common::content(&reqs[4], 1);
    assert!(code.ends_with("09:00 usage 93\n```"), "the example is what the file holds: {code}");
    let report = crate::common::content(&reqs[5], 1);
    assert!(report.contains("09:00 usage 93") && !report.contains("71"), "{report}");
}

/// The same after the model repeated its read of one line: the silence then came from the
/// answer from the evidence, asked without tools, and the request for the rest offers them
/// again, a call required (it once went without tools, and the model wrote the line it had
/// read, the tool's range line and the token as the output).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_from_the_evidence_after_part_of_a_file_asks_for_the_rest_with_the_tools() {
    let one_line = || tool_call("file_read", json!({"path": "disk.log", "limit": 1}));
    let reqs = disk_check(vec![one_line(), one_line(), text("ANSWER: NO_REPLY")]).await;
    assert_eq!(reqs.len(), 7);
    assert!(crate::common::content(&reqs[2], 1).starts_with("Data:\n"), "the answer from the evidence");
    assert_eq!(
        crate::common::last_message(&reqs[3])["content"],
        "You read only lines 1-1 of the 3 lines of `disk.log`. Read the lines the task asks about, then answer."
    );
    assert_eq!(reqs[3]["tool_choice"], "required");
    assert!(reqs[3]["tools"].as_array().is_some_and(|t| !t.is_empty()), "the tools are offered again");
}

/// A report that is not an answer (a call written as text) is never delivered: the review
/// decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_that_is_a_call_written_as_text_goes_to_the_review() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "09:12 ERROR payment provider unreachable\n");
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        text(ERRORS),
        text(r#"ANSWER: {"name": "file_read", "arguments": {"path": "notes.txt"}}"#),
        text("09:12 ERROR payment provider unreachable"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    o.success();
    assert_eq!(o.json()["output"], "09:12 ERROR payment provider unreachable");
    assert_eq!(mock.request_count(), 5);
    assert!(crate::common::content(&mock.requests()[4], 1).starts_with("Task:\n"), "the review decided");
}

/// What the function returns cannot carry anything into the report: its strings only pick lines
/// of the tool results. A function that returns the engine's config, its environment and the
/// key's variable gets a report asked from the one result line that holds one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_function_cannot_smuggle_what_it_reads_into_the_report() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/watch.yaml", WATCH).write("notes.txt", "09:10 INFO started\n09:12 ERROR disk full\n");
    let root = p.path().display().to_string();
    let code = format!(
        "```python\nimport os\ndef findings(output):\n    out = ['ERROR', repr(dict(os.environ)), os.environ.get('{key}', 'no key')]\n    for path in ['{root}/routines.yaml', '/etc/hostname']:\n        try:\n            out.append(open(path).read())\n        except Exception as e:\n            out.append(str(e))\n    return out\n```",
        key = crate::common::cli::TEST_KEY.0
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "notes.txt"})),
        text("NO_REPLY"),
        text(&code),
        text("ANSWER: 09:12 ERROR disk full"),
    ]);
    let o = p.run_async(["run", "watch", "--json"]).await;
    assert_eq!(o.json()["output"], "09:12 ERROR disk full");
    let report = crate::common::content(&mock.requests()[3], 1);
    assert!(report.contains("09:12 ERROR disk full") && !report.contains("INFO"), "{report}");
    for leak in [crate::common::cli::TEST_KEY.1, "provider:", "PATH", "no key", "mock-model"] {
        assert!(!report.contains(leak), "{leak} reached the report request: {report}");
    }
    let show = serde_json::to_string(&p.show(1).await).unwrap();
    assert!(!show.contains(crate::common::cli::TEST_KEY.1) && !show.contains("provider:"), "{show}");
}

const DISK: &str = "prompt: Look at reports/df.txt. If any filesystem is more than 90% full, name it and its usage. \
                    Otherwise reply NO_REPLY.\nagent: { tools: [file_read] }\ndeliver:\n  - file: { path: out.md }\n";

fn df(backups: &str) -> String {
    format!(
        "Filesystem      Size  Used Avail Use% Mounted on\n/dev/sda1        50G   31G   17G  65% /\n\
         tmpfs           3.9G  1.2M  3.9G   1% /run\n/dev/sdc1       500G  476G   24G  {backups} /backups\n"
    )
}

/// A percentage in the results that crosses the limit the task states ("more than 90%") is the
/// engine's finding: the silence is not believed, no code is asked for, and the report is asked
/// from the line that holds it, without the sentence that says a check found something.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_over_a_percentage_past_the_tasks_limit_is_reported() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/disk.yaml", DISK).write("reports/df.txt", &df("95%"));
    mock.push_all([
        tool_call("file_read", json!({"path": "reports/df.txt"})),
        text("ANSWER: NO_REPLY"),
        text("ANSWER: /backups is 95% full."),
    ]);
    let o = p.run_async(["run", "disk", "--json"]).await;
    assert_eq!(o.json()["status"], "succeeded", "{}", o.stdout);
    assert_eq!(p.read("out.md"), "/backups is 95% full.\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the read, the answer, the report: no code request");
    let report = crate::common::content(&reqs[2], 1);
    assert!(report.contains("/dev/sdc1       500G  476G   24G  95% /backups"), "{report}");
    assert!(!report.contains("/run") && !report.contains("65%") && !report.contains("NO_REPLY"), "{report}");
    assert!(!report.contains("A check of the data"), "{report}");
    assert!(report.contains("that the task asks about. Quote each of them.)"), "{report}");
    let threshold = super::note_details(&p.show(1).await, "threshold_check");
    assert_eq!(
        threshold,
        ["the results hold 95% where the task says \"filesystem is more than 90%\"; the silence is not believed"]
    );
    mock.assert_clean();
}

/// At the limit or under it nothing crosses, which proves nothing: the model's own check runs as
/// before and keeps the silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_with_no_percentage_past_the_limit_goes_to_the_code_check() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/disk.yaml", DISK).write("reports/df.txt", &df("90%"));
    let code = "```python\ndef findings(output: str) -> list:\n    return [l for l in output.splitlines()[1:] if int(l.split()[4].rstrip('%')) > 90]\n```";
    mock.push_all([tool_call("file_read", json!({"path": "reports/df.txt"})), text("ANSWER: NO_REPLY"), text(code)]);
    let o = p.run_async(["run", "disk", "--json"]).await;
    assert_eq!(o.json()["status"], "silent", "{}", o.stdout);
    assert!(!p.path().join("out.md").exists());
    assert_eq!(mock.request_count(), 3, "the read, the answer, the code");
    assert_eq!(notes(&p.show(1).await), ["the code check found nothing to report"]);
    mock.assert_clean();
}

const BACKUPS: &str = "prompt: Look through backup.log and tell me if any backup had failed files. If all backups are clean, reply NO_REPLY.\n\
                       agent: { tools: [file_read] }\ndeliver:\n  - file: { path: out.md }\n";

/// A function that returns the lines with `failed` in them, as the local model wrote it.
const FAILED: &str =
    "```python\ndef findings(output: str) -> list:\n    return [l for l in output.splitlines() if 'failed' in l]\n```";

/// `0 failed` is what a clean backup writes: lines that count none of what the task looks for
/// are not findings, and the silence stands (the local model's `'failed' in line` had turned a
/// right NO_REPLY into "Yes, there were failed files", bench/README.md, stop 40).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_that_count_none_of_what_the_task_looks_for_are_not_findings() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/backups.yaml", BACKUPS).write(
        "backup.log",
        "01:00 backup started: /home\n01:04 backup done: 1204 files, 0 failed\n02:00 backup started: /etc\n02:01 backup done: 312 files, 0 failed\n",
    );
    mock.push_all([tool_call("file_read", json!({"path": "backup.log"})), text("NO_REPLY"), text(FAILED)]);
    let o = p.run_async(["run", "backups", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "silent", "{}", o.stdout);
    assert!(!p.path().join("out.md").exists(), "nothing delivered");
    assert_eq!(mock.request_count(), 3, "no report request");
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "code_check_zero_counts"),
        ["2 of the lines the function found count none of what the task looks for"]
    );
    mock.assert_clean();
}

/// Beside them, a line that counts failures is a finding; the report that quotes none of the
/// lines it was asked from gets them under it, as the tool returned them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_that_quotes_no_line_found_is_delivered_with_the_lines() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write("routines/backups.yaml", BACKUPS).write(
        "backup.log",
        "01:00 backup started: /home\n01:04 backup done: 1204 files, 0 failed\n02:00 backup started: /srv/db\n02:07 backup done: 88 files, 4 failed\n",
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "backup.log"})),
        text("NO_REPLY"),
        text(FAILED),
        text("ANSWER: Yes, there were failed files in the backup log."),
    ]);
    let o = p.run_async(["run", "backups", "--json"]).await;
    o.success();
    let out = "Yes, there were failed files in the backup log.\n\nThe lines this rests on:\n02:07 backup done: 88 files, 4 failed";
    assert_eq!(o.json()["output"], out, "{}", o.stdout);
    assert_eq!(p.read("out.md"), format!("{out}\n"));
    let report = crate::common::content(&mock.requests()[3], 1);
    assert!(report.contains("02:07 backup done: 88 files, 4 failed") && !report.contains("0 failed"), "{report}");
    mock.assert_clean();
}

/// The local model's check compared the swap row in bytes with 500 MB and found something; its
/// report said "The available memory is 4391 MB, which is less than 500 MB" (bench/README.md,
/// stop 43). The engine asks once more with the comparison as it is and the silent token; the
/// silence that comes back stands, and nothing is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_that_rests_on_a_false_comparison_goes_back_and_its_silence_stands() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/mem.yaml",
        "prompt: Check free.txt and warn me if less than 500 MB of memory is available. Otherwise reply NO_REPLY.\n\
         agent: { tools: [file_read] }\ndeliver:\n  - file: { path: out.md }\n",
    )
    .write(
        "free.txt",
        "               total        used        free      shared  buff/cache   available\n\
         Mem:            7821        3012         806         120        4002        4391\n\
         Swap:           2047           0        2047\n",
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "free.txt"})),
        text("NO_REPLY"),
        text(
            "```python\ndef findings(output: str) -> list:\n    lines = output.split('\\n')\n    \
             free_memory = int(lines[2].split()[3])\n    if free_memory < 500 * 1024 * 1024:\n        \
             return ['Less than 500 MB of memory is available.']\n    return []\n```",
        ),
        text("ANSWER: The available memory is 4391 MB, which is less than 500 MB."),
        text("ANSWER: NO_REPLY"),
    ]);
    let o = p.run_async(["run", "mem", "--json"]).await;
    o.success();
    assert_eq!(o.json()["status"], "silent", "{}", o.stdout);
    assert!(!p.path().join("out.md").exists(), "nothing delivered");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 5, "no review after the silence came back");
    let ask = crate::common::content(&reqs[4], reqs[4]["messages"].as_array().unwrap().len() - 1);
    assert_eq!(
        ask,
        "Your answer says \"4391 MB, which is less than 500 MB\", which is false: 4391 is more than 500. Check the \
         data against the task again and answer it; if nothing in the data is what the task asks to report, reply \
         NO_REPLY."
    );
    let show = p.show(1).await;
    let notes: Vec<&str> = show["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "false_comparison")
        .filter_map(|e| e["detail"].as_str())
        .collect();
    assert_eq!(
        notes,
        [
            "the answer said \"4391 MB, which is less than 500 MB\", but 4391 is more than 500; asked again, and the new answer is taken"
        ]
    );
    mock.assert_clean();
}
