//! The command itself: its arguments, the destination's loader, and the reading loop —
//! every line read by `cli::input`'s rules, judged as the service judges an insert
//! and handed to the loader — then the rejections and the summary (see the module docs of
//! `import`).

use super::direct;
use super::http;
use super::loader::{Item, Loader, Mode};
use super::outcome::{Outcome, print_rejections};
use super::progress::Bar;
use crate::cli::args::{parse_block_size, parse_size};
use crate::cli::input::{self, JsonLines, Line, Unreadable};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};
use tableq::exec::lines::line_too_long;
use tableq::model::json::{DecodeOptions, decode_entity};
use tableq::model::{Entity, ModelError, validate};

/// Arguments of `tableq import`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("destination").required(true).args(["data", "endpoint"])))]
pub struct Args {
    /// The table to load into (created when missing).
    #[arg(long, value_name = "NAME")]
    pub table: String,
    /// Entities as JSON lines; `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Write straight into the durable store in this data directory (no server may be
    /// running on it).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Send the entities to a running server: its table endpoint, e.g.
    /// http://127.0.0.1:10002/devstoreaccount1.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Insert or replace: an entity whose keys exist replaces the stored one (default:
    /// insert, and existing keys are rejected with EntityAlreadyExists).
    #[arg(long)]
    pub upsert: bool,
    /// Memory for the durable store's page cache with --data (as `serve --cache-size`):
    /// blocks read from the data file are kept up to this size. An import whose keys come
    /// in random order rewrites blocks all over the table, and reads each one again unless
    /// it is still cached; one in key order (as `tableq gen` writes, and exports) reads few.
    /// [default: 64MiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub cache_size: Option<usize>,
    /// Memory for the rows written since the last flush, with --data: flushed into the
    /// data file when they hold this much. More makes an input in random key order load
    /// faster (each flush rewrites the blocks its rows fall into) and holds more memory.
    /// [default: 16MiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memtable_size: Option<usize>,
    /// The blocks' size with --data (as `serve --block-size`): smaller blocks make random
    /// point gets in a table much larger than the page cache cheaper, larger ones make
    /// scans cheaper. 4KiB to 1MiB. [default: 32KiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_block_size)]
    pub block_size: Option<usize>,
    /// Concurrent requests with --endpoint.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub connections: u32,
    /// Sign requests (SharedKey) with this account's key (with --endpoint; default: the
    /// development account devstoreaccount1 and its well-known key). NAME must be the
    /// endpoint's account.
    #[arg(long, value_name = "NAME:BASE64KEY")]
    pub account: Option<String>,
}

/// Where entities go.
#[derive(Debug, Clone)]
pub enum Destination {
    /// The durable store in this directory, opened by this process.
    Data(PathBuf),
    /// A running server's table endpoint.
    Endpoint(String),
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    if let Err(e) = validate::table_name(&args.table) {
        eprintln!(
            "error: {}",
            input::problem(&format!("--table {}", args.table), &e)
        );
        return ExitCode::from(2);
    }
    // What belongs to the other destination (clap's `requires` is not enforced beside the
    // destination group, so it is checked here).
    let store_settings =
        args.cache_size.is_some() || args.memtable_size.is_some() || args.block_size.is_some();
    let misplaced = match args.data {
        Some(_) if args.account.is_some() => {
            Some("--account signs the requests of --endpoint URL; --data DIR sends none")
        }
        None if store_settings => Some(
            "--cache-size, --memtable-size and --block-size are settings of the store --data \
             DIR opens; with --endpoint the server has its own (serve --cache-size, \
             --block-size)",
        ),
        _ => None,
    };
    if let Some(why) = misplaced {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    let destination = match (&args.data, &args.endpoint) {
        (Some(dir), _) => Destination::Data(dir.clone()),
        (None, Some(url)) => Destination::Endpoint(url.clone()),
        // clap's required group makes this unreachable; say so anyway.
        (None, None) => {
            eprintln!("error: give --data DIR or --endpoint URL");
            return ExitCode::from(2);
        }
    };
    let mode = if args.upsert {
        Mode::Upsert
    } else {
        Mode::Insert
    };
    let opened = match input::open(args.file.as_deref(), "import") {
        Ok(i) => i,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::from(2);
        }
    };
    let outcome = Arc::new(Outcome::default());
    let loader: Result<(Box<dyn Loader>, bool), String> = match &destination {
        Destination::Data(dir) => direct::StoreLoader::open(
            dir,
            direct::StoreSettings {
                cache_bytes: args.cache_size,
                memtable_bytes: args.memtable_size,
                block_bytes: args.block_size,
            },
            &args.table,
            mode,
            &outcome,
        )
        .map(|(l, created)| (Box::new(l) as Box<dyn Loader>, created)),
        Destination::Endpoint(url) => http::signing_key(args.account.as_deref())
            .and_then(|key| {
                http::HttpLoader::connect(
                    url,
                    &args.table,
                    mode,
                    args.connections as usize,
                    key,
                    &outcome,
                )
            })
            .map(|(l, created)| (Box::new(l) as Box<dyn Loader>, created)),
    };
    let (loader, created) = match loader {
        Ok(l) => l,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::from(2);
        }
    };
    if created {
        eprintln!("created table {}", args.table);
    }

    let started = Instant::now();
    let mut bar = Bar::new(opened.file.as_ref().map(|f| f.1));
    let interrupted = watch_interrupt();
    let read = load(opened.reader, loader, &outcome, &mut bar, &interrupted);
    bar.finish();
    let elapsed = started.elapsed();
    print_rejections(&outcome);
    let (loaded, rejected) = outcome.counts();
    eprintln!(
        "{}: {loaded} loaded, {rejected} rejected in {} ({} entities/s)",
        opened.label,
        seconds(elapsed),
        rate(loaded, elapsed)
    );
    match read {
        Err(Stop::Unreadable(why)) => {
            eprintln!(
                "error: cannot read {}: {why} (the lines before it were loaded)",
                opened.label
            );
            eprintln!("{RERUN_HINT}");
            ExitCode::from(2)
        }
        Err(Stop::Failed(why)) => {
            eprintln!("error: {why} (the import stopped; what was acknowledged before stays)");
            eprintln!("{RERUN_HINT}");
            ExitCode::from(2)
        }
        Ok(()) if rejected > 0 => ExitCode::from(1),
        Ok(()) => ExitCode::SUCCESS,
    }
}

