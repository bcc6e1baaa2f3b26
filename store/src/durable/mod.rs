//! [`DurableBackend`]: the durable engine (`tableq serve`, the default): tables in one
//! [redb](https://docs.rs/redb) file in a data directory, every acknowledged write on disk.
//!
//! # What survives what
//!
//! A write ([`Backend::write_batch`], `create_table`, `delete_table`) returns only after
//! the redb transaction holding it committed with `Durability::Immediate` (its pages and
//! the new root are `fsync`ed). So an acknowledged write survives a crash of the process
//! (including `SIGKILL`) and, as far as the disk honours `fsync`, of the machine; a write
//! that had not returned is either entirely there or entirely absent — a batch is never
//! half applied, and a reply never reports a write that is not stored. What is lost is
//! only what was never acknowledged. The Timestamp clock is re-seeded on opening from the
//! largest stored Timestamp, so ETags keep increasing across restarts even when the system
//! clock stepped back.
//!
//! # Layout
//!
//! * **Group commit** (`writer.rs`): one writer thread owns redb's single write
//!   transaction. Callers queue requests; the thread takes every queued request, resolves
//!   each against the transaction's current state ([`crate::resolve()`] — a failing request
//!   leaves no trace), applies it, commits once, and only then replies to all of them.
//!   Writers arriving together share one `fsync`.
//! * **Blocks** (`block.rs`, `edit.rs`): rows of one partition are stored several to a redb
//!   value (by default up to 256 rows or 64 KiB; a large entity alone), keyed by (table id,
//!   PartitionKey, first RowKey) in a byte encoding whose order is the spec's UTF-16 order
//!   (`keys.rs`). A scan pays redb's per-entry cost once per block and reads rows in place;
//!   a point get is one redb lookup and a binary search in the block.
//! * **Reads** (`read.rs`): a [`DurableSnapshot`] is one redb read transaction (an MVCC
//!   snapshot) of one table: the [`EntitySource`](tableq_exec::EntitySource) the executor
//!   runs a query page on, with property slots (interned name numbers, the row codec's
//!   `Names`) and
//!   `split` at block boundaries for parallel scans.
//!
//! The data directory holds one file, [`DATA_FILE`]; redb locks it, so a second server on
//! the same directory fails with [`OpenError::Locked`].
//!
//! ```
//! use tableq_model::Entity;
//! use tableq_store::{Backend, DurableBackend, WriteOp};
//! let dir = tempfile::tempdir().unwrap();
//! let store = DurableBackend::open(dir.path()).unwrap();
//! store.create_table("Orders").unwrap();
//! let w = store.write("orders", WriteOp::Insert { entity: Entity::new("p", "r") }).unwrap();
//! store.close().unwrap();
//! let store = DurableBackend::open(dir.path()).unwrap();
//! assert_eq!(store.get("Orders", "p", "r").unwrap().unwrap().timestamp(), Some(w.timestamp));
//! ```

mod block;
mod edit;
mod keys;
mod locate;
mod open;
mod read;
mod writer;

pub use open::{DATA_FILE, DEFAULT_DATA_DIR, FORMAT_VERSION, OpenError};
pub use read::{DurableRow, DurableRows, DurableSnapshot};

use crate::backend::{Backend, QueryPage, ScanExplain, TableInfo};
use crate::clock::Clock;
use crate::codec::Names;
use crate::error::{BatchError, StoreError};
use crate::op::{WriteOp, Written};
use redb::{Database, ReadableDatabase};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use tableq_exec::{ExecError, Executor, Key, PageOptions, RowView};
use tableq_model::{Entity, validate};
use tableq_planner::plan::Plan;
use writer::Request;

/// redb tables of the data file.
mod schema {
    use redb::TableDefinition;

    /// `format` → [`super::FORMAT_VERSION`]; `next_table` → the next table id; `clock` →
    /// the largest Timestamp (ticks) any commit stored.
    pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("tableq_meta");
    /// Table key (lowercase name) → table id (8 bytes, little-endian) + name as created.
    pub(crate) const TABLES: TableDefinition<&str, &[u8]> = TableDefinition::new("tableq_tables");
    /// (table id, name number) → property name.
    pub(crate) const NAMES: TableDefinition<(u64, u32), &str> =
        TableDefinition::new("tableq_names");
    /// Block key (`keys.rs`) → block (`block.rs`).
    pub(crate) const ROWS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("tableq_rows");

    pub(crate) const META_FORMAT: &str = "format";
    pub(crate) const META_NEXT_TABLE: &str = "next_table";
    pub(crate) const META_CLOCK: &str = "clock";
}

