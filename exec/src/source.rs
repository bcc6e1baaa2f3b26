//! The storage abstraction: [`EntitySource`], the rows it yields ([`SourceRow`]) and the
//! optional property-slot hook that lets compiled predicates skip name lookups.
//!
//! # Contract for implementors
//!
//! * **Order.** [`EntitySource::scan`] yields exactly the entities of the [`Scan`] — key in
//!   the rectangle `scan.range`, `>= scan.from`, `< scan.until` — in strictly ascending
//!   (PartitionKey, RowKey) order under the UTF-16 ordinal order
//!   ([`tableq_model::order::compare_str`]; Rust's `str::cmp` differs for supplementary-plane
//!   characters). [`Scan::contains`] is the reference for "in the scan".
//! * **Snapshots.** Every scan, split and get on one `&self` must observe one consistent
//!   state of the table: an entity is seen entirely before or entirely after a concurrent
//!   write, never half-written, and two scans of the same source value agree. The executor
//!   runs a page against one `&self`; to give each page a fresh view, make the source value a
//!   snapshot (as [`MemorySnapshot`](crate::MemorySnapshot) is) and take a new one per page.
//!   Entities inserted or deleted between pages are handled by the continuation protocol.
//! * **Splits.** [`EntitySource::split`] cuts the front of a scan into contiguous, ordered
//!   [`Chunk`]s that can be scanned independently and in parallel. The default returns the
//!   whole scan as one chunk (correct, only less parallel).
//! * **No I/O in the query crates.** A source backed by disk or network does its I/O inside
//!   these calls (blocking); tableq-exec itself never performs I/O and is not async.
//!
//! # Example: a `BTreeMap` store
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::ops::Bound;
//! use tableq_exec::{EntityRef, EntitySource, Executor, PageOptions, Scan};
//! use tableq_model::{order::OrdinalString, Entity, Value};
//! use tableq_planner::{plan::{KeyRange, KeySet, Plan}, predicate::Predicate};
//!
//! /// Entities keyed by (PartitionKey, RowKey) in UTF-16 ordinal order.
//! struct Store(BTreeMap<(OrdinalString, OrdinalString), Entity>);
//!
//! impl EntitySource for Store {
//!     type Row<'a> = EntityRef<'a>;
//!     type Rows<'a> = Box<dyn Iterator<Item = EntityRef<'a>> + 'a>;
//!
//!     fn scan<'a>(&'a self, scan: Scan<'a>) -> Self::Rows<'a> {
//!         // Start at the inclusive `from` key (if any); stop at the end of the PartitionKey
//!         // interval or at `until`, and skip keys outside the rectangle.
//!         let start = match scan.from {
//!             Some(k) => Bound::Included((
//!                 OrdinalString(k.partition_key.clone()),
//!                 OrdinalString(k.row_key.clone()),
//!             )),
//!             None => Bound::Unbounded,
//!         };
//!         Box::new(
//!             self.0
//!                 .range((start, Bound::Unbounded))
//!                 .map(|(_, e)| EntityRef(e))
//!                 .take_while(move |e| {
//!                     let pk = e.0.partition_key();
//!                     scan.range.partition_key.position(pk).is_le()
//!                         && scan.until.is_none_or(|u| u.cmp_pair(pk, e.0.row_key()).is_gt())
//!                 })
//!                 .filter(move |e| scan.contains(e.0.partition_key(), e.0.row_key())),
//!         )
//!     }
//!
//!     fn get<'a>(&'a self, partition_key: &str, row_key: &str) -> Option<EntityRef<'a>> {
//!         let key = (OrdinalString(partition_key.into()), OrdinalString(row_key.into()));
//!         self.0.get(&key).map(EntityRef)
//!     }
//! }
//!
//! let mut map = BTreeMap::new();
//! for i in 0..10 {
//!     let mut e = Entity::new("p", format!("r{i}"));
//!     e.set("Age", Value::Int32(i));
//!     map.insert((OrdinalString("p".into()), OrdinalString(format!("r{i}"))), e);
//! }
//! let store = Store(map);
//! let plan = Plan {
//!     ranges: KeySet::all(),
//!     residual: Predicate::TRUE,
//!     select: None,
//!     top: Some(4),
//! };
//! let page = Executor::new(&store).execute_page(&plan, None, &PageOptions::default()).unwrap();
//! assert_eq!(page.rows.len(), 4);
//! assert_eq!(page.continuation.unwrap().row_key, "r4");
//! ```

