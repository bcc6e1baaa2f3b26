//! [`MemorySource`]: an in-memory table that holds millions of entities compactly, answers
//! point lookups in well under a microsecond at any size, and lets readers work on
//! consistent snapshots while writers proceed.
//!
//! # Design
//!
//! * **Partitions are immutable blocks** (see `partition.rs`): rows sorted by RowKey in
//!   contiguous arenas — a 24-byte header and one 12-byte slot per property, strings and
//!   bytes in shared per-partition buffers — plus a RowKey hash index. Property names are
//!   interned table-wide to `u32` ids, which compiled predicates use directly
//!   ([`SlotLookup::Slot`](crate::SlotLookup::Slot)).
//! * **The table** is a sorted vector of `Arc<Partition>` plus a hash map PartitionKey →
//!   position. A point lookup is two hash probes; a scan walks partitions in key order.
//! * **Snapshots and writes**: the whole table state sits behind an `Arc`. A reader's
//!   [`MemorySource::snapshot`] clones that `Arc` (a few nanoseconds under a read lock) and
//!   then sees one consistent state for as long as it holds it. Writers are serialised; a
//!   write builds new versions of the partitions it touches (copy-on-write, sharing every
//!   other partition) and swaps the state in atomically. Readers never block writers beyond
//!   the pointer swap, and never see a partial write or batch.
//! * **Write cost**: a single write copies the affected partition (`O(rows in it)`) and the
//!   partition directory (`O(partitions)`). Use [`MemorySource::apply`] to batch writes (each
//!   touched partition is rebuilt once) and [`MemorySource::from_entities`] for bulk loads.
//!   This favours scan speed and memory over single-write latency; a server with heavy
//!   random writes to huge partitions wants a different store behind [`EntitySource`](crate::EntitySource).
//!
//! ```
//! use tableq_exec::MemorySource;
//! use tableq_model::{Entity, Value};
//!
//! let table = MemorySource::new();
//! let mut e = Entity::new("p1", "r1");
//! e.set("Age", Value::Int32(7));
//! table.insert(e).unwrap();
//! let snapshot = table.snapshot();
//! table.delete("p1", "r1"); // the snapshot still sees the entity
//! assert!(snapshot.get("p1", "r1").is_some());
//! assert!(table.snapshot().get("p1", "r1").is_none());
//! ```

mod partition;
mod snapshot;

pub use snapshot::{MemoryRow, MemoryRows};

use crate::source::SourceRow;
use partition::{Partition, PartitionBuilder};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::hash::RandomState;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use tableq_model::Entity;
use tableq_model::order::{OrdinalString, compare_str};

/// Why a write to a [`MemorySource`] failed. A failed write or batch changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// An insert found an entity with the same keys.
    #[error("an entity with PartitionKey {partition_key:?} and RowKey {row_key:?} already exists")]
    AlreadyExists {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
    /// A delete in a batch found no entity with these keys.
    #[error("no entity with PartitionKey {partition_key:?} and RowKey {row_key:?}")]
    NotFound {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
    /// A partition outgrew the 32-bit offsets of the layout (4 GiB of strings or of bytes,
    /// or 2³² properties, or 2²⁸ distinct property names).
    #[error("partition too large for the in-memory layout ({what} exceed 32-bit offsets)")]
    PartitionTooLarge {
        /// Which arena overflowed.
        what: &'static str,
    },
}

/// One write of a batch ([`MemorySource::apply`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Insert a new entity; fails if one with the same keys exists.
    Insert(Entity),
    /// Insert or replace (the stored entity becomes exactly this one).
    Upsert(Entity),
    /// Delete an entity; fails if none has these keys.
    Delete {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
}

/// Interned custom property names (append-only: ids never change).
#[derive(Clone, Default)]
pub(crate) struct Names {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Names {
    pub(crate) fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }
}

/// Something that assigns ids to property names (interning new ones).
pub(crate) trait NameTable {
    fn intern(&mut self, name: &str) -> u32;
}

impl NameTable for Names {
    fn intern(&mut self, name: &str) -> u32 {
        Names::intern(self, name)
    }
}

/// Copy-on-write interning for writes: the shared table is cloned only when a write brings
/// a property name it does not know.
impl NameTable for std::borrow::Cow<'_, Names> {
    fn intern(&mut self, name: &str) -> u32 {
        match self.id(name) {
            Some(id) => id,
            None => self.to_mut().intern(name),
        }
    }
}

