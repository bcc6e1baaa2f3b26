//! `tableq eval`: the standalone filter evaluator (spec: query.md, "The standalone
//! evaluator").
//!
//! ```text
//! tableq eval [--filter F] [--select S] [--top N] [--max-comparisons N] [--no-limits]
//!             [--threads N] [--stats] [--strict] [FILE|-]
//! ```
//!
//! 1. The query is parsed first (so a bad query fails fast, before a large file is read):
//!    an invalid `--filter`, `--select` or `--top` prints a caret diagnostic on stderr and
//!    exits 2. No `--filter` (or a blank one) means every entity. The comparison limit is
//!    the service's 15; `--max-comparisons N` sets it and wins over `--no-limits`, which
//!    lifts it (the nesting and length limits always apply).
//! 2. Entities are read as JSON lines from FILE or standard input (`-` or no FILE), exactly
//!    as `tableq validate` reads them: LF or CRLF, a leading UTF-8 BOM skipped, blank lines
//!    skipped, each line decoded and validated as a *stored* entity (its Timestamp is kept;
//!    a line without one has none). Lines are decoded in parallel batches and streamed into
//!    a compact [`MemorySource`]; the file is never held in memory.
//!    * An invalid line is reported on stderr as `warning: line N: <Code>: <message>` and
//!      skipped; with `--strict` the first invalid line is fatal
//!      (`error: line N: <Code>: <message>`, exit 2, nothing printed on stdout).
//!    * Two lines with the same (PartitionKey, RowKey): the later line wins, as an upsert
//!      would (a table holds one entity per key); a warning gives the count, and `--strict`
//!      makes it fatal (exit 2).
//!    * An unreadable file or bytes that are not UTF-8: `error: …`, exit 2.
//! 3. The query runs through the planner and the parallel executor. Matches are printed on
//!    stdout as JSON lines in ascending (PartitionKey, RowKey) order, in the no-metadata form
//!    plus `Name@odata.type` annotations where JSON cannot show the type (Int64, DateTime,
//!    Guid, Binary, non-finite Double, and the Timestamp). Without `--top` every match is
//!    printed: the executor makes one pass with no page limit and hands rows over in key
//!    order as it goes, so memory stays bounded; with `--top N` only the first page (at
//!    most N entities). With `--select`, each line holds exactly the
//!    selected properties in selection order, `"Name": null` for one the entity lacks.
//! 4. `--stats`: the last line on stderr is one JSON object
//!    `{"loaded":N,"ranges":N,"examined":N,"matched":N,"load_ms":F,"parse_us":F,"plan_us":F,"exec_us":F}`
//!    — entities in the source, key ranges of the plan, entities read from the source (each
//!    at most once; with `--top` the executor may read somewhat past the last printed row,
//!    since it scans ahead in parallel), entities printed, and the time spent loading,
//!    parsing the query, planning and executing (execution only: the time spent encoding
//!    and writing rows is measured and excluded).
//!
//! Exit codes: 0 success (also when lines were skipped with a warning), 2 invalid query,
//! unreadable input, or (with `--strict`) invalid input.

