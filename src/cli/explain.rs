//! `tableq explain` and `tableq debug plan`: show the plan of a query — the key ranges with
//! their strategy (point lookup / partition scan / range scan / full scan), the residual in
//! canonical OData, the projection and the page limit — as text, or with `--json` as one
//! stable JSON object (shape documented in `tableq_planner::explain` and the README).
//!
//! An invalid `--filter`, `--select` or `--top` prints a caret diagnostic on stderr and exits
//! with status 2.

use crate::cli::diagnostic::print_parse_error;
use std::io::Write;
use std::process::ExitCode;
use tableq::parser::{FilterOptions, parse_filter, parse_select, parse_top};
use tableq::planner::{DEFAULT_MAX_RANGES, Planner};

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
    /// The most comparisons a filter may hold (the service allows 15).
    #[arg(long, value_name = "N")]
    max_comparisons: Option<usize>,
    /// Lift the comparison limit (nesting and length limits stay).
    #[arg(long, conflicts_with = "max_comparisons")]
    no_limits: bool,
    /// The most key ranges a plan may have; beyond it a coarser range is read and the
    /// residual keeps the precision.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_RANGES)]
    max_ranges: usize,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    let mut options = if args.no_limits {
        FilterOptions::unlimited()
    } else {
        FilterOptions::default()
    };
    if let Some(n) = args.max_comparisons {
        options.max_comparisons = Some(n);
    }
    let filter = match parse_filter(&args.filter, &options) {
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
    let explanation = Planner::new()
        .verbose(args.verbose)
        .max_ranges(args.max_ranges)
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