/// What to do after a run that stopped early: inserting the same input again would reject
/// every line loaded before the stop as `EntityAlreadyExists`.
const RERUN_HINT: &str = "hint: to finish the load, fix the cause and run the same command again with \
     --upsert: lines loaded before the stop are then replaced instead of rejected as \
     EntityAlreadyExists";

/// Why a run stopped early.
enum Stop {
    Unreadable(String),
    Failed(String),
}

/// Lines decoded together. A run is a pipeline of three stages, each on its own thread
/// and a batch or two ahead of the next: the *reading* thread reads a batch of lines in
/// order; the *decoding* thread judges its lines in parallel (rayon); the calling thread
/// hands the decoded entities to the loader in line order, while the next batch is decoded.
/// Measured on the 2-core machine (`perf`, 1 M entities, `--data`): reading and decoding
/// on one thread bounded the load rate (2026-11-27); with decoding on the calling thread,
/// each batch's hand-over to the loader waited for its decoding and the next decoding for
/// the hand-over, and the process used 1.3 of its 2 cores (2026-11-29).
const DECODE_BATCH: usize = 1024;

/// Batches read ahead of the one being decoded, and decoded ahead of the one handed over
/// (more did not help: 16 decoded batches ahead changed nothing measurable at 1 M).
const READ_AHEAD: usize = 2;

/// One line read: its number and its text, or the length of a line too long to hold.
type Read = (u64, Result<String, u64>);

/// A batch of lines between two stages, `L` a line as that stage passes it on: the lines,
/// the input's bytes read so far, and how reading ended after them (`None`: it goes on).
struct Batch<L> {
    lines: Vec<L>,
    bytes_read: u64,
    end: Option<Result<(), Unreadable>>,
}

/// One line decoded: its number, its text (empty for a line too long to hold) and the
/// entity, or why the service would refuse it.
type Decoded = (u64, String, Result<Entity, ModelError>);

/// Reads `reader`'s lines in batches of [`DECODE_BATCH`] and sends them, until the input
/// ends, cannot be read, or the receiver is gone (the load stopped).
fn read_batches(reader: Box<dyn std::io::Read + Send>, to: SyncSender<Batch<Read>>) {
    let mut lines = JsonLines::new(reader);
    loop {
        let mut batch = Vec::with_capacity(DECODE_BATCH);
        let mut end = None;
        while batch.len() < DECODE_BATCH {
            let mut text = String::new();
            match lines.next_line(&mut text) {
                Ok(Some(Line::Text(line))) => batch.push((line, Ok(text))),
                Ok(Some(Line::TooLong(line, bytes))) => batch.push((line, Err(bytes))),
                Ok(None) => {
                    end = Some(Ok(()));
                    break;
                }
                Err(e) => {
                    // The lines before it are still loaded.
                    end = Some(Err(e));
                    break;
                }
            }
        }
        let last = end.is_some();
        let sent = to.send(Batch {
            lines: batch,
            bytes_read: lines.bytes_read(),
            end,
        });
        if last || sent.is_err() {
            return;
        }
    }
}

