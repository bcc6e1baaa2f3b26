//! The writer's changes and how they become visible: the memtable path of live entity
//! writes, and redb transactions — table creation and deletion, settings, flushes and
//! checkpoints (`commit.rs`), and the replay of log records (`replay.rs`) — through the
//! same functions, so a replayed state is the state that was acknowledged.
//!
//! * [`Tables`] — the redb tables a transaction writes;
//! * [`MemReader`] — the current state of a table as `resolve` reads it: its memtable
//!   (with the changes of the group being committed), then redb's rows;
//! * [`Writer::apply_to_memtable`] — one write's resolved changes, encoded into the table's
//!   memtable (the property names they add are numbered on the way);
//!   [`Writer::replay_to_memtable`] — the same for a logged write, its rows kept as logged
//!   (renumbered into the table's names);
//! * [`Writer::add_table`], [`Writer::drop_table`] — a table created, a table deleted
//!   (with its memtable); the memtables reach redb's blocks in a flush (`edit.rs`);
//! * [`Writer::in_transaction`] — begins a transaction, runs the operations, and commits:
//!   the property names the transaction added are stored with it and published to readers
//!   *before* the commit (a reader must know a name before it can see a row that uses it);
//!   catalog changes and emptied memtables are published *with* it (under the catalog's
//!   write lock, so a reader's catalog, memtable and snapshot always agree); if anything
//!   fails, nothing is stored and the in-memory changes are undone ([`GroupState`]).

use super::state::{StoredRows, Writer};
use crate::codec::Names;
use crate::durable::block_map::{BlockEdits, BlockMap};
use crate::durable::damage::block_damage;
use crate::durable::edit::RowsTable;
use crate::durable::format::block::{BlockView, EncodeError, RowRef, encode_row};
use crate::durable::format::keys::{table_end, table_prefix};
use crate::durable::format::record::LogChange;
use crate::durable::format::tables::{
    META, META_CLOCK, META_NEXT_TABLE, NAMES, ROWS, TABLES, encode_table,
};
use crate::durable::locate::{floor_block, search_keys};
use crate::durable::memtable::MemTable;
use crate::durable::settings;
use crate::durable::shared::TableEntry;
use crate::error::StoreError;
use crate::resolve::{Change, StateReader};
use redb::{Durability, ReadableTable, Table, WriteTransaction};
use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
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
}

/// The stored entity with these keys in a rows table (a write transaction's or a read
/// snapshot's), as an owned value: one walk down redb's tree per lookup (the tests' oracle
/// for [`MemReader`], which keeps the block it found).
#[cfg(test)]
fn stored_entity(
    rows: &impl ReadableTable<&'static [u8], &'static [u8]>,
    table: u64,
    names: &Names,
    pk: &str,
    rk: &str,
) -> Result<Option<Entity>, StoreError> {
    let (key, partition) = search_keys(table, pk, rk);
    let found = floor_block(rows.range::<&[u8]>(..=key.as_slice()), &partition).map_err(storage)?;
    let Some((key, bytes)) = found else {
        return Ok(None);
    };
    // The directory and the one row read are verified (`BlockView::find`), not the
    // whole block: a rewrite of the block checks every row first (`edit.rs`).
    let damaged = |e| block_damage(Path::new(""), None, key.value(), bytes.value(), e);
    let view = BlockView::parse_header(bytes.value()).map_err(damaged)?;
    let Some(i) = view.find(rk).map_err(damaged)? else {
        return Ok(None);
    };
    let entity = view.row(i).to_entity(pk, names).map_err(storage)?;
    Ok(Some(entity))
}

/// A table's current state as the writer sees it: its memtable first, then redb.
///
/// One reader serves one write (a batch: up to 100 operations of one partition), and its
/// redb rows do not change while it lives. So it keeps what its last stored lookup found
/// ([`Floor`]): the block at or before the key, or that the partition has none there (a
/// *gap*). When the next key falls before the next block's key, the same answer holds —
/// the key lies in that block, or the partition still has no block at or before it — and
/// the lookup needs no walk down redb's tree. The next block's key is looked up once, by
/// the second lookup that could use the kept answer; a write of one operation never looks
/// it up. (An import's batches of ascending RowKeys in one partition land in one block, or
/// — the input in key order, the partition still all in the memtable — in one gap: one
/// walk and one look at the next key instead of one walk per entity, the walks ≈ 8 % of a
/// 1 M import's CPU, all on the thread that commits.)
pub(crate) struct MemReader<'a> {
    mem: Option<&'a MemTable>,
    rows: &'a StoredRows,
    table: u64,
    names: &'a Names,
    /// The block the last stored lookup found, if any.
    floor: Option<Floor>,
}

