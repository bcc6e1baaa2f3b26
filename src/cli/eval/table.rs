//! The table engine of `tableq eval`: the input is loaded once into an indexed
//! [`MemorySnapshot`] (lines decoded in parallel batches by a producer thread while this
//! thread builds the table), then each query runs through the planner's key ranges and the
//! parallel [`Executor`], its rows handed over as borrowed views and written by the
//! [`EntityWriter`](tableq::model::json::EntityWriter) without building owned entities.
//! Pays off for many queries over one input (`--queries`) and for selective key-range
//! queries; costs memory in proportion to the input (≈ 190 bytes per entity plus the key
//! log).

use super::context::{Context, Failure, Outcome};
use super::output::{Output, row_writer};
use super::queries::Query;
use super::warnings::{Warnings, fatal_line, report_input};
use crate::cli::input::{Input, JsonLines, Line, Unreadable};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tableq::exec::lines::line_too_long;
use tableq::exec::stream::{KeyLog, find_repeats};
use tableq::exec::{Executor, Key, PageOptions};
use tableq::model::json::{BorrowedEntity, DecodeOptions, decode_borrowed, decode_entity};
use tableq::model::{Entity, ModelError};
use tableq_store::MemorySnapshot;

/// Loads `input` and runs every query.
pub(super) fn run(
    queries: &[Query],
    input: Input,
    context: &Context,
    warnings: &mut Warnings,
    out: &mut Output,
    many: bool,
) -> Result<Vec<Outcome>, Failure> {
    let started = Instant::now();
    let label = input.label.clone();
    let (snapshot, skipped, keys) = load(input, context, warnings)?;
    warnings.progress.finish();
    let repeats = find_repeats(keys.iter().map(|(log, base)| (log, *base)));
    drop(keys);
    report_input(&label, skipped, &repeats, context.strict, warnings)?;
    let load = started.elapsed();
    let loaded = snapshot.len() as u64;

    let executor = Executor::new(&snapshot).with_pool(context.pool.clone());
    let mut outcomes = Vec::with_capacity(queries.len());
    for query in queries {
        if many {
            out.header(query)?;
        }
        let mut outcome = execute(query, &executor, out)?;
        outcome.loaded = loaded;
        outcome.load = load;
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// Runs one query: the first page with `--top`, else one unbounded page; rows are written
/// as the executor hands them over (in key order) and the time spent writing is taken out
/// of the execution time.
fn execute(
    query: &Query,
    executor: &Executor<'_, MemorySnapshot>,
    out: &mut Output,
) -> Result<Outcome, Failure> {
    let plan = &query.plan;
    let writer = row_writer(query);
    let options = if plan.top.is_some() {
        PageOptions::default()
    } else {
        PageOptions::unbounded()
    };
    let mut output_time = Duration::ZERO;
    let mut failure: Option<Failure> = None;
    let mut matched = 0u64;
    let started = Instant::now();
    let (continuation, stats) = executor
        .execute_page_with(plan, None, &options, |row| {
            let t = Instant::now();
            if failure.is_none() {
                match out.entity(&writer, row.row()) {
                    Ok(()) => matched += 1,
                    Err(e) => failure = Some(e),
                }
            }
            output_time += t.elapsed();
        })
        .map_err(|e| Failure::Message(e.to_string()))?;
    if let Some(f) = failure {
        return Err(f);
    }
    // With `--top`, the key of the next match, if any (the continuation is only where the
    // next page would start looking).
    let mut next: Option<Key> = None;
    let mut from = continuation;
    while let (Some(at), None) = (&from, &next) {
        let (after, _) = executor
            .execute_page_with(
                plan,
                Some(at),
                &PageOptions::default().with_page_size(1),
                |row| next = Some(Key::new(row.row().partition_key(), row.row().row_key())),
            )
            .map_err(|e| Failure::Message(e.to_string()))?;
        from = after;
    }
    let exec = started.elapsed().saturating_sub(output_time);
    Ok(Outcome {
        ranges: plan.ranges.ranges().len() as u64,
        examined: stats.examined,
        matched,
        next,
        exec,
        ..Outcome::default()
    })
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

/// One decoded line: its number and the entity, or why it is invalid.
type Decoded = (u64, Result<Entity, ModelError>);

/// What the producer sends: a decoded batch and the bytes read so far, or why it stopped.
type Produced = Result<(Vec<Decoded>, u64), Stop>;

/// A batch of lines read: `(number, text)`, or a line over the limit (`text` empty).
type Batch = Vec<(u64, Result<String, u64>)>;

/// Loads the table; returns it, the number of skipped lines and the key log (per batch,
/// with the line base 0: the log holds absolute line numbers).
#[allow(clippy::type_complexity)]
fn load(
    input: Input,
    context: &Context,
    warnings: &mut Warnings,
) -> Result<(MemorySnapshot, u64, Vec<(KeyLog, u64)>), Failure> {
    let label = input.label.clone();
    let threads = context.threads;
    let pool = context.pool.clone();
    let (source, loader) = std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::sync_channel(2);
        let reader = input.reader;
        scope.spawn(move || produce(JsonLines::new(reader), threads, &pool, sender));
        let mut loader = Loader {
            receiver: Some(receiver),
            strict: context.strict,
            batch: Vec::new().into_iter(),
            skipped: 0,
            stop: None,
            keys: Vec::new(),
            base: 0,
            warnings,
        };
        let source = MemorySnapshot::from_entities(loader.by_ref());
        // Dropping the receiver stops the producer if loading stopped early.
        loader.receiver = None;
        let Loader {
            skipped,
            stop,
            keys,
            ..
        } = loader;
        (source, (skipped, stop, keys))
    });
    let (skipped, stop, keys) = loader;
    if let Some(stop) = stop {
        return Err(match stop {
            Stop::Unreadable(why) => Failure::Message(format!("cannot read {label}: {why}")),
            Stop::Invalid(line, e) => fatal_line(line, &e),
        });
    }
    let source = source.map_err(|e| Failure::Message(format!("cannot load {label}: {e}")))?;
    Ok((source, skipped, keys))
}

/// Reads the next batch of non-blank lines with their numbers (empty at the end).
fn read_batch<R: std::io::Read>(lines: &mut JsonLines<R>) -> Result<Batch, Stop> {
    let mut batch = Vec::with_capacity(BATCH_LINES);
    let mut text = String::new();
    while batch.len() < BATCH_LINES {
        match lines.next_line(&mut text) {
            Ok(Some(Line::Text(number))) => batch.push((number, Ok(std::mem::take(&mut text)))),
            Ok(Some(Line::TooLong(number, bytes))) => batch.push((number, Err(bytes))),
            Ok(None) => break,
            Err(Unreadable(why)) => return Err(Stop::Unreadable(why)),
        }
    }
    Ok(batch)
}

/// Decodes one line (the fast path first, with a reused view).
fn decode_line<'a>(
    view: &mut BorrowedEntity<'a>,
    (n, line): &'a (u64, Result<String, u64>),
) -> Decoded {
    let text = match line {
        Ok(text) => text,
        Err(bytes) => return (*n, Err(line_too_long(*bytes))),
    };
    if decode_borrowed(text, &DecodeOptions::STORED, view) {
        (*n, Ok(view.to_entity()))
    } else {
        (*n, decode_entity(text, &DecodeOptions::STORED))
    }
}

