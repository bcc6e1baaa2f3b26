//! `tableq validate` (placeholder until its issue lands).
use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> ExitCode {
    eprintln!("error: `validate` is not built yet");
    ExitCode::from(2)
}