use super::input::{self, JsonLines, Unreadable};
use std::io::{self, BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tableq::exec::{Executor, MemorySource, PageOptions, ResultRow};
use tableq::model::json::{
    DecodeOptions, EncodeOptions, EncodedEntity, MetadataLevel, decode_entity,
    encode_entity_ordered,
};
use tableq::model::{Entity, ModelError};
use tableq::parser::{FilterOptions, ParseError, parse_filter, parse_select, parse_top};
use tableq::planner::Plan;

/// Arguments of `tableq eval`.
#[derive(clap::Args)]
pub struct Args {
    /// The `$filter` expression (none or blank: every entity).
    #[arg(long, value_name = "F", allow_hyphen_values = true)]
    filter: Option<String>,
    /// The `$select` list: comma-separated property names, or `*`.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    select: Option<String>,
    /// `$top`: print only the first page, at most N (1–1000) entities.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    top: Option<String>,
    /// Comparison limit (default: the service's 15); wins over --no-limits.
    #[arg(long, value_name = "N")]
    max_comparisons: Option<usize>,
    /// Lift the comparison limit (nesting and length limits stay).
    #[arg(long)]
    no_limits: bool,
    /// Threads for loading and execution (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Print timing and counters as one JSON object, the last line on stderr.
    #[arg(long)]
    stats: bool,
    /// Treat an invalid line or a repeated key in the input as fatal (exit 2).
    #[arg(long)]
    strict: bool,
    /// Entities as JSON lines; `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

/// Runs `tableq eval`.
pub fn run(args: Args) -> ExitCode {
    match eval(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Reported) => ExitCode::from(2),
        Err(Failure::Message(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
    }
}

/// Why a run failed (exit 2).
enum Failure {
    /// Already reported on stderr.
    Reported,
    /// To report as `error: …`.
    Message(String),
}

fn eval(args: &Args) -> Result<(), Failure> {
    // 1. The query.
    let started = Instant::now();
    let plan = parse_and_plan(args)?;
    let (plan, parse_time, plan_time) = (plan.0, plan.1, started.elapsed() - plan.1);

    // 2. The entities.
    let threads = match args.threads {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let load_start = Instant::now();
    let input::Input { label, reader } =
        input::open(args.file.as_deref()).map_err(Failure::Message)?;
    // A producer thread reads and decodes batches of lines (on `threads` workers) while
    // this thread builds the table from the previous batch.
    let (source, loader) = std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::sync_channel(2);
        scope.spawn(move || produce(JsonLines::new(reader), threads, sender));
        let mut loader = Loader::new(receiver, args.strict);
        let source = MemorySource::from_entities(loader.by_ref());
        // Dropping the receiver stops the producer if loading stopped early.
        loader.receiver = None;
        (source, loader)
    });
    if let Some(stop) = loader.stop {
        return Err(match stop {
            Stop::Unreadable(why) => Failure::Message(format!("cannot read {label}: {why}")),
            Stop::Invalid(line, e) => {
                report_line("error", line, &e);
                Failure::Reported
            }
        });
    }
    let source = source.map_err(|e| Failure::Message(format!("cannot load {label}: {e}")))?;
    let loaded = source.len() as u64;
    if loader.skipped > 0 {
        eprintln!(
            "warning: {label}: skipped {} invalid {}",
            loader.skipped,
            plural(loader.skipped, "line", "lines")
        );
    }
    let repeated = loader.decoded - loaded;
    if repeated > 0 {
        let what = format!(
            "{label}: {repeated} {} the keys of an earlier line",
            plural(repeated, "line repeats", "lines repeat")
        );
        if args.strict {
            return Err(Failure::Message(what));
        }
        eprintln!("warning: {what}; the later line wins");
    }
    let load_time = load_start.elapsed();

    // 3. Execution and output.
    let snapshot = source.snapshot();
    let executor = Executor::new(&snapshot)
        .with_threads(threads)
        .map_err(|e| Failure::Message(e.to_string()))?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    // One pass over the plan: with `$top` the first page (at most `$top` rows), without it
    // a single unbounded page, so no entity is read twice and `examined` counts each entity
    // read once. Rows are encoded and written as the executor hands them over (in key
    // order), so memory stays bounded whatever the result size; the time spent there is
    // measured and taken out of `exec_us`.
    let options = if plan.top.is_some() {
        PageOptions::default()
    } else {
        PageOptions::unbounded()
    };
    let mut output_time = Duration::ZERO;
    let mut write_failure: Option<io::Error> = None;
    let mut matched = 0u64;
    let mut line = String::new();
    let started = Instant::now();
    let (_, stats) = executor
        .execute_page_with(&plan, None, &options, |row| {
            let t = Instant::now();
            if write_failure.is_none() {
                line.clear();
                write_row(&mut line, &row.to_result_row());
                line.push('\n');
                match out.write_all(line.as_bytes()) {
                    Ok(()) => matched += 1,
                    Err(e) => write_failure = Some(e),
                }
            }
            output_time += t.elapsed();
        })
        .map_err(|e| Failure::Message(e.to_string()))?;
    let exec_time = started.elapsed().saturating_sub(output_time);
    let examined = stats.examined;
    if let Some(e) = write_failure {
        return output_error(e);
    }
    if let Err(e) = out.flush() {
        return output_error(e);
    }

    if args.stats {
        eprintln!(
            "{{\"loaded\":{loaded},\"ranges\":{},\"examined\":{examined},\"matched\":{matched},\
             \"load_ms\":{:.3},\"parse_us\":{:.3},\"plan_us\":{:.3},\"exec_us\":{:.3}}}",
            plan.ranges.len(),
            load_time.as_secs_f64() * 1e3,
            parse_time.as_secs_f64() * 1e6,
            plan_time.as_secs_f64() * 1e6,
            exec_time.as_secs_f64() * 1e6,
        );
    }
    Ok(())
}

/// A closed stdout (`tableq eval … | head`) ends the run quietly; other errors are fatal.
fn output_error(e: io::Error) -> Result<(), Failure> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(Failure::Message(format!("cannot write to stdout: {e}")))
    }
}

/// Parses `--filter`, `--select`, `--top` and plans them; returns the plan and the parse time.
fn parse_and_plan(args: &Args) -> Result<(Plan, Duration), Failure> {
    let started = Instant::now();
    let options = FilterOptions {
        max_comparisons: match (args.max_comparisons, args.no_limits) {
            (Some(n), _) => Some(n),
            (None, true) => None,
            (None, false) => FilterOptions::default().max_comparisons,
        },
        ..FilterOptions::default()
    };
    let filter = parse_filter(args.filter.as_deref().unwrap_or(""), &options)
        .map_err(|e| diagnostic("$filter", &e))?;
    let select = args
        .select
        .as_deref()
        .map(parse_select)
        .transpose()
        .map_err(|e| diagnostic("$select", &e))?;
    let top = args
        .top
        .as_deref()
        .map(parse_top)
        .transpose()
        .map_err(|e| diagnostic("$top", &e))?;
    let parse_time = started.elapsed();
    let plan = tableq::planner::plan(&filter, select.as_ref(), top.as_ref());
    Ok((plan, parse_time))
}

