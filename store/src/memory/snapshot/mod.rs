//! [`MemorySnapshot`]: an immutable version of an in-memory table that holds millions of
//! entities compactly, answers point lookups in well under a microsecond at any size, and
//! derives its next version cheaply ([`MemorySnapshot::with_changes`]). It is the
//! [`EntitySource`](tableq_exec::EntitySource) of the memory engine and of `tableq eval`.
//!
//! This module owns the *storage layout* of the memory engine and nothing else: it stores
//! the [`Change`]s it is given. What a write means (insert vs replace, conditions,
//! Timestamps) is [`crate::resolve()`]'s, and how concurrent writers are serialised is
//! [`MemoryTable`](super::MemoryTable)'s (it keeps the current version of a table and swaps
//! in the next one). Property values are stored with the store's row codec
//! (`crate::codec`, shared with the durable engine's blocks).
//!
//! # Design
//!
//! * **The base: immutable compact partitions** (see `partition.rs`): rows sorted by
//!   RowKey in contiguous arenas — a 24-byte header and one 12-byte slot per property,
//!   strings and bytes in shared per-partition buffers — plus a RowKey hash index.
//!   Property names are interned table-wide to `u32` ids (`crate::codec::Names`), which
//!   compiled predicates use directly ([`SlotLookup::Slot`](tableq_exec::SlotLookup::Slot)). The base directory is a
//!   sorted vector of partitions plus a hash map PartitionKey → position: a point lookup
//!   is two hash probes; a scan walks partitions in key order. [`MemorySnapshot::from_entities`]
//!   builds a base directly (bulk load).
//! * **The overlay: recent writes** (see `overlay.rs`), a two-level persistent B-tree
//!   (PartitionKey → RowKey → row or removal, `tree.rs`). The rows of one write are one
//!   small compact block, so an overlay row is read exactly like a base row
//!   ([`MemoryRow`]). Deriving a version copies only the tree path to each changed key:
//!   `O(log n)` per changed row, whatever the size of the partition or the number of
//!   partitions.
//! * **Merging**: when a partition's overlay grows past a fraction of what rebuilding it
//!   costs (its base rows plus the base directory), the partition is rebuilt compactly
//!   with its overlay folded in; when the whole overlay grows past a fraction of the base,
//!   all of it is ([`OverlayLimits`]). Each row written is thus copied `O(divisor)` times
//!   on average — a stream of single writes costs the same per write from the first to
//!   the millionth — and the overlay stays a bounded fraction of the table.
//! * **Reads**: a point get looks in the overlay first when there is one; a scan merges
//!   base rows and overlay rows in key order, reading runs of base rows between overlay
//!   keys straight from the arrays. A version without overlay (a bulk-loaded table, or
//!   one just merged) reads exactly as fast as a plain base.
//! * **Versions are values**: a [`MemorySnapshot`] is an `Arc`; cloning it is a reference
//!   count increment, and holding one keeps its version alive and unchanged, however many
//!   versions are derived after it.
//!
//! ```
//! use tableq_model::{Entity, Value};
//! use tableq_store::{Change, MemorySnapshot};
//!
//! let mut e = Entity::new("p1", "r1");
//! e.set("Age", Value::Int32(7));
//! let v1 = MemorySnapshot::from_entities([e]).unwrap();
//! let v2 = v1.with_changes([Change::delete("p1", "r1")]).unwrap();
//! assert!(v1.get("p1", "r1").is_some()); // an earlier version keeps its contents
//! assert!(v2.get("p1", "r1").is_none());
//! assert_eq!((v1.len(), v2.len()), (1, 0));
//! ```

mod overlay;
mod partition;
mod read;

pub use read::{MemoryRow, MemoryRows};

use crate::codec::{NameOverflow, Names};
use crate::resolve::Change;
use crate::tree::Tree;
use overlay::PartitionOverlay;
use partition::{Partition, PartitionBuilder};
use std::collections::HashMap;
use std::hash::RandomState;
use std::sync::Arc;
use tableq_model::Entity;
use tableq_model::order::compare_str;

/// Why a version could not be built. Nothing was changed: versions are immutable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A partition outgrew the 32-bit offsets of the layout (4 GiB of strings or of bytes,
    /// or 2³² properties, or 2²⁸ distinct property names).
    #[error("partition too large for the in-memory layout ({what} exceed 32-bit offsets)")]
    PartitionTooLarge {
        /// Which arena overflowed.
        what: &'static str,
    },
}

