//! `tableq explain` and `tableq debug plan`: show the plan of a query — the key ranges with
//! their strategy (point lookup / partition scan / range scan / full scan), the residual in
//! canonical OData, the projection and the page limit — as text, or with `--json` as one
//! stable JSON object, printed indented (two spaces, one member per line) as the docs show
//! it; `jq -c` makes it one line (shape documented in `tableq_planner::explain` and
//! `docs/commands.md`).
//!
//! An invalid `--filter`, `--select` or `--top` prints a caret diagnostic on stderr and exits
//! with status 2.

use crate::cli::args::Limits;
use crate::cli::diagnostic::print_parse_error;
use std::io::Write;
use std::process::ExitCode;
use tableq::planner::{Query, QueryText};

/// Arguments of `explain` / `debug plan`.
#[derive(clap::Args)]
pub struct Args {
    /// The `$filter` expression (empty or absent: every entity).
    #[arg(
        long,
        value_name = "F",
        default_value = "",
        hide_default_value = true,
        allow_hyphen_values = true
    )]
    filter: String,
    /// The `$select` list, e.g. `Name,Age` (`*` = all properties).
    #[arg(long)]
    select: Option<String>,
    /// The `$top` page size, 1–1000.
    #[arg(long, allow_hyphen_values = true)]
    top: Option<String>,
    /// Print one JSON object (indented) instead of text.
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
    let text = QueryText {
        filter: Some(&args.filter),
        select: args.select.as_deref(),
        top: args.top.as_deref(),
    };
    let query = match Query::parse(text, &args.limits.filter_options()) {
        Ok(q) => q,
        Err(e) => {
            print_parse_error(e.error(), e.option().name());
            return ExitCode::from(2);
        }
    };
    let explanation = query.explain(&args.limits.planner().verbose(args.verbose));
    let text = if args.json {
        serde_json::to_string_pretty(&explanation.to_json())
            .expect("a JSON value always serialises")
    } else if args.verbose {
        format!("filter:    {}\n{explanation}", query.filter())
    } else {
        explanation.to_string()
    };
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) is not an error worth a panic.
    let _ = writeln!(out, "{text}");
    ExitCode::SUCCESS
}
