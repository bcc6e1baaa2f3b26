//! Assembling the answer from scanned blocks taken in input order: [`StreamRun`] →
//! [`StreamAnswer`].
//!
//! While the input's keys are strictly ascending (the common case: `tableq gen` output,
//! table exports) no key can repeat and the input order *is* the key order, so a match needs
//! only its position and `$top` N keeps just the first N + 1. When a key goes backwards:
//!
//! * an input that can be **read again** ([`Reading::Rereadable`]) is read again from the
//!   start ([`Pushed::Restart`], then [`StreamRun::reread`]), this time logging every key and
//!   keeping every match; at the end repeats are resolved exactly and the surviving matches
//!   are sorted by key;
//! * an input read **once** ([`Reading::Once`]) has its keys logged from the start; if `$top`
//!   dropped matches before the disorder showed and a repeat then removes one of the kept
//!   ones, the answer cannot be completed: [`StreamAnswer::incomplete`] says so rather than
//!   hand out wrong rows.

use super::block::{BlockOptions, Match, ScannedBlock};
use super::keys::{KeyLog, Repeat, find_repeats};
use crate::key::{Key, compare_keys};
use std::collections::HashSet;

/// How the input is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// From a file: it can be read again from the start, and matching lines at their
    /// positions, so matches keep only their position.
    Rereadable,
    /// From a pipe: read once, so keys are logged and matching texts kept from the start.
    Once,
}

/// What [`StreamRun::push`] asks of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Pushed {
    /// Go on with the next block.
    Continue,
    /// The input's keys are out of order and were not logged: stop reading, and read the
    /// input again from the start into [`StreamRun::reread`].
    Restart,
}

/// What a run keeps of one block.
#[derive(Debug)]
struct Kept {
    line_base: u64,
    keys: KeyLog,
    matches: Vec<Match>,
    texts: Vec<u8>,
}

/// One pass over an input (see the module docs): takes scanned blocks in input order.
#[derive(Debug)]
pub struct StreamRun {
    top: Option<u32>,
    /// Log every entity's key.
    retain: bool,
    /// Keep the text of matches (the input cannot be read again).
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
    line_base: u64,
    valid: u64,
    skipped: u64,
}

impl StreamRun {
    /// The first pass over an input read as `reading`, for a plan with page size `top`.
    pub fn new(top: Option<u32>, reading: Reading) -> StreamRun {
        let once = reading == Reading::Once;
        StreamRun::with(top, once, once, top.map(|t| t as usize + 1))
    }

    /// The second pass over a [`Reading::Rereadable`] input after [`Pushed::Restart`]: every
    /// key logged, every match kept (by position).
    pub fn reread(top: Option<u32>) -> StreamRun {
        StreamRun::with(top, true, false, None)
    }

    fn with(
        top: Option<u32>,
        retain: bool,
        keep_text: bool,
        keep_first: Option<usize>,
    ) -> StreamRun {
        StreamRun {
            top,
            retain,
            keep_text,
            keep_first,
            sorted: true,
            last_key: None,
            dropped: false,
            kept_matches: 0,
            kept: Vec::new(),
            line_base: 1,
            valid: 0,
            skipped: 0,
        }
    }

    /// What [`scan_lines`](super::scan_lines) must keep of each block of this pass, with
    /// the line limit and the number of problems kept for reporting.
    pub fn block_options(&self, max_line_bytes: usize, problems_kept: usize) -> BlockOptions {
        BlockOptions {
            log_all: self.retain,
            log_matches: self.retain || self.keep_first.is_some(),
            keep_text: self.keep_text,
            keep_first: self.keep_first,
            max_line_bytes,
            problems_kept,
        }
    }

    /// The 1-based line number of the next block's first line.
    pub fn next_line(&self) -> u64 {
        self.line_base
    }

    /// Takes the next block in input order.
    pub fn push(&mut self, block: ScannedBlock) -> Pushed {
        let base = self.line_base;
        self.line_base += block.lines;
        self.skipped += block.problem_count;
        self.valid += block.valid;
        if self.sorted {
            let in_order = block.sorted
                && match (&self.last_key, &block.first_key) {
                    (Some(a), Some(b)) => compare_keys(&a.0, &a.1, &b.0, &b.1).is_lt(),
                    _ => true,
                };
            if !in_order {
                if !self.retain {
                    return Pushed::Restart;
                }
                self.sorted = false;
            } else if block.last_key.is_some() {
                self.last_key = block.last_key;
            }
        }
        let mut matches = block.matches;
        if let (true, Some(first)) = (self.sorted, self.keep_first) {
            let room = first.saturating_sub(self.kept_matches);
            if matches.len() > room || block.unkept {
                self.dropped = true;
            }
            matches.truncate(room);
        }
        self.kept_matches += matches.len();
        if self.retain || !matches.is_empty() {
            self.kept.push(Kept {
                line_base: base,
                keys: block.keys,
                matches,
                texts: block.texts,
            });
        }
        Pushed::Continue
    }

