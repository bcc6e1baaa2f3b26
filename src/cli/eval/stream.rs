//! The streaming engine of `tableq eval`: one parallel pass over the input that tests each
//! entity as it is decoded and keeps only what the answer needs, so memory follows the
//! result, not the input.
//!
//! **Pipeline.** A reader thread cuts the input into blocks of whole lines (about 1 MiB; a
//! line over the 4 MiB limit becomes a "too long" marker and is never held in memory). The
//! blocks are decoded and tested in parallel batches on the run's thread pool, with the
//! fast borrowed decoder ([`decode_borrowed`]) and the full decoder as its fallback and
//! judge; a line matches when its key lies in the plan's key ranges and it satisfies the
//! compiled residual. Results are consumed in input order, so warnings come in line order.
//!
//! **Order and repeated keys.** Output is in key order and the later of two lines with the
//! same key wins — even when the earlier line matched and the later one does not. While the
//! input's keys are strictly ascending (the common case: `tableq gen` output, table exports)
//! no key can repeat and the input order *is* the output order, so a match needs only its
//! position (file offset, or its text for standard input) and `--top N` keeps just the first
//! N + 1. When a key goes backwards:
//!
//! * a **file** is read again from the start, this time logging every entity's key
//!   ([`KeyLog`]) and keeping every match; at the end repeats are resolved exactly and the
//!   surviving matches are sorted by key;
//! * **standard input** cannot be read again, so its keys are logged from the start; if
//!   `--top` dropped matches before the disorder showed and a repeat then removes one of the
//!   kept ones, the answer cannot be completed and the run stops with an error naming the
//!   remedy (a FILE, or `--engine table`) rather than print wrong rows.
//!
//! **Output.** Matches are printed only after the whole input was read (a fatal problem
//! never leaves half an output): re-read from the file by offset (or taken from the kept
//! text), decoded again and written by the [`EntityWriter`].

use super::blocks::{Piece, Reader};
use super::keys::{KeyLog, find_repeats};
use super::queries::Query;
use super::ranges::RangeIndex;
use super::{Context, Failure, Outcome, Output, Warnings, fatal_line, report_input, row_writer};
use crate::cli::input::{Input, MAX_LINE_BYTES, line_too_long, not_utf8};
use rayon::prelude::*;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::mpsc;
use std::time::Instant;
use tableq::exec::{CompiledPredicate, Key, SourceRow, compare_keys};
use tableq::model::json::{
    BorrowedEntity, DecodeOptions, EntityWriter, ListProperties, decode_borrowed, decode_entity,
};
use tableq::model::{DateTime, Entity, EntityView, ModelError, ValueRef};
use tableq::planner::Plan;

/// Invalid lines kept per block for warnings (the rest are counted).
const INVALID_KEPT: usize = super::Warnings::SHOWN + 1;
/// Rows decoded and encoded per parallel batch of output.
const OUTPUT_BATCH: usize = 2048;