impl From<NameOverflow> for MemoryError {
    fn from(_: NameOverflow) -> MemoryError {
        MemoryError::PartitionTooLarge {
            what: "property names",
        }
    }
}

/// When [`MemorySnapshot::with_changes`] folds the overlay into the compact base.
///
/// A partition is rebuilt once its overlay holds more than
/// `max(min_rows, (its base rows + base partitions) / divisor)` rows; the whole overlay is
/// folded in once it holds more than `max(min_rows, base rows / divisor)` rows and
/// partitions. A larger `divisor` keeps the overlay smaller (reads closer to the compact
/// layout's speed) and copies each written row more often (about `divisor` times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverlayLimits {
    /// The overlay size below which nothing is merged.
    pub min_rows: usize,
    /// The fraction (1 / `divisor`) of the base the overlay may reach.
    pub divisor: usize,
}

impl OverlayLimits {
    /// The defaults: `min_rows` 64, `divisor` 4 (measured in `benches/README.md`,
    /// section "memory").
    pub const DEFAULT: OverlayLimits = OverlayLimits {
        min_rows: 64,
        divisor: 4,
    };

    /// The most overlay rows (and partitions) a base of `base` rows may carry before
    /// merging.
    fn allowance(self, base: usize) -> usize {
        self.min_rows.max(base / self.divisor.max(1))
    }
}

impl Default for OverlayLimits {
    fn default() -> Self {
        OverlayLimits::DEFAULT
    }
}

/// Something that assigns numbers to property names (interning new ones): a table's own
/// list while bulk loading, a copy-on-write view of the shared list while writing.
pub(crate) trait NameTable {
    /// The number of `name`; `None` once the numbers are exhausted.
    fn intern(&mut self, name: &str) -> Option<u32>;
}

impl NameTable for Names {
    fn intern(&mut self, name: &str) -> Option<u32> {
        Names::intern(self, name)
    }
}

/// Copy-on-write interning for writes: the shared table is cloned only when a write brings
/// a property name it does not know.
impl NameTable for std::borrow::Cow<'_, Names> {
    fn intern(&mut self, name: &str) -> Option<u32> {
        match self.id(name) {
            Some(id) => Some(id),
            None => self.to_mut().push(name),
        }
    }
}

/// The compact part of a version: non-empty partitions sorted by PartitionKey (UTF-16
/// ordinal) and a hash index on their keys.
#[derive(Default)]
struct Base {
    partitions: Vec<Arc<Partition>>,
    /// PartitionKey → position in `partitions` (shared between bases with the same keys).
    by_key: Arc<HashMap<Arc<str>, u32>>,
    /// Rows in all partitions.
    len: usize,
}

impl Base {
    fn new(partitions: Vec<Arc<Partition>>, by_key: Option<Arc<HashMap<Arc<str>, u32>>>) -> Base {
        let by_key = by_key.unwrap_or_else(|| {
            Arc::new(
                partitions
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (p.shared_key().clone(), i as u32))
                    .collect(),
            )
        });
        let len = partitions.iter().map(|p| p.len()).sum();
        Base {
            partitions,
            by_key,
            len,
        }
    }

    fn partition(&self, key: &str) -> Option<&Arc<Partition>> {
        self.by_key.get(key).map(|&i| &self.partitions[i as usize])
    }

    /// This base with the partitions in `replaced` (sorted by key; `None` = now empty)
    /// in place of those with the same keys. `O(partitions)`.
    fn replace(&self, replaced: Vec<(Arc<str>, Option<Arc<Partition>>)>) -> Base {
        let mut partitions: Vec<Arc<Partition>> =
            Vec::with_capacity(self.partitions.len() + replaced.len());
        let mut old = self.partitions.iter().peekable();
        for (pk, part) in replaced {
            while let Some(p) = old.next_if(|p| compare_str(p.key(), &pk).is_lt()) {
                partitions.push(p.clone());
            }
            old.next_if(|p| p.key() == &*pk);
            partitions.extend(part);
        }
        partitions.extend(old.cloned());
        // The PartitionKey index only changes when partitions appear or disappear.
        let same_keys = partitions.len() == self.partitions.len()
            && partitions
                .iter()
                .zip(&self.partitions)
                .all(|(a, b)| a.key() == b.key());
        Base::new(partitions, same_keys.then(|| self.by_key.clone()))
    }
}

