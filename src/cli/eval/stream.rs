//! The streaming engine of `tableq eval`: the reading driver of [`tableq::exec::stream`],
//! which does the evaluating — one parallel pass over the input that tests each entity as
//! it is decoded and keeps only what the answer needs, so memory follows the result, not the
//! input.
//!
//! **What this driver does.** A reader thread cuts the input into blocks of whole lines
//! ([`Reader`]: about 1 MiB; a line over the 4 MiB limit becomes a "too long" marker and is
//! never held in memory). Batches of blocks are scanned in parallel on the run's thread pool
//! ([`scan_lines`]), and the scanned blocks are handed to the [`StreamRun`] in input order,
//! their problems reported as warnings in line order. When the run asks for a restart (a file
//! whose keys are not in order), the file is read again from the start. Once the input has
//! been read completely (a fatal problem never leaves half an output), the answer's rows are
//! read again from the file by position (or taken from the kept text of standard input),
//! decoded again and written by the [`EntityWriter`].
//!
//! What the answer is — key order, the later of two lines with the same key winning, `--top`
//! and the next key, and why standard input can end up incomplete — is the engine's
//! (see [`tableq::exec::stream::run`]).

use super::blocks::{Piece, Reader};
use super::context::{Context, Failure, Outcome};
use super::output::{Output, row_writer};
use super::queries::Query;
use super::warnings::{Warnings, fatal_line, report_input};
use crate::cli::input::Input;
use rayon::prelude::*;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::mpsc;
use std::time::Instant;
use tableq::exec::lines::{MAX_LINE_BYTES, line_too_long, not_utf8};
use tableq::exec::stream::{
    LineBlock, LineProblem, MatchText, Pushed, Reading, ScannedBlock, StreamAnswer, StreamFilter,
    StreamRun, scan_lines,
};
use tableq::model::json::{
    BorrowedEntity, DecodeOptions, EntityWriter, decode_borrowed, decode_entity,
};

/// Problems kept per block for warnings (the rest are counted).
const PROBLEMS_KEPT: usize = Warnings::SHOWN + 1;
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
    let top = query.plan.top;
    let filter = StreamFilter::new(&query.plan);
    let reading = if path.is_some() {
        Reading::Rereadable
    } else {
        Reading::Once
    };
    let mut run = read(
        StreamRun::new(top, reading),
        &filter,
        input,
        context,
        warnings,
    )?;
    if run.is_none() {
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
        run = read(StreamRun::reread(top), &filter, again, context, warnings)?;
    }
    let Some(run) = run else {
        return Err(Failure::Message(format!(
            "{label}: internal: the input was restarted twice"
        )));
    };
    warnings.progress.finish();
    let load = started.elapsed();

    let exec_started = Instant::now();
    let answer = run.finish();
    report_input(
        &label,
        answer.skipped,
        &answer.repeats,
        context.strict,
        warnings,
    )?;
    if answer.incomplete {
        return Err(Failure::Message(format!(
            "{label}: the input is not in key order and a later line repeats the key of one of \
             the first --top matches, whose successors were already dropped; standard input \
             cannot be read again: pass the input as a FILE, or use --engine table"
        )));
    }
    let exec = exec_started.elapsed();

    let printed = print(query, &answer, path.as_ref(), context, out)?;
    Ok(Outcome {
        loaded: answer.valid - answer.repeats.len() as u64,
        ranges: query.plan.ranges.ranges().len() as u64,
        examined: answer.valid,
        matched: printed,
        next: answer.next,
        load,
        exec,
    })
}

/// Reads the whole input into `run` and returns it. `Ok(None)`: the run asked for a restart
/// (a file whose keys are out of order, read without logging keys).
fn read(
    mut run: StreamRun,
    filter: &StreamFilter<'_>,
    input: Input,
    context: &Context,
    warnings: &mut Warnings,
) -> Result<Option<StreamRun>, Failure> {
    let label = input.label;
    let mut reader = Reader::new(input.reader);
    let options = run.block_options(MAX_LINE_BYTES, PROBLEMS_KEPT);
    std::thread::scope(|scope| -> Result<Option<StreamRun>, Failure> {
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
                            "cannot read {label}: line {}: {e}",
                            run.next_line()
                        )));
                    }
                    Err(mpsc::RecvError) => {
                        done = true;
                        break;
                    }
                }
            }
            let scan = |piece: &Piece| match piece {
                Piece::TooLong { end, len } => ScannedBlock::too_long(*end, *len),
                Piece::Lines {
                    bytes,
                    offset,
                    first,
                } => {
                    let block = LineBlock {
                        bytes,
                        offset: *offset,
                        first: *first,
                    };
                    scan_lines(filter, block, &options)
                }
            };
            let scanned: Vec<ScannedBlock> = context
                .pool
                .install(|| batch.par_iter().map(scan).collect());
            for block in scanned {
                report(&block, run.next_line(), &label, context, warnings)?;
                if run.push(block) == Pushed::Restart {
                    // Dropping the receiver stops the reader.
                    return Ok(None);
                }
            }
        }
        Ok(Some(run))
    })
}

