//! One module per subcommand. Each exposes `Args` (clap) and `run(args) -> ExitCode`.
//! Shared pieces: [`args`] (the limit flags and `--color`), [`input`] (how JSON-lines input
//! is opened and split), [`diagnostic`] (caret diagnostics for query errors), [`help`] (the
//! long help texts).
//!
//! Exit codes: 0 success, 1 "ran, but found problems" (e.g. invalid entities), 2 unusable
//! input (unreadable file, invalid query) or a usage error.

pub mod args;
pub mod bench_http;
pub mod check;
pub mod debug;
pub mod diagnostic;
pub mod eval;
pub mod explain;
pub mod generate;
pub mod help;
pub mod import;
pub mod input;
pub mod pipe;
pub mod serve;
pub mod serve_faults;
pub mod serve_log;
pub mod serve_ready;
pub mod serve_seed;
pub mod serve_tls;
pub mod token;
pub mod validate;