/// Runs one query over `input`.
pub(super) fn run(
    query: &Query,
    input: Input,
    context: &Context,
    warnings: &mut Warnings,
    out: &mut Output,
) -> Result<Outcome, Failure> {
    let started = Instant::now();
    let label = input.label.clone();
    let path = input.file.as_ref().map(|f| f.0.clone());
    let mut pass = Pass::new(query, path.is_none());
    let mut result = pass.read(input, context, warnings)?;
    if result.is_none() {
        // The file's keys are not in order: read it again, logging every key.
        let path = path
            .as_ref()
            .ok_or_else(|| Failure::Message("internal: a restart needs a file".to_owned()))?;
        let file = File::open(path)
            .map_err(|e| Failure::Message(format!("cannot read `{}`: {e}", path.display())))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let again = Input {
            label: label.clone(),
            reader: Box::new(file),
            file: Some((path.clone(), size)),
        };
        pass = Pass::new(query, true);
        result = pass.read(again, context, warnings)?;
    }
    let Some(read) = result else {
        return Err(Failure::Message(format!(
            "{label}: internal: the keys were not logged"
        )));
    };
    warnings.progress.finish();
    let load = started.elapsed();

    let exec_started = Instant::now();
    let repeats = if pass.retain {
        find_repeats(pass.kept.iter().map(|b| (&b.keys, b.line_base)))
    } else {
        Vec::new()
    };
    report_input(&label, read.skipped, &repeats, context.strict, warnings)?;
    let overridden: HashSet<u64> = repeats.iter().map(|r| r.earlier).collect();
    let mut matches: Vec<(u32, u32)> = Vec::new();
    let mut lost_kept = false;
    for (b, block) in pass.kept.iter().enumerate() {
        for (i, m) in block.matches.iter().enumerate() {
            if overridden.contains(&(block.line_base + u64::from(m.line))) {
                lost_kept = true;
                continue;
            }
            matches.push((b as u32, i as u32));
        }
    }
    if lost_kept && pass.dropped {
        return Err(Failure::Message(format!(
            "{label}: the input is not in key order and a later line repeats the key of one of \
             the first --top matches, whose successors were already dropped; standard input \
             cannot be read again: pass the input as a FILE, or use --engine table"
        )));
    }
    let key_of = |&(b, i): &(u32, u32)| {
        let block = &pass.kept[b as usize];
        let (pk, rk, _) = block.keys.get(block.matches[i as usize].key);
        (pk, rk)
    };
    if !pass.sorted {
        matches.sort_by(|a, b| {
            let (x, y) = (key_of(a), key_of(b));
            compare_keys(x.0, x.1, y.0, y.1)
        });
    }
    let limit = query.plan.top.map_or(usize::MAX, |t| t as usize);
    let next = (matches.len() > limit).then(|| {
        let (pk, rk) = key_of(&matches[limit]);
        Key::new(pk, rk)
    });
    matches.truncate(limit);
    let exec = exec_started.elapsed();

    let printed = print(query, &pass, &matches, path.as_ref(), context, out)?;
    Ok(Outcome {
        loaded: read.valid - repeats.len() as u64,
        ranges: query.plan.ranges.ranges().len() as u64,
        examined: read.valid,
        matched: printed,
        next,
        load,
        exec,
    })
}

/// Counters of a completed read.
struct Counts {
    valid: u64,
    skipped: u64,
}

/// One pass over the input and what it keeps.
struct Pass<'q> {
    plan: &'q Plan,
    /// Log every entity's key (standard input, or a file read again).
    retain: bool,
    /// Keep the text of matches (standard input cannot be re-read).
    keep_text: bool,
    /// `$top` + 1: matches kept while the input is in key order.
    keep_first: Option<usize>,
    /// The input's valid keys have been strictly ascending so far.
    sorted: bool,
    last_key: Option<(String, String)>,
    /// Matches dropped under `keep_first`.
    dropped: bool,
    kept_matches: usize,
    kept: Vec<Kept>,
}

/// What is kept of one block.
struct Kept {
    line_base: u64,
    keys: KeyLog,
    matches: Vec<Match>,
    texts: Vec<u8>,
}

/// A matching line: its line (relative to the block), where its text is (file offset and
/// length, or offset into the block's kept texts), and its key's index in the block's log.
#[derive(Debug, Clone, Copy)]
struct Match {
    line: u32,
    offset: u64,
    len: u32,
    text: u32,
    key: u32,
}