use crate::key::{Chunk, Scan};
use tableq_model::{DateTime, Entity, EntityView, ValueRef};

/// An identifier a source assigns to a custom property name, so that compiled predicates
/// resolve each name once per query instead of once per entity. Its meaning is private to
/// the source that issued it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PropertySlot(pub u32);

/// What a source knows about a property name, for compiled predicates
/// ([`EntitySource::property_slot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotLookup {
    /// Read the property through [`SourceRow::custom_by_slot`] with this slot.
    Slot(PropertySlot),
    /// No entity of the source has a property of this name (every comparison on it is
    /// false without reading a row).
    Absent,
    /// The source has no slots: read the property by name ([`EntityView::custom`]).
    ByName,
}

/// One entity as a source yields it: readable through [`EntityView`], convertible to an
/// owned [`Entity`] for results.
pub trait SourceRow: EntityView + Send + Sync {
    /// The entity as an owned value (what result pages hold).
    fn to_entity(&self) -> Entity;

    /// Calls `f` with every custom property, ordered by name (byte order, as
    /// [`Entity::properties`]). The default goes through [`to_entity`](SourceRow::to_entity);
    /// sources override it to read their layout without allocating.
    fn for_each_property(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        let entity = self.to_entity();
        for p in entity.properties() {
            f(&p.name, p.value.as_ref());
        }
    }

    /// A custom property by a slot the source issued through
    /// [`EntitySource::property_slot`]. Sources that return [`SlotLookup::Slot`] must
    /// implement this; the default (for sources without slots) answers `None`.
    fn custom_by_slot(&self, slot: PropertySlot) -> Option<ValueRef<'_>> {
        let _ = slot;
        None
    }
}

/// An ordered store of entities the executor can query. See the module docs for the
/// contract (order, snapshot consistency, splits) and an example implementation.
pub trait EntitySource: Sync {
    /// The row representation scans yield (often a borrowed view into the store).
    type Row<'a>: SourceRow
    where
        Self: 'a;

    /// The iterator [`scan`](EntitySource::scan) returns.
    type Rows<'a>: Iterator<Item = Self::Row<'a>>
    where
        Self: 'a;

    /// Every entity of `scan`, in ascending key order (see the module docs).
    fn scan<'a>(&'a self, scan: Scan<'a>) -> Self::Rows<'a>;

    /// The entity with exactly these keys.
    fn get<'a>(&'a self, partition_key: &str, row_key: &str) -> Option<Self::Row<'a>>;

    /// Cuts the front of `scan` into at most `max_chunks` contiguous chunks of about
    /// `chunk_rows` entities each, in key order, for parallel scanning.
    ///
    /// The chunks must cover the scan from its start without gaps or overlap:
    /// `chunks[0].from` is `None` or a key `<=` the scan's first entity, and each
    /// `chunks[i].until == chunks[i + 1].from`. The last chunk's `until` is `None` when the
    /// chunks reach the end of the scan; otherwise the executor asks again for the rest,
    /// starting there. An empty vector means the scan holds no entity.
    ///
    /// The default returns one chunk: the whole scan.
    fn split(&self, scan: Scan<'_>, chunk_rows: usize, max_chunks: usize) -> Vec<Chunk> {
        let _ = (chunk_rows, max_chunks);
        vec![Chunk {
            from: scan.from.cloned(),
            until: scan.until.cloned(),
            rows: None,
        }]
    }

    /// Resolves a custom property name once per query (see [`SlotLookup`]). The default:
    /// [`SlotLookup::ByName`].
    fn property_slot(&self, name: &str) -> SlotLookup {
        let _ = name;
        SlotLookup::ByName
    }
}

/// A borrowed [`Entity`] as a [`SourceRow`]: the row type for stores that keep `Entity`
/// values (see the module example).
#[derive(Debug, Clone, Copy)]
pub struct EntityRef<'a>(pub &'a Entity);

impl EntityView for EntityRef<'_> {
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
        EntityView::custom(self.0, name)
    }
}

impl SourceRow for EntityRef<'_> {
    fn to_entity(&self) -> Entity {
        self.0.clone()
    }
    fn for_each_property(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        for p in self.0.properties() {
            f(&p.name, p.value.as_ref());
        }
    }
}

impl SourceRow for Entity {
    fn to_entity(&self) -> Entity {
        self.clone()
    }
    fn for_each_property(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        for p in self.properties() {
            f(&p.name, p.value.as_ref());
        }
    }
}
