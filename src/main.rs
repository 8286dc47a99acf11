//! The `routines` binary: parse the command line, run, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;
use routines::config::ConfigError;

mod app;
mod chat;
mod cli;
mod commands;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(cli.verbose, cli.quiet);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(app::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            report(&e);
            ExitCode::from(exit_code(&e))
        }
    }
}

/// 2 for bad usage or configuration, 1 for everything else.
fn exit_code(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<ConfigError>().is_some() || e.downcast_ref::<app::UsageError>().is_some() { 2 } else { 1 }
}

/// `error: <what>` on one line, then indented detail, secrets redacted.
fn report(e: &anyhow::Error) {
    let redactor = routines::policy::Redactor::process();
    eprintln!("error: {}", redactor.redact(&e.to_string()));
    match e.downcast_ref::<ConfigError>() {
        Some(ConfigError::Invalid(diags)) => {
            for d in &diags.0 {
                for line in d.to_string().lines() {
                    eprintln!("  {line}");
                }
            }
        }
        Some(ConfigError::NotFound { hint, .. }) => eprintln!("  help: {hint}"),
        _ => {
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {}", redactor.redact(&cause.to_string()));
            }
        }
    }
}

fn init_logging(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ROUTINES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Every log line passes through the process's secrets (filled as the config and routines
    // are read), whatever model or provider text it carries.
    let stderr = routines::policy::secrets::Redacting::new(std::io::stderr, routines::policy::Redactor::process());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(stderr)
        .with_target(false)
        .init();
}
