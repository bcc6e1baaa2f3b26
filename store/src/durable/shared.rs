//! What the backend, its writer and its readers share ([`Shared`]): the database, the
//! catalog of tables as last committed ([`Catalog`], [`TableEntry`]: each table's property
//! names and published memtable), the Timestamp clock, the block size limits, and why
//! writes are refused while they are ([`Refusal`]).
//!
//! The locks are the engine's consistency rule: readers begin their redb snapshot and take
//! their memtable under the catalog's read lock; the writer commits a catalog change or a
//! flush and publishes it under the write lock (`writer/txn.rs`).

use super::block_map::BlockMap;
use super::memtable::MemTable;
use super::options::DurableOptions;
use super::verified::CopyBudget;
use crate::clock::Clock;
use crate::codec::Names;
use crate::error::StoreError;
use redb::{Database, ReadableDatabase};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use tableq_model::validate;

/// Block size limits (from [`DurableOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) rows: usize,
    pub(crate) bytes: usize,
}

/// One table as readers see it.
#[derive(Debug)]
pub(crate) struct TableEntry {
    pub(crate) id: u64,
    pub(crate) name: String,
    /// The table's property names; the writer replaces the `Arc` with a longer list before
    /// the commit that first uses the new names.
    pub(crate) names: RwLock<Arc<Names>>,
    /// The table's memtable as last published (`memtable.rs`): what readers merge with redb.
    pub(crate) mem: RwLock<MemTable>,
    /// The table's blocks as of some blocks version (`block_map.rs`), once a split built it.
    pub(crate) block_map: Mutex<Option<Arc<BlockMap>>>,
}

impl TableEntry {
    /// Table `id` called `name` with property names `names`, an empty memtable and no
    /// block map yet.
    pub(crate) fn new(id: u64, name: String, names: Names) -> TableEntry {
        TableEntry {
            id,
            name,
            names: RwLock::new(Arc::new(names)),
            mem: RwLock::new(MemTable::default()),
            block_map: Mutex::new(None),
        }
    }
}

/// What a reader begins with ([`Shared::begin_read`]): the table, its redb snapshot, its
/// memtable and the blocks version, consistent with each other.
pub(crate) struct ReadStart {
    pub(crate) entry: Arc<TableEntry>,
    pub(crate) txn: redb::ReadTransaction,
    pub(crate) mem: MemTable,
    /// [`Shared::blocks_version`] as of `txn`.
    pub(crate) blocks_version: u64,
}

/// Table key (lowercase name) → table, as of the last commit that changed the catalog.
pub(crate) type Catalog = BTreeMap<String, Arc<TableEntry>>;

/// What the backend and its writer thread share.
pub(crate) struct Shared {
    /// The database; `None` once closed.
    pub(crate) db: RwLock<Option<Database>>,
    /// Readers hold the read lock while they begin their redb read transaction, and the
    /// writer holds the write lock while it commits a catalog change and publishes it, so a
    /// reader's catalog and snapshot always agree.
    pub(crate) catalog: RwLock<Catalog>,
    pub(crate) clock: Clock,
    pub(crate) limits: Limits,
    /// Why writes are refused, while they are (the writer sets and clears it).
    pub(crate) refusal: Mutex<Option<Refusal>>,
    /// The data directory and the options it was opened with (to reopen it).
    pub(crate) dir: PathBuf,
    /// The data directory again, shared with snapshots (for reports of damaged blocks).
    pub(crate) data_dir: Arc<Path>,
    pub(crate) options: DurableOptions,
    /// Counts the changes that may change blocks (flushes, catalog changes, reopening the
    /// data file), each counted under the catalog's write lock: a reader's version (read
    /// under the read lock) names the blocks its snapshot sees (`block_map.rs`).
    pub(crate) blocks_version: AtomicU64,
    /// What the verified copies of blocks may take (`verified.rs`).
    pub(crate) copies: Arc<CopyBudget>,
}

impl Shared {
    /// The table `name`, its memtable, a read snapshot and the blocks version, consistent
    /// with each other and with the catalog (flushes publish the commit and the emptied
    /// memtables under the catalog's write lock).
    pub(crate) fn begin_read(&self, name: &str) -> Result<ReadStart, StoreError> {
        let catalog = self.catalog.read().unwrap_or_else(PoisonError::into_inner);
        let entry = catalog
            .get(&validate::table_key(name))
            .cloned()
            .ok_or_else(|| StoreError::TableNotFound(name.to_owned()))?;
        let mem = entry
            .mem
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let txn = self.read_txn()?;
        let blocks_version = self.blocks_version.load(Ordering::Acquire);
        Ok(ReadStart {
            entry,
            txn,
            mem,
            blocks_version,
        })
    }

    /// Counts a change that may change blocks (under the catalog's write lock, or with the
    /// database's write lock held while the data file is reopened).
    pub(crate) fn blocks_changed(&self) {
        self.blocks_version.fetch_add(1, Ordering::AcqRel);
    }

    /// A read transaction of the data file as of its last commit.
    pub(crate) fn read_txn(&self) -> Result<redb::ReadTransaction, StoreError> {
        let db = self.db.read().unwrap_or_else(PoisonError::into_inner);
        db.as_ref()
            .ok_or(StoreError::Closed)?
            .begin_read()
            .map_err(StoreError::storage)
    }
}

/// Why writes are refused, and what ends the refusal.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// The cause, as an operator reads it.
    pub(crate) reason: String,
    /// redb failed an I/O: the database must be reopened before writing again.
    pub(crate) reopen: bool,
}
