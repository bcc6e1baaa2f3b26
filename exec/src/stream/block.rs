//! One block of JSON lines, decoded and tested: [`scan_lines`] → [`ScannedBlock`].
//!
//! A block holds whole lines, read by the rules of [`crate::lines`] (LF or CRLF ends; a
//! leading UTF-8 byte-order mark on the input's first line is skipped; blank lines count
//! but are skipped; long lines and bytes that are not UTF-8 are problems). Each line is
//! decoded as a *stored* entity with the fast borrowed decoder ([`decode_borrowed`]) and,
//! where that declines, the full decoder ([`decode_entity`]) as judge; it matches when the
//! [`StreamFilter`] says so. What the block keeps is what the [`StreamRun`](super::StreamRun)
//! needs to assemble the answer: the position (and, for inputs that cannot be read again,
//! the text) of each match, the keys ([`KeyLog`]) when asked to log them, and whether the
//! block's keys ascend. Blocks do not depend on each other: a driver scans many at once.

use super::filter::StreamFilter;
use super::keys::KeyLog;
use crate::key::compare_keys;
use crate::lines::{self, Line};
use tableq_model::json::{BorrowedEntity, DecodeOptions, decode_borrowed, decode_entity};
use tableq_model::{EntityView, ModelError};

/// A block of whole lines of the input.
#[derive(Debug, Clone, Copy)]
pub struct LineBlock<'a> {
    /// The bytes: whole lines (the last one may lack its line end at the end of the input).
    pub bytes: &'a [u8],
    /// The input offset of the first byte.
    pub offset: u64,
    /// Whether the block starts the input (a byte-order mark may open it).
    pub first: bool,
}

/// What a scan keeps of a block; set by [`StreamRun::block_options`](super::StreamRun::block_options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockOptions {
    /// Log the key of every valid line.
    pub log_all: bool,
    /// Log the key of every matching line.
    pub log_matches: bool,
    /// Keep the text of matching lines (an input that cannot be read again).
    pub keep_text: bool,
    /// Keep at most this many matches of a block whose keys ascend.
    pub keep_first: Option<usize>,
    /// Longest line in bytes (without its line end); longer ones are problems.
    pub max_line_bytes: usize,
    /// Problems kept with their line for reporting (the rest are only counted).
    pub problems_kept: usize,
}

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum LineProblem {
    /// Not a valid entity: the data model's error.
    Invalid(ModelError),
    /// Longer than [`BlockOptions::max_line_bytes`]: its length in bytes.
    TooLong(u64),
}

/// A matching line: its line (relative to the block), where its text is (input offset and
/// length, or offset into the block's kept texts), and its key's index in the block's log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Match {
    pub(crate) line: u32,
    pub(crate) offset: u64,
    pub(crate) len: u32,
    pub(crate) text: u32,
    pub(crate) key: u32,
}

/// A scanned block: what the driver reports (line counts, problems) and what the run keeps.
#[derive(Debug, Default)]
pub struct ScannedBlock {
    /// Lines in the block (blank ones included).
    pub lines: u64,
    /// The input offset after the block.
    pub end_offset: u64,
    /// The first [`BlockOptions::problems_kept`] skipped lines (0-based line within the
    /// block) and why.
    pub problems: Vec<(u64, LineProblem)>,
    /// Every skipped line, kept or not.
    pub problem_count: u64,
    /// A line that is not UTF-8: its index in the block and the 0-based position of the
    /// first bad byte. The scan stops there: the input is not JSON lines.
    pub unreadable: Option<(u64, usize)>,
    /// Valid entities.
    pub(crate) valid: u64,
    /// The valid keys are strictly ascending within the block.
    pub(crate) sorted: bool,
    pub(crate) first_key: Option<(String, String)>,
    pub(crate) last_key: Option<(String, String)>,
    pub(crate) keys: KeyLog,
    pub(crate) matches: Vec<Match>,
    /// Matches past [`BlockOptions::keep_first`] were not kept.
    pub(crate) unkept: bool,
    pub(crate) texts: Vec<u8>,
}

impl ScannedBlock {
    /// A line over the limit that the driver skipped without reading it into memory: it
    /// ends at input offset `end` and is `len` bytes long.
    pub fn too_long(end: u64, len: u64) -> ScannedBlock {
        ScannedBlock {
            lines: 1,
            end_offset: end,
            problems: vec![(0, LineProblem::TooLong(len))],
            problem_count: 1,
            sorted: true,
            ..ScannedBlock::default()
        }
    }

    fn problem(&mut self, line: u64, problem: LineProblem, kept: usize) {
        self.problem_count += 1;
        if self.problems.len() < kept {
            self.problems.push((line, problem));
        }
    }
}

/// Decodes and tests every line of `block` (see the module docs).
pub fn scan_lines(
    filter: &StreamFilter<'_>,
    block: LineBlock<'_>,
    options: &BlockOptions,
) -> ScannedBlock {
    let bytes = block.bytes;
    let mut p = ScannedBlock {
        end_offset: block.offset + bytes.len() as u64,
        sorted: true,
        ..ScannedBlock::default()
    };
    let mut view = BorrowedEntity::new();
    // The previous valid line's key (buffers reused line after line).
    let mut previous: Option<(String, String)> = None;
    let mut pos = 0usize;
    let mut index = 0u64;
    while pos < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let line_start = pos;
        pos = end + 1;
        let line = index;
        index += 1;
        let (skipped, read) = lines::read(
            &bytes[line_start..end],
            block.first && line == 0,
            options.max_line_bytes,
        );
        let start = line_start + skipped;
        let text = match read {
            Line::Text(text) => text,
            Line::Blank => continue,
            Line::TooLong(len) => {
                p.problem(line, LineProblem::TooLong(len), options.problems_kept);
                continue;
            }
            Line::NotUtf8(valid_up_to) => {
                p.unreadable = Some((line, valid_up_to));
                break;
            }
        };
        let raw = text.as_bytes();
        let entity;
        let (pk, rk, hit) = if decode_borrowed(text, &DecodeOptions::STORED, &mut view) {
            (view.partition_key(), view.row_key(), filter.matches(&view))
        } else {
            match decode_entity(text, &DecodeOptions::STORED) {
                Ok(e) => {
                    entity = e;
                    let hit = filter.matches(&entity);
                    (entity.partition_key(), entity.row_key(), hit)
                }
                Err(e) => {
                    p.problem(line, LineProblem::Invalid(e), options.problems_kept);
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
        let logged = if options.log_all || (hit && options.log_matches) {
            p.keys.push(pk, rk, line as u32)
        } else {
            u32::MAX
        };
        if hit {
            let text_start = p.texts.len() as u32;
            if options.keep_text {
                p.texts.extend_from_slice(raw);
            }
            p.matches.push(Match {
                line: line as u32,
                offset: block.offset + start as u64,
                len: raw.len() as u32,
                text: text_start,
                key: logged,
            });
        }
    }
    p.last_key = previous;
    p.lines = index;
    if let (true, Some(first)) = (p.sorted, options.keep_first)
        && p.matches.len() > first
    {
        p.matches.truncate(first);
        p.unkept = true;
    }
    p
}