/// Tuning of a [`DurableBackend`] (see [`DurableBackend::open_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurableOptions {
    /// Bytes of redb's page cache (default 1 GiB; the cache is filled as pages are read).
    pub cache_bytes: usize,
    /// Most rows per block (default 256). Not part of the file format: blocks written with
    /// other limits are read as they are. Larger blocks scan faster (redb's per-entry cost
    /// and the cache misses of entering a block are paid once per block); smaller blocks
    /// make single writes cheaper (a write rewrites the blocks it touches).
    pub block_rows: usize,
    /// Soft byte limit of a block (default 64 KiB): a block grows past it only to hold a
    /// single larger entity.
    pub block_bytes: usize,
    /// Verify every page's checksum when opening (reads the whole file). A file that was
    /// damaged outside redb is then reported as [`OpenError::Corrupt`]. Without it redb
    /// trusts a cleanly closed file: damage is found only when the damaged page is read
    /// (a storage error then; redb's own debug builds may panic on some damage). Recovery
    /// after a crash checks the whole file in any case. Default `false`.
    pub verify_on_open: bool,
}

impl Default for DurableOptions {
    fn default() -> DurableOptions {
        DurableOptions {
            cache_bytes: 1 << 30,
            block_rows: 256,
            block_bytes: 64 * 1024,
            verify_on_open: false,
        }
    }
}

impl DurableOptions {
    /// Sets [`cache_bytes`](DurableOptions::cache_bytes).
    pub fn with_cache_bytes(mut self, bytes: usize) -> DurableOptions {
        self.cache_bytes = bytes;
        self
    }

    /// Sets the block limits ([`block_rows`](DurableOptions::block_rows),
    /// [`block_bytes`](DurableOptions::block_bytes)); each is at least 1.
    pub fn with_block_limits(mut self, rows: usize, bytes: usize) -> DurableOptions {
        self.block_rows = rows.max(1);
        self.block_bytes = bytes.max(1);
        self
    }

    /// Sets [`verify_on_open`](DurableOptions::verify_on_open).
    pub fn with_verify_on_open(mut self, verify: bool) -> DurableOptions {
        self.verify_on_open = verify;
        self
    }
}

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
}

impl Shared {
    /// The table `name` and a read snapshot consistent with the catalog.
    fn begin_read(
        &self,
        name: &str,
    ) -> Result<(Arc<TableEntry>, redb::ReadTransaction), StoreError> {
        let catalog = self.catalog.read().unwrap_or_else(PoisonError::into_inner);
        let entry = catalog
            .get(&validate::table_key(name))
            .cloned()
            .ok_or_else(|| StoreError::TableNotFound(name.to_owned()))?;
        let db = self.db.read().unwrap_or_else(PoisonError::into_inner);
        let txn = db
            .as_ref()
            .ok_or(StoreError::Closed)?
            .begin_read()
            .map_err(StoreError::storage)?;
        Ok((entry, txn))
    }
}

/// The writer thread's queue and handle.
struct WriterHandle {
    queue: SyncSender<Request>,
    thread: std::thread::JoinHandle<()>,
}

/// The durable engine (see the module docs).
pub struct DurableBackend {
    shared: Arc<Shared>,
    writer: RwLock<Option<WriterHandle>>,
    /// Serialises `close` calls.
    closing: Mutex<()>,
    closed: AtomicBool,
    dir: PathBuf,
}

/// Most requests queued for the writer before callers wait for room.
const QUEUE_CAPACITY: usize = 4096;

impl DurableBackend {
    /// Opens (creating if needed) the data directory `dir` with default options.
    ///
    /// Fails with a typed [`OpenError`] when the directory cannot be created or written,
    /// holds a file that is not tableq's or is corrupt or of an incompatible format, or is
    /// in use by another process (or another `DurableBackend` of this one).
    pub fn open(dir: impl AsRef<Path>) -> Result<DurableBackend, OpenError> {
        DurableBackend::open_with(dir, DurableOptions::default())
    }

