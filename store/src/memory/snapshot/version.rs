//! One immutable version of an in-memory table ([`MemorySnapshot`]): the compact base
//! (partitions sorted by PartitionKey, with a hash index on their keys), the write overlay
//! over it, the table's property names and counts, and the [`OverlayLimits`] that decide
//! when the overlay is merged. Building a version from entities (a bulk load) is here;
//! deriving one from changes is `changes.rs`, reading one `read.rs`.

use super::overlay::PartitionOverlay;
use super::partition::{MemoryError, Partition, PartitionBuilder};
use crate::codec::Names;
use crate::tree::Tree;
use std::collections::HashMap;
use std::hash::RandomState;
use std::sync::Arc;
use tableq_model::Entity;
use tableq_model::order::compare_str;

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
    pub(crate) fn allowance(self, base: usize) -> usize {
        self.min_rows.max(base / self.divisor.max(1))
    }
}

impl Default for OverlayLimits {
    fn default() -> Self {
        OverlayLimits::DEFAULT
    }
}

/// The compact part of a version: non-empty partitions sorted by PartitionKey (UTF-16
/// ordinal) and a hash index on their keys.
#[derive(Default)]
pub(crate) struct Base {
    pub(crate) partitions: Vec<Arc<Partition>>,
    /// PartitionKey → position in `partitions` (shared between bases with the same keys).
    pub(crate) by_key: Arc<HashMap<Arc<str>, u32>>,
    /// Rows in all partitions.
    pub(crate) len: usize,
}

impl Base {
    pub(crate) fn new(
        partitions: Vec<Arc<Partition>>,
        by_key: Option<Arc<HashMap<Arc<str>, u32>>>,
    ) -> Base {
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

    pub(crate) fn partition(&self, key: &str) -> Option<&Arc<Partition>> {
        self.by_key.get(key).map(|&i| &self.partitions[i as usize])
    }

    /// This base with the partitions in `replaced` (sorted by key; `None` = now empty)
    /// in place of those with the same keys. `O(partitions)`.
    pub(crate) fn replace(&self, replaced: Vec<(Arc<str>, Option<Arc<Partition>>)>) -> Base {
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
pub(crate) struct TableState {
    pub(crate) base: Arc<Base>,
    /// Recent writes by PartitionKey (see `overlay.rs`).
    pub(crate) overlay: Tree<PartitionOverlay>,
    /// Row entries in the overlay (all partitions).
    pub(crate) overlay_rows: usize,
    pub(crate) names: Arc<Names>,
    pub(crate) hasher: RandomState,
    /// Entities in this version.
    pub(crate) len: usize,
    /// Non-empty partitions in this version.
    pub(crate) partitions: usize,
    pub(crate) limits: OverlayLimits,
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
    pub(crate) state: Arc<TableState>,
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