/// One immutable version of the table.
struct TableState {
    base: Arc<Base>,
    /// Recent writes by PartitionKey (see `overlay.rs`).
    overlay: Tree<PartitionOverlay>,
    /// Row entries in the overlay (all partitions).
    overlay_rows: usize,
    names: Arc<Names>,
    hasher: RandomState,
    /// Entities in this version.
    len: usize,
    /// Non-empty partitions in this version.
    partitions: usize,
    limits: OverlayLimits,
}

impl Default for TableState {
    fn default() -> Self {
        TableState {
            base: Arc::default(),
            overlay: Tree::default(),
            overlay_rows: 0,
            names: Arc::default(),
            hasher: RandomState::new(),
            len: 0,
            partitions: 0,
            limits: OverlayLimits::DEFAULT,
        }
    }
}

/// One immutable version of an in-memory table (see the module docs): the
/// [`EntitySource`](tableq_exec::EntitySource) the executor reads. Cheap to clone; holding one
/// keeps its version of the data alive.
#[derive(Clone, Default)]
pub struct MemorySnapshot {
    state: Arc<TableState>,
}

impl MemorySnapshot {
    /// An empty table.
    pub fn new() -> MemorySnapshot {
        MemorySnapshot::default()
    }

    /// A table holding these entities (a later entity with the same keys replaces an
    /// earlier one), all in the compact base. Streams: only the compact form is kept,
    /// never all input entities. Entities are stored as given: validate them first
    /// (`tableq_model::validate`) where the service's rules must hold.
    pub fn from_entities(
        entities: impl IntoIterator<Item = Entity>,
    ) -> Result<MemorySnapshot, MemoryError> {
        let mut names = Names::default();
        let mut builders: HashMap<String, PartitionBuilder> = HashMap::new();
        for e in entities {
            let b = match builders.get_mut(e.partition_key()) {
                Some(b) => b,
                None => builders
                    .entry(e.partition_key().to_owned())
                    .or_insert_with(|| PartitionBuilder::new(e.partition_key())),
            };
            b.push_entity(&e, &mut names)?;
        }
        let hasher = RandomState::new();
        let mut builders: Vec<(String, PartitionBuilder)> = builders.into_iter().collect();
        builders.sort_by(|a, b| compare_str(&a.0, &b.0));
        let mut partitions = Vec::with_capacity(builders.len());
        for (_, b) in builders {
            partitions.push(Arc::new(b.finish(&hasher)?));
        }
        let base = Base::new(partitions, None);
        Ok(MemorySnapshot {
            state: Arc::new(TableState {
                len: base.len,
                partitions: base.partitions.len(),
                base: Arc::new(base),
                names: Arc::new(names),
                hasher,
                ..TableState::default()
            }),
        })
    }

    /// This version with other overlay limits (for the versions derived from it).
    pub fn with_overlay_limits(&self, limits: OverlayLimits) -> MemorySnapshot {
        let s = &*self.state;
        MemorySnapshot {
            state: Arc::new(TableState {
                base: s.base.clone(),
                overlay: s.overlay.clone(),
                overlay_rows: s.overlay_rows,
                names: s.names.clone(),
                hasher: s.hasher.clone(),
                len: s.len,
                partitions: s.partitions,
                limits,
            }),
        }
    }

    /// The overlay limits of this version.
    pub fn overlay_limits(&self) -> OverlayLimits {
        self.state.limits
    }

    /// How many row entries (written rows and removals) the overlay holds: 0 for a
    /// bulk-loaded or fully merged version.
    pub fn overlay_rows(&self) -> usize {
        self.state.overlay_rows
    }
}

// Summaries, not contents: a table may hold millions of entities.
impl std::fmt::Debug for MemorySnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &*self.state;
        f.debug_struct("MemorySnapshot")
            .field("entities", &s.len)
            .field("partitions", &s.partitions)
            .field("overlay_rows", &s.overlay_rows)
            .field("names", &s.names)
            .finish()
    }
}

#[cfg(test)]
mod tests;
