//! The `routines` binary: parse the command line, run the command, map its
//! error to an exit code.
//!
//! Within the binary, arrows point one way: `main` → `cli`, `commands` and
//! `chat`; `commands` and `chat` → `app`. `app` wires the library together and
//! holds the binary's [`app::Error`]; it knows no command.

use std::process::ExitCode;

use clap::Parser;

use crate::app::Error;
use crate::cli::{Cli, Command};

#[macro_use]
mod app;
mod chat;
mod cli;
mod commands;

fn main() -> ExitCode {
    // A shell asking for completions (see `routines completions`) is answered and exits here.
    clap_complete::CompleteEnv::with_factory(<Cli as clap::CommandFactory>::command)
        .var(commands::completions::COMPLETE_VAR)
        .complete();
    let cli = Cli::parse();
    app::style::choose(match cli.color {
        cli::ColorChoice::Auto => anstream::ColorChoice::Auto,
        cli::ColorChoice::Always => anstream::ColorChoice::Always,
        cli::ColorChoice::Never => anstream::ColorChoice::Never,
    });
    let json_logs = matches!(cli.command, Command::Daemon { log_format: cli::LogFormat::Json });
    let service = matches!(cli.command, Command::Daemon { .. });
    init_logging(cli.verbose, cli.quiet, json_logs, service);
    routines::daemon::use_json_logs(json_logs);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The report may quote provider or tool text: it passes through the process's secrets.
            eprintln!("{}", routines::policy::Redactor::process().redact(&e.report()));
            ExitCode::from(e.exit_code())
        }
    }
}

/// Runs the command; every command but `init` reads the config first.
async fn run(cli: Cli) -> Result<(), Error> {
    let cwd = std::env::current_dir().map_err(Error::CurrentDir)?;
    let config = || app::load_config(cli.config.as_deref(), &cwd);
    match cli.command {
        Command::Init { dir } => commands::init::run(&cwd, dir.as_deref()),
        Command::Completions { shell } => commands::completions::run(shell.name()),
        Command::Validate { json } => commands::validate::run(config(), json),
        Command::List { json } => commands::inspect::list(&config()?, json),
        Command::Next { name, n, json } => commands::inspect::next(&config()?, &name, n, json),
        Command::History { name, limit, status, json } => {
            commands::inspect::history(&config()?, name.as_deref(), limit, status.as_deref(), json)
        }
        Command::Show { run, json } => commands::inspect::show(&config()?, &run, json),
        Command::Run { name, vars, body, headers, no_deliver, dry_run, json } => {
            let given = commands::run::Given { vars, body, headers, no_deliver, dry_run, json };
            commands::run::run(config()?, &name, given).await
        }
        Command::Deliver { retry: _, uncertain, json } => commands::deliver::retry(&config()?, uncertain, json).await,
        Command::Chat => chat::run(config()?).await,
        Command::Cluster { json } => commands::cluster::run(&config()?, json),
        Command::Skills { name, json } => commands::skills::run(&config()?, name.as_deref(), json),
        Command::Eval { suite, json } => commands::eval::run(config()?, &cwd, suite.as_deref(), json).await,
        Command::Pause { name, json } => commands::pause::pause(&config()?, &name, json),
        Command::Resume { name, catch_up, json } => commands::pause::resume(config()?, &name, catch_up, json).await,
        Command::Daemon { .. } => commands::daemon::run(config()?).await,
        Command::Heartbeat { force, greeting, json } => {
            commands::heartbeat::run(config()?, force, greeting, json).await
        }
    }
}

/// `service`: the daemon, which logs like a service (one line per run start and end, per
/// delivery failure and retry, per reload) in either format; other commands only warn.
fn init_logging(verbose: u8, quiet: bool, json: bool, service: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        // Log shippers and `journalctl` want the daemon's events, not only its warnings.
        (false, 0) if service => "info",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ROUTINES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Every log line passes through the process's secrets (filled as the config and routines
    // are read), whatever model or provider text it carries.
    let stderr = routines::policy::secrets::Redacting::new(app::spinner::stderr, routines::policy::Redactor::process());
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_writer(stderr).with_target(false);
    if json {
        fmt.json().with_current_span(false).with_span_list(false).init();
    } else {
        fmt.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init();
    }
}
