//! A flush folded in slices ([`Flush`]): what the memtables held when it began, and how
//! far its slices have folded it into redb.
//!
//! A flush of a large table rewrites a block for nearly every row it folds (random inserts
//! into 10 M entities: ≈ 5 000 blocks of 32 KiB a second of writes), which takes about a
//! second; done in one transaction it held the writer that long, and every write waited
//! (p99 up to 1.8 s). A flush therefore **freezes** the memtables — a clone, two pointers a
//! table — and folds the frozen entries in key order, in slices of at most
//! `flush_slice` (10 ms by default: [`DurableOptions::flush_slice`]) each committed on its
//! own (`commit.rs`: `Writer::flush_slice`); between slices the writer commits the groups
//! that queued. Nothing changes for readers until the last slice:
//!
//! * readers keep the **whole** memtable while the slices run: an entry that a slice folded
//!   is in redb *and* in the memtable, the same row twice, and the memtable's copy wins the
//!   merge as always; writes made meanwhile go into the memtable as they do between
//!   flushes;
//! * the last slice's commit gives readers, with the data file that now holds every frozen
//!   entry, the memtables **without** them ([`MemTable::written_since`]: the entries the
//!   frozen version does not hold as they are — the writes made during the flush);
//! * a table deleted during the flush is skipped by the slices after its deletion (its
//!   blocks went with it); one created has no frozen entries;
//! * a checkpoint made on the writer (the log at twice its bound, the close, the reopening
//!   of the data file) folds whatever the memtables hold in one transaction and ends a
//!   flush in progress.
//!
//! The log is untouched by flushes: every frozen entry stays in it until a checkpoint, so a
//! crash in the middle of a flush replays them (slices are non-durable commits, which a
//! crash rolls back anyway). A checkpoint due by the log's size or by time is such a flush
//! that records the log's last record when it froze ([`Flush::checkpoint_at`]): once its
//! last slice is in, a durable commit naming that record runs beside the writer
//! (`checkpoint.rs`).
//!
//! ```text
//! freeze   mem = {a b c d}            frozen = {a b c d}     readers: mem over redb
//! slice 1  redb += a b                write e → mem = {a b c d e}
//! slice 2  redb += c d  (last)        readers: mem = {e} over redb, in one commit
//! ```

use super::checkpoint::LogPoint;
#[cfg(doc)]
use crate::durable::DurableOptions;
use crate::durable::memtable::{MemEntry, MemTable};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tableq_model::DateTime;

/// One table's frozen entries, in key order.
struct FrozenTable {
    id: u64,
    entries: Vec<MemEntry>,
}

/// A flush in progress (see the module docs).
pub(crate) struct Flush {
    /// The memtables as they were frozen, by table id.
    frozen: HashMap<u64, MemTable>,
    /// Their entries in table id and key order.
    tables: Vec<FrozenTable>,
    /// The first table with entries left to fold, and how many of its entries are folded.
    at: (usize, usize),
    /// The largest Timestamp in the frozen memtables (the clock each slice stores).
    pub(crate) max_timestamp: Option<DateTime>,
    /// When the last slice ended (or the flush began).
    pub(crate) last_slice: Instant,
    /// The time the slices took, all together.
    pub(crate) busy: Duration,
    /// A checkpoint's flush: the log's last record when it froze the memtables, which its
    /// durable commit names once the last slice is in (`checkpoint.rs`). A table or setting
    /// changed during the flush clears it (its commit holds a later record).
    pub(crate) checkpoint_at: Option<LogPoint>,
}

/// Where a flush is: restored when a slice's transaction fails.
#[derive(Clone, Copy)]
pub(crate) struct Position((usize, usize));

