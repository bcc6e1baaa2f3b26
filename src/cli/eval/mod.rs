//! `tableq eval`: the standalone filter evaluator (spec: query.md, "The standalone
//! evaluator").
//!
//! ```text
//! tableq eval [--filter F] [--select S] [--top N] [--queries FILE] [--engine E]
//!             [--max-comparisons N] [--no-limits] [--max-ranges N]
//!             [--threads N] [--stats] [--strict] [FILE|-]
//! ```
//!
//! 1. **Queries first.** The query (or, with `--queries`, every query) is parsed and planned
//!    before any input is read: an invalid `--filter`, `--select` or `--top` prints a caret
//!    diagnostic on stderr and exits 2. No `--filter` (or a blank one) means every entity.
//! 2. **Input** is read as `tableq validate` reads it ([`super::input`]), each line decoded
//!    as a *stored* entity (its Timestamp kept). An invalid line is skipped with a warning
//!    (`warning: line N: <Code>: <message>`; the first 20 warnings are shown, then a count);
//!    `--strict` makes the first invalid line fatal. Two lines with the same keys: the later
//!    line wins, as an upsert would — also when the earlier one matched and the later one
//!    does not (then neither is printed); a warning names both lines, `--strict` makes it
//!    fatal. Nothing is printed on stdout before the input has been read completely, so a
//!    fatal problem never leaves half an output.
//! 3. **Engines** ([`Engine`]): `stream` (the default for one query, [`stream`]: the reading
//!    driver of [`tableq::exec::stream`]) evaluates while reading, in parallel, and keeps only
//!    the matches; `table` (the default with
//!    `--queries`, [`table`]) loads an indexed in-memory table once and runs each query
//!    through the planner's key ranges and the parallel executor. Both print the same rows.
//! 4. **Output**: the matches as JSON lines in ascending (PartitionKey, RowKey) order, in the
//!    service's form with `Name@odata.type` where JSON cannot show the type (Int64, DateTime,
//!    Guid, Binary, non-finite Double, the Timestamp), written by
//!    [`EntityWriter`]; with `--select` exactly the
//!    selected properties, `null` for missing ones. Without `--top` every match; with
//!    `--top N` the first N and, when more match, a note on stderr with the continuation
//!    keys (the key of the next match). With `--queries`, each query's rows follow a header
//!    line `# query N (line L): <query>`.
//! 5. **`--stats`**: per query, one JSON object on stderr (the last lines):
//!    `{"engine","loaded","ranges","examined","matched","next","load_ms","parse_us","plan_us","exec_us"}`
//!    (`"query"` after `"engine"` with `--queries`); see docs/commands.md for each field.
//!
//! Exit codes: 0 success (also when lines were skipped with a warning), 2 invalid query,
//! unreadable input, or (with `--strict`) invalid input.

mod blocks;
mod progress;
mod queries;
mod stream;
mod table;

use super::args::Limits;
use super::input::{self, Input};
use progress::Progress;
use queries::Query;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tableq::exec::Key;
use tableq::exec::stream::Repeat;
use tableq::model::ModelError;
use tableq::model::json::{EntityWriter, EnvelopeRef, ListProperties, MetadataLevel};

/// Arguments of `tableq eval`.
#[derive(clap::Args)]
pub struct Args {
    /// The `$filter` expression (none or blank: every entity).
    #[arg(long, value_name = "F", allow_hyphen_values = true)]
    filter: Option<String>,
    /// The `$select` list: comma-separated property names, or `*`.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    select: Option<String>,
    /// `$top`: print only the first N (1–1000) entities.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    top: Option<String>,
    /// Run many queries against one loaded table: one per line of FILE, either a filter or
    /// a JSON object {"filter","select","top"} (--select/--top are the defaults).
    #[arg(long, value_name = "FILE", conflicts_with = "filter")]
    queries: Option<PathBuf>,
    /// How to evaluate: `stream` (one pass, memory follows the result; default for one
    /// query) or `table` (load an indexed table; default with --queries).
    #[arg(long, value_enum, value_name = "ENGINE", default_value_t = Engine::Auto)]
    engine: Engine,
    #[command(flatten)]
    limits: Limits,
    /// Threads for reading and execution (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Print timing and counters as one JSON object per query, the last lines on stderr.
    #[arg(long)]
    stats: bool,
    /// Treat an invalid line or a repeated key in the input as fatal (exit 2).
    #[arg(long)]
    strict: bool,
    /// Entities as JSON lines; `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
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
pub(crate) enum Failure {
    /// Already reported on stderr.
    Reported,
    /// To report as `error: …`.
    Message(String),
}

/// What every engine needs besides the query and the input.
pub(crate) struct Context {
    /// Threads for reading and execution.
    pub threads: usize,
    /// The pool they run on.
    pub pool: Arc<rayon::ThreadPool>,
    /// `--strict`.
    pub strict: bool,
}

/// The counters of one query (see `--stats`).
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Entities in the input (distinct keys).
    pub loaded: u64,
    /// Key ranges of the plan.
    pub ranges: u64,
    /// Entities tested against the filter.
    pub examined: u64,
    /// Entities printed.
    pub matched: u64,
    /// The key of the next match after a `--top` page.
    pub next: Option<Key>,
    /// Reading (and for the stream engine, testing) the input.
    pub load: Duration,
    /// Executing (for the stream engine: resolving repeats and ordering the matches),
    /// output excluded.
    pub exec: Duration,
}

