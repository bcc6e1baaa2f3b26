//! The in-memory engine (`tableq serve --in-memory`, and `tableq eval`'s table):
//!
//! * [`MemorySnapshot`] (`snapshot/`) — one immutable version of a table in a compact
//!   layout (partitions of row arrays plus a persistent write overlay), the
//!   [`EntitySource`](tableq_exec::EntitySource) queries run on;
//! * [`MemoryTable`] (`table.rs`) — one writable table: its current version and the lock
//!   that serialises its writers;
//! * [`MemoryBackend`] (this file) — the catalog of tables, written through the shared
//!   semantics of [`crate::resolve()`]. Nothing survives the process.
//!
//! # The write path
//!
//! [`Backend::write_batch`] (and [`Backend::write`], a batch of one):
//!
//! 1. finds the table (a read lock on the catalog) and takes its writer lock
//!    ([`MemoryTable::writer`]): writers of one table are serialised, writers of different
//!    tables are not;
//! 2. resolves the operations against the version current at that moment
//!    ([`crate::resolve()`]: validation, existence and `If-Match` checks, merge, one
//!    Timestamp for the batch) — reads of that version are point gets;
//! 3. commits the resulting puts and deletes ([`MemoryWriter::commit`]): the next version
//!    is derived with [`MemorySnapshot::with_changes`] and swapped in atomically.
//!
//! Readers (gets, query pages) work on the version current when they start and never wait
//! for a writer beyond that pointer swap.
//!
//! **Cost.** Deriving a version copies neither the table nor the partition written: the
//! changed rows go to a persistent overlay (`O(log n)` tree nodes copied per row), and a
//! partition is rebuilt compactly only once its overlay reaches a fixed fraction of it
//! ([`OverlayLimits`]), so each row is copied a bounded number of times on
//! average. A stream of single inserts into one partition thus costs the same per insert
//! from the first to the hundred-thousandth (`O(log n)` amortised); `store/benches/memory.rs`
//! measures it (`benches/README.md`, section "memory").
//!
//! ```
//! use tableq_model::Entity;
//! use tableq_store::{Backend, MemoryBackend, WriteOp};
//! let store = MemoryBackend::new();
//! store.create_table("Orders").unwrap();
//! let w = store.write("orders", WriteOp::Insert { entity: Entity::new("p", "r") }).unwrap();
//! assert_eq!(store.get("ORDERS", "p", "r").unwrap().unwrap().timestamp(), Some(w.timestamp));
//! ```

use crate::acl::{self, SignedIdentifier};
use crate::backend::{Backend, QueryPage, TableInfo};
use crate::clock::Clock;
use crate::error::{BatchError, StoreError};
use crate::op::{WriteOp, Written};
use crate::resolve::{StateReader, check_ops, resolve_checked};
use crate::service::ServiceProperties;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use tableq_exec::{Executor, Key, PageOptions, RowView, SourceRow};
use tableq_model::{Entity, validate};
use tableq_planner::plan::Plan;

mod snapshot;
mod table;

pub use snapshot::{MemoryError, MemoryRow, MemoryRows, MemorySnapshot, OverlayLimits};
pub use table::{MemoryTable, MemoryWriter};

/// One table: its name as created, its rows, and its stored access policies.
struct Table {
    name: String,
    rows: MemoryTable,
    acl: RwLock<Vec<SignedIdentifier>>,
}

/// The in-memory engine (see the module docs).
#[derive(Default)]
pub struct MemoryBackend {
    /// Table key (lowercase name) → table.
    tables: RwLock<BTreeMap<String, Arc<Table>>>,
    service: RwLock<ServiceProperties>,
    clock: Clock,
    closed: AtomicBool,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> MemoryBackend {
        MemoryBackend::default()
    }

    fn open(&self) -> Result<(), StoreError> {
        if self.closed.load(Ordering::Acquire) {
            Err(StoreError::Closed)
        } else {
            Ok(())
        }
    }

    fn table_entry(&self, name: &str) -> Result<Arc<Table>, StoreError> {
        self.open()?;
        let tables = self.tables.read().unwrap_or_else(PoisonError::into_inner);
        tables
            .get(&validate::table_key(name))
            .cloned()
            .ok_or_else(|| StoreError::TableNotFound(name.to_owned()))
    }
}

/// Reads the current state from the version a writer starts from.
struct SnapshotReader<'a>(&'a MemorySnapshot);

impl StateReader for SnapshotReader<'_> {
    fn current(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        Ok(self.0.get(pk, rk).map(|row| row.to_entity()))
    }
}

