//! [`MemorySnapshot`]: an immutable version of an in-memory table that holds millions of
//! entities compactly, answers point lookups in well under a microsecond at any size, and
//! derives its next version cheaply ([`MemorySnapshot::with_changes`]). It is the
//! [`EntitySource`](tableq_exec::EntitySource) of the memory engine and of `tableq eval`.
//!
//! This module owns the *storage layout* of the memory engine and nothing else: it stores
//! the [`Change`](crate::Change)s it is given. What a write means (insert vs replace, conditions,
//! Timestamps) is [`crate::resolve()`]'s, and how concurrent writers are serialised is
//! [`MemoryTable`](super::MemoryTable)'s (it keeps the current version of a table and swaps
//! in the next one). Property values are stored with the store's row codec
//! (`crate::codec`, shared with the durable engine's blocks).
//!
//! # Design
//!
//! * **The base: immutable compact partitions** (see `partition.rs`, the version that
//!   holds them `version.rs`): rows sorted by
//!   RowKey in contiguous arenas — a 24-byte header and one 12-byte slot per property,
//!   strings and bytes in shared per-partition buffers — plus a RowKey hash index.
//!   Property names are interned table-wide to `u32` ids (`crate::codec::Names`), which
//!   compiled predicates use directly ([`SlotLookup::Slot`](tableq_exec::SlotLookup::Slot)). The base directory is a
//!   sorted vector of partitions plus a hash map PartitionKey → position: a point lookup
//!   is two hash probes; a scan walks partitions in key order. [`MemorySnapshot::from_entities`]
//!   builds a base directly (bulk load).
//! * **Columns** (see `crate::codec::ColumnSet`): a base partition also keeps each dense,
//!   single-typed fixed-width property (Int32, Int64, Double, Boolean, DateTime) as a
//!   typed array with a presence map, so that a scan tests a residual a column at a time
//!   ([`tableq_exec::batch`], [`EntitySource::scan_filtered`](tableq_exec::EntitySource::scan_filtered))
//!   and reads rows only for its matches. A second copy of those values, built by the
//!   first scan that needs it (never by a write).
//! * **The overlay: recent writes** (see `overlay.rs`; deriving versions: `changes.rs`), a
//!   two-level persistent B-tree (PartitionKey → RowKey → row or removal, `tree.rs`). The rows of one write are one
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

mod changes;
mod overlay;
mod partition;
mod read;
mod version;

pub use partition::MemoryError;
pub use read::{MemoryRow, MemoryRows};
pub use version::{MemorySnapshot, OverlayLimits};

#[cfg(test)]
mod tests;
