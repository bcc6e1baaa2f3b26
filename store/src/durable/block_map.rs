//! The block map ([`BlockMap`]): every block of one table in one version of the data file —
//! its redb key, PartitionKey and row count — in a sorted vector, so that cutting a scan
//! into chunks (`DurableSnapshot::split`, once per wave of a query page) walks memory
//! instead of redb's B-tree. A walk through redb costs about half a microsecond a block
//! (the cursor, the page cache's lookup and reference count): at 100 000 entities a full
//! scan's splits walked 400 blocks on the calling thread before its helpers could start,
//! ≈ 10 % of the page's time.
//!
//! **Versions.** `Shared::blocks_version` counts the commits that may change blocks:
//! flushes and catalog changes, which the writer publishes under the catalog's write lock,
//! and the reopening of the data file after an I/O failure. A snapshot records the version
//! it began at (under the read lock, with its redb transaction) and uses a map of that
//! version only, which then lists exactly the blocks its transaction sees. A table's map is
//! built by the first split of a scan over more than one partition after a change (one walk
//! through the table's blocks) and kept in its `TableEntry` until the next change; scans
//! of one partition never build one (a walk of a large table to split one partition would
//! cost more than it saves).
//!
//! For splits, the map only says where chunks may be cut and how many rows they hold: each
//! chunk's scan reads its blocks through its own snapshot and verifies them, so no map —
//! even one of the wrong version — could change a query's rows, only how evenly its chunks
//! are cut. The map also keeps the verified copies of its blocks that filtered scans and point gets
//! made (`verified.rs`): those a scan or get does use in place of the stored block, which
//! is why a snapshot only ever uses a map of its own version (point gets also build a map
//! when none is kept, for a data file of few blocks: `DurableSnapshot::point_map`). A filtered scan walks the kept map
//! instead of redb's cursor: a block with a copy is read without touching redb (its
//! cursor step and page-cache lookup were a tenth of a selective full scan's CPU once the
//! copies were there), a block without one is fetched by its key.
//!
//! ```text
//! blocks of table 1:  [p|a… 250 rows] [p|k… 180] [q|a… 250]
//! map:                 (key [p|a], "p", 250), (key [p|k], "p", 180), (key [q|a], "q", 250)
//! ```

use super::format::block::BlockView;
use super::format::keys::{decode_block_key, table_end, table_prefix};
use super::verified::{CopyBudget, VerifiedBlock};
use crate::codec::Corrupt;
use redb::ReadOnlyTable;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// A block's verified copy: made by the second filtered scan that reads the block in this
/// version (a table scanned once between two flushes never pays for a copy), `None` when
/// it did not fit in the budget or the block failed a check.
#[derive(Debug, Default)]
struct CopySlot {
    /// A filtered scan read the block.
    seen: AtomicBool,
    copy: OnceLock<Option<Arc<VerifiedBlock>>>,
}

/// The blocks of one table in one version of the data file, in key order.
#[derive(Debug)]
pub(crate) struct BlockMap {
    /// The data file's blocks version this map lists (`Shared::blocks_version`).
    pub(crate) version: u64,
    entries: Vec<MapEntry>,
    /// Per entry, its verified copy (`verified.rs`).
    copies: Box<[CopySlot]>,
    /// What the copies are charged to.
    budget: Arc<CopyBudget>,
}

/// One block of a [`BlockMap`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapEntry {
    /// The block's redb key: (table, PartitionKey, first RowKey), `format/keys.rs`.
    pub(crate) key: Box<[u8]>,
    pub(crate) partition_key: Box<str>,
    /// The block's rows.
    pub(crate) rows: u32,
}

impl MapEntry {
    /// The RowKey of the block's first row (from its key).
    pub(crate) fn first_row_key(&self) -> Result<String, Corrupt> {
        decode_block_key(&self.key)
            .map(|(_, _, rk)| rk)
            .ok_or(Corrupt("a block key does not decode"))
    }
}

impl BlockMap {
    /// The map of table `table` in `rows` (a read transaction of blocks version `version`):
    /// one walk through its blocks, reading each one's header (not verified: the map only
    /// guides splits; every block a scan reads is verified then). `None` when redb fails
    /// or a block's header is damaged: the caller walks redb instead, which meets the
    /// failure and reports it.
    pub(crate) fn build(
        rows: &ReadOnlyTable<&'static [u8], &'static [u8]>,
        table: u64,
        version: u64,
        budget: &Arc<CopyBudget>,
    ) -> Option<BlockMap> {
        let start = table_prefix(table);
        let end = table_end(table);
        let mut entries = Vec::new();
        for item in rows.range::<&[u8]>(&start[..]..end.as_slice()).ok()? {
            let (key, value) = item.ok()?;
            let view = BlockView::parse_header_unverified(value.value()).ok()?;
            let rows = u32::try_from(view.len()).ok()?;
            entries.push(MapEntry {
                key: key.value().into(),
                partition_key: view.partition_key().into(),
                rows,
            });
        }
        Some(BlockMap::new(version, entries, budget))
    }

    /// A map of `entries` (in key order), without copies yet.
    fn new(version: u64, mut entries: Vec<MapEntry>, budget: &Arc<CopyBudget>) -> BlockMap {
        entries.shrink_to_fit();
        BlockMap {
            version,
            copies: entries.iter().map(|_| CopySlot::default()).collect(),
            entries,
            budget: budget.clone(),
        }
    }