impl Backend for MemoryBackend {
    fn describe(&self) -> String {
        "in-memory (nothing is kept after the process exits)".into()
    }

    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.open()?;
        validate::table_name(name)?;
        let mut tables = self.tables.write().unwrap_or_else(PoisonError::into_inner);
        let key = validate::table_key(name);
        if let Some(existing) = tables.get(&key) {
            return Err(StoreError::TableAlreadyExists {
                existing: existing.name.clone(),
            });
        }
        let table = Table {
            name: name.to_owned(),
            rows: MemoryTable::new(),
            acl: RwLock::new(Vec::new()),
        };
        tables.insert(key, Arc::new(table));
        Ok(TableInfo { name: name.into() })
    }

    fn delete_table(&self, name: &str) -> Result<(), StoreError> {
        self.open()?;
        let mut tables = self.tables.write().unwrap_or_else(PoisonError::into_inner);
        match tables.remove(&validate::table_key(name)) {
            Some(_) => Ok(()),
            None => Err(StoreError::TableToDeleteNotFound(name.to_owned())),
        }
    }

    fn table(&self, name: &str) -> Result<TableInfo, StoreError> {
        let t = self.table_entry(name)?;
        Ok(TableInfo {
            name: t.name.clone(),
        })
    }

    fn tables(&self) -> Result<Vec<TableInfo>, StoreError> {
        self.open()?;
        let tables = self.tables.read().unwrap_or_else(PoisonError::into_inner);
        Ok(tables
            .values()
            .map(|t| TableInfo {
                name: t.name.clone(),
            })
            .collect())
    }

    fn get(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        let t = self.table_entry(table)?;
        Ok(t.rows.snapshot().get(pk, rk).map(|row| row.to_entity()))
    }

    fn get_row(
        &self,
        table: &str,
        pk: &str,
        rk: &str,
        visit: &mut dyn FnMut(&dyn SourceRow),
    ) -> Result<bool, StoreError> {
        let t = self.table_entry(table)?;
        let snapshot = t.rows.snapshot();
        let row = snapshot.get(pk, rk);
        if let Some(row) = &row {
            visit(row);
        }
        Ok(row.is_some())
    }

    fn query(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        visit: &mut dyn FnMut(RowView<'_>),
    ) -> Result<QueryPage, StoreError> {
        let t = self.table_entry(table)?;
        // A page of exact keys reads a few rows; any other scans (and may fold the
        // overlay first: `table.rs`).
        let points = plan.ranges.ranges().iter().all(|r| r.as_point().is_some());
        let snapshot = if points {
            t.rows.snapshot()
        } else {
            t.rows.scan_snapshot()
        };
        let (continuation, stats) = Executor::new(&snapshot)
            .execute_page_with(plan, continuation, options, visit)
            .map_err(StoreError::storage)?;
        Ok(QueryPage {
            continuation,
            stats,
        })
    }

    fn write_batch(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<Written>, BatchError> {
        let t = self.table_entry(table)?;
        // What needs no stored state is checked before the table's writer lock is taken.
        let ops = check_ops(ops)?;
        let writer = t.rows.writer();
        let resolved = resolve_checked(ops, &mut SnapshotReader(writer.current()), &self.clock)?;
        writer
            .commit(resolved.changes)
            .map_err(StoreError::storage)?;
        Ok(resolved.written)
    }

    fn service_properties(&self) -> Result<ServiceProperties, StoreError> {
        self.open()?;
        Ok(self
            .service
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }

    fn set_service_properties(&self, properties: &ServiceProperties) -> Result<(), StoreError> {
        self.open()?;
        properties.validate()?;
        *self.service.write().unwrap_or_else(PoisonError::into_inner) = properties.clone();
        Ok(())
    }

    fn table_acl(&self, table: &str) -> Result<Vec<SignedIdentifier>, StoreError> {
        let t = self.table_entry(table)?;
        let acl = t.acl.read().unwrap_or_else(PoisonError::into_inner);
        Ok(acl.clone())
    }

    fn set_table_acl(&self, table: &str, acl: &[SignedIdentifier]) -> Result<(), StoreError> {
        acl::validate(acl)?;
        let t = self.table_entry(table)?;
        *t.acl.write().unwrap_or_else(PoisonError::into_inner) = acl.to_vec();
        Ok(())
    }

    /// Readers take the current version (a pointer copy) and never wait for a writer.
    fn point_reads_are_local(&self) -> bool {
        true
    }

    /// A write is done in memory on the calling thread (the table's writer lock is held
    /// for microseconds), so `submit_batch` (the default: `write_batch`) never blocks.
    fn writes_never_block(&self) -> bool {
        true
    }

    fn close(&self) -> Result<(), StoreError> {
        self.closed.store(true, Ordering::Release);
        Ok(())
    }
}