fn eval(args: &Args) -> Result<(), Failure> {
    let queries = queries::parse(args)?;
    let engine = match (args.engine, &args.queries) {
        (Engine::Auto, Some(_)) => Engine::Table,
        (Engine::Auto, None) => Engine::Stream,
        (engine, _) => engine,
    };
    let threads = match args.threads {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Failure::Message(format!("cannot start {threads} threads: {e}")))?;
    let context = Context {
        threads,
        pool: Arc::new(pool),
        strict: args.strict,
    };
    let input = input::open(args.file.as_deref(), "eval").map_err(Failure::Message)?;
    let mut warnings = Warnings::new(Progress::new(input.file.as_ref().map(|f| f.1)));
    let mut out = Output::new();
    let many = args.queries.is_some();
    let result = match engine {
        Engine::Stream => {
            let mut outcomes = Vec::new();
            let mut input = Some(input);
            for query in &queries {
                let this = match input.take() {
                    Some(i) => i,
                    // Each further query reads the file again (stdin only once: refused
                    // when the queries are parsed).
                    None => reopen(args)?,
                };
                if many {
                    out.header(query)?;
                }
                let outcome = stream::run(query, this, &context, &mut warnings, &mut out)?;
                outcomes.push(outcome);
            }
            Ok(outcomes)
        }
        _ => table::run(&queries, input, &context, &mut warnings, &mut out, many),
    };
    warnings.finish();
    let outcomes = result?;
    out.flush()?;
    for (query, outcome) in queries.iter().zip(&outcomes) {
        if let Some(next) = &outcome.next {
            let which = if many {
                format!("query {}: ", query.number)
            } else {
                String::new()
            };
            eprintln!(
                "note: {which}more entities match than the {} printed (--top {}); the next is at \
                 NextPartitionKey {}, NextRowKey {}",
                outcome.matched,
                query.plan.top.unwrap_or_default(),
                json_string(&next.partition_key),
                json_string(&next.row_key),
            );
        }
    }
    if args.stats {
        for (query, outcome) in queries.iter().zip(&outcomes) {
            eprintln!(
                "{}",
                stats_line(engine, many.then_some(query), query, outcome)
            );
        }
    }
    Ok(())
}

/// Opens the input file again (the stream engine reads it once per query).
fn reopen(args: &Args) -> Result<Input, Failure> {
    input::open(args.file.as_deref(), "eval").map_err(Failure::Message)
}

fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The `--stats` object of one query.
fn stats_line(engine: Engine, numbered: Option<&Query>, query: &Query, o: &Outcome) -> String {
    let engine = if engine == Engine::Table {
        "table"
    } else {
        "stream"
    };
    let number = numbered.map_or(String::new(), |q| format!(",\"query\":{}", q.number));
    let next = match &o.next {
        Some(k) => format!(
            "{{\"PartitionKey\":{},\"RowKey\":{}}}",
            json_string(&k.partition_key),
            json_string(&k.row_key)
        ),
        None => "null".to_owned(),
    };
    format!(
        "{{\"engine\":\"{engine}\"{number},\"loaded\":{},\"ranges\":{},\"examined\":{},\
         \"matched\":{},\"next\":{next},\"load_ms\":{:.3},\"parse_us\":{:.3},\"plan_us\":{:.3},\
         \"exec_us\":{:.3}}}",
        o.loaded,
        o.ranges,
        o.examined,
        o.matched,
        o.load.as_secs_f64() * 1e3,
        query.parse_time.as_secs_f64() * 1e6,
        query.plan_time.as_secs_f64() * 1e6,
        o.exec.as_secs_f64() * 1e6,
    )
}

/// Warnings on stderr: the first [`Warnings::SHOWN`], then only counted; printed around
/// the progress bar.
pub(crate) struct Warnings {
    shown: usize,
    hidden: u64,
    /// Lines already reported (a restarted pass does not report them again).
    pub reported_through: u64,
    /// The read's progress bar.
    pub progress: Progress,
}

impl Warnings {
    /// How many warnings are printed.
    pub const SHOWN: usize = 20;

    fn new(progress: Progress) -> Warnings {
        Warnings {
            shown: 0,
            hidden: 0,
            reported_through: 0,
            progress,
        }
    }