/// Decodes each batch from `from` in parallel, by the service's rules for an insert, and
/// sends it on in line order, until the batches end or the receiver is gone.
fn decode_batches(from: Receiver<Batch<Read>>, to: SyncSender<Batch<Decoded>>) {
    use rayon::prelude::*;
    let options = DecodeOptions::SERVICE;
    for batch in from {
        let last = batch.end.is_some();
        let lines = batch
            .lines
            .into_par_iter()
            .map(|(line, text)| match text {
                Ok(text) => {
                    let entity = decode_entity(&text, &options);
                    (line, text, entity)
                }
                Err(bytes) => (line, String::new(), Err(line_too_long(bytes))),
            })
            .collect();
        let sent = to.send(Batch {
            lines,
            bytes_read: batch.bytes_read,
            end: batch.end,
        });
        if last || sent.is_err() {
            return;
        }
    }
}

/// Starts a stage of the pipeline on a thread of its own. Not joined: when the load stops
/// early, dropping the stage's receiver ends the thread at its next batch, and a thread
/// blocked reading a terminal does not hold the process.
fn stage(name: &str, run: impl FnOnce() + Send + 'static) -> Result<(), Stop> {
    std::thread::Builder::new()
        .name(format!("tableq-import-{name}"))
        .spawn(run)
        .map(|_| ())
        .map_err(|e| Stop::Failed(format!("cannot start the {name} thread: {e}")))
}

/// Reads, judges and hands every line to `loader`.
fn load(
    reader: Box<dyn std::io::Read + Send>,
    mut loader: Box<dyn Loader>,
    outcome: &Outcome,
    bar: &mut Bar,
    interrupted: &AtomicBool,
) -> Result<(), Stop> {
    let (to_decode, read) = sync_channel(READ_AHEAD);
    let (to_load, batches) = sync_channel(READ_AHEAD);
    let mut stop = stage("read", move || read_batches(reader, to_decode))
        .and_then(|()| stage("decode", move || decode_batches(read, to_load)))
        .err();
    while stop.is_none() {
        let Ok(Batch {
            lines,
            bytes_read,
            end,
        }) = batches.recv()
        else {
            break;
        };
        for (line, text, entity) in lines {
            match entity {
                Ok(entity) => {
                    if let Err(why) = loader.push(Item { line, entity, text }) {
                        stop = Some(Stop::Failed(why));
                        break;
                    }
                }
                Err(e) => reject_model(outcome, line, e),
            }
            if let Some(why) = outcome.failure() {
                stop = Some(Stop::Failed(why));
                break;
            }
            if interrupted.load(Ordering::Relaxed) {
                stop = Some(Stop::Failed("interrupted (Ctrl-C)".into()));
                break;
            }
        }
        bar.update(bytes_read, outcome);
        match end {
            None => {}
            Some(Ok(())) => break,
            Some(Err(Unreadable(why))) => {
                stop.get_or_insert(Stop::Unreadable(why));
            }
        }
    }
    drop(batches);
    let finished = loader.finish();
    match (stop, finished, outcome.failure()) {
        (Some(stop), _, _) => Err(stop),
        (None, Err(why), _) | (None, Ok(()), Some(why)) => Err(Stop::Failed(why)),
        (None, Ok(()), None) => Ok(()),
    }
}

/// A flag raised by the first Ctrl-C (SIGINT): the run then stops reading, writes what it
/// has taken, and reports like any early stop. A second Ctrl-C ends the process at once
/// (exit 130). Without a signal handler (it cannot be installed), Ctrl-C ends the process.
fn watch_interrupt() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised = flag.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    if let Ok(runtime) = runtime {
        let _ = std::thread::Builder::new()
            .name("import-interrupt".into())
            .spawn(move || {
                runtime.block_on(async {
                    if tokio::signal::ctrl_c().await.is_err() {
                        return;
                    }
                    raised.store(true, Ordering::Relaxed);
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
                    }
                })
            });
    }
    flag
}

fn reject_model(outcome: &Outcome, line: u64, e: ModelError) {
    outcome.reject(line, e.code, e.message);
}

/// `1.234 s` / `12 ms`.
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Entities per second, rounded to 3 significant digits.
fn rate(n: u64, d: Duration) -> u64 {
    let secs = d.as_secs_f64();
    if secs <= 0.0 {
        return n;
    }
    let r = n as f64 / secs;
    if r < 1000.0 {
        return r.round() as u64;
    }
    let scale = 10f64.powi(r.log10().floor() as i32 - 2);
    ((r / scale).round() * scale) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_rounded_to_three_digits() {
        assert_eq!(rate(123_456, Duration::from_secs(1)), 123_000);
        assert_eq!(rate(999, Duration::from_secs(1)), 999);
        assert_eq!(rate(5, Duration::ZERO), 5);
        assert_eq!(seconds(Duration::from_millis(12)), "12 ms");
        assert_eq!(seconds(Duration::from_millis(1234)), "1.2 s");
    }
}