impl Flush {
    /// Freezes `mem` (the writer's memtables, empty ones skipped).
    pub(crate) fn freeze(mem: &HashMap<u64, MemTable>, max_timestamp: Option<DateTime>) -> Flush {
        let frozen: HashMap<u64, MemTable> = mem
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(id, m)| (*id, m.clone()))
            .collect();
        let mut tables: Vec<FrozenTable> = frozen
            .iter()
            .map(|(id, m)| FrozenTable {
                id: *id,
                entries: m.entries(),
            })
            .collect();
        tables.sort_by_key(|t| t.id);
        Flush {
            frozen,
            tables,
            at: (0, 0),
            max_timestamp,
            last_slice: Instant::now(),
            busy: Duration::ZERO,
            checkpoint_at: None,
        }
    }

    /// Where the flush is.
    pub(crate) fn position(&self) -> Position {
        Position(self.at)
    }

    /// Goes back to `position` (the slice after it was not committed).
    pub(crate) fn restore(&mut self, position: Position) {
        self.at = position.0;
    }

    /// The next table with entries left to fold: its id and those entries.
    pub(crate) fn next(&self) -> Option<(u64, &[MemEntry])> {
        let (table, done) = self.at;
        let t = self.tables.get(table)?;
        Some((t.id, t.entries.get(done..).unwrap_or_default()))
    }

    /// Records that `n` more entries of the current table were folded (or, for a table
    /// the slice skips, that all were).
    pub(crate) fn advance(&mut self, n: usize) {
        let (table, done) = self.at;
        let len = self.tables.get(table).map_or(0, |t| t.entries.len());
        self.at = if done + n >= len {
            (table + 1, 0)
        } else {
            (table, done + n)
        };
    }

    /// Whether every frozen entry is folded.
    pub(crate) fn finished(&self) -> bool {
        self.at.0 >= self.tables.len()
    }

    /// The writer's memtables `mem` without what this (finished) flush folded: what
    /// readers get with the last slice's commit.
    pub(crate) fn rest(&self, mem: &HashMap<u64, MemTable>) -> HashMap<u64, MemTable> {
        mem.iter()
            .filter_map(|(id, m)| {
                let rest = match self.frozen.get(id) {
                    Some(frozen) => m.written_since(frozen),
                    None => m.clone(),
                };
                (!rest.is_empty()).then_some((*id, rest))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn mem(tables: &[(u64, &[&str])]) -> HashMap<u64, MemTable> {
        tables
            .iter()
            .map(|(id, rks)| {
                let mut m = MemTable::default();
                for rk in *rks {
                    m.put("p", rk, Some(Arc::from(rk.as_bytes())));
                }
                (*id, m)
            })
            .collect()
    }

    #[test]
    fn a_flush_walks_the_tables_in_id_order_and_goes_back_when_asked() {
        let mut writer_mem = mem(&[(7, &["a", "b", "c"]), (3, &["x"]), (9, &[])]);
        let mut flush = Flush::freeze(&writer_mem, None);
        let (id, entries) = flush.next().unwrap();
        assert_eq!(
            (id, entries.len()),
            (3, 1),
            "table 3 first; table 9 is empty"
        );
        flush.advance(1);
        let before = flush.position();
        let (id, entries) = flush.next().unwrap();
        assert_eq!((id, entries.len()), (7, 3));
        flush.advance(2);
        assert_eq!(flush.next().map(|(id, e)| (id, e.len())), Some((7, 1)));
        flush.restore(before);
        assert_eq!(flush.next().map(|(id, e)| (id, e.len())), Some((7, 3)));
        flush.advance(3);
        assert!(flush.finished() && flush.next().is_none());
        // Nothing written since the freeze: nothing left for readers.
        assert!(flush.rest(&writer_mem).is_empty());
        // A write during the flush, to a frozen table and to a new one: only they remain.
        writer_mem
            .get_mut(&7)
            .unwrap()
            .put("p", "b", Some(Arc::from(&b"new"[..])));
        writer_mem.insert(11, mem(&[(11, &["z"])]).remove(&11).unwrap());
        let rest = flush.rest(&writer_mem);
        let keys: Vec<(u64, String)> = {
            let mut k: Vec<(u64, String)> = rest
                .iter()
                .flat_map(|(id, m)| {
                    m.entries()
                        .into_iter()
                        .map(|(_, e)| (*id, e.rk.to_string()))
                })
                .collect();
            k.sort();
            k
        };
        assert_eq!(keys, [(7, "b".to_owned()), (11, "z".to_owned())]);
    }
}