    /// Ends the pass: resolves repeated keys (the later line wins), orders the matches by
    /// key and applies `$top`.
    pub fn finish(self) -> StreamAnswer {
        let repeats = if self.retain {
            find_repeats(self.kept.iter().map(|b| (&b.keys, b.line_base)))
        } else {
            Vec::new()
        };
        let overridden: HashSet<u64> = repeats.iter().map(|r| r.earlier).collect();
        let mut matches: Vec<(u32, u32)> = Vec::new();
        let mut lost_kept = false;
        for (b, block) in self.kept.iter().enumerate() {
            for (i, m) in block.matches.iter().enumerate() {
                if overridden.contains(&(block.line_base + u64::from(m.line))) {
                    lost_kept = true;
                    continue;
                }
                matches.push((b as u32, i as u32));
            }
        }
        let mut answer = StreamAnswer {
            incomplete: lost_kept && self.dropped,
            valid: self.valid,
            skipped: self.skipped,
            repeats,
            matches,
            next: None,
            texts_kept: self.keep_text,
            kept: self.kept,
        };
        if !self.sorted {
            let kept = &answer.kept;
            answer.matches.sort_by(|a, b| {
                let (x, y) = (key_of(kept, *a), key_of(kept, *b));
                compare_keys(x.0, x.1, y.0, y.1)
            });
        }
        let limit = self.top.map_or(usize::MAX, |t| t as usize);
        if let Some(&after) = answer.matches.get(limit) {
            let (pk, rk) = key_of(&answer.kept, after);
            answer.next = Some(Key::new(pk, rk));
        }
        answer.matches.truncate(limit);
        answer
    }
}

/// The key of match `i` of kept block `b`.
fn key_of(kept: &[Kept], (b, i): (u32, u32)) -> (&str, &str) {
    let block = &kept[b as usize];
    let (pk, rk, _) = block.keys.get(block.matches[i as usize].key);
    (pk, rk)
}

/// Where a matching line's text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchText<'a> {
    /// In the input, to be read again: its offset and length.
    At {
        /// Input offset of the line's first byte.
        offset: u64,
        /// Length without the line end.
        len: u32,
    },
    /// Kept by the run ([`Reading::Once`]).
    Kept(&'a [u8]),
}

/// The answer of a pass: the matches in key order, `$top` applied.
#[derive(Debug)]
pub struct StreamAnswer {
    /// A repeat removed one of the first `$top` matches of an input read once after their
    /// successors were dropped: the rows cannot be completed (read the input as a file, or
    /// load it into a table).
    pub incomplete: bool,
    /// Valid entities read (repeats included).
    pub valid: u64,
    /// Lines skipped as problems.
    pub skipped: u64,
    /// Lines whose key a later line repeats, ordered by the later line (only when keys were
    /// logged, which they are whenever the input's keys were not ascending).
    pub repeats: Vec<Repeat>,
    /// The key of the next match after a `$top` page.
    pub next: Option<Key>,
    matches: Vec<(u32, u32)>,
    /// Whether matches carry their text ([`Reading::Once`]) or only their position.
    texts_kept: bool,
    kept: Vec<Kept>,
}

impl StreamAnswer {
    /// The number of matching rows in the answer.
    pub fn len(&self) -> usize {
        self.matches.len()
    }

    /// Whether no row matches.
    pub fn is_empty(&self) -> bool {
        self.matches.is_empty()
    }

    /// Where the text of each answer row is, in key order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = MatchText<'_>> + '_ {
        self.matches.iter().map(|&(b, i)| {
            let block = &self.kept[b as usize];
            let m = block.matches[i as usize];
            if self.texts_kept {
                let start = m.text as usize;
                MatchText::Kept(&block.texts[start..start + m.len as usize])
            } else {
                MatchText::At {
                    offset: m.offset,
                    len: m.len,
                }
            }
        })
    }
}
