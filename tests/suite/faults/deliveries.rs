//! Delivery failures that no retry can fix are recorded as permanent: the daemon leaves them
//! for a person, and `routines deliver --retry` attempts them when asked.

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_delivery_failure_is_marked_so_and_retried_only_by_hand() {
    let mock = MockLlm::start().await;
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines/report.yaml",
        "prompt: Report.\nagent: { tools: [] }\ndeliver:\n  - file: { path: out/report.md, mode: create }\n",
    );
    p.write("out/report.md", "an older report\n");
    mock.push(text("the report"));
    p.run_async(["run", "report"]).await.success().stderr_has("delivery to out/report.md failed");
    let show = p.show(1).await;
    let d = &show["deliveries"][0];
    assert_eq!((d["status"].as_str(), d["permanent"].as_bool()), (Some("failed"), Some(true)), "{show}");
    // A person fixes the cause and asks.
    std::fs::remove_file(p.path().join("out/report.md")).unwrap();
    p.run_async(["deliver", "--retry"]).await.success();
    assert_eq!(p.read("out/report.md"), "the report\n");
    let d = &p.show(1).await["deliveries"][0];
    assert_eq!((d["status"].as_str(), d["permanent"].as_bool()), (Some("delivered"), Some(false)));
}
