//! The write overlay of a [`MemorySnapshot`](super::MemorySnapshot): its entries, and how
//! one partition's overlay is folded into its base ([`merge_partition`]). Versions are
//! derived and merged in `changes.rs`.
//!
//! The overlay is a persistent tree of [`PartitionOverlay`]s by PartitionKey, each a
//! persistent tree of [`RowEntry`]s by RowKey. An entry says what its key holds now, and
//! hides the base row with the same keys, if any:
//!
//! * a row (`removed == false`): row `row` of `block`, a compact unindexed block that holds
//!   the rows one write brought to that partition (in key order);
//! * a removal (`removed == true`): the key holds nothing (only kept while the base or an
//!   earlier entry has the key; `block` then holds just the RowKey).
//!
//! Invariants (checked by the property tests in `tests.rs`): an entry's key is its block
//! row's RowKey; `PartitionOverlay::live` is the number of rows the partition holds in
//! this version (base rows not hidden by a removal or replaced, plus overlay rows);
//! `TableState::overlay_rows` is the sum of the row trees' lengths; `TableState::len` and
//! `TableState::partitions` count the version's entities and non-empty partitions.

use super::partition::{MemoryError, Partition, PartitionBuilder};
use crate::tree::{Tree, TreeEntry};
use std::hash::RandomState;
use std::sync::Arc;

/// One key of a partition's overlay (see the module docs).
#[derive(Clone)]
pub(crate) struct RowEntry {
    pub(crate) block: Arc<Partition>,
    pub(crate) row: u32,
    pub(crate) removed: bool,
}

impl TreeEntry for RowEntry {
    #[inline]
    fn key(&self) -> &str {
        self.block.row_key(self.row as usize)
    }
}

/// The recent writes to one partition.
#[derive(Clone)]
pub(crate) struct PartitionOverlay {
    pub(crate) key: Arc<str>,
    /// RowKey → what it holds now. Empty after the partition was merged into the base.
    pub(crate) rows: Tree<RowEntry>,
    /// Rows the partition holds in this version.
    pub(crate) live: usize,
}

impl TreeEntry for PartitionOverlay {
    #[inline]
    fn key(&self) -> &str {
        &self.key
    }
}

/// Rebuilds partition `key` from its base rows and its overlay rows: `None` when no row
/// remains.
pub(crate) fn merge_partition(
    key: &Arc<str>,
    base: Option<&Partition>,
    rows: &Tree<RowEntry>,
    hasher: &RandomState,
) -> Result<Option<Arc<Partition>>, MemoryError> {
    let mut b = PartitionBuilder::with_key(key.clone());
    // Room for the base and (about, by the first block's shape) the overlay rows.
    if let Some(base) = base {
        b.reserve(base.arena_lens());
    }
    if let Some(first) = rows.iter().next() {
        let (n, slots, text, bytes) = first.block.arena_lens();
        let per_row = |x: usize| x.div_ceil(n.max(1)) * rows.len();
        b.reserve((rows.len(), per_row(slots), per_row(text), per_row(bytes)));
    }
    let mut next = 0;
    let base_len = base.map_or(0, Partition::len);
    for e in rows.iter() {
        if let Some(base) = base {
            let row_key = e.key();
            // Overlay keys ascend: the base is walked forward, never searched whole.
            let stop = base.lower_bound_from(next, row_key);
            b.push_rows(base, next, stop)?;
            next = stop;
            if next < base_len && base.row_key(next) == row_key {
                next += 1; // replaced or removed
            }
        }
        if !e.removed {
            let row = e.row as usize;
            b.push_rows(&e.block, row, row + 1)?;
        }
    }
    if let Some(base) = base {
        b.push_rows(base, next, base_len)?;
    }
    Ok(if b.is_empty() {
        None
    } else {
        Some(Arc::new(b.finish(hasher)?))
    })
}
