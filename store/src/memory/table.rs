//! [`MemoryTable`]: one writable in-memory table — the current version (an immutable
//! [`MemorySnapshot`]) behind a lock, and the lock that serialises its
//! writers.
//!
//! * **Readers** take [`MemoryTable::snapshot`]: a reference-count increment under a read
//!   lock held for that instant. The snapshot then stays one consistent version for as long
//!   as it is held, whatever is written meanwhile (a query page reads one version).
//! * **Writers** take the writer lock ([`MemoryTable::writer`]), read the current version,
//!   decide their changes (the store's semantics, [`crate::resolve()`]), and
//!   [`commit`](MemoryWriter::commit) them: the next version is derived
//!   ([`MemorySnapshot::with_changes`], `O(log n)` per changed row amortised) and swapped in
//!   atomically. Readers never see part of a write, and never block a writer beyond that
//!   pointer swap; writers never wait for readers.
//!
//! ```
//! use tableq_model::Entity;
//! use tableq_store::{Change, memory::MemoryTable};
//!
//! let table = MemoryTable::new();
//! table.apply([Change::Put(Entity::new("p", "a")), Change::Put(Entity::new("p", "b"))]).unwrap();
//! let before = table.snapshot();
//! let writer = table.writer();
//! assert_eq!(writer.current().len(), 2);
//! writer.commit([Change::Delete { partition_key: "p".into(), row_key: "a".into() }]).unwrap();
//! assert_eq!((before.len(), table.snapshot().len()), (2, 1));
//! ```

use super::{MemoryError, MemorySnapshot};
use crate::resolve::Change;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

/// A writable in-memory table (see the module docs).
#[derive(Debug, Default)]
pub struct MemoryTable {
    current: RwLock<MemorySnapshot>,
    writer: Mutex<()>,
}

/// Exclusive write access to a [`MemoryTable`]: holds its writer lock until committed or
/// dropped (dropping without committing writes nothing).
#[derive(Debug)]
pub struct MemoryWriter<'a> {
    table: &'a MemoryTable,
    current: MemorySnapshot,
    _lock: MutexGuard<'a, ()>,
}

impl MemoryTable {
    /// An empty table.
    pub fn new() -> MemoryTable {
        MemoryTable::default()
    }

    /// A table whose current version is `snapshot` (e.g. bulk-loaded with
    /// [`MemorySnapshot::from_entities`]).
    pub fn from_snapshot(snapshot: MemorySnapshot) -> MemoryTable {
        MemoryTable {
            current: RwLock::new(snapshot),
            writer: Mutex::new(()),
        }
    }

    /// The current version.
    pub fn snapshot(&self) -> MemorySnapshot {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits for exclusive write access.
    pub fn writer(&self) -> MemoryWriter<'_> {
        let lock = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        MemoryWriter {
            table: self,
            current: self.snapshot(),
            _lock: lock,
        }
    }

    /// Applies `changes` atomically (a writer's [`commit`](MemoryWriter::commit) without
    /// reading first).
    pub fn apply(&self, changes: impl IntoIterator<Item = Change>) -> Result<(), MemoryError> {
        self.writer().commit(changes).map(drop)
    }
}

impl MemoryWriter<'_> {
    /// The version the write starts from: no other writer changes the table while this
    /// writer exists.
    pub fn current(&self) -> &MemorySnapshot {
        &self.current
    }

    /// Derives the next version with `changes` (a put replaces, a delete of a missing key
    /// does nothing; of several changes to one key the last wins), makes it current, and
    /// returns it. On error nothing changes.
    pub fn commit(
        self,
        changes: impl IntoIterator<Item = Change>,
    ) -> Result<MemorySnapshot, MemoryError> {
        let next = self.current.with_changes(changes)?;
        let previous = std::mem::replace(
            &mut *self
                .table
                .current
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            next.clone(),
        );
        // The old version is released here, outside the lock (if no reader holds it, its
        // unshared parts are freed now).
        drop(previous);
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::{EntityView, Value};

    fn put(pk: &str, rk: &str, v: i32) -> Change {
        let mut e = tableq_model::Entity::new(pk, rk);
        e.set("V", Value::Int32(v));
        Change::Put(e)
    }

    #[test]
    fn a_writer_that_does_not_commit_writes_nothing() {
        let table = MemoryTable::new();
        table.apply([put("p", "a", 1)]).unwrap();
        {
            let writer = table.writer();
            assert_eq!(writer.current().len(), 1);
        }
        table.apply([put("p", "b", 2)]).unwrap();
        assert_eq!(table.snapshot().len(), 2);
    }

    #[test]
    fn batches_are_atomic_under_concurrent_readers() {
        let table = MemoryTable::new();
        table
            .apply((0..500).map(|i| put(&format!("p{}", i % 5), &format!("r{i:04}"), 0)))
            .unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                // Each commit bumps every entity of one partition to the same version,
                // one entity at a time within one write.
                for version in 1..60 {
                    let writer = table.writer();
                    let pk = format!("p{}", version % 5);
                    let batch: Vec<Change> = writer
                        .current()
                        .iter()
                        .filter(|r| r.partition_key() == pk)
                        .map(|r| put(&pk, r.row_key(), version))
                        .collect();
                    writer.commit(batch).unwrap();
                }
            });
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..60 {
                        let snapshot = table.snapshot();
                        assert_eq!(snapshot.len(), 500);
                        for p in 0..5 {
                            let pk = format!("p{p}");
                            let versions: std::collections::BTreeSet<String> = snapshot
                                .iter()
                                .filter(|r| r.partition_key() == pk)
                                .map(|r| format!("{:?}", r.custom("V")))
                                .collect();
                            assert_eq!(versions.len(), 1, "{versions:?}");
                        }
                    }
                });
            }
        });
    }
}