/// What a stored lookup found, and what follows it.
struct Floor {
    kept: Kept,
    /// The first block after [`Kept::at`].
    next: Next,
}

/// A stored lookup's answer.
enum Kept {
    /// The last block of the partition at or before the key searched: its key and bytes,
    /// its checked header (PartitionKey, row count).
    Block {
        key: BlockGuard,
        bytes: BlockGuard,
        partition_key: Box<str>,
        rows: usize,
    },
    /// The partition (`partition`: its prefix) has no block at or before `searched`.
    Gap {
        partition: Vec<u8>,
        searched: Vec<u8>,
    },
}

impl Kept {
    /// Where the answer reaches: the block's key, or the key searched.
    fn at(&self) -> &[u8] {
        match self {
            Kept::Block { key, .. } => key.value(),
            Kept::Gap { searched, .. } => searched,
        }
    }

    /// Whether the answer is about a key of `partition` at or after `key`'s floor: the
    /// block is in the partition and at or before the key, or the gap is the partition's.
    fn covers(&self, key: &[u8], partition: &[u8]) -> bool {
        match self {
            Kept::Block { key: at, .. } => {
                let at = at.value();
                at <= key && at.starts_with(partition)
            }
            Kept::Gap { partition: p, .. } => p == partition,
        }
    }
}

/// What comes after a [`Floor`]'s block in redb.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    /// Not looked up yet.
    Unknown,
    /// The key of the next block.
    At(Vec<u8>),
    /// No block.
    End,
}

type BlockGuard = redb::AccessGuard<'static, &'static [u8]>;

impl<'a> MemReader<'a> {
    /// A reader of table `table`: its memtable `mem` (none: empty), its stored rows and
    /// its property names.
    pub(crate) fn new(
        mem: Option<&'a MemTable>,
        rows: &'a StoredRows,
        table: u64,
        names: &'a Names,
    ) -> MemReader<'a> {
        MemReader {
            mem,
            rows,
            table,
            names,
            floor: None,
        }
    }

    /// The stored entity with these keys (see the type's docs).
    fn stored(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        let (key, partition) = search_keys(self.table, pk, rk);
        if !self.kept_floor_holds(&key, &partition)? {
            let found = floor_block(self.rows.range::<&[u8]>(..=key.as_slice()), &partition)
                .map_err(storage)?;
            let kept = match found {
                Some((key, bytes)) => {
                    // The directory is verified (`BlockView::parse_header`), and the row
                    // read by `find`, not the whole block: a rewrite of the block checks
                    // every row first (`edit.rs`).
                    let damaged =
                        |e| block_damage(Path::new(""), None, key.value(), bytes.value(), e);
                    let view = BlockView::parse_header(bytes.value()).map_err(damaged)?;
                    let (partition_key, rows) = (view.partition_key().into(), view.len());
                    Kept::Block {
                        key,
                        bytes,
                        partition_key,
                        rows,
                    }
                }
                None => Kept::Gap {
                    partition,
                    searched: key,
                },
            };
            self.floor = Some(Floor {
                kept,
                next: Next::Unknown,
            });
        }
        let Some(Floor {
            kept:
                Kept::Block {
                    key,
                    bytes,
                    partition_key,
                    rows,
                },
            ..
        }) = &self.floor
        else {
            return Ok(None);
        };
        let view = BlockView::from_checked(bytes.value(), partition_key, *rows);
        let damaged = |e| block_damage(Path::new(""), None, key.value(), bytes.value(), e);
        let Some(i) = view.find(rk).map_err(damaged)? else {
            return Ok(None);
        };
        let entity = view.row(i).to_entity(pk, self.names).map_err(storage)?;
        Ok(Some(entity))
    }

    /// Whether the kept answer holds for `key` of `partition`: it covers the key
    /// ([`Kept::covers`]) and the next block (looked up now if it was not yet) comes after
    /// the key.
    fn kept_floor_holds(&mut self, key: &[u8], partition: &[u8]) -> Result<bool, StoreError> {
        let Some(floor) = &mut self.floor else {
            return Ok(false);
        };
        if !floor.kept.covers(key, partition) {
            return Ok(false);
        }
        if floor.next == Next::Unknown {
            let after = (Bound::Excluded(floor.kept.at()), Bound::Unbounded);
            floor.next = match self.rows.range::<&[u8]>(after).map_err(storage)?.next() {
                Some(item) => Next::At(item.map_err(storage)?.0.value().to_vec()),
                None => Next::End,
            };
        }
        Ok(match &floor.next {
            Next::At(next) => key < next.as_slice(),
            Next::End | Next::Unknown => true,
        })
    }
}

