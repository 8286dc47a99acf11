//! Helpers shared by the integration tests:
//! - [`Routines`]: a project folder and the `routines` binary run in it ([`cli`]);
//! - [`Harness`]: the agent in-process, on a real store ([`harness`]);
//! - [`mock_llm`]: a scripted OpenAI-compatible model server; [`smtp`]: a real SMTP server;
//! - [`wait`]: waiting on an event with a deadline; [`os`]: processes and ports;
//! - [`browser`]: headless Chromium through chromedriver; [`status_site`]: the status page
//!   serving two weeks of runs recorded by [`status_seed`];
//! - [`postgres`]: a real PostgreSQL server with a fresh database per test.

pub mod browser;
pub mod cli;
pub mod harness;
pub mod mock_llm;
pub mod os;
pub mod postgres;
pub mod smtp;
pub mod status_seed;
pub mod status_site;
pub mod wait;

use std::path::Path;

pub use cli::{Outcome, Routines, Running};
pub use harness::{CHAT_SECTIONS, Harness, provider_options};

/// The `content` of message `i` of request `r`.
pub fn content(req: &serde_json::Value, i: usize) -> String {
    req["messages"][i]["content"].as_str().unwrap_or("").to_string()
}

/// The last message of a request.
pub fn last_message(req: &serde_json::Value) -> serde_json::Value {
    req["messages"].as_array().unwrap().last().unwrap().clone()
}

/// Writes `text` to `dir/rel`, creating the folders on the way.
pub fn write_file(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}