/// Reports a scanned block's problems as warnings (lines a restarted pass already reported
/// are not reported again); `--strict` makes the first one fatal, and bytes that are not
/// UTF-8 always are.
fn report(
    block: &ScannedBlock,
    base: u64,
    label: &str,
    context: &Context,
    warnings: &mut Warnings,
) -> Result<(), Failure> {
    warnings.progress.set(block.end_offset);
    for (line, problem) in &block.problems {
        let line = base + line;
        let error = match problem {
            LineProblem::Invalid(e) => e.clone(),
            LineProblem::TooLong(len) => line_too_long(*len),
        };
        if context.strict {
            return Err(fatal_line(line, &error));
        }
        if line > warnings.reported_through {
            warnings.invalid_line(line, &error);
        }
    }
    if let Some((line, byte)) = block.unreadable {
        let why = not_utf8(base + line, byte);
        return Err(Failure::Message(format!("cannot read {label}: {why}")));
    }
    let end = base + block.lines.max(1) - 1;
    if end > warnings.reported_through {
        // Problems beyond the ones kept for warnings: counted as not shown.
        warnings.count_unshown(block.problem_count - block.problems.len() as u64);
    }
    warnings.reported_through = warnings.reported_through.max(end);
    Ok(())
}

/// Writes the answer's rows, in order.
fn print(
    query: &Query,
    answer: &StreamAnswer,
    path: Option<&std::path::PathBuf>,
    context: &Context,
    out: &mut Output,
) -> Result<u64, Failure> {
    let writer = row_writer(query);
    let rows: Vec<MatchText<'_>> = answer.rows().collect();
    let mut file = match path {
        Some(p) if rows.iter().any(|r| matches!(r, MatchText::At { .. })) => {
            Some(File::open(p).map_err(|e| {
                Failure::Message(format!("cannot read `{}` again: {e}", p.display()))
            })?)
        }
        _ => None,
    };
    let mut printed = 0u64;
    for chunk in rows.chunks(OUTPUT_BATCH) {
        let texts: Vec<Vec<u8>> = match &mut file {
            Some(f) => read_lines(f, chunk)
                .map_err(|e| Failure::Message(format!("cannot read the input again: {e}")))?,
            None => chunk
                .iter()
                .map(|row| match row {
                    MatchText::Kept(text) => text.to_vec(),
                    MatchText::At { .. } => Vec::new(),
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

/// Reads the texts of `chunk`'s rows from the file, coalescing nearby lines into one read
/// (kept texts are taken as they are).
fn read_lines(file: &mut File, chunk: &[MatchText<'_>]) -> io::Result<Vec<Vec<u8>>> {
    let mut texts = vec![Vec::new(); chunk.len()];
    let mut located: Vec<(usize, u64, u64)> = Vec::with_capacity(chunk.len());
    for (i, row) in chunk.iter().enumerate() {
        match *row {
            MatchText::At { offset, len } => located.push((i, offset, u64::from(len))),
            MatchText::Kept(text) => texts[i] = text.to_vec(),
        }
    }
    located.sort_by_key(|&(_, offset, _)| offset);
    let mut k = 0;
    let mut buf = Vec::new();
    while k < located.len() {
        let start = located[k].1;
        let mut end = start + located[k].2;
        let mut j = k + 1;
        while j < located.len() {
            let (_, offset, len) = located[j];
            let m_end = offset + len;
            if m_end - start > (4 << 20) {
                break;
            }
            end = end.max(m_end);
            j += 1;
        }
        buf.resize((end - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        for &(i, offset, len) in &located[k..j] {
            let from = (offset - start) as usize;
            texts[i] = buf[from..from + len as usize].to_vec();
        }
        k = j;
    }
    Ok(texts)
}
