//! `tableq check --data DIR [--json]`: the offline check of a durable data directory, like
//! `pg_amcheck` (the store's `check_data_dir`): every block of the data file verified
//! (checksum, layout, rows, key), every record of the write-ahead log, and the log compared
//! with how far the data file says it must reach. Nothing is written; a directory a server
//! holds is refused.
//!
//! Output (stdout), text: one line per damaged block and per log problem, then a summary
//! line; warnings (a torn log tail, which a restart discards) on stderr.
//!
//! ```text
//! damaged block: ./tableq-data/tableq.redb: table `orders`, PartitionKey "p1", RowKeys from "r000" to "r255": the block fails its checksum
//! log: ./tableq-data/tableq.wal: the write-ahead log is missing: expected the log of generation 0x…, found no file
//! checked 2 tables, 120 blocks (30000 rows), 0 log records: 1 damaged block, 1 log problem
//! ```
//!
//! With `--json`, one JSON object: `clean`, the counts, `damaged_blocks` (file, table,
//! partition_key, first_row_key, last_row_key, what), `log_problems` (file, what, expected,
//! found) and `warnings`.
//!
//! Exit status: 0 clean, 1 damage or lost writes found, 2 the directory cannot be checked
//! (no data file, another format, in use by a server, needs recovery) or a usage error.

use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tableq_store::{CheckReport, check_data_dir};

/// Arguments of `tableq check`.
#[derive(clap::Args)]
pub struct Args {
    /// The data directory of the durable store (as given to `tableq serve --data`).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    let report = match check_data_dir(&args.data) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: cannot check {}: {e}", args.data.display());
            return ExitCode::from(2);
        }
    };
    let text = if args.json {
        json_report(&report)
    } else {
        text_report(&report)
    };
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    // A closed stdout ends quietly (`pipe.rs`); the exit status still tells.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn text_report(report: &CheckReport) -> String {
    let mut out = String::new();
    for damage in &report.damaged_blocks {
        out.push_str(&format!("damaged block: {damage}\n"));
    }
    for problem in &report.log_problems {
        out.push_str(&format!(
            "log: {}: {}: expected {}, found {}\n",
            problem.file.display(),
            problem.what,
            problem.expected,
            problem.found
        ));
    }
    out.push_str(&format!(
        "checked {}, {} ({} rows), {}: {}, {}\n",
        plural(report.tables as usize, "table", "tables"),
        plural(report.blocks as usize, "block", "blocks"),
        report.rows,
        plural(report.log_records as usize, "log record", "log records"),
        plural(
            report.damaged_blocks.len(),
            "damaged block",
            "damaged blocks"
        ),
        plural(report.log_problems.len(), "log problem", "log problems"),
    ));
    out
}

fn json_report(report: &CheckReport) -> String {
    let damaged: Vec<_> = report
        .damaged_blocks
        .iter()
        .map(|d| {
            json!({
                "file": d.file.display().to_string(),
                "table": d.table,
                "partition_key": d.partition_key,
                "first_row_key": d.first_row_key,
                "last_row_key": d.last_row_key,
                "what": d.what,
            })
        })
        .collect();
    let log: Vec<_> = report
        .log_problems
        .iter()
        .map(|p| {
            json!({
                "file": p.file.display().to_string(),
                "what": p.what,
                "expected": p.expected,
                "found": p.found,
            })
        })
        .collect();
    let value = json!({
        "data": report.dir.display().to_string(),
        "clean": report.is_clean(),
        "tables": report.tables,
        "blocks": report.blocks,
        "rows": report.rows,
        "log_records": report.log_records,
        "damaged_blocks": damaged,
        "log_problems": log,
        "warnings": report.warnings,
    });
    format!("{value}\n")
}
