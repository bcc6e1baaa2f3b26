//! Deriving versions: [`MemorySnapshot::with_changes`] puts changes into the overlay (a
//! block per partition and write, `O(log n)` per changed row) and merges a partition's
//! overlay into the base when it outgrows its share; [`MemorySnapshot::compacted`] merges
//! all of it. The invariants the derivation keeps are listed in `overlay.rs`.

use super::overlay::{PartitionOverlay, RowEntry, merge_partition};
use super::partition::{MemoryError, Partition, PartitionBuilder};
use super::version::{MemorySnapshot, TableState};
use crate::codec::Names;
use crate::resolve::Change;
use crate::tree::Tree;
use std::borrow::Cow;
use std::sync::Arc;
use tableq_exec::compare_keys;

/// Where a change leaves its key, and whether the overlay must record it.
struct Counted {
    existed: bool,
    exists: bool,
}

impl MemorySnapshot {
    /// A new version: this one with `changes` applied (in any order; of several changes to
    /// one key the last wins), sharing everything they do not touch. The changes go to the
    /// overlay (`O(log n)` each) and may trigger a merge of the overlay into the compact
    /// base (see [`OverlayLimits`](super::OverlayLimits)), so that a stream of single
    /// changes costs `O(log n)` amortised per change.
    ///
    /// `self` is unchanged. The only error is a partition outgrowing the layout
    /// ([`MemoryError::PartitionTooLarge`]); then no version is made.
    pub fn with_changes(
        &self,
        changes: impl IntoIterator<Item = Change>,
    ) -> Result<MemorySnapshot, MemoryError> {
        let mut changes: Vec<Change> = changes.into_iter().collect();
        if changes.is_empty() {
            return Ok(self.clone());
        }
        // Stable: equal keys keep their order, and the last of them wins.
        if changes.windows(2).any(|w| key_order(&w[0], &w[1]).is_ge()) {
            changes.sort_by(key_order);
            let mut kept: Vec<Change> = Vec::with_capacity(changes.len());
            for c in changes {
                match kept.last_mut() {
                    Some(last) if last.keys() == c.keys() => *last = c,
                    _ => kept.push(c),
                }
            }
            changes = kept;
        }
        let state = &*self.state;
        let limits = state.limits;
        let mut names: Cow<'_, Names> = Cow::Borrowed(&state.names);
        let mut overlay = state.overlay.clone();
        let mut overlay_rows = state.overlay_rows;
        let mut len = state.len;
        let mut partitions = state.partitions;
        let mut merged: Vec<(Arc<str>, Option<Arc<Partition>>)> = Vec::new();
        let mut rest: &[Change] = &changes;
        while let Some(first) = rest.first() {
            let key = first.keys().0;
            let n = rest.iter().take_while(|c| c.keys().0 == key).count();
            let (group, after) = rest.split_at(n);
            rest = after;
            let base = state.base.partition(key).map(|p| &**p);
            let mut po = match overlay.get(key) {
                Some(po) => po.clone(),
                None => PartitionOverlay {
                    key: base.map_or_else(|| Arc::from(key), |b| b.shared_key().clone()),
                    rows: Tree::default(),
                    live: base.map_or(0, Partition::len),
                },
            };
            let (live_before, rows_before) = (po.live, po.rows.len());
            let mut b = PartitionBuilder::with_key(po.key.clone());
            for c in group {
                match c {
                    Change::Put(e) => {
                        b.reserve_entity(e);
                        b.push_entity(e, &mut names)?
                    }
                    Change::Delete { row_key, .. } => b.push_key(row_key)?,
                }
            }
            let block = Arc::new(b.finish_block());
            for (i, c) in group.iter().enumerate() {
                let row = u32::try_from(i)
                    .map_err(|_| MemoryError::PartitionTooLarge { what: "rows" })?;
                let row_key = block.row_key(i);
                let entry = po.rows.get(row_key);
                let counted = Counted {
                    existed: match entry {
                        Some(e) => !e.removed,
                        None => base.is_some_and(|b| b.find(&state.hasher, row_key).is_some()),
                    },
                    exists: matches!(c, Change::Put(_)),
                };
                // A removal of a key that holds nothing and hides nothing needs no entry.
                if counted.exists || counted.existed || entry.is_some() {
                    po.rows.insert(RowEntry {
                        block: block.clone(),
                        row,
                        removed: !counted.exists,
                    });
                }
                match (counted.existed, counted.exists) {
                    (false, true) => po.live += 1,
                    (true, false) => po.live -= 1,
                    _ => {}
                }
            }
            len = len + po.live - live_before;
            partitions = partitions + usize::from(po.live > 0) - usize::from(live_before > 0);
            overlay_rows = overlay_rows + po.rows.len() - rows_before;
            let rebuild = base.map_or(0, Partition::len) + state.base.partitions.len();
            if po.rows.len() > limits.allowance(rebuild) {
                merged.push((
                    po.key.clone(),
                    merge_partition(&po.key, base, &po.rows, &state.hasher)?,
                ));
                overlay_rows -= po.rows.len();
                po.rows = Tree::default();
            }
            overlay.insert(po);
        }
        let base = if merged.is_empty() {
            state.base.clone()
        } else {
            Arc::new(state.base.replace(merged))
        };
        let names = match names {
            Cow::Borrowed(_) => state.names.clone(),
            Cow::Owned(n) => Arc::new(n),
        };
        let mut next = TableState {
            base,
            overlay,
            overlay_rows,
            names,
            hasher: state.hasher.clone(),
            len,
            partitions,
            limits,
        };
        if overlay_rows + next.overlay.len() > limits.allowance(next.base.len) {
            next = merge_all(next)?;
        }
        Ok(MemorySnapshot {
            state: Arc::new(next),
        })
    }

    /// This version with the whole overlay merged into the compact base (reads then run at
    /// the speed of a bulk-loaded table). `O(rows of the partitions written + partitions)`.
    pub fn compacted(&self) -> Result<MemorySnapshot, MemoryError> {
        let s = &*self.state;
        if s.overlay.is_empty() {
            return Ok(self.clone());
        }
        let state = TableState {
            base: s.base.clone(),
            overlay: s.overlay.clone(),
            overlay_rows: s.overlay_rows,
            names: s.names.clone(),
            hasher: s.hasher.clone(),
            len: s.len,
            partitions: s.partitions,
            limits: s.limits,
        };
        Ok(MemorySnapshot {
            state: Arc::new(merge_all(state)?),
        })
    }
}

fn key_order(a: &Change, b: &Change) -> std::cmp::Ordering {
    let ((pa, ra), (pb, rb)) = (a.keys(), b.keys());
    compare_keys(pa, ra, pb, rb)
}

/// `state` with every partition that has overlay rows rebuilt, and no overlay.
fn merge_all(mut state: TableState) -> Result<TableState, MemoryError> {
    let mut merged: Vec<(Arc<str>, Option<Arc<Partition>>)> = Vec::new();
    for po in state.overlay.iter() {
        if po.rows.is_empty() {
            continue;
        }
        let base = state.base.partition(&po.key).map(|p| &**p);
        merged.push((
            po.key.clone(),
            merge_partition(&po.key, base, &po.rows, &state.hasher)?,
        ));
    }
    if !merged.is_empty() {
        state.base = Arc::new(state.base.replace(merged));
    }
    state.overlay = Tree::default();
    state.overlay_rows = 0;
    debug_assert_eq!(state.len, state.base.len);
    debug_assert_eq!(state.partitions, state.base.partitions.len());
    Ok(state)
}