    /// Block `at` (in key order), if there is one.
    pub(crate) fn entry(&self, at: usize) -> Option<&MapEntry> {
        self.entries.get(at)
    }

    /// The position of the first block whose key is `>= start`.
    pub(crate) fn position(&self, start: &[u8]) -> usize {
        self.entries.partition_point(|e| &*e.key < start)
    }

    /// The position of the last block at or before `key` if its key starts with
    /// `partition` (a partition prefix: the block that may hold `key`), else of the first
    /// block after `key` — where redb's cursor would start after `DurableSnapshot::floor`.
    pub(crate) fn floor(&self, key: &[u8], partition: &[u8]) -> usize {
        let after = self.entries.partition_point(|e| &*e.key <= key);
        match after.checked_sub(1) {
            Some(at) if self.entries[at].key.starts_with(partition) => at,
            _ => after,
        }
    }

    /// The verified copy of block `at`, if one was made: a scan reading it needs nothing
    /// from redb.
    pub(crate) fn copy_made(&self, at: usize) -> Option<&Arc<VerifiedBlock>> {
        self.copies.get(at)?.copy.get()?.as_ref()
    }

    /// The verified copy of block `at` (its stored bytes: `bytes`), made now by the second
    /// filtered scan that reads the block (see [`CopySlot`]); `None` the first time, when
    /// the copy does not fit in the budget, or when the block fails a check (the caller
    /// then reads the block the usual way, which reports the damage).
    pub(crate) fn copy_of(&self, at: usize, bytes: &[u8]) -> Option<&Arc<VerifiedBlock>> {
        let slot = self.copies.get(at)?;
        if let Some(copy) = slot.copy.get() {
            return copy.as_ref();
        }
        if !slot.seen.swap(true, Ordering::AcqRel) {
            return None;
        }
        slot.copy
            .get_or_init(|| {
                VerifiedBlock::copy(bytes, &self.budget)
                    .ok()
                    .flatten()
                    .map(Arc::new)
            })
            .as_ref()
    }

    /// How many blocks have a verified copy.
    #[cfg(test)]
    pub(crate) fn copies(&self) -> usize {
        self.copies
            .iter()
            .filter(|c| c.copy.get().is_some_and(Option::is_some))
            .count()
    }

    /// The blocks whose keys are `>= start`, in key order.
    pub(crate) fn from(&self, start: &[u8]) -> &[MapEntry] {
        &self.entries[self.position(start)..]
    }

    /// The number of blocks.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::format::keys::{entity_key, partition_prefix};

    fn map(keys: &[(&str, &str, u32)]) -> BlockMap {
        let entries = keys
            .iter()
            .map(|(pk, rk, rows)| MapEntry {
                key: entity_key(7, pk, rk).into(),
                partition_key: (*pk).into(),
                rows: *rows,
            })
            .collect();
        BlockMap::new(1, entries, &Arc::new(CopyBudget::new(0)))
    }

    #[test]
    fn from_starts_at_the_first_block_at_or_after_a_key() {
        let m = map(&[("p", "a", 3), ("p", "k", 2), ("q", "a", 5)]);
        assert_eq!(m.from(&table_prefix(7)).len(), 3);
        assert_eq!(m.from(&entity_key(7, "p", "k")).len(), 2);
        assert_eq!(m.from(&entity_key(7, "p", "l")).len(), 1);
        assert_eq!(m.from(&partition_prefix(7, "q")).len(), 1);
        assert!(m.from(&table_end(7)).is_empty());
    }

    #[test]
    fn floor_is_the_block_that_may_hold_a_key_within_its_partition() {
        let m = map(&[("p", "b", 3), ("p", "k", 2), ("q", "c", 5)]);
        let p = partition_prefix(7, "p");
        let q = partition_prefix(7, "q");
        // Inside a partition: the block at or before the key.
        assert_eq!(m.floor(&entity_key(7, "p", "k"), &p), 1);
        assert_eq!(m.floor(&entity_key(7, "p", "m"), &p), 1);
        assert_eq!(m.floor(&entity_key(7, "p", "c"), &p), 0);
        // Before a partition's first block: that block.
        assert_eq!(m.floor(&entity_key(7, "p", "a"), &p), 0);
        assert_eq!(m.floor(&entity_key(7, "q", "a"), &q), 2);
        // The block before belongs to another partition: the first block after the key.
        assert_eq!(m.floor(&entity_key(7, "q", "z"), &q), 2);
        assert_eq!(
            m.floor(&entity_key(7, "r", "a"), &partition_prefix(7, "r")),
            3
        );
        assert_eq!(m.position(&entity_key(7, "p", "c")), 1);
        assert!(m.entry(3).is_none());
    }

    #[test]
    fn a_block_key_gives_the_first_row_key() {
        let m = map(&[("p", "r\u{E000}x", 3)]);
        assert_eq!(
            m.from(&[]).first().unwrap().first_row_key().unwrap(),
            "r\u{E000}x"
        );
        let bad = MapEntry {
            key: Box::new([0, 0, 0]),
            partition_key: "p".into(),
            rows: 1,
        };
        assert!(bad.first_row_key().is_err());
    }
}
