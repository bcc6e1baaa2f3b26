//! One write transaction of the writer thread, and the operations applied through it —
//! the same functions for a live write (`writer.rs`) and for the replay of a log record
//! (`replay.rs`), so a replayed state is the state that was acknowledged.
//!
//! * [`Tables`] — the redb tables a transaction writes;
//! * [`Writer::add_table`], [`Writer::drop_table`], [`Writer::apply_write`] — a table
//!   created, a table deleted, one write's resolved changes applied to the blocks
//!   (`edit.rs`), with the property names they add;
//! * [`Writer::in_transaction`] — begins a transaction, runs the operations, and commits:
//!   the property names the transaction added are published to readers *before* the
//!   commit (a reader must know a name before it can see a row that uses it), catalog
//!   changes are published *with* it (under the catalog's write lock, so a reader's
//!   catalog and snapshot agree); if anything fails, nothing is stored and the in-memory
//!   changes are undone ([`GroupState`]).

use super::TableEntry;
use super::block::BlockView;
use super::edit::{self, RowsTable};
use super::keys::{table_end, table_prefix};
use super::locate::{floor_block, search_keys};
use super::open::{decode_table, encode_table};
use super::schema::{META, META_CLOCK, META_NEXT_TABLE, NAMES, ROWS, TABLES};
use super::writer::Writer;
use crate::codec::Names;
use crate::error::StoreError;
use crate::resolve::{Change, StateReader};
use redb::{Durability, ReadableTable, Table, WriteTransaction};
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use tableq_model::{DateTime, Entity};

pub(crate) fn storage(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::storage(e)
}

/// The redb tables a transaction writes.
pub(crate) struct Tables<'txn> {
    /// The transaction itself, for the tables opened on demand (`settings.rs`).
    pub(crate) txn: &'txn WriteTransaction,
    pub(crate) meta: Table<'txn, &'static str, u64>,
    pub(crate) tables: Table<'txn, &'static str, &'static [u8]>,
    pub(crate) names: Table<'txn, (u64, u32), &'static str>,
    pub(crate) rows: RowsTable<'txn>,
}