/// One immutable version of the table.
#[derive(Default)]
struct TableState {
    /// Non-empty partitions sorted by PartitionKey (UTF-16 ordinal).
    partitions: Vec<Arc<Partition>>,
    /// PartitionKey → position in `partitions` (shared between versions with the same
    /// partitions).
    by_key: Arc<HashMap<Box<str>, u32>>,
    names: Arc<Names>,
    hasher: RandomState,
    len: usize,
}

impl TableState {
    fn with(
        partitions: Vec<Arc<Partition>>,
        names: Arc<Names>,
        hasher: RandomState,
        by_key: Option<Arc<HashMap<Box<str>, u32>>>,
    ) -> TableState {
        let by_key = by_key.unwrap_or_else(|| {
            Arc::new(
                partitions
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (Box::from(p.key()), i as u32))
                    .collect(),
            )
        });
        let len = partitions.iter().map(|p| p.len()).sum();
        TableState {
            partitions,
            by_key,
            names,
            hasher,
            len,
        }
    }

    fn partition(&self, key: &str) -> Option<&Arc<Partition>> {
        self.by_key.get(key).map(|&i| &self.partitions[i as usize])
    }
}

/// An in-memory, concurrently readable table (see the module docs).
#[derive(Debug, Default)]
pub struct MemorySource {
    state: RwLock<Arc<TableState>>,
    writer: Mutex<()>,
}

/// A consistent, immutable view of a [`MemorySource`]: the [`EntitySource`](crate::EntitySource) the executor
/// reads. Cheap to create and to clone; holding one keeps its version of the data alive.
#[derive(Debug, Clone)]
pub struct MemorySnapshot {
    state: Arc<TableState>,
}

impl MemorySource {
    /// An empty table.
    pub fn new() -> MemorySource {
        MemorySource::default()
    }

    /// A table holding these entities (a later entity with the same keys replaces an
    /// earlier one). Streams: only the compact form is kept, never all input entities.
    /// Entities are stored as given: validate them first (`tableq_model::validate`) where
    /// the service's rules must hold.
    pub fn from_entities(
        entities: impl IntoIterator<Item = Entity>,
    ) -> Result<MemorySource, MemoryError> {
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
        let state = TableState::with(partitions, Arc::new(names), hasher, None);
        Ok(MemorySource {
            state: RwLock::new(Arc::new(state)),
            writer: Mutex::new(()),
        })
    }

    /// A consistent view of the current contents.
    pub fn snapshot(&self) -> MemorySnapshot {
        let state = self
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        MemorySnapshot { state }
    }

