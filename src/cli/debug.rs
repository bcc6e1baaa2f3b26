//! `tableq debug tokens|ast` (placeholder until the parser issue lands).
use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args)]
pub struct Args {}

/// `debug tokens`.
pub fn run_tokens(_args: Args) -> ExitCode {
    ExitCode::from(2)
}

/// `debug ast`.
pub fn run_ast(_args: Args) -> ExitCode {
    ExitCode::from(2)
}
