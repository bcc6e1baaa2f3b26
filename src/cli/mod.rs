//! One module per subcommand. Each exposes `Args` (clap) and `run(args) -> ExitCode`.
//! Exit codes: 0 success, 1 "ran, but found problems" (e.g. invalid entities), 2 unusable
//! input (unreadable file, invalid query).

pub mod args;
pub mod debug;
pub mod diagnostic;
pub mod eval;
pub mod explain;
pub mod generate;
pub mod help;
pub mod input;
pub mod validate;
