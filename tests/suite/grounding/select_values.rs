//! The selection of `agent/select` over numbers and over what `http_request` returned: a
//! `value` that gives a number to a record the task's condition leaves out is asked for again,
//! and the JSON body of a response is records like a file's. Through `routines run`, a scripted
//! model and a real sandbox (bubblewrap here and in CI).

use serde_json::json;

use crate::common::Routines;
use crate::common::mock_llm::{MockLlm, text, tool_call};

const ORDERS: &str = "[\n  {\"id\": 101, \"status\": \"shipped\", \"amount\": 40.00},\n  {\"id\": 102, \"status\": \"pending\", \"amount\": 15.50},\n  {\"id\": 103, \"status\": \"shipped\", \"amount\": 22.25},\n  {\"id\": 104, \"status\": \"cancelled\", \"amount\": 99.00},\n  {\"id\": 105, \"status\": \"shipped\", \"amount\": 10.00}\n]\n";

/// A project whose routine `shipped` asks for the total of the shipped orders in `orders.json`.
async fn shipped() -> (MockLlm, Routines) {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/shipped.yaml",
        "prompt: What is the total amount of the shipped orders in orders.json?\nagent: { tools: [file_read] }\n",
    )
    .write("orders.json", ORDERS);
    (mock, p)
}

/// "The total amount of the shipped orders": the local model's `value` returned every order's
/// amount, and the engine's sum of all five (186.75) was delivered (bench/README.md, stop 41).
/// Told which record it counted, the model's second function tests the status, and the sum
/// the answer request states is the shipped orders' alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_that_counts_records_the_task_leaves_out_is_asked_for_again() {
    let (mock, p) = shipped().await;
    mock.push_all([
        tool_call("file_read", json!({"path": "orders.json"})),
        text("```python\ndef value(item: dict) -> float:\n    return item['amount']\n```"),
        text("```python\ndef value(item):\n    return item['amount'] if item['status'] == 'shipped' else 0\n```"),
        text("ANSWER: 72.25"),
    ]);
    let o = p.run_async(["run", "shipped", "--json"]).await;
    assert_eq!(o.json()["output"], "72.25", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "the read, the code, the code again, the answer: {}", o.stdout);
    assert_eq!(
        super::last_text(&reqs[2]),
        "Your function gives a number to an item whose `status` is `pending`, and the task asks about `shipped`. Write `value` again so that it tests `status` too and returns 0 for the other items."
    );
    let answer = crate::common::content(&reqs[3], 1);
    assert!(answer.contains("what the task adds up comes to 72.25.)"), "{answer}");
    assert!(!answer.contains("186.75"), "{answer}");
    mock.assert_clean();
}

/// A second `value` that still counts the other records leaves the records as they came: no
/// sum is stated, rather than a wrong one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_that_counts_them_twice_states_no_sum() {
    let (mock, p) = shipped().await;
    let all = "```python\ndef value(item: dict) -> float:\n    return item['amount']\n```";
    mock.push_all([
        tool_call("file_read", json!({"path": "orders.json"})),
        text(all),
        text(all),
        text("ANSWER: 72.25"),
    ]);
    let o = p.run_async(["run", "shipped", "--json"]).await;
    assert_eq!(o.json()["output"], "72.25", "{}", o.stdout);
    let answer = crate::common::content(&mock.requests()[3], 1);
    assert!(!answer.contains("adds up comes to"), "{answer}");
    let notes = super::note_details(&p.show(1).await, "records_selection");
    assert!(notes.iter().any(|n| n.ends_with("twice; shown as they came")), "{notes:?}");
    mock.assert_clean();
}

const STOCK: &str = "[\n  {\"product\": \"Blue mug\", \"in_stock\": 14},\n  {\"product\": \"Red kettle\", \"in_stock\": 0},\n  {\"product\": \"Green teapot\", \"in_stock\": 3},\n  {\"product\": \"Steel spoon set\", \"in_stock\": 0}\n]\n";

const STOCK_PAGE: &str = "<html><body><h1>Stock</h1><table>\n<tr><th>Product</th><th>In stock</th></tr>\n<tr><td>Blue mug</td><td>14</td></tr>\n<tr><td>Red kettle</td><td>0</td></tr>\n<tr><td>Green teapot</td><td>3</td></tr>\n<tr><td>Steel spoon set</td><td>0</td></tr>\n</table><p>Prices without VAT.</p></body></html>";

const STATUS: &str = r#"{"components":[{"name":"API","status":"degraded_performance"},{"name":"Website","status":"operational"},{"name":"Sync","status":"operational"}],"incidents":[{"name":"Slow API responses in eu-west"}]}"#;