impl<'txn> Tables<'txn> {
    fn open(txn: &'txn WriteTransaction) -> Result<Tables<'txn>, StoreError> {
        Ok(Tables {
            txn,
            meta: txn.open_table(META).map_err(storage)?,
            tables: txn.open_table(TABLES).map_err(storage)?,
            names: txn.open_table(NAMES).map_err(storage)?,
            rows: txn.open_table(ROWS).map_err(storage)?,
        })
    }

    /// The table with catalog key `key`: (id, name as created).
    pub(crate) fn lookup(&self, key: &str) -> Result<Option<(u64, String)>, StoreError> {
        match self.tables.get(key).map_err(storage)? {
            Some(v) => decode_table(v.value())
                .map(Some)
                .ok_or_else(|| storage("corrupt table record")),
            None => Ok(None),
        }
    }
}

/// Reads a table's current state inside the write transaction, for `resolve`.
pub(crate) struct TxnReader<'a, 'txn> {
    pub(crate) rows: &'a RowsTable<'txn>,
    pub(crate) table: u64,
    pub(crate) names: &'a Names,
}

impl StateReader for TxnReader<'_, '_> {
    fn current(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        let (key, partition) = search_keys(self.table, pk, rk);
        let found = floor_block(self.rows.range::<&[u8]>(..=key.as_slice()), &partition)
            .map_err(storage)?;
        let Some((_, bytes)) = found else {
            return Ok(None);
        };
        let view = BlockView::parse(bytes.value()).map_err(storage)?;
        let Some(i) = view.find(rk) else {
            return Ok(None);
        };
        let entity = view.row(i).to_entity(pk, self.names).map_err(storage)?;
        Ok(Some(entity))
    }
}

/// A catalog change to publish with the commit.
enum CatalogChange {
    Created { key: String, id: u64, name: String },
    Deleted { key: String },
}

/// What a transaction changed in memory, to publish after the commit or undo after a
/// failure.
#[derive(Default)]
pub(crate) struct GroupState {
    /// Table id → (table key, number of names before the transaction), for tables that
    /// existed.
    names_before: HashMap<u64, (String, usize)>,
    /// Tables created by the transaction.
    created: Vec<u64>,
    /// Tables the transaction deleted: id, key and name list.
    deleted: Vec<(u64, String, Names)>,
    /// Name lists published to readers before the commit, with what they replaced.
    published: Vec<(Arc<TableEntry>, Arc<Names>)>,
    catalog: Vec<CatalogChange>,
    max_timestamp: Option<DateTime>,
}

impl Writer {
    /// Begins a transaction, runs `work` in it, and commits with `durability` (see the
    /// module docs). `Err` = nothing was stored and the in-memory state is as before.
    pub(crate) fn in_transaction<T>(
        &mut self,
        durability: Durability,
        work: impl FnOnce(&mut Writer, &mut Tables<'_>, &mut GroupState) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut state = GroupState::default();
        let result = self.transaction(durability, &mut state, work);
        if result.is_err() {
            self.undo(state);
        }
        result
    }

    fn transaction<T>(
        &mut self,
        durability: Durability,
        state: &mut GroupState,
        work: impl FnOnce(&mut Writer, &mut Tables<'_>, &mut GroupState) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut txn = {
            let db = self
                .shared
                .db
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            db.as_ref()
                .ok_or(StoreError::Closed)?
                .begin_write()
                .map_err(storage)?
        };
        txn.set_durability(durability).map_err(storage)?;
        let out = {
            let mut t = Tables::open(&txn)?;
            let out = work(self, &mut t, state)?;
            if let Some(ts) = state.max_timestamp {
                let ticks = u64::try_from(ts.ticks()).map_err(storage)?;
                let stored = t.meta.get(META_CLOCK).map_err(storage)?.map(|v| v.value());
                if stored.is_none_or(|s| s < ticks) {
                    t.meta.insert(META_CLOCK, ticks).map_err(storage)?;
                }
            }
            out
        };
        self.publish_names(state);
        if state.catalog.is_empty() {
            txn.commit().map_err(storage)?;
        } else {
            // Readers begin their snapshot under the read lock: none sees the new catalog
            // with an old snapshot or the reverse.
            let mut catalog = self
                .shared
                .catalog
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            txn.commit().map_err(storage)?;
            for change in std::mem::take(&mut state.catalog) {
                match change {
                    CatalogChange::Created { key, id, name } => {
                        let names = self.names.get(&id).cloned().unwrap_or_default();
                        catalog.insert(
                            key,
                            Arc::new(TableEntry {
                                id,
                                name,
                                names: RwLock::new(Arc::new(names)),
                            }),
                        );
                    }
                    CatalogChange::Deleted { key } => {
                        catalog.remove(&key);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Creates table `id` with catalog key `key` and `name` (the next id to assign stays
    /// above it).
    pub(crate) fn add_table(
        &mut self,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        key: String,
        id: u64,
        name: &str,
    ) -> Result<(), StoreError> {
        let next = t
            .meta
            .get(META_NEXT_TABLE)
            .map_err(storage)?
            .map_or(1, |v| v.value());
        let after = id
            .checked_add(1)
            .ok_or_else(|| storage("table ids exhausted"))?;
        if after > next {
            t.meta.insert(META_NEXT_TABLE, after).map_err(storage)?;
        }
        t.tables
            .insert(key.as_str(), encode_table(id, name).as_slice())
            .map_err(storage)?;
        self.names.insert(id, Names::default());
        self.table_keys.insert(id, key.clone());
        state.created.push(id);
        state.catalog.push(CatalogChange::Created {
            key,
            id,
            name: name.to_owned(),
        });
        Ok(())
    }

    /// Deletes table `id` (catalog key `key`) with its rows, names and stored access
    /// policies.
    pub(crate) fn drop_table(
        &mut self,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        key: String,
        id: u64,
    ) -> Result<(), StoreError> {
        t.tables.remove(key.as_str()).map_err(storage)?;
        let (start, end) = (table_prefix(id), table_end(id));
        t.rows
            .retain_in::<&[u8], _>(start.as_slice()..end.as_slice(), |_, _| false)
            .map_err(storage)?;
        t.names
            .retain_in((id, 0)..=(id, u32::MAX), |_, _| false)
            .map_err(storage)?;
        super::settings::put_acl(t.txn, id, None)?;
        if let Some(names) = self.names.remove(&id) {
            self.table_keys.remove(&id);
            state.deleted.push((id, key.clone(), names));
        }
        state.catalog.push(CatalogChange::Deleted { key });
        Ok(())
    }

    /// Applies one write's `changes` (distinct keys) with Timestamp `timestamp` to table
    /// `id`, storing the property names it adds.
    pub(crate) fn apply_write(
        &mut self,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        id: u64,
        changes: Vec<Change>,
        timestamp: DateTime,
    ) -> Result<(), StoreError> {
        let key =
            self.table_keys.get(&id).cloned().ok_or_else(|| {
                storage(format!("a write names table {id}, which does not exist"))
            })?;
        let names = self.names.entry(id).or_default();
        if !state.created.contains(&id) {
            state
                .names_before
                .entry(id)
                .or_insert_with(|| (key, names.len()));
        }
        let added = edit::apply(&mut t.rows, id, names, self.shared.limits, changes)?;
        for number in added {
            t.names
                .insert((id, number), names.name(number))
                .map_err(storage)?;
        }
        state.max_timestamp = state.max_timestamp.max(Some(timestamp));
        Ok(())
    }

    /// Gives readers the longer name lists of existing tables (before the commit).
    fn publish_names(&self, state: &mut GroupState) {
        let catalog = self
            .shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for (id, (key, before)) in &state.names_before {
            let Some(names) = self.names.get(id) else {
                continue;
            };
            if names.len() == *before {
                continue;
            }
            if let Some(entry) = catalog.get(key).filter(|e| e.id == *id) {
                let mut slot = entry.names.write().unwrap_or_else(PoisonError::into_inner);
                let previous = std::mem::replace(&mut *slot, Arc::new(names.clone()));
                state.published.push((entry.clone(), previous));
            }
        }
    }

    /// Undoes the in-memory effects of a transaction that was not committed.
    fn undo(&mut self, state: GroupState) {
        for (entry, previous) in state.published {
            *entry.names.write().unwrap_or_else(PoisonError::into_inner) = previous;
        }
        for (id, key, names) in state.deleted {
            self.names.insert(id, names);
            self.table_keys.insert(id, key);
        }
        for id in state.created {
            self.names.remove(&id);
            self.table_keys.remove(&id);
        }
        for (id, (_, before)) in state.names_before {
            if let Some(names) = self.names.get_mut(&id) {
                names.truncate(before);
            }
        }
    }
}