    /// The number of entities.
    pub fn len(&self) -> usize {
        self.snapshot().len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entity with these keys, as an owned value.
    pub fn get(&self, partition_key: &str, row_key: &str) -> Option<Entity> {
        self.snapshot()
            .get(partition_key, row_key)
            .map(|r| r.to_entity())
    }

    /// Inserts a new entity; fails with [`MemoryError::AlreadyExists`] if its keys are taken.
    pub fn insert(&self, entity: Entity) -> Result<(), MemoryError> {
        self.apply([Write::Insert(entity)])
    }

    /// Inserts or replaces an entity.
    pub fn upsert(&self, entity: Entity) -> Result<(), MemoryError> {
        self.apply([Write::Upsert(entity)])
    }

    /// Deletes an entity; returns whether it existed.
    pub fn delete(&self, partition_key: &str, row_key: &str) -> bool {
        let write = Write::Delete {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
        };
        self.apply([write]).is_ok()
    }

    /// Applies writes in order, atomically: readers see all of them or none, and if one
    /// fails nothing is applied. Each touched partition is rebuilt once.
    pub fn apply(&self, writes: impl IntoIterator<Item = Write>) -> Result<(), MemoryError> {
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let current = self.snapshot().state;
        // Per partition: RowKey → the entity it will hold (None = deleted).
        let mut pending: BTreeMap<OrdinalString, BTreeMap<OrdinalString, Option<Entity>>> =
            BTreeMap::new();
        for write in writes {
            let (pk, rk, new) = match write {
                Write::Insert(e) => {
                    let exists = exists(&current, &pending, e.partition_key(), e.row_key());
                    if exists {
                        return Err(MemoryError::AlreadyExists {
                            partition_key: e.partition_key().into(),
                            row_key: e.row_key().into(),
                        });
                    }
                    (
                        e.partition_key().to_owned(),
                        e.row_key().to_owned(),
                        Some(e),
                    )
                }
                Write::Upsert(e) => (
                    e.partition_key().to_owned(),
                    e.row_key().to_owned(),
                    Some(e),
                ),
                Write::Delete {
                    partition_key,
                    row_key,
                } => {
                    if !exists(&current, &pending, &partition_key, &row_key) {
                        return Err(MemoryError::NotFound {
                            partition_key,
                            row_key,
                        });
                    }
                    (partition_key, row_key, None)
                }
            };
            pending
                .entry(OrdinalString(pk))
                .or_default()
                .insert(OrdinalString(rk), new);
        }
        if pending.is_empty() {
            return Ok(());
        }
        let mut names: std::borrow::Cow<'_, Names> = std::borrow::Cow::Borrowed(&current.names);
        let mut replaced: Vec<(String, Option<Arc<Partition>>)> = Vec::with_capacity(pending.len());
        for (OrdinalString(pk), changes) in pending {
            let old = current.partition(&pk);
            let mut b = PartitionBuilder::new(&pk);
            let mut next_old = 0;
            let old_len = old.map_or(0, |p| p.len());
            for (OrdinalString(rk), change) in &changes {
                if let Some(old) = old {
                    let stop = old.lower_bound(rk, false);
                    for i in next_old..stop {
                        b.push_row(old, i)?;
                    }
                    next_old = stop;
                    if next_old < old_len && old.row_key(next_old) == rk {
                        next_old += 1; // replaced or deleted
                    }
                }
                if let Some(e) = change {
                    b.push_entity(e, &mut names)?;
                }
            }
            if let Some(old) = old {
                for i in next_old..old_len {
                    b.push_row(old, i)?;
                }
            }
            let part = if b.is_empty() {
                None
            } else {
                Some(Arc::new(b.finish(&current.hasher)?))
            };
            replaced.push((pk, part));
        }
        // Merge the new partition versions into the directory, keeping PartitionKey order.
        let mut partitions: Vec<Arc<Partition>> =
            Vec::with_capacity(current.partitions.len() + replaced.len());
        let mut old = current.partitions.iter().peekable();
        for (pk, part) in replaced {
            while let Some(p) = old.next_if(|p| compare_str(p.key(), &pk) == Ordering::Less) {
                partitions.push(p.clone());
            }
            old.next_if(|p| p.key() == pk);
            partitions.extend(part);
        }
        partitions.extend(old.cloned());
        let names = match names {
            std::borrow::Cow::Borrowed(_) => current.names.clone(),
            std::borrow::Cow::Owned(n) => Arc::new(n),
        };
        // The PartitionKey index only changes when partitions appear or disappear.
        let by_key = if partitions.len() == current.partitions.len()
            && partitions
                .iter()
                .zip(&current.partitions)
                .all(|(a, b)| a.key() == b.key())
        {
            Some(current.by_key.clone())
        } else {
            None
        };
        let state = TableState::with(partitions, names, current.hasher.clone(), by_key);
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(state);
        Ok(())
    }
}

fn exists(
    current: &TableState,
    pending: &BTreeMap<OrdinalString, BTreeMap<OrdinalString, Option<Entity>>>,
    pk: &str,
    rk: &str,
) -> bool {
    let staged = pending
        .get(&OrdinalString(pk.to_owned()))
        .and_then(|rows| rows.get(&OrdinalString(rk.to_owned())));
    match staged {
        Some(change) => change.is_some(),
        None => current
            .partition(pk)
            .is_some_and(|p| p.find(&current.hasher, rk).is_some()),
    }
}

// Summaries, not contents: a table may hold millions of entities.
impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Names")
            .field("count", &self.names.len())
            .finish()
    }
}

impl std::fmt::Debug for TableState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableState")
            .field("entities", &self.len)
            .field("partitions", &self.partitions.len())
            .field("names", &self.names)
            .finish()
    }
}

#[cfg(test)]
mod tests;