/// The producer: reads and decodes batches until the input ends, an error stops it, or the
/// consumer goes away.
fn produce<R: std::io::Read>(
    mut lines: JsonLines<R>,
    threads: usize,
    pool: &rayon::ThreadPool,
    sender: mpsc::SyncSender<Produced>,
) {
    use rayon::prelude::*;
    loop {
        let batch = read_batch(&mut lines).map(|batch| {
            if threads <= 1 || batch.len() < 256 {
                let mut view = BorrowedEntity::new();
                batch
                    .iter()
                    .map(|line| decode_line(&mut view, line))
                    .collect::<Vec<Decoded>>()
            } else {
                pool.install(|| {
                    batch
                        .par_iter()
                        .map_init(BorrowedEntity::new, decode_line)
                        .collect()
                })
            }
        });
        let last = match &batch {
            Ok(decoded) => decoded.is_empty(),
            Err(_) => true,
        };
        let read = lines.bytes_read();
        if sender.send(batch.map(|b| (b, read))).is_err() || last {
            return;
        }
    }
}

/// The consumer side: yields the decoded entities in input order, warning about invalid
/// lines (or, when strict, stopping at the first with [`Stop::Invalid`]) and logging keys.
struct Loader<'w> {
    receiver: Option<mpsc::Receiver<Produced>>,
    strict: bool,
    batch: std::vec::IntoIter<Decoded>,
    skipped: u64,
    stop: Option<Stop>,
    keys: Vec<(KeyLog, u64)>,
    /// The first line of the current batch.
    base: u64,
    warnings: &'w mut Warnings,
}

impl Iterator for Loader<'_> {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        loop {
            match self.batch.next() {
                Some((line, Ok(e))) => {
                    if let Some((log, _)) = self.keys.last_mut() {
                        log.push(e.partition_key(), e.row_key(), (line - self.base) as u32);
                    }
                    return Some(e);
                }
                Some((line, Err(e))) if self.strict => {
                    self.stop = Some(Stop::Invalid(line, e));
                    return None;
                }
                Some((line, Err(e))) => {
                    self.warnings.invalid_line(line, &e);
                    self.skipped += 1;
                }
                None => {
                    if self.stop.is_some() {
                        return None;
                    }
                    match self.receiver.as_ref()?.recv() {
                        Ok(Ok((batch, read))) => {
                            self.warnings.progress.set(read);
                            // One key log per batch; its lines are relative to the batch's
                            // first line (line numbers can exceed u32 over a whole file).
                            let base = batch.first().map_or(0, |(n, _)| *n);
                            self.keys.push((KeyLog::default(), base));
                            self.base = base;
                            self.batch = batch.into_iter();
                        }
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
