//! A comparison of two numbers an answer states falsely (`agent/false_comparison.rs`): asked
//! once more with the comparison as it is. Through `routines run` and a scripted model.

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

/// A routine that asks whether a queue of 1250 is over 1000.
fn queue(mock: &MockLlm) -> Routines {
    let p = Routines::project(&mock.base_url(), "");
    p.write(
        "routines/queue.yaml",
        "prompt: Read queue.json and tell me whether the queue depth is over 1000.\nagent: { tools: [file_read] }\n",
    )
    .write("queue.json", "{\"queue\": \"emails\", \"depth\": 1250, \"consumers\": 3}\n");
    p
}

/// "The queue depth is 1250, which is not over 1000": the answer goes back with "1250 is more
/// than 1000", and the answer that states no false comparison is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_compares_two_numbers_falsely_goes_back_once() {
    let mock = MockLlm::start().await;
    let p = queue(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "queue.json"})),
        text("ANSWER: The queue depth is 1250, which is not over 1000."),
        text("ANSWER: Yes: the queue depth is 1250, which is over 1000."),
    ]);
    let o = p.run_async(["run", "queue", "--json"]).await;
    assert_eq!(o.json()["output"], "Yes: the queue depth is 1250, which is over 1000.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        super::last_text(&reqs[2]),
        "Your answer says \"1250, which is not over 1000\", which is false: 1250 is more than 1000. Check the data \
         against the task again and answer it; if nothing in the data is what the task asks to report, answer as the \
         task says for that case."
    );
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "false_comparison"),
        [
            "the answer said \"1250, which is not over 1000\", but 1250 is more than 1000; asked again, and the new answer is taken"
        ]
    );
    mock.assert_clean();
}

/// A second answer that still compares falsely is not taken: the first stands, noted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_false_comparison_leaves_the_first_answer() {
    let mock = MockLlm::start().await;
    let p = queue(&mock);
    mock.push_all([
        tool_call("file_read", json!({"path": "queue.json"})),
        text("ANSWER: The queue depth is 1250, which is not over 1000."),
        text("ANSWER: The depth, 1250, is below 1000."),
    ]);
    let o = p.run_async(["run", "queue", "--json"]).await;
    assert_eq!(o.json()["output"], "The queue depth is 1250, which is not over 1000.", "{}", o.stdout);
    let show = p.show(1).await;
    assert_eq!(
        super::note_details(&show, "false_comparison"),
        [
            "the answer said \"1250, which is not over 1000\", but 1250 is more than 1000; asked again, and the first answer stands"
        ]
    );
    mock.assert_clean();
}
