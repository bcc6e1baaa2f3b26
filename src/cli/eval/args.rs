//! The arguments of `tableq eval` ([`Args`]) and the choice of engine ([`Engine`]).

use crate::cli::args::Limits;
use std::path::PathBuf;

/// Arguments of `tableq eval`.
#[derive(clap::Args)]
pub struct Args {
    /// The `$filter` expression (none or blank: every entity).
    #[arg(long, value_name = "F", allow_hyphen_values = true)]
    pub(super) filter: Option<String>,
    /// The `$select` list: comma-separated property names, or `*`.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub(super) select: Option<String>,
    /// `$top`: print only the first N (1–1000) entities.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub(super) top: Option<String>,
    /// Run many queries against one loaded table: one per line of FILE, either a filter or
    /// a JSON object {"filter","select","top"} (--select/--top are the defaults).
    #[arg(long, value_name = "FILE", conflicts_with = "filter")]
    pub(super) queries: Option<PathBuf>,
    /// How to evaluate: `stream` (one pass, memory follows the result; default for one
    /// query) or `table` (load an indexed table; default with --queries).
    #[arg(long, value_enum, value_name = "ENGINE", default_value_t = Engine::Auto)]
    pub(super) engine: Engine,
    #[command(flatten)]
    pub(super) limits: Limits,
    /// Threads for reading and execution (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) threads: Option<u16>,
    /// Print timing and counters as one JSON object per query, the last lines on stderr.
    #[arg(long)]
    pub(super) stats: bool,
    /// Treat an invalid line or a repeated key in the input as fatal (exit 2).
    #[arg(long)]
    pub(super) strict: bool,
    /// Entities as JSON lines; `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub(super) file: Option<PathBuf>,
}

/// Which engine evaluates the queries.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// `stream` for one query, `table` for `--queries`.
    Auto,
    /// One parallel pass over the input, keeping only the matches.
    Stream,
    /// An indexed in-memory table, loaded once.
    Table,
}
