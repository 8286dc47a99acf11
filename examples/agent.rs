//! Builds an agent by hand and asks it one question, on the same
//! non-streaming `process_message` path routines use.
//!
//!     ROUTINES_BASE_URL=http://127.0.0.1:8088/v1 ROUTINES_MODEL=qwen2.5-coder-1.5b \
//!         cargo run --example agent -- "How many lines has Cargo.toml? Use file_read."
//!
//! The agent gets the read-only file tools, confined to the current folder,
//! and answers without any config file or database.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use routines::agent::{Agent, AgentOptions};
use routines::config::Autonomy;
use routines::llm::{OpenAiProvider, ProviderOptions};
use routines::policy::Policy;
use routines::tools::Registry;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<String, Box<dyn std::error::Error>> {
    let question = std::env::args().nth(1).ok_or("usage: agent QUESTION")?;
    let base_url =
        std::env::var("ROUTINES_BASE_URL").map_err(|_| "set ROUTINES_BASE_URL, e.g. http://127.0.0.1:8088/v1")?;
    let model = std::env::var("ROUTINES_MODEL").map_err(|_| "set ROUTINES_MODEL to the model's name")?;

    let provider = OpenAiProvider::new(ProviderOptions {
        base_url,
        api_key: None,
        api_key_var: None,
        timeout: Duration::from_secs(120),
        retry: Default::default(),
    })?;

    // Read-only autonomy: tools that change anything are not even offered.
    let workspace = std::env::current_dir()?;
    let policy = Policy::new(Autonomy::ReadOnly, &workspace, &[])?;
    let mut tools = Registry::builtin();
    tools.retain(&["file_read".to_string(), "file_list".to_string()]);

    let mut opts = AgentOptions::new(model);
    opts.temperature = Some(0.0);
    opts.max_iterations = 4;

    let mut agent = Agent::new(Arc::new(provider), tools, Arc::new(policy), opts);
    let answer = agent.process_message(&question).await?;
    let turn = agent.last_turn();
    eprintln!(
        "{} iterations, {} prompt and {} completion tokens",
        turn.iterations, turn.prompt_tokens, turn.completion_tokens
    );
    Ok(answer)
}