impl StateReader for MemReader<'_> {
    fn current(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        if let Some((pk, entry)) = self.mem.and_then(|m| m.get(pk, rk)) {
            return match &entry.row {
                Some(bytes) => RowRef(bytes)
                    .to_entity(pk, self.names)
                    .map(Some)
                    .map_err(storage),
                None => Ok(None),
            };
        }
        self.stored(pk, rk)
    }
}

/// A catalog change to publish with the commit.
enum CatalogChange {
    Created { key: String, id: u64, name: String },
    Deleted { key: String },
}

/// The memtable side of the writer before a group changed it (to undo).
struct MemBefore {
    tables: HashMap<u64, Option<MemTable>>,
    bytes: usize,
    max_timestamp: Option<DateTime>,
}

/// What a group or transaction changed in memory, to publish after the commit or undo
/// after a failure.
#[derive(Default)]
pub(crate) struct GroupState {
    /// Table id → (table key, number of names before), for tables that existed.
    names_before: HashMap<u64, (String, usize)>,
    /// Tables created: id and catalog key.
    created: Vec<(u64, String)>,
    /// Tables deleted: id, key, name as created, name list.
    deleted: Vec<(u64, String, String, Names)>,
    /// Name lists published to readers before the commit, with what they replaced.
    published: Vec<(Arc<TableEntry>, Arc<Names>)>,
    catalog: Vec<CatalogChange>,
    /// The largest Timestamp the transaction stores (the clock's floor on the next open).
    pub(crate) max_timestamp: Option<DateTime>,
    /// Memtables changed by the group (their versions before it).
    mem_before: Option<MemBefore>,
    /// The transaction folds memtable entries into redb's blocks (a flush, or one of its
    /// slices): its commit is published like a catalog change, so that the kept block maps
    /// follow it.
    pub(crate) changes_blocks: bool,
    /// The memtables readers get with the commit (the last slice of a flush, a checkpoint:
    /// what the flush did not fold), keyed by table id; `None` = readers keep theirs.
    pub(crate) next_mem: Option<HashMap<u64, MemTable>>,
    /// The blocks the transaction wrote and removed (`edit.rs`), which the kept block
    /// maps follow.
    pub(crate) block_edits: BlockEdits,
}