    /// Opens the data directory `dir` with `options`.
    pub fn open_with(
        dir: impl AsRef<Path>,
        options: DurableOptions,
    ) -> Result<DurableBackend, OpenError> {
        let dir = dir.as_ref().to_path_buf();
        let opened = open::open(&dir, &options)?;
        let clock = Clock::new();
        if let Some(t) = opened.max_timestamp {
            clock.observe(t);
        }
        let shared = Arc::new(Shared {
            db: RwLock::new(Some(opened.db)),
            catalog: RwLock::new(opened.catalog),
            clock,
            limits: Limits {
                rows: options.block_rows.max(1),
                bytes: options.block_bytes.max(1),
            },
        });
        let (queue, requests): (SyncSender<Request>, Receiver<Request>) =
            mpsc::sync_channel(QUEUE_CAPACITY);
        let writer = writer::Writer::new(shared.clone(), opened.names);
        let thread = std::thread::Builder::new()
            .name("tableq-durable-writer".into())
            .spawn(move || writer.run(requests))
            .map_err(|source| OpenError::Io {
                path: dir.clone(),
                source,
            })?;
        Ok(DurableBackend {
            shared,
            writer: RwLock::new(Some(WriterHandle { queue, thread })),
            closing: Mutex::new(()),
            closed: AtomicBool::new(false),
            dir,
        })
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn check_open(&self) -> Result<(), StoreError> {
        if self.closed.load(Ordering::Acquire) {
            Err(StoreError::Closed)
        } else {
            Ok(())
        }
    }

    /// A consistent snapshot of `table` (one redb read transaction): the
    /// [`EntitySource`](tableq_exec::EntitySource) queries run on. Take one per query page
    /// and drop it: a live snapshot keeps the pages of its version from being reused and
    /// holds every block it has read.
    pub fn snapshot(&self, table: &str) -> Result<DurableSnapshot, StoreError> {
        self.check_open()?;
        let (entry, txn) = self.shared.begin_read(table)?;
        DurableSnapshot::new(&entry, &txn)
    }

    /// Queues a request for the writer thread and waits for its reply.
    fn submit<T>(&self, make: impl FnOnce(SyncSender<T>) -> Request) -> Result<T, StoreError> {
        self.check_open()?;
        let (reply, answer) = mpsc::sync_channel(1);
        {
            let writer = self.writer.read().unwrap_or_else(PoisonError::into_inner);
            let handle = writer.as_ref().ok_or(StoreError::Closed)?;
            handle.queue.send(make(reply)).map_err(|_| writer_gone())?;
        }
        answer.recv().map_err(|_| writer_gone())
    }

    /// Stops the writer (after it answered every queued request) and closes the database.
    fn shutdown(&self) -> Result<(), StoreError> {
        let _closing = self.closing.lock().unwrap_or_else(PoisonError::into_inner);
        self.closed.store(true, Ordering::Release);
        let handle = self
            .writer
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut result = Ok(());
        if let Some(WriterHandle { queue, thread }) = handle {
            drop(queue);
            if thread.join().is_err() {
                result = Err(writer_gone());
            }
        }
        let db = self
            .shared
            .db
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(db) = db {
            db.close().map_err(StoreError::storage)?;
        }
        result
    }
}

fn writer_gone() -> StoreError {
    StoreError::storage("the durable store's writer thread stopped unexpectedly")
}

impl Drop for DurableBackend {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl std::fmt::Debug for DurableBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableBackend")
            .field("dir", &self.dir)
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Backend for DurableBackend {
    fn describe(&self) -> String {
        format!("durable (redb) at {}", self.dir.display())
    }

    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.check_open()?;
        validate::table_name(name)?;
        self.submit(|reply| Request::CreateTable {
            name: name.to_owned(),
            reply,
        })?
    }

    fn delete_table(&self, name: &str) -> Result<(), StoreError> {
        self.submit(|reply| Request::DeleteTable {
            name: name.to_owned(),
            reply,
        })?
    }

    fn table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.check_open()?;
        let catalog = self
            .shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        catalog
            .get(&validate::table_key(name))
            .map(|t| TableInfo {
                name: t.name.clone(),
            })
            .ok_or_else(|| StoreError::TableNotFound(name.to_owned()))
    }

    fn tables(&self) -> Result<Vec<TableInfo>, StoreError> {
        self.check_open()?;
        let catalog = self
            .shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(catalog
            .values()
            .map(|t| TableInfo {
                name: t.name.clone(),
            })
            .collect())
    }

    fn get(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        self.snapshot(table)?.entity(pk, rk)
    }

    fn query(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        visit: &mut dyn FnMut(RowView<'_>),
    ) -> Result<QueryPage, StoreError> {
        let snapshot = self.snapshot(table)?;
        let (continuation, stats) = Executor::new(&snapshot)
            .execute_page_with(plan, continuation, options, visit)
            .map_err(|e| match e {
                ExecError::Source(e) => e,
                other => StoreError::storage(other),
            })?;
        snapshot.take_error()?;
        Ok(QueryPage {
            continuation,
            stats,
        })
    }

    fn write_batch(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<Written>, BatchError> {
        self.submit(|reply| Request::Write {
            table: table.to_owned(),
            ops,
            reply,
        })?
    }

    fn explain(&self, table: &str, plan: &Plan) -> Result<ScanExplain, StoreError> {
        self.table(table)?;
        let _ = plan;
        let limits = self.shared.limits;
        let mut explain = ScanExplain::engine("durable");
        explain.details.push(format!(
            "redb file {}; rows in blocks of up to {} rows / {} KiB keyed by (table, \
             PartitionKey, first RowKey); one read transaction per page",
            self.dir.join(DATA_FILE).display(),
            limits.rows,
            limits.bytes / 1024
        ));
        Ok(explain)
    }

    /// redb read transactions are MVCC snapshots of a local file: they never wait for the
    /// writer thread, and a point read touches a handful of (usually cached) pages.
    fn point_reads_are_local(&self) -> bool {
        true
    }

    fn close(&self) -> Result<(), StoreError> {
        self.shutdown()
    }
}