    /// Prints (or counts) one warning.
    pub fn warn(&mut self, message: &str) {
        if self.shown < Self::SHOWN {
            self.shown += 1;
            self.progress.suspend(|| eprintln!("warning: {message}"));
        } else {
            self.hidden += 1;
        }
    }

    /// Counts warnings that are not shown (past the cap anyway).
    pub fn count_unshown(&mut self, n: u64) {
        self.hidden += n;
    }

    /// Warns about an invalid line (`line N: <Code>: <message>`).
    pub fn invalid_line(&mut self, line: u64, e: &ModelError) {
        self.warn(&input::problem(&format!("line {line}"), e));
    }

    /// Prints a summary that is always shown (not counted against the cap).
    pub fn summary(&mut self, message: &str) {
        self.progress.suspend(|| eprintln!("warning: {message}"));
    }

    /// Prints the count of warnings not shown.
    fn finish(&mut self) {
        self.progress.finish();
        if self.hidden > 0 {
            eprintln!(
                "warning: {} more {} not shown",
                self.hidden,
                if self.hidden == 1 {
                    "warning"
                } else {
                    "warnings"
                }
            );
        }
    }
}

/// Reports an invalid line as fatal (`--strict`).
pub(crate) fn fatal_line(line: u64, e: &ModelError) -> Failure {
    eprintln!("error: {}", input::problem(&format!("line {line}"), e));
    Failure::Reported
}

/// The summary of skipped lines and repeated keys after a read; with `--strict` a repeat is
/// fatal.
pub(crate) fn report_input(
    label: &str,
    skipped: u64,
    repeats: &[Repeat],
    strict: bool,
    warnings: &mut Warnings,
) -> Result<(), Failure> {
    if let (true, Some(r)) = (strict, repeats.first()) {
        return Err(Failure::Message(format!("{label}: {}", repeat_message(r))));
    }
    if skipped > 0 {
        warnings.summary(&format!(
            "{label}: skipped {skipped} invalid {}",
            if skipped == 1 { "line" } else { "lines" }
        ));
    }
    for r in repeats {
        warnings.warn(&format!("{}; the later line wins", repeat_message(r)));
    }
    if !repeats.is_empty() {
        let n = repeats.len();
        warnings.summary(&format!(
            "{label}: {n} {} the keys of an earlier line; the later line wins",
            if n == 1 {
                "line repeats"
            } else {
                "lines repeat"
            }
        ));
    }
    Ok(())
}

fn repeat_message(r: &Repeat) -> String {
    format!(
        "line {} repeats the keys of line {} (PartitionKey {}, RowKey {})",
        r.later,
        r.earlier,
        json_string(&r.partition_key),
        json_string(&r.row_key)
    )
}

/// Buffered stdout for result rows. A closed stdout (`tableq eval … | head`) ends the
/// output quietly; other write errors are fatal.
pub(crate) struct Output {
    out: BufWriter<io::StdoutLock<'static>>,
    line: Vec<u8>,
    closed: bool,
}

impl Output {
    fn new() -> Output {
        Output {
            out: BufWriter::with_capacity(1 << 16, io::stdout().lock()),
            line: Vec::with_capacity(1024),
            closed: false,
        }
    }

    /// Writes one entity as a JSON line.
    pub fn entity<E: ListProperties + ?Sized>(
        &mut self,
        writer: &EntityWriter<'_>,
        entity: &E,
    ) -> Result<(), Failure> {
        self.line.clear();
        writer.write(&mut self.line, entity, EnvelopeRef::default());
        self.line.push(b'\n');
        let line = std::mem::take(&mut self.line);
        let result = self.bytes(&line);
        self.line = line;
        result
    }

    /// Writes already encoded bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        self.out.write_all(bytes).or_else(|e| self.error(e))
    }

    /// The header line of a query of `--queries`.
    fn header(&mut self, query: &Query) -> Result<(), Failure> {
        let text = format!(
            "# query {} (line {}): {}\n",
            query.number, query.line, query.text
        );
        self.bytes(text.as_bytes())
    }

    fn flush(&mut self) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        self.out.flush().or_else(|e| self.error(e))
    }

    fn error(&mut self, e: io::Error) -> Result<(), Failure> {
        if e.kind() == io::ErrorKind::BrokenPipe {
            self.closed = true;
            Ok(())
        } else {
            Err(Failure::Message(format!("cannot write to stdout: {e}")))
        }
    }
}

/// The writer for result rows of a query: minimal metadata without an envelope (so only
/// the `@odata.type` annotations JSON needs), projected to the plan's `$select`.
pub(crate) fn row_writer(query: &Query) -> EntityWriter<'_> {
    EntityWriter::new(MetadataLevel::MinimalMetadata).with_select(query.plan.select.as_deref())
}
