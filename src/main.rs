//! The `tableq` command-line tool: validate entities, inspect every stage of the query
//! pipeline (`debug tokens|ast|plan`, `explain`), evaluate filters over JSON-lines files
//! (`eval`), generate benchmark data (`gen`) and run the Table service emulator (`serve`).
#![forbid(unsafe_code)]

mod cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Query compiler, executor and tools for the Azure Table service data model.
#[derive(Parser)]
#[command(name = "tableq", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate entities (JSON lines, the service's JSON form) against the data model.
    Validate(cli::validate::Args),
    /// Evaluate a query over entities from a JSON-lines file and print the matches.
    Eval(cli::eval::Args),
    /// Show the plan of a query: key ranges, residual, projection, limit.
    Explain(cli::explain::Args),
    /// Generate deterministic synthetic entities as JSON lines.
    Gen(cli::generate::Args),
    /// Run the Table service emulator (REST protocol, JSON) over HTTP.
    Serve(cli::serve::Args),
    /// Print one stage of the query pipeline.
    #[command(subcommand)]
    Debug(DebugCommand),
}

#[derive(Subcommand)]
enum DebugCommand {
    /// The token stream of a filter.
    Tokens(cli::debug::Args),
    /// The AST of a filter: canonical form and tree.
    Ast(cli::debug::Args),
    /// The plan of a query (same as `explain`).
    Plan(cli::explain::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate(args) => cli::validate::run(args),
        Command::Eval(args) => cli::eval::run(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Gen(args) => cli::generate::run(args),
        Command::Serve(args) => cli::serve::run(args),
        Command::Debug(DebugCommand::Tokens(args)) => cli::debug::run_tokens(args),
        Command::Debug(DebugCommand::Ast(args)) => cli::debug::run_ast(args),
        Command::Debug(DebugCommand::Plan(args)) => cli::explain::run(args),
    }
}