impl GroupState {
    /// The table ids whose memtable the group changed.
    pub(crate) fn changed_memtables(&self) -> impl Iterator<Item = u64> + '_ {
        self.mem_before
            .iter()
            .flat_map(|m| m.tables.keys().copied())
    }
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
        if matches!(durability, Durability::Immediate) {
            // A crash rolls the file back to its last durable commit, which then holds
            // redb's allocator state: reopening loads it instead of walking every page of
            // the file (1.3 s at 10 M entities, `benches/README.md`). The price is an extra
            // write and sync a checkpoint.
            txn.set_quick_repair(true);
        }
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
            self.store_names(&mut t)?;
            out
        };
        self.publish_names(state);
        // The writer's view of redb is taken again after the commit.
        self.stored_rows = None;
        if state.catalog.is_empty() && !state.changes_blocks {
            txn.commit().map_err(storage)?;
        } else {
            let mut followed = self.follow_maps(&state.block_edits);
            // Readers begin their snapshot (and take their memtable) under the read lock:
            // none sees the new catalog or data file with an old memtable or the reverse.
            let mut catalog = self
                .shared
                .catalog
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            txn.commit().map_err(storage)?;
            self.shared.blocks_changed();
            // The edits that bring a map built meanwhile up to this version — when every
            // change since the last published commit was recorded (`block_map.rs`).
            let recent = &self.shared.map_builds.recent;
            if self.maps_follow {
                let version = self.shared.blocks_version.load(Ordering::Acquire);
                recent.record(version, std::mem::take(&mut state.block_edits));
            } else {
                recent.forget();
            }
            self.maps_follow = true;
            // Every kept block map is of an older version now, never used again: the maps
            // that followed the commit take their place; the others, and the verified
            // copies only they held, go once the snapshots still reading them end
            // (`verified.rs`).
            for entry in catalog.values() {
                let next = followed.remove(&entry.id);
                *entry
                    .block_map
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = next;
            }
            if let Some(next) = &state.next_mem {
                for entry in catalog.values() {
                    *entry.mem.write().unwrap_or_else(PoisonError::into_inner) =
                        next.get(&entry.id).cloned().unwrap_or_default();
                }
            }
            for change in std::mem::take(&mut state.catalog) {
                match change {
                    CatalogChange::Created { key, id, name } => {
                        let names = self.names.get(&id).cloned().unwrap_or_default();
                        catalog.insert(key, Arc::new(TableEntry::new(id, name, names)));
                    }
                    CatalogChange::Deleted { key } => {
                        catalog.remove(&key);
                    }
                }
            }
        }
        self.names_stored = self.names.iter().map(|(id, n)| (*id, n.len())).collect();
        Ok(out)
    }

    /// The block maps of the version after the commit about to be published, for every
    /// table whose kept map lists the current version (`BlockMap::followed`: the
    /// commit's `edits` applied to it) — made before the commit takes the catalog's write
    /// lock, so that readers wait for the commit alone. None when a change to blocks since
    /// the last published commit was not recorded (`Writer::maps_follow`).
    fn follow_maps(&self, edits: &BlockEdits) -> HashMap<u64, Arc<BlockMap>> {
        if !self.maps_follow {
            return HashMap::new();
        }
        // The version cannot change before the commit: only this writer counts versions.
        let version = self.shared.blocks_version.load(Ordering::Acquire);
        let kept: Vec<(u64, Arc<BlockMap>)> = {
            let catalog = self
                .shared
                .catalog
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            catalog
                .values()
                .filter_map(|entry| {
                    let map = entry
                        .block_map
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone()?;
                    (map.version == version).then_some((entry.id, map))
                })
                .collect()
        };
        kept.into_iter()
            .map(|(id, map)| (id, Arc::new(map.followed(version + 1, id, edits))))
            .collect()
    }

    /// Stores the property names no commit has stored yet (those that memtable rows or
    /// this transaction's rows use).
    fn store_names(&self, t: &mut Tables<'_>) -> Result<(), StoreError> {
        for (id, names) in &self.names {
            let stored = self.names_stored.get(id).copied().unwrap_or(0);
            for number in stored..names.len() {
                let number = u32::try_from(number).map_err(storage)?;
                t.names
                    .insert((*id, number), names.name(number))
                    .map_err(storage)?;
            }
        }
        Ok(())
    }

    /// redb's rows as of its last commit (a read snapshot the writer keeps until its next
    /// commit).
    pub(crate) fn stored_rows(&mut self) -> Result<&StoredRows, StoreError> {
        if self.stored_rows.is_none() {
            let txn = self.shared.read_txn()?;
            self.stored_rows = Some(txn.open_table(ROWS).map_err(storage)?);
        }
        self.stored_rows
            .as_ref()
            .ok_or_else(|| storage("the writer's read snapshot is missing"))
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
        self.tables.insert(key.clone(), (id, name.to_owned()));
        state.created.push((id, key.clone()));
        state.catalog.push(CatalogChange::Created {
            key,
            id,
            name: name.to_owned(),
        });
        Ok(())
    }

    /// Deletes table `id` (catalog key `key`) with its rows, memtable, names and stored
    /// access policies.
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
        settings::put_acl(t.txn, id, None)?;
        self.remember_memtable(state, id);
        if let Some(mem) = self.mem.remove(&id) {
            self.mem_bytes -= mem.bytes();
        }
        let name = self.tables.remove(&key).map(|(_, n)| n).unwrap_or_default();
        if let Some(names) = self.names.remove(&id) {
            self.table_keys.remove(&id);
            state.deleted.push((id, key.clone(), name, names));
        }
        state.catalog.push(CatalogChange::Deleted { key });
        Ok(())
    }

    /// Applies a logged write (table `id`, Timestamp `timestamp`, rows numbered by the
    /// record's `names`) to the table's memtable, as [`apply_to_memtable`] applied it when
    /// it was live: each row renumbered into the table's names (new names are numbered),
    /// or a removal. `map` is scratch space. The replay's path (`replay.rs`).
    ///
    /// [`apply_to_memtable`]: Writer::apply_to_memtable
    pub(crate) fn replay_to_memtable(
        &mut self,
        state: &mut GroupState,
        id: u64,
        timestamp: DateTime,
        names: &[&str],
        changes: &[LogChange<'_>],
        map: &mut Vec<u32>,
    ) -> Result<(), StoreError> {
        if !self.table_keys.contains_key(&id) {
            return Err(storage(format!(
                "a write names table {id}, which does not exist"
            )));
        }
        self.remember_names(state, id);
        self.fill_memtable(id, timestamp, |table_names, mem| {
            map.clear();
            for name in names {
                map.push(
                    table_names
                        .intern(name)
                        .ok_or_else(|| storage(EncodeError::TooManyNames))?,
                );
            }
            let identity = map.iter().enumerate().all(|(i, &n)| n as usize == i);
            for change in changes {
                match *change {
                    LogChange::Put { pk, row } => {
                        let rk = row.row_key().map_err(storage)?;
                        let bytes: Arc<[u8]> = if identity {
                            Arc::from(row.bytes())
                        } else {
                            Arc::from(row.renumbered(map).map_err(storage)?)
                        };
                        mem.put(pk, rk, Some(bytes));
                    }
                    LogChange::Delete { pk, rk } => mem.put(pk, rk, None),
                }
            }
            Ok(())
        })
    }

    /// Applies one write's resolved `changes` (distinct keys) with Timestamp `timestamp`
    /// to table `id`'s memtable: each row encoded as in a block (new property names are
    /// numbered), or a removal.
    pub(crate) fn apply_to_memtable(
        &mut self,
        state: &mut GroupState,
        id: u64,
        changes: &[Change],
        timestamp: DateTime,
    ) -> Result<(), StoreError> {
        self.remember_names(state, id);
        self.remember_memtable(state, id);
        self.fill_memtable(id, timestamp, |names, mem| {
            for change in changes {
                match change {
                    Change::Put(entity) => {
                        let row = encode_row(entity, &mut |name| match names.id(name) {
                            Some(id) => Ok(id),
                            None => names.push(name).ok_or(EncodeError::TooManyNames),
                        })
                        .map_err(storage)?;
                        mem.put(
                            entity.partition_key(),
                            entity.row_key(),
                            Some(Arc::from(row)),
                        );
                    }
                    Change::Delete {
                        partition_key,
                        row_key,
                    } => mem.put(partition_key, row_key, None),
                }
            }
            Ok(())
        })
    }

    /// Runs `fill` on table `id`'s name list and memtable, then counts the bytes the
    /// memtable gained and the write's Timestamp — the part of a write that the live path
    /// and the replay share.
    fn fill_memtable(
        &mut self,
        id: u64,
        timestamp: DateTime,
        fill: impl FnOnce(&mut Names, &mut MemTable) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let names = self.names.entry(id).or_default();
        let mem = self.mem.entry(id).or_default();
        let before = mem.bytes();
        let filled = fill(names, mem);
        self.mem_bytes = self.mem_bytes - before + mem.bytes();
        self.mem_max_timestamp = self.mem_max_timestamp.max(Some(timestamp));
        filled
    }

    /// Notes table `id`'s name count before the group changes it.
    fn remember_names(&mut self, state: &mut GroupState, id: u64) {
        if state.created.iter().any(|(c, _)| *c == id) || state.names_before.contains_key(&id) {
            return;
        }
        if let Some(key) = self.table_keys.get(&id) {
            let count = self.names.get(&id).map_or(0, Names::len);
            state.names_before.insert(id, (key.clone(), count));
        }
    }

    /// Keeps table `id`'s memtable as it was before the group changes it.
    fn remember_memtable(&mut self, state: &mut GroupState, id: u64) {
        let before = state.mem_before.get_or_insert_with(|| MemBefore {
            tables: HashMap::new(),
            bytes: self.mem_bytes,
            max_timestamp: self.mem_max_timestamp,
        });
        before
            .tables
            .entry(id)
            .or_insert_with(|| self.mem.get(&id).cloned());
    }

    /// Gives readers the longer name lists of existing tables (before the commit or the
    /// memtable versions that use them).
    pub(crate) fn publish_names(&self, state: &mut GroupState) {
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

    /// Gives readers the memtable versions the group made (after its log records are
    /// written: a reader never sees a write before it is acknowledgeable).
    pub(crate) fn publish_memtables(&self, state: &GroupState) {
        let catalog = self
            .shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for id in state.changed_memtables() {
            let Some(mem) = self.mem.get(&id) else {
                continue;
            };
            let Some(key) = self.table_keys.get(&id) else {
                continue;
            };
            if let Some(entry) = catalog.get(key).filter(|e| e.id == id) {
                *entry.mem.write().unwrap_or_else(PoisonError::into_inner) = mem.clone();
            }
        }
    }

    /// Undoes the in-memory effects of a group or transaction that was not committed.
    pub(crate) fn undo(&mut self, state: GroupState) {
        for (entry, previous) in state.published {
            *entry.names.write().unwrap_or_else(PoisonError::into_inner) = previous;
        }
        if let Some(before) = state.mem_before {
            for (id, mem) in before.tables {
                match mem {
                    Some(mem) => self.mem.insert(id, mem),
                    None => self.mem.remove(&id),
                };
            }
            self.mem_bytes = before.bytes;
            self.mem_max_timestamp = before.max_timestamp;
        }
        for (id, key, name, names) in state.deleted {
            self.names.insert(id, names);
            self.table_keys.insert(id, key.clone());
            self.tables.insert(key, (id, name));
        }
        for (id, key) in state.created {
            self.names.remove(&id);
            self.table_keys.remove(&id);
            self.tables.remove(&key);
        }
        for (id, (_, before)) in state.names_before {
            if let Some(names) = self.names.get_mut(&id) {
                names.truncate(before);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::format::block::build_block;
    use crate::durable::format::keys::entity_key;
    use redb::{Database, ReadableDatabase};
    use std::borrow::Cow;

    const TABLE: u64 = 7;

    /// A block's RowKey numbers: its first, and the end (exclusive).
    type Block = (u32, u32);

    fn memory_database() -> Database {
        Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap()
    }

    /// Blocks of table 7: partition `b` in three blocks, `d` in two, `f` in one, and a
    /// block of table 8 after them; RowKeys `r00`…`r98`, even numbers only.
    fn stored(db: &Database, names: &mut Names) -> StoredRows {
        let layout: [(u64, &str, &[Block]); 4] = [
            (TABLE, "b", &[(10, 20), (30, 40), (40, 60)]),
            (TABLE, "d", &[(0, 10), (50, 98)]),
            (TABLE, "f", &[(20, 30)]),
            (8, "b", &[(0, 10)]),
        ];
        let txn = db.begin_write().unwrap();
        {
            let mut rows = txn.open_table(ROWS).unwrap();
            for (table, pk, blocks) in layout {
                for &(first, end) in blocks {
                    let encoded: Vec<Cow<'_, [u8]>> = (first..end)
                        .step_by(2)
                        .map(|i| {
                            let mut e = Entity::new(pk, format!("r{i:02}"));
                            e.set("N", i as i32);
                            let row = encode_row(&e, &mut |name| match names.id(name) {
                                Some(id) => Ok(id),
                                None => names.push(name).ok_or(EncodeError::TooManyNames),
                            });
                            Cow::Owned(row.unwrap())
                        })
                        .collect();
                    let key = entity_key(table, pk, &format!("r{first:02}"));
                    let block = build_block(pk, &encoded).unwrap();
                    rows.insert(key.as_slice(), block.as_slice()).unwrap();
                }
            }
        }
        txn.commit().unwrap();
        db.begin_read().unwrap().open_table(ROWS).unwrap()
    }

    /// Every key of partitions `a`…`g`, `r00`…`r99`, in key order, backwards, and
    /// shuffled, through one reader each: the reader that keeps its last block finds what
    /// a walk down the tree per key finds (present rows, rows between blocks, before the
    /// first and after the last block of a partition, partitions without blocks).
    #[test]
    fn a_kept_block_answers_as_a_walk_down_the_tree_would() {
        let db = memory_database();
        let mut names = Names::default();
        let rows = stored(&db, &mut names);
        let mut keys: Vec<(String, String)> = ["a", "b", "c", "d", "e", "f", "g"]
            .iter()
            .flat_map(|pk| (0..100).map(move |i| (pk.to_string(), format!("r{i:02}"))))
            .collect();
        let mut orders = vec![keys.clone()];
        keys.reverse();
        orders.push(keys.clone());
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        for i in (1..keys.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            keys.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        orders.push(keys);
        let mut found = 0;
        for order in orders {
            let mut reader = MemReader::new(None, &rows, TABLE, &names);
            for (pk, rk) in order {
                let expected = stored_entity(&rows, TABLE, &names, &pk, &rk).unwrap();
                let got = reader.current(&pk, &rk).unwrap();
                assert_eq!(got, expected, "{pk}/{rk}");
                found += usize::from(got.is_some());
            }
        }
        // 5 + 5 + 10 rows in b, 5 + 24 in d, 5 in f; three orders.
        assert_eq!(found, 3 * 54);
    }

    /// One lookup, as a single write makes, does not look up the next block.
    #[test]
    fn one_lookup_does_not_look_up_the_next_block() {
        let db = memory_database();
        let mut names = Names::default();
        let rows = stored(&db, &mut names);
        let mut reader = MemReader::new(None, &rows, TABLE, &names);
        assert!(reader.current("b", "r32").unwrap().is_some());
        assert!(
            reader
                .floor
                .as_ref()
                .is_some_and(|f| f.next == Next::Unknown)
        );
        assert!(reader.current("b", "r34").unwrap().is_some());
        let next = reader.floor.as_ref().map(|f| f.next.clone());
        assert_eq!(next, Some(Next::At(entity_key(TABLE, "b", "r40"))));
    }

    /// A partition with no block at or before the key is kept as a gap: the next keys of
    /// the partition before the next block need no walk; the first one at or past it walks
    /// and finds that block.
    #[test]
    fn a_partition_without_a_block_there_is_kept_as_a_gap() {
        let db = memory_database();
        let mut names = Names::default();
        let rows = stored(&db, &mut names);
        let mut reader = MemReader::new(None, &rows, TABLE, &names);
        let gap = |reader: &MemReader<'_>| match reader.floor.as_ref().map(|f| (&f.kept, &f.next)) {
            Some((Kept::Gap { searched, .. }, next)) => Some((searched.clone(), next.clone())),
            _ => None,
        };
        // Partition c has no block: one gap, its next block (d's first) looked up once.
        assert_eq!(reader.current("c", "r10").unwrap(), None);
        assert_eq!(
            gap(&reader),
            Some((entity_key(TABLE, "c", "r10"), Next::Unknown))
        );
        for rk in ["r20", "r05", "r99"] {
            assert_eq!(reader.current("c", rk).unwrap(), None);
            let next = Next::At(entity_key(TABLE, "d", "r00"));
            assert_eq!(gap(&reader), Some((entity_key(TABLE, "c", "r10"), next)));
        }
        // Partition f before its one block (r20): a gap up to that block, then the block.
        assert_eq!(reader.current("f", "r05").unwrap(), None);
        assert_eq!(reader.current("f", "r07").unwrap(), None);
        let next = Next::At(entity_key(TABLE, "f", "r20"));
        assert_eq!(gap(&reader), Some((entity_key(TABLE, "f", "r05"), next)));
        assert!(reader.current("f", "r22").unwrap().is_some());
        assert!(matches!(
            reader.floor.as_ref().map(|f| &f.kept),
            Some(Kept::Block { .. })
        ));
        // The last table's last partition: a gap with no block after it.
        assert_eq!(reader.current("zz", "r00").unwrap(), None);
        assert_eq!(reader.current("zz", "r01").unwrap(), None);
        assert_eq!(
            gap(&reader).map(|(_, next)| next),
            Some(Next::At(entity_key(8, "b", "r00")))
        );
    }
}
