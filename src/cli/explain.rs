//! `tableq explain` and `tableq debug plan`: show the plan of a query — the key ranges with
//! their strategy (point lookup / partition scan / range scan / full scan), the residual in
//! canonical OData, the projection and the page limit — as text, or with `--json` as one
//! stable JSON object (shape documented in `tableq_planner::explain` and the README).
//!
//! An invalid `--filter`, `--select` or `--top` prints a caret diagnostic on stderr and exits
//! with status 2.

use crate::cli::args::Limits;
use crate::cli::diagnostic::print_parse_error;
use std::io::Write;
use std::process::ExitCode;
use tableq::parser::{parse_filter, parse_select, parse_top};

/// Arguments of `explain` / `debug plan`.
#[derive(clap::Args)]
pub struct Args {
    /// The `$filter` expression (empty or absent: every entity).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    filter: String,
    /// The `$select` list, e.g. `Name,Age` (`*` = all properties).
    #[arg(long)]
    select: Option<String>,
    /// The `$top` page size, 1–1000.
    #[arg(long, allow_hyphen_values = true)]
    top: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Also show the lowered predicate and every rewrite-rule step.
    #[arg(long, short)]
    verbose: bool,
    #[command(flatten)]
    limits: Limits,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    let filter = match parse_filter(&args.filter, &args.limits.filter_options()) {
        Ok(f) => f,
        Err(e) => {
            print_parse_error(&e, "$filter");
            return ExitCode::from(2);
        }
    };
    let select = match args.select.as_deref().map(parse_select).transpose() {
        Ok(s) => s,
        Err(e) => {
            print_parse_error(&e, "$select");
            return ExitCode::from(2);
        }
    };
    let top = match args.top.as_deref().map(parse_top).transpose() {
        Ok(t) => t,
        Err(e) => {
            print_parse_error(&e, "$top");
            return ExitCode::from(2);
        }
    };
    let explanation =
        args.limits
            .planner()
            .verbose(args.verbose)
            .explain(&filter, select.as_ref(), top.as_ref());
    let text = if args.json {
        explanation.to_json().to_string()
    } else if args.verbose {
        format!("filter:    {filter}\n{explanation}")
    } else {
        explanation.to_string()
    };
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) is not an error worth a panic.
    let _ = writeln!(out, "{text}");
    ExitCode::SUCCESS
}
