//! Command-line definitions (clap) and nothing else.

use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "routines", version, about = "Runs LLM agent routines unattended.", propagate_version = true)]
pub struct Cli {
    /// Engine config file [default: $ROUTINES_CONFIG, ./routines.yaml, $XDG_CONFIG_HOME/routines/routines.yaml]
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// More log output (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,

    /// Only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Interactive session with the agent: streamed replies, tool status
    /// lines, [y/N/a] confirmations. Ctrl-C cancels the current answer;
    /// /exit or Ctrl-D leaves.
    Chat,
}