/// The stock as a JSON list and as an HTML table, and a status page, on the loopback, listed in `allowed_hosts`.
async fn stock_site() -> std::net::SocketAddr {
    use axum::http::header::CONTENT_TYPE;
    use axum::routing::get;
    let app = axum::Router::new()
        .route("/stock.json", get(|| async { ([(CONTENT_TYPE, "application/json")], STOCK) }))
        .route("/stock.html", get(|| async { ([(CONTENT_TYPE, "text/html")], STOCK_PAGE) }))
        .route("/status.json", get(|| async { ([(CONTENT_TYPE, "application/json")], STATUS) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Runs "which products are out of stock" over the stock site's `path` with `keep` as the
/// model's function and the answer naming the two: the code request and the answer request.
async fn out_of_stock(path: &str, keep: &str) -> (String, String) {
    let addr = stock_site().await;
    let url = format!("http://{addr}{path}");
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "security:\n  allowed_hosts: [127.0.0.1]\n");
    p.write(
        "routines/stock.yaml",
        &format!("prompt: Which products are out of stock according to {url}?\nagent: {{ tools: [http_request] }}\n"),
    );
    mock.push_all([
        tool_call("http_request", json!({"url": url, "method": "GET"})),
        text(&format!("```python\ndef keep(item):\n    return {keep}\n```")),
        text("ANSWER: Red kettle and Steel spoon set."),
    ]);
    let o = p.run_async(["run", "stock", "--json"]).await;
    assert_eq!(o.json()["output"], "Red kettle and Steel spoon set.", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "the call, the code, the answer: {}", o.stdout);
    mock.assert_clean();
    let answer = crate::common::content(&reqs[2], 1);
    assert!(answer.contains("Red kettle") && answer.contains("Steel spoon set"), "{answer}");
    assert!(!answer.contains("Blue mug") && !answer.contains("Green teapot"), "{answer}");
    (crate::common::content(&reqs[1], 1), answer)
}

/// The body of a response is records as a file's content is: its status line had made the
/// JSON list read as lines of text, which "which" does not select from (the local model named
/// products in stock, bench/README.md, stop 39). The answer request shows the kept items only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_body_of_a_response_is_selected_from_like_a_file() {
    let (code, answer) = out_of_stock("/stock.json", "item['in_stock'] == 0").await;
    assert!(code.contains("{\"in_stock\":14,\"product\":\"Blue mug\"}"), "the items as records: {code}");
    assert!(answer.contains("(The data above shows only the 2 items of"), "{answer}");
}

/// The rows of a page's table are records with the header's names: the local model's `keep`
/// over the page's lines (`Red kettle 0`) tested for `out_of_stock` twice, and the answer named
/// one product of two (bench/README.md, stop 41). The answer request shows the kept rows under
/// the header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rows_of_a_table_on_a_page_are_selected_from_by_their_columns() {
    let (code, answer) = out_of_stock("/stock.html", "item['In stock'] == 0").await;
    assert!(code.contains("The rows of `") && code.contains("{\"In stock\":14,\"Product\":\"Blue mug\"}"), "{code}");
    assert!(answer.contains("Product | In stock\nRed kettle | 0\nSteel spoon set | 0"), "{answer}");
}

/// "Which components are not operational": the local model's `keep` was `item['status'] !=
/// 'degraded_performance'`, which keeps the operational ones, and the answer named them
/// (bench/README.md, stop 41). A kept record whose value the task negates sends `keep` back
/// once; the answer request then shows the degraded component, and the incident beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_that_keeps_what_the_task_negates_is_asked_again() {
    let addr = stock_site().await;
    let url = format!("http://{addr}/status.json");
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "security:\n  allowed_hosts: [127.0.0.1]\n");
    p.write(
        "routines/status.yaml",
        &format!(
            "prompt: Check {url} and tell me which components are not operational, and why if it says.\nagent: {{ tools: [http_request] }}\n"
        ),
    );
    mock.push_all([
        tool_call("http_request", json!({"url": url, "method": "GET"})),
        text("```python\ndef keep(item):\n    return item['status'] != 'degraded_performance'\n```"),
        text("```python\ndef keep(item):\n    return item['status'] != 'operational'\n```"),
        text("ANSWER: API: degraded performance (slow API responses in eu-west)."),
    ]);
    let o = p.run_async(["run", "status", "--json"]).await;
    assert_eq!(o.json()["output"], "API: degraded performance (slow API responses in eu-west).", "{}", o.stdout);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "the call, the code, the code again, the answer");
    assert_eq!(
        super::last_text(&reqs[2]),
        "Your function keeps an item whose `status` is `operational`, and the task asks about the items whose `status` is not `operational`. Write `keep` again."
    );
    let answer = crate::common::content(&reqs[3], 1);
    assert!(answer.contains("degraded_performance") && answer.contains("Slow API responses"), "{answer}");
    assert!(!answer.contains("Website") && !answer.contains("Sync"), "{answer}");
    mock.assert_clean();
}

/// "How many different users logged in successfully": the local model's `key` returned `ok` and
/// `failed`, the word after `login` (bench/README.md, stop 46). A key of statuses where the task
/// counts users is asked for again, naming both; the second key's users are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_of_statuses_where_the_task_counts_users_is_asked_for_again() {
    let mock = MockLlm::start().await;
    let p = super::assisted(&mock.base_url(), "");
    p.write(
        "routines/users.yaml",
        "prompt: How many different users logged in successfully according to auth.log?\nagent: { tools: [file_read] }\n",
    )
    .write(
        "auth.log",
        "08:01 login ok user=alice\n08:03 login ok user=bob\n08:10 login failed user=carol\n08:12 login ok user=alice\n08:30 login ok user=dave\n09:02 login ok user=bob\n",
    );
    mock.push_all([
        tool_call("file_read", json!({"path": "auth.log"})),
        text("```python\ndef key(line: str) -> str:\n    return line.split(' ')[2]\n```"),
        text(
            "```python\ndef key(line: str) -> str:\n    return line.split('user=')[1] if 'login ok' in line else None\n```",
        ),
        text("ANSWER: 3"),
    ]);
    let o = p.run_async(["run", "users", "--json"]).await;
    assert_eq!(o.json()["output"], "3", "{}", o.stdout);
    let reqs = mock.requests();
    let ask = crate::common::last_message(&reqs[2])["content"].as_str().unwrap().to_string();
    assert!(ask.starts_with("Your function returned `ok` and `failed`: how a line went"), "{ask}");
    assert!(ask.contains("the task counts the different users"), "{ask}");
    let answer = crate::common::content(&reqs[3], 1);
    assert!(answer.contains("holds 3 different values of what the task counts: alice, bob, dave."), "{answer}");
    mock.assert_clean();
}