impl<'q> Pass<'q> {
    fn new(query: &'q Query, retain: bool) -> Pass<'q> {
        let plan = &query.plan;
        Pass {
            plan,
            retain,
            keep_text: false,
            keep_first: plan.top.map(|t| t as usize + 1),
            sorted: true,
            last_key: None,
            dropped: false,
            kept_matches: 0,
            kept: Vec::new(),
        }
    }

    /// Reads the whole input. `Ok(None)`: a file whose keys are out of order, read without
    /// logging keys — read it again with `retain`.
    fn read(
        &mut self,
        input: Input,
        context: &Context,
        warnings: &mut Warnings,
    ) -> Result<Option<Counts>, Failure> {
        let is_file = input.file.is_some();
        self.keep_text = !is_file;
        if is_file && self.retain {
            // A file read again keeps every match (as positions): nothing is ever dropped.
            self.keep_first = None;
        }
        let label = input.label;
        let mut reader = Reader::new(input.reader);
        let mut counts = Counts {
            valid: 0,
            skipped: 0,
        };
        let mut line_base = 1u64;
        let plan = self.plan;
        let residual = CompiledPredicate::by_name(&plan.residual);
        let test = Test {
            ranges: RangeIndex(plan.ranges.ranges()),
            residual: &residual,
            nothing: plan.ranges.ranges().is_empty() || residual.is_false(),
            log_all: self.retain,
            log_matches: self.retain || self.keep_first.is_some(),
            keep_text: self.keep_text,
            keep_first: self.keep_first,
        };
        std::thread::scope(|scope| -> Result<Option<Counts>, Failure> {
            // The receiver is a local of this closure: returning early drops it, which stops
            // the reader (blocked on a full channel) before the scope joins it.
            let (sender, receiver) = mpsc::sync_channel::<io::Result<Piece>>(4 * context.threads);
            scope.spawn(move || {
                loop {
                    let piece = reader.next();
                    let last = !matches!(piece, Ok(Some(_)));
                    let sent = match piece {
                        Ok(Some(p)) => sender.send(Ok(p)),
                        Ok(None) => return,
                        Err(e) => sender.send(Err(e)),
                    };
                    if sent.is_err() || last {
                        return;
                    }
                }
            });
            let batch_size = 4 * context.threads;
            let mut batch: Vec<Piece> = Vec::with_capacity(batch_size);
            let mut done = false;
            while !done {
                batch.clear();
                while batch.len() < batch_size {
                    match receiver.recv() {
                        Ok(Ok(piece)) => batch.push(piece),
                        Ok(Err(e)) => {
                            return Err(Failure::Message(format!(
                                "cannot read {label}: line {line_base}: {e}"
                            )));
                        }
                        Err(mpsc::RecvError) => {
                            done = true;
                            break;
                        }
                    }
                }
                let results: Vec<Processed> = context
                    .pool
                    .install(|| batch.par_iter().map(|p| test.piece(p)).collect());
                for processed in results {
                    if !self.consume(
                        processed,
                        &mut line_base,
                        &mut counts,
                        &label,
                        context,
                        warnings,
                    )? {
                        // Dropping the receiver stops the reader.
                        return Ok(None);
                    }
                }
            }
            Ok(Some(counts))
        })
    }

    /// Takes one processed block in input order; `Ok(false)`: restart (see [`Pass::read`]).
    fn consume(
        &mut self,
        p: Processed,
        line_base: &mut u64,
        counts: &mut Counts,
        label: &str,
        context: &Context,
        warnings: &mut Warnings,
    ) -> Result<bool, Failure> {
        let base = *line_base;
        *line_base += p.lines;
        warnings.progress.set(p.end_offset);
        for (line, e) in &p.invalid {
            let line = base + line;
            if context.strict {
                return Err(fatal_line(line, e));
            }
            if line > warnings.reported_through {
                warnings.invalid_line(line, e);
            }
        }
        if let Some((line, byte)) = p.unreadable {
            let why = not_utf8(base + line, byte).0;
            return Err(Failure::Message(format!("cannot read {label}: {why}")));
        }
        let end = base + p.lines.max(1) - 1;
        if end > warnings.reported_through {
            // Invalid lines beyond the ones kept for warnings: counted as not shown.
            warnings.count_unshown(p.invalid_count - p.invalid.len() as u64);
        }
        warnings.reported_through = warnings.reported_through.max(end);
        counts.skipped += p.invalid_count;
        counts.valid += p.valid;
        if self.sorted {
            let in_order = p.sorted
                && match (&self.last_key, &p.first_key) {
                    (Some(a), Some(b)) => compare_keys(&a.0, &a.1, &b.0, &b.1).is_lt(),
                    _ => true,
                };
            if !in_order {
                if !self.retain {
                    return Ok(false);
                }
                self.sorted = false;
            } else if p.last_key.is_some() {
                self.last_key = p.last_key;
            }
        }
        let mut matches = p.matches;
        if let (true, Some(first)) = (self.sorted, self.keep_first) {
            let room = first.saturating_sub(self.kept_matches);
            if matches.len() > room || p.unkept {
                self.dropped = true;
            }
            matches.truncate(room);
        }
        self.kept_matches += matches.len();
        if self.retain || !matches.is_empty() {
            self.kept.push(Kept {
                line_base: base,
                keys: p.keys,
                matches,
                texts: p.texts,
            });
        }
        Ok(true)
    }
}

/// Writes the matches, in order.
fn print(
    query: &Query,
    pass: &Pass<'_>,
    matches: &[(u32, u32)],
    path: Option<&std::path::PathBuf>,
    context: &Context,
    out: &mut Output,
) -> Result<u64, Failure> {
    let writer = row_writer(query);
    let mut file =
        match (path, pass.keep_text) {
            (Some(p), false) => Some(File::open(p).map_err(|e| {
                Failure::Message(format!("cannot read `{}` again: {e}", p.display()))
            })?),
            _ => None,
        };
    let mut printed = 0u64;
    for chunk in matches.chunks(OUTPUT_BATCH) {
        let texts: Vec<Vec<u8>> = match &mut file {
            Some(f) => read_lines(f, pass, chunk)
                .map_err(|e| Failure::Message(format!("cannot read the input again: {e}")))?,
            None => chunk
                .iter()
                .map(|&(b, i)| {
                    let block = &pass.kept[b as usize];
                    let m = block.matches[i as usize];
                    block.texts[m.text as usize..m.text as usize + m.len as usize].to_vec()
                })
                .collect(),
        };
        let lines: Vec<Option<Vec<u8>>> = if texts.len() < 64 {
            let mut view = BorrowedEntity::new();
            texts
                .iter()
                .map(|text| encode_line(&writer, &mut view, text))
                .collect()
        } else {
            context.pool.install(|| {
                texts
                    .par_iter()
                    .map_init(BorrowedEntity::new, |view, text| {
                        encode_line(&writer, view, text)
                    })
                    .collect()
            })
        };
        for line in lines {
            let line = line.ok_or_else(|| {
                Failure::Message("the input changed while it was being read".to_owned())
            })?;
            out.bytes(&line)?;
            printed += 1;
        }
    }
    Ok(printed)
}

/// Decodes a kept line again and writes it as an output line (`None`: it no longer
/// decodes — the file changed).
fn encode_line<'a>(
    writer: &EntityWriter<'_>,
    view: &mut BorrowedEntity<'a>,
    text: &'a [u8],
) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    let mut out = Vec::with_capacity(text.len() + 64);
    if decode_borrowed(text, &DecodeOptions::STORED, view) {
        writer.write(&mut out, &*view, Default::default());
    } else {
        let entity = decode_entity(text, &DecodeOptions::STORED).ok()?;
        writer.write(&mut out, &entity, Default::default());
    }
    out.push(b'\n');
    Some(out)
}