/// Reports an invalid query option on stderr (`source_name` labels the input).
fn diagnostic(option: &str, e: &ParseError) -> Failure {
    super::diagnostic::print_parse_error(e, option);
    Failure::Reported
}

/// Appends one result row as compact JSON.
fn write_row(out: &mut String, row: &ResultRow) {
    let options = EncodeOptions::level(MetadataLevel::MinimalMetadata);
    let encoded = encode_entity_ordered(&row.entity, &options);
    let text = match &row.select {
        None => encoded.to_json_string(),
        Some(names) => {
            let mut projected = EncodedEntity::default();
            for name in names.iter() {
                let annotation = format!("{name}@odata.type");
                let mut value = serde_json::Value::Null;
                for (key, v) in encoded.members() {
                    if *key == annotation {
                        projected.push(annotation.clone(), v.clone());
                    } else if key == name {
                        value = v.clone();
                    }
                }
                projected.push(name.clone(), value);
            }
            projected.to_json_string()
        }
    };
    out.push_str(&text);
}

fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// Prints `<level>: line N: <Code>: <message>` on stderr (the `validate` format).
fn report_line(level: &str, line: u64, e: &ModelError) {
    eprintln!("{level}: {}", input::problem(&format!("line {line}"), e));
}

/// Why loading stopped early.
enum Stop {
    /// Read error or non-UTF-8 bytes.
    Unreadable(String),
    /// `--strict` and an invalid line.
    Invalid(u64, ModelError),
}

/// Lines decoded per parallel batch.
const BATCH_LINES: usize = 16 * 1024;

/// One decoded line: the entity, or the line number and why it is invalid.
type Decoded = Result<Entity, (u64, ModelError)>;

/// Reads the next batch of non-blank lines with their numbers (empty at the end).
fn read_batch<R: BufRead>(lines: &mut JsonLines<R>) -> Result<Vec<(u64, String)>, Stop> {
    let mut batch = Vec::with_capacity(BATCH_LINES);
    let mut text = String::new();
    while batch.len() < BATCH_LINES {
        match lines.next_line(&mut text) {
            Ok(Some(number)) => batch.push((number, std::mem::take(&mut text))),
            Ok(None) => break,
            Err(Unreadable(why)) => return Err(Stop::Unreadable(why)),
        }
    }
    Ok(batch)
}

/// Decodes a batch on up to `threads` threads, keeping line order.
fn decode_batch(lines: &[(u64, String)], threads: usize) -> Vec<Decoded> {
    let decode_one = |(n, text): &(u64, String)| {
        decode_entity(text, &DecodeOptions::STORED).map_err(|e| (*n, e))
    };
    if threads <= 1 || lines.len() < 256 {
        return lines.iter().map(decode_one).collect();
    }
    let per = lines.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = lines
            .chunks(per)
            .map(|chunk| scope.spawn(move || chunk.iter().map(decode_one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// The producer: reads and decodes batches until the input ends, an error stops it, or the
/// consumer goes away.
fn produce<R: BufRead>(
    mut lines: JsonLines<R>,
    threads: usize,
    sender: mpsc::SyncSender<Result<Vec<Decoded>, Stop>>,
) {
    loop {
        let batch = read_batch(&mut lines).map(|batch| decode_batch(&batch, threads));
        let last = match &batch {
            Ok(decoded) => decoded.is_empty(),
            Err(_) => true,
        };
        if sender.send(batch).is_err() || last {
            return;
        }
    }
}

/// The consumer side: yields the decoded entities in input order, reporting invalid lines
/// (or, when strict, stopping at the first with [`Stop::Invalid`]).
struct Loader {
    receiver: Option<mpsc::Receiver<Result<Vec<Decoded>, Stop>>>,
    strict: bool,
    batch: std::vec::IntoIter<Decoded>,
    /// Entities decoded (before repeated keys collapse).
    decoded: u64,
    /// Invalid lines skipped.
    skipped: u64,
    stop: Option<Stop>,
}

impl Loader {
    fn new(receiver: mpsc::Receiver<Result<Vec<Decoded>, Stop>>, strict: bool) -> Loader {
        Loader {
            receiver: Some(receiver),
            strict,
            batch: Vec::new().into_iter(),
            decoded: 0,
            skipped: 0,
            stop: None,
        }
    }
}

impl Iterator for Loader {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        loop {
            match self.batch.next() {
                Some(Ok(e)) => {
                    self.decoded += 1;
                    return Some(e);
                }
                Some(Err((line, e))) if self.strict => {
                    self.stop = Some(Stop::Invalid(line, e));
                    return None;
                }
                Some(Err((line, e))) => {
                    report_line("warning", line, &e);
                    self.skipped += 1;
                }
                None => {
                    if self.stop.is_some() {
                        return None;
                    }
                    match self.receiver.as_ref()?.recv() {
                        Ok(Ok(batch)) => self.batch = batch.into_iter(),
                        Ok(Err(stop)) => {
                            self.stop = Some(stop);
                            return None;
                        }
                        // The producer finished.
                        Err(mpsc::RecvError) => return None,
                    }
                }
            }
        }
    }
}
