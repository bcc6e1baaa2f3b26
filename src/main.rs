//! The `tableq` command-line tool: validate entities, inspect every stage of the query
//! pipeline (`debug tokens|ast|plan`, `explain`), evaluate filters over JSON-lines files
//! (`eval`), generate benchmark data (`gen`), run the Table service emulator (`serve`),
//! bulk-load entities into it (`import`), check its data directory offline (`check`) and
//! measure it over HTTP (`bench-http`).
#![forbid(unsafe_code)]

mod cli;

/// mimalloc instead of the system allocator: the server allocates and frees on every
/// request from two or more threads (and frees on one thread what another allocated), and
/// glibc's malloc spent ≈ 25 % of a single insert's CPU at 8 connections in its arena
/// locks and free-list work (`benches/README.md`, "The Azurite duel").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Query compiler and executor for the Azure Table service data model.
#[derive(Parser)]
#[command(
    name = "tableq",
    version,
    about = "Query compiler and executor for the Azure Table service data model",
    long_about = None,
    after_long_help = cli::help::MAIN
)]
struct Cli {
    /// When to colour diagnostics on stderr.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = cli::args::Color::Auto)]
    color: cli::args::Color,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate entities (JSON lines, the service's JSON form) against the data model.
    #[command(after_long_help = cli::help::VALIDATE)]
    Validate(cli::validate::Args),
    /// Evaluate a query over entities from a JSON-lines file and print the matches.
    #[command(after_long_help = cli::help::EVAL, override_usage = cli::help::EVAL_USAGE)]
    Eval(cli::eval::Args),
    /// Show the plan of a query: key ranges, residual, projection, limit.
    #[command(after_long_help = cli::help::EXPLAIN, override_usage = cli::help::EXPLAIN_USAGE)]
    Explain(cli::explain::Args),
    /// Generate deterministic synthetic entities as JSON lines.
    #[command(after_long_help = cli::help::GEN)]
    Gen(cli::generate::Args),
    /// Run the Table service emulator (the REST protocol over HTTP) for the official SDKs.
    #[command(after_long_help = cli::help::SERVE, override_usage = cli::help::SERVE_USAGE)]
    // Boxed: its flags make it by far the largest variant (clippy::large_enum_variant).
    Serve(Box<cli::serve::Args>),
    /// Print a bearer token of the local issuer (the signing key of `serve --tls`), for
    /// scripts and clients without Entra ID support.
    Token(cli::token::Args),
    /// Check a durable data directory offline: every block's checksum and rows, every log
    /// record, and that the log reaches as far as the data file says.
    #[command(after_long_help = cli::help::CHECK)]
    Check(cli::check::Args),
    /// Bulk-load entities (JSON lines) into a table: into a data directory or through a
    /// running server.
    #[command(after_long_help = cli::help::IMPORT)]
    Import(cli::import::Args),
    /// HTTP load benchmark of the emulator (loads a data set, then measures latency and
    /// throughput of key queries, scans and inserts).
    #[command(after_long_help = cli::help::BENCH_HTTP)]
    BenchHttp(cli::bench_http::Args),
    /// Print one stage of the query pipeline.
    #[command(subcommand)]
    Debug(DebugCommand),
}

#[derive(Subcommand)]
enum DebugCommand {
    /// The token stream of a filter.
    #[command(after_long_help = cli::help::DEBUG)]
    Tokens(cli::debug::Args),
    /// The AST of a filter: canonical form and tree.
    #[command(after_long_help = cli::help::DEBUG)]
    Ast(cli::debug::Args),
    /// The plan of a query (same as `explain`).
    #[command(
        after_long_help = cli::help::EXPLAIN,
        override_usage = cli::help::DEBUG_PLAN_USAGE
    )]
    Plan(cli::explain::Args),
}

fn main() -> ExitCode {
    // `tableq … | head -1`: a closed stdout or stderr ends any command quietly (exit 141).
    cli::pipe::end_quietly_on_closed_pipes();
    let cli = Cli::parse();
    cli.color.apply();
    match cli.command {
        Command::Validate(args) => cli::validate::run(args),
        Command::Eval(args) => cli::eval::run(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Gen(args) => cli::generate::run(args),
        Command::Serve(args) => cli::serve::run(*args),
        Command::Token(args) => cli::token::run(args),
        Command::Import(args) => cli::import::run(args),
        Command::Check(args) => cli::check::run(args),
        Command::BenchHttp(args) => cli::bench_http::run(args),
        Command::Debug(DebugCommand::Tokens(args)) => cli::debug::run_tokens(args),
        Command::Debug(DebugCommand::Ast(args)) => cli::debug::run_ast(args),
        Command::Debug(DebugCommand::Plan(args)) => cli::explain::run(args),
    }
}
