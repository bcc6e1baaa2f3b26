//! What the backend, its writer and its readers share ([`Shared`]): the database, the
//! catalog of tables as last committed ([`Catalog`], [`TableEntry`]: each table's property
//! names and published memtable), the Timestamp clock, the block size limits, and why
//! writes are refused while they are ([`Refusal`]).
//!
//! The locks are the engine's consistency rule: readers begin their redb snapshot and take
//! their memtable under the catalog's read lock; the writer commits a catalog change or a
//! flush and publishes it under the write lock (`writer/txn.rs`).

use super::block_map::{BlockMap, MapBuilds};
use super::format::tables::ROWS;
use super::memtable::MemTable;
use super::options::DurableOptions;
use super::verified::CopyBudget;
use crate::clock::Clock;
use crate::codec::Names;
use crate::error::StoreError;
use redb::{Database, ReadableDatabase};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// A thread is building the table's block map for point gets (`MapBuilds`).
    pub(crate) map_building: AtomicBool,
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
            map_building: AtomicBool::new(false),
        }
    }
}

/// The data file's rows table (`tableq_rows`) in a read transaction.
pub(crate) type RowsTable = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;

/// What a reader begins with ([`Shared::begin_read`]): the table, the data file's rows as
/// of one commit, its memtable and the blocks version, consistent with each other.
pub(crate) struct ReadStart {
    pub(crate) entry: Arc<TableEntry>,
    /// The rows table in a read transaction of the blocks version (shared with the other
    /// readers of that version: [`Shared::rows_table`]).
    pub(crate) rows: Arc<RowsTable>,
    pub(crate) mem: MemTable,
    /// The engine's block map builds (for a snapshot's point gets).
    pub(crate) map_builds: Arc<MapBuilds>,
    /// [`Shared::blocks_version`] as of `rows`.
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
    /// Block maps being built on threads of their own (`block_map.rs`).
    pub(crate) map_builds: Arc<MapBuilds>,
    /// The rows table as of the current blocks version, opened by the first reader of that
    /// version and shared by the readers after it ([`Shared::rows_table`]); emptied when
    /// the version changes ([`Shared::blocks_changed`]).
    pub(crate) rows_cache: Mutex<Option<(u64, Arc<RowsTable>)>>,
}

impl Shared {
    /// The table `name`, its memtable, a read snapshot and the blocks version, consistent
    /// with each other and with the catalog (flushes publish the commit and the emptied
    /// memtables under the catalog's write lock).
    pub(crate) fn begin_read(&self, name: &str) -> Result<ReadStart, StoreError> {
        let catalog = self.catalog.read().unwrap_or_else(PoisonError::into_inner);
        let entry = table_in(&catalog, name)?;
        let mem = entry
            .mem
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let blocks_version = self.blocks_version.load(Ordering::Acquire);
        let rows = self.rows_table(blocks_version)?;
        Ok(ReadStart {
            entry,
            rows,
            mem,
            blocks_version,
            map_builds: self.map_builds.clone(),
        })
    }

    /// The table `name` and a read transaction of the data file, consistent with each
    /// other (for what readers read besides rows: a table's stored access policies).
    pub(crate) fn begin_settings_read(
        &self,
        name: &str,
    ) -> Result<(Arc<TableEntry>, redb::ReadTransaction), StoreError> {
        let catalog = self.catalog.read().unwrap_or_else(PoisonError::into_inner);
        Ok((table_in(&catalog, name)?, self.read_txn()?))
    }

    /// The rows table as of blocks version `version` (read under the catalog's read lock,
    /// which a flush's commit and its count take for writing): the one kept for it, or one
    /// opened in a new read transaction now and kept. Every commit that changes rows
    /// counts a version (`blocks_changed`), so all readers of a version see the same rows;
    /// sharing its transaction saves each point get and query page beginning its own
    /// (redb registers every read transaction and looks its tables up again).
    ///
    /// The kept table holds its read transaction — and so the pages of its commit — only
    /// until the next version: `blocks_changed` lets it go, so freed pages are reused as
    /// soon as the snapshots still reading them end, as without it.
    fn rows_table(&self, version: u64) -> Result<Arc<RowsTable>, StoreError> {
        let kept = || {
            self.rows_cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some((v, rows)) = kept().as_ref()
            && *v == version
        {
            return Ok(rows.clone());
        }
        // Opened without the lock held: opening takes the database's lock, which a reopen
        // holds while it counts a version (and then takes this lock to empty it).
        let rows = Arc::new(
            self.read_txn()?
                .open_table(ROWS)
                .map_err(StoreError::storage)?,
        );
        let mut slot = kept();
        // A version counted since the caller read `version` has emptied the slot or is
        // about to: keep nothing for an old version.
        if self.blocks_version.load(Ordering::Acquire) == version {
            *slot = Some((version, rows.clone()));
        }
        Ok(rows)
    }

    /// Counts a change that may change blocks (under the catalog's write lock, or with the
    /// database's write lock held while the data file is reopened), and lets the rows table
    /// kept for the old version go.
    pub(crate) fn blocks_changed(&self) {
        self.blocks_version.fetch_add(1, Ordering::AcqRel);
        self.rows_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
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

/// The table `name` (any case) of `catalog`, or [`StoreError::TableNotFound`].
fn table_in(catalog: &Catalog, name: &str) -> Result<Arc<TableEntry>, StoreError> {
    catalog
        .get(&validate::table_key(name))
        .cloned()
        .ok_or_else(|| StoreError::TableNotFound(name.to_owned()))
}

/// Why writes are refused, and what ends the refusal.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// The cause, as an operator reads it.
    pub(crate) reason: String,
    /// redb failed an I/O: the database must be reopened before writing again.
    pub(crate) reopen: bool,
}
