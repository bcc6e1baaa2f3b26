//! `tableq validate [FILE|-] [--table NAME]`: checks entities, one JSON object per line in the
//! service's JSON form, against every rule of the data model.
//!
//! * Input is streamed line by line (no full load), from FILE or standard input (`-` or no
//!   argument). Lines may end in LF or CRLF; a UTF-8 byte-order mark at the start is skipped.
//! * Blank (whitespace-only) lines are skipped: they are neither valid nor invalid.
//! * Each other line is judged the way the service judges an insert
//!   ([`DecodeOptions::SERVICE`]: a payload `Timestamp` is ignored, whatever it holds). Every
//!   invalid line is reported on stdout as `line N: <ErrorCode>: <message>` (N counts from 1,
//!   blank lines included) — the first problem of the line only — and the run goes on; a line
//!   that is not a JSON object is `InvalidInput`, a line over 4 MiB `RequestBodyTooLarge`
//!   (skipped unread).
//! * `--table NAME` also checks a table name, reported first as `table: <ErrorCode>: <message>`.
//! * A summary goes to stderr. Exit code 0 when everything is valid, 1 when anything is
//!   invalid, 2 when the input cannot be read (missing file, I/O error, bytes that are not
//!   UTF-8 — such input is not JSON lines at all).

use super::input::{self, JsonLines, Line, Unreadable};
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use tableq::exec::lines::line_too_long;
use tableq_model::json::{DecodeOptions, decode_entity};
use tableq_model::{ModelError, validate};

/// Arguments of `tableq validate`.
#[derive(clap::Args)]
pub struct Args {
    /// Entities as JSON lines (one JSON object per line); `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Also validate this table name.
    #[arg(long, value_name = "NAME")]
    pub table: Option<String>,
}

/// Why a run stopped before the end of its input.
enum Stop {
    /// The input could not be read (exit 2).
    Unreadable(String),
    /// Standard output went away (e.g. a closed pipe): stop quietly.
    OutputClosed,
}

/// Counts of a finished run.
#[derive(Default)]
struct Tally {
    entities: u64,
    invalid: u64,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut problems = 0u64;

    if let Some(name) = &args.table
        && let Err(e) = validate::table_name(name)
    {
        problems += 1;
        if report(&mut out, "table", &e).is_err() {
            return ExitCode::from(super::pipe::CLOSED_PIPE_STATUS as u8);
        }
    }

    let input::Input { label, reader, .. } = match input::open(args.file.as_deref(), "validate") {
        Ok(input) => input,
        Err(why) => {
            let _ = out.flush();
            eprintln!("error: {why}");
            return ExitCode::from(2);
        }
    };

    let mut tally = Tally::default();
    let result = check_lines(reader, &mut out, &mut tally);
    let flushed = out.flush();
    match result {
        // The reader of stdout went away (`| head -1`): end quietly, as on SIGPIPE.
        Err(Stop::OutputClosed) => return ExitCode::from(super::pipe::CLOSED_PIPE_STATUS as u8),
        Err(Stop::Unreadable(why)) => {
            eprintln!("error: cannot read {label}: {why}");
            return ExitCode::from(2);
        }
        Ok(()) if flushed.is_err() => return ExitCode::from(super::pipe::CLOSED_PIPE_STATUS as u8),
        Ok(()) => {}
    }
    problems += tally.invalid;
    let table_note = match (&args.table, problems > tally.invalid) {
        (Some(_), true) => "; the table name is invalid",
        (Some(_), false) => "; the table name is valid",
        (None, _) => "",
    };
    let first_only = if tally.invalid > 0 {
        " (the first problem of each line is shown)"
    } else {
        ""
    };
    eprintln!(
        "{label}: {} {} checked, {} invalid{first_only}{table_note}",
        tally.entities,
        if tally.entities == 1 {
            "entity"
        } else {
            "entities"
        },
        tally.invalid
    );
    if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Writes one report line (`<where>: <Code>: <message>`).
fn report(out: &mut impl Write, location: &str, e: &ModelError) -> io::Result<()> {
    writeln!(out, "{}", input::problem(location, e))
}

fn check_lines(input: impl Read, out: &mut impl Write, tally: &mut Tally) -> Result<(), Stop> {
    // As the service judges an insert: a payload Timestamp is ignored.
    let options = DecodeOptions::SERVICE;
    let mut lines = JsonLines::new(input);
    let mut line = String::new();
    while let Some(next) = lines
        .next_line(&mut line)
        .map_err(|Unreadable(why)| Stop::Unreadable(why))?
    {
        tally.entities += 1;
        let (number, result) = match next {
            Line::Text(n) => (n, decode_entity(&line, &options).map(drop)),
            Line::TooLong(n, bytes) => (n, Err(line_too_long(bytes))),
        };
        if let Err(e) = result {
            tally.invalid += 1;
            report(out, &format!("line {number}"), &e).map_err(|_| Stop::OutputClosed)?;
        }
    }
    Ok(())
}
