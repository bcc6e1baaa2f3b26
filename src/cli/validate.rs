//! `tableq validate [FILE|-] [--table NAME]`: checks entities, one JSON object per line in the
//! service's JSON form, against every rule of the data model.
//!
//! * Input is streamed line by line (no full load), from FILE or standard input (`-` or no
//!   argument). Lines may end in LF or CRLF; a UTF-8 byte-order mark at the start is skipped.
//! * Blank (whitespace-only) lines are skipped: they are neither valid nor invalid.
//! * Each other line is decoded and validated as a stored entity (its `Timestamp` is kept and
//!   must be a valid DateTime). Every invalid line is reported on stdout as
//!   `line N: <ErrorCode>: <message>` (N counts from 1, blank lines included), and the run
//!   goes on; a line that is not a JSON object is `InvalidInput`.
//! * `--table NAME` also checks a table name, reported first as `table: <ErrorCode>: <message>`.
//! * A summary goes to stderr. Exit code 0 when everything is valid, 1 when anything is
//!   invalid, 2 when the input cannot be read (missing file, I/O error, bytes that are not
//!   UTF-8 — such input is not JSON lines at all).

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
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

    if let Some(name) = &args.table {
        if let Err(e) = validate::table_name(name) {
            problems += 1;
            if report(&mut out, "table", &e).is_err() {
                return ExitCode::from(2);
            }
        }
    }

    let (label, input): (String, Box<dyn BufRead>) = match &args.file {
        None => ("<stdin>".to_owned(), Box::new(io::stdin().lock())),
        Some(p) if p.as_os_str() == "-" => ("<stdin>".to_owned(), Box::new(io::stdin().lock())),
        Some(p) => match File::open(p) {
            Ok(f) => (p.display().to_string(), Box::new(BufReader::new(f))),
            Err(e) => {
                let _ = out.flush();
                eprintln!("error: cannot read `{}`: {e}", p.display());
                return ExitCode::from(2);
            }
        },
    };

    let mut tally = Tally::default();
    let result = check_lines(input, &mut out, &mut tally);
    let flushed = out.flush();
    match result {
        Err(Stop::OutputClosed) => return ExitCode::from(2),
        Err(Stop::Unreadable(why)) => {
            eprintln!("error: cannot read {label}: {why}");
            return ExitCode::from(2);
        }
        Ok(()) if flushed.is_err() => return ExitCode::from(2),
        Ok(()) => {}
    }
    problems += tally.invalid;
    let table_note = match (&args.table, problems > tally.invalid) {
        (Some(_), true) => "; the table name is invalid",
        (Some(_), false) => "; the table name is valid",
        (None, _) => "",
    };
    eprintln!(
        "{label}: {} {} checked, {} invalid{table_note}",
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

/// Writes one report line; messages are kept on one line.
fn report(out: &mut impl Write, location: &str, e: &ModelError) -> io::Result<()> {
    let message = e.message.replace(['\n', '\r'], " ");
    writeln!(out, "{location}: {}: {message}", e.code)
}

fn check_lines(
    mut input: impl BufRead,
    out: &mut impl Write,
    tally: &mut Tally,
) -> Result<(), Stop> {
    let options = DecodeOptions::STORED;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut number: u64 = 0;
    loop {
        buf.clear();
        let read = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| Stop::Unreadable(format!("line {}: {e}", number + 1)))?;
        if read == 0 {
            return Ok(());
        }
        number += 1;
        let mut bytes = buf.as_slice();
        if number == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let line = std::str::from_utf8(bytes).map_err(|e| {
            Stop::Unreadable(format!(
                "line {number} is not valid UTF-8 (at byte {} of the line)",
                e.valid_up_to() + 1
            ))
        })?;
        if line.trim().is_empty() {
            continue;
        }
        tally.entities += 1;
        if let Err(e) = decode_entity(line, &options) {
            tally.invalid += 1;
            report(out, &format!("line {number}"), &e).map_err(|_| Stop::OutputClosed)?;
        }
    }
}