/// Reads the texts of `chunk`'s matches from the file, coalescing nearby lines into one
/// read.
fn read_lines(file: &mut File, pass: &Pass<'_>, chunk: &[(u32, u32)]) -> io::Result<Vec<Vec<u8>>> {
    let located: Vec<Match> = chunk
        .iter()
        .map(|&(b, i)| pass.kept[b as usize].matches[i as usize])
        .collect();
    let mut order: Vec<usize> = (0..located.len()).collect();
    order.sort_by_key(|&i| located[i].offset);
    let mut texts = vec![Vec::new(); located.len()];
    let mut k = 0;
    let mut buf = Vec::new();
    while k < order.len() {
        let start = located[order[k]].offset;
        let mut end = start + u64::from(located[order[k]].len);
        let mut j = k + 1;
        while j < order.len() {
            let m = located[order[j]];
            let m_end = m.offset + u64::from(m.len);
            if m_end - start > (4 << 20) {
                break;
            }
            end = end.max(m_end);
            j += 1;
        }
        buf.resize((end - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        for &i in &order[k..j] {
            let m = located[i];
            let from = (m.offset - start) as usize;
            texts[i] = buf[from..from + m.len as usize].to_vec();
        }
        k = j;
    }
    Ok(texts)
}

/// What a worker learned from one piece.
#[derive(Default)]
struct Processed {
    /// Lines in the piece (blank ones included).
    lines: u64,
    /// Input offset after the piece.
    end_offset: u64,
    /// The first invalid lines (0-based line within the piece) and why.
    invalid: Vec<(u64, ModelError)>,
    invalid_count: u64,
    /// A line that is not UTF-8: its index and the 0-based byte of the first bad byte.
    unreadable: Option<(u64, usize)>,
    valid: u64,
    /// The valid keys are strictly ascending within the piece.
    sorted: bool,
    first_key: Option<(String, String)>,
    last_key: Option<(String, String)>,
    keys: KeyLog,
    matches: Vec<Match>,
    /// Matches past `keep_first` were not kept.
    unkept: bool,
    texts: Vec<u8>,
}

/// How a worker tests lines (shared by all workers of a pass).
struct Test<'p> {
    ranges: RangeIndex<'p>,
    residual: &'p CompiledPredicate,
    /// Nothing can match (no range, or a false residual).
    nothing: bool,
    log_all: bool,
    log_matches: bool,
    keep_text: bool,
    keep_first: Option<usize>,
}

impl Test<'_> {
    fn piece(&self, piece: &Piece) -> Processed {
        match piece {
            Piece::TooLong { end, len } => Processed {
                lines: 1,
                end_offset: *end,
                invalid: vec![(0, line_too_long(*len))],
                invalid_count: 1,
                sorted: true,
                ..Processed::default()
            },
            Piece::Lines {
                bytes,
                offset,
                first,
            } => self.lines(bytes, *offset, *first),
        }
    }

    fn lines(&self, bytes: &[u8], offset: u64, first: bool) -> Processed {
        let mut p = Processed {
            end_offset: offset + bytes.len() as u64,
            sorted: true,
            ..Processed::default()
        };
        let mut view = BorrowedEntity::new();
        // The previous valid line's key (buffers reused line after line).
        let mut previous: Option<(String, String)> = None;
        let mut pos = 0usize;
        let mut index = 0u64;
        while pos < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
            let mut start = pos;
            pos = end + 1;
            let line = index;
            index += 1;
            if first && line == 0 && bytes[start..end].starts_with(b"\xEF\xBB\xBF") {
                start += 3;
            }
            let mut raw = &bytes[start..end];
            if let [rest @ .., b'\r'] = raw {
                raw = rest;
            }
            if raw.len() > MAX_LINE_BYTES {
                p.invalid_line(line, line_too_long(raw.len() as u64));
                continue;
            }
            let text = match std::str::from_utf8(raw) {
                Ok(t) => t,
                Err(e) => {
                    p.unreadable = Some((line, e.valid_up_to()));
                    break;
                }
            };
            if text.trim().is_empty() {
                continue;
            }
            let entity;
            let (pk, rk, hit) = if decode_borrowed(text, &DecodeOptions::STORED, &mut view) {
                let row = ViewRow(&view);
                (view.partition_key(), view.row_key(), self.matches(&row))
            } else {
                match decode_entity(text, &DecodeOptions::STORED) {
                    Ok(e) => {
                        entity = e;
                        let hit = self.matches(&entity);
                        (entity.partition_key(), entity.row_key(), hit)
                    }
                    Err(e) => {
                        p.invalid_line(line, e);
                        continue;
                    }
                }
            };
            p.valid += 1;
            match &mut previous {
                Some((ppk, prk)) => {
                    if !compare_keys(ppk, prk, pk, rk).is_lt() {
                        p.sorted = false;
                    }
                    ppk.clear();
                    ppk.push_str(pk);
                    prk.clear();
                    prk.push_str(rk);
                }
                None => {
                    p.first_key = Some((pk.to_owned(), rk.to_owned()));
                    previous = Some((pk.to_owned(), rk.to_owned()));
                }
            }
            let logged = if self.log_all || (hit && self.log_matches) {
                p.keys.push(pk, rk, line as u32)
            } else {
                u32::MAX
            };
            if hit {
                let text_start = p.texts.len() as u32;
                if self.keep_text {
                    p.texts.extend_from_slice(raw);
                }
                p.matches.push(Match {
                    line: line as u32,
                    offset: offset + start as u64,
                    len: raw.len() as u32,
                    text: text_start,
                    key: logged,
                });
            }
        }
        p.last_key = previous;
        p.lines = index;
        if let (true, Some(first)) = (p.sorted, self.keep_first)
            && p.matches.len() > first
        {
            p.matches.truncate(first);
            p.unkept = true;
        }
        p
    }

    fn matches<R: SourceRow>(&self, row: &R) -> bool {
        !self.nothing
            && self.ranges.contains(row.partition_key(), row.row_key())
            && (self.residual.is_true() || self.residual.eval(row))
    }
}

impl Processed {
    fn invalid_line(&mut self, line: u64, e: ModelError) {
        self.invalid_count += 1;
        if self.invalid.len() < INVALID_KEPT {
            self.invalid.push((line, e));
        }
    }
}

/// A decoded line as a [`SourceRow`], for the compiled residual.
struct ViewRow<'v, 'a>(&'v BorrowedEntity<'a>);

impl EntityView for ViewRow<'_, '_> {
    fn partition_key(&self) -> &str {
        self.0.partition_key()
    }
    fn row_key(&self) -> &str {
        self.0.row_key()
    }
    fn timestamp(&self) -> Option<DateTime> {
        self.0.timestamp()
    }
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        self.0.custom(name)
    }
}

impl SourceRow for ViewRow<'_, '_> {
    fn to_entity(&self) -> Entity {
        self.0.to_entity()
    }
    fn for_each_property(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        self.0.for_each_custom(f);
    }
}
