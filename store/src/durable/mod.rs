//! [`DurableBackend`]: the durable engine (`tableq serve`, the default): tables in one
//! [redb](https://docs.rs/redb) file in a data directory, every acknowledged write in a
//! write-ahead log in front of it (`wal/`), and the writes since the last flush in memory
//! (`memtable.rs`). The bytes of both files — the whole on-disk format — are written out in
//! one place, `format/`.
//!
//! # What survives what
//!
//! A write ([`Backend::write_batch`], `create_table`, `delete_table`, a setting) returns
//! only after its record was appended to the write-ahead log with `write(2)` and the write
//! was made visible to readers; when the log is `fsync`ed is the [`FsyncPolicy`]:
//!
//! | crash | `interval=MS` (default: 1000) | `always` |
//! |---|---|---|
//! | the process (`kill -9`, a panic, an OOM kill) | nothing acknowledged is lost | nothing acknowledged is lost |
//! | the machine or its power | the writes acknowledged in the last MS (plus the `fsync` under way) may be lost | nothing acknowledged is lost (as far as the disk honours `fsync`) |
//!
//! In every mode a write that had not returned is either entirely there or entirely absent
//! — a batch is never half applied, and a reply never reports a write that is not stored —
//! and a lost write is lost with every write after it (the log is replayed in order, up to
//! its first missing record). Opening the data directory replays the log records past the
//! last checkpoint (`writer/replay.rs`). The Timestamp clock is re-seeded on opening from the
//! largest stored or replayed Timestamp, so ETags keep increasing across restarts even when
//! the system clock stepped back.
//!
//! # What is checked
//!
//! * **Blocks** carry a CRC-32 verified on every read (`format/block.rs`): scans (the iterator
//!   and `scan_each`), point gets, the writer's reads, and [`check_data_dir`]. A damaged
//!   block is never served: [`StoreError::Damaged`] (500) names the data file, the table
//!   and the block's key range, and an `ERROR` line is logged (`damage.rs`).
//! * **The log** must reach as far as the data file says (`log_check.rs`): the data file
//!   records the log's generation; the log carries a reach marker naming the last record
//!   an `fsync` made durable. A missing, cut, foreign or damaged-before-the-marker log
//!   refuses to open ([`OpenError::LogMissing`], [`OpenError::LogTruncated`],
//!   [`OpenError::LogMismatch`]) unless [`DurableOptions::accept_log_loss`]; a discarded
//!   torn tail is logged as a warning with its offset and size.
//! * **Replay failures** are reported under the file at fault: a damaged block met while
//!   folding replayed rows names the data file, a bad record the log.
//! * **Older formats** (1, 2: blocks without checksums) are refused
//!   ([`OpenError::OlderFormat`]).
//!
//! A full disk (or any failure to write the log or the data file) refuses writes with
//! [`StoreError::WritesRefused`] (503 `ServerBusy`, naming the cause) while reads go on;
//! [`Backend::ready`] reports it, and writes resume by themselves once the disk takes them
//! again (`writer/commit.rs`).
//!
//! # Design: one engine, three tiers
//!
//! A write's record goes to the log (durability), its rows to the memtable of its table
//! (visibility), and — later, in bulk — into redb's blocks (the data file). An entity write
//! thus costs a `write(2)` of its record and an insert into a persistent in-memory tree; the
//! per-write redb transaction of the previous design (a read-modify-write of a 256-row block
//! and a commit: ≈ 340 000 instructions per single insert, two thirds of the server's work)
//! is paid once per flush of thousands of rows. Why not an LSM engine with a journal (such
//! as fjall): it would replace the block layout that scans read in place and redb's MVCC
//! snapshots; a memtable in front of redb gives writes an LSM's cost and keeps both. The
//! figures (per single insert, 1 and 8 connections, before and after) are in
//! `benches/README.md`, section "The Azurite duel".
//!
//! * **The gate** (`gate.rs`): callers queue requests; a caller that finds the writer free
//!   commits the queued requests itself, in groups (no hand-off to another thread, one
//!   `write(2)` per group); under `always`, and for flushes and checkpoints, a background
//!   thread does. Writers arriving together share one `write(2)` (and, under `always`, one
//!   `fsync`).
//! * **The writer** (`writer/`: `commit.rs`, `txn.rs`; its state `state.rs`, what it shares
//!   with readers `shared.rs`): resolves each write against the current state
//!   — the memtable, then redb ([`crate::resolve()`]: a failing request leaves no trace) —,
//!   appends the group's log records, applies the rows to the memtables and only then
//!   publishes the new memtable versions and replies. Table creation and deletion and
//!   settings are redb transactions of their own, after their log record.
//! * **Memtables** (`memtable.rs`): per table, a persistent two-level tree (PartitionKey →
//!   RowKey → the row in the block encoding, or a removal); readers hold a version.
//!   **Flushes** fold the memtables into redb (when they hold
//!   [`DurableOptions::memtable_bytes`], and at least every
//!   [`DurableOptions::flush_interval`]) in slices of non-durable transactions of at most
//!   [`DurableOptions::flush_slice`] each, with writes committed between slices
//!   (`writer/flush.rs`); a **checkpoint** is a durable commit that records the last log
//!   record the data file holds, after which the log drops the records up to it: one due
//!   by size or time is a flush that records its point, then a commit on a thread of its
//!   own while writes go on, and the log keeps what followed (`writer/checkpoint.rs`,
//!   `wal/tail.rs`); on close and at twice the log's bound it folds the memtables in one
//!   durable transaction and empties the log.
//! * **Write-ahead log** (`wal/`, `writer/replay.rs`): records, checkpoints, replay; the
//!   background `fsync` of the interval mode. Replay is the write path minus the log: a
//!   logged row goes into its memtable as logged (only its property numbers move to the
//!   table's), and the memtables are folded whenever full — 1 M entities in ≈ 1.3 s.
//! * **Blocks** (`format/block.rs`, `edit.rs`): rows of one partition are stored several to a redb
//!   value (by default up to 256 rows or 64 KiB; a large entity alone), keyed by (table id,
//!   PartitionKey, first RowKey) in a byte encoding whose order is the spec's UTF-16 order
//!   (`format/keys.rs`). A scan pays redb's per-entry cost once per block and reads rows in place;
//!   a point get is one redb lookup and a binary search in the block.
//! * **Reads** (`read.rs`): a [`DurableSnapshot`] is one redb read transaction (an MVCC
//!   snapshot) of one table with the memtable version taken with it (under the catalog
//!   lock, which a flush's last slice holds while it commits and empties the memtables): the
//!   [`EntitySource`](tableq_exec::EntitySource) the executor runs a query page on, with
//!   property slots (interned name numbers, the row codec's `Names`) and `split` at block
//!   boundaries for parallel scans. A memtable entry wins over the stored row of its key.
//!   The snapshots begun between two flushes share one read transaction and its opened
//!   rows table (`shared.rs`, `Shared::rows_table`: every commit that changes rows counts
//!   a blocks version and lets the old one go), so a point get or query page does not
//!   register a transaction of its own. A point get can hand its row over in place
//!   ([`Backend::get_row`]): the server prints it as JSON without building an `Entity`.
//!
//! The data directory holds two files, [`DATA_FILE`] (created atomically: initialised
//! under a temporary name, then renamed) and the log [`WAL_FILE`] (created atomically too,
//! before the data file records its generation); redb locks the data file, so a second
//! server on the same directory fails with [`OpenError::Locked`].
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

mod block_map;
mod check;
mod damage;
mod edit;
mod format;
mod gate;
mod locate;
mod log_check;
mod memtable;
mod open;
mod options;
mod read;
mod settings;
mod shared;
mod verified;
mod wal;
mod writer;

pub use check::{CheckReport, LogFinding, check_data_dir};
pub use format::{DATA_FILE, FORMAT_VERSION, WAL_FILE};
pub use open::{DEFAULT_DATA_DIR, OpenError};
pub use options::DurableOptions;
pub use read::{DurableRow, DurableRows, DurableSnapshot};
pub use wal::FsyncPolicy;

use crate::acl::{self, SignedIdentifier};
use crate::backend::{Backend, PendingWrite, QueryPage, ScanExplain, TableInfo, WriteLogStats};
use crate::clock::Clock;
use crate::error::{BatchError, StoreError};
use crate::op::{WriteOp, Written};
use crate::resolve::check_ops;
use crate::service::ServiceProperties;
use format::log::{self as log_format, HEADER_LEN};
use gate::Gate;
use log_check::{LogFound, LogProblem};
use shared::{Limits, Shared};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use tableq_exec::{ExecError, Executor, Key, PageOptions, RowView, SourceRow};
use tableq_model::{Entity, validate};
use tableq_planner::plan::Plan;
use verified::CopyBudget;
use wal::{LogFile, Syncer, WalShared};
use writer::{CheckpointLimits, Reply, Request};

/// How often (at most) the background thread looks for a flush or a checkpoint due by
/// time, or a refusal of writes to end.
const BACKGROUND_TICK: Duration = Duration::from_secs(1);

/// The background writer thread and the background syncer.
struct Background {
    thread: std::thread::JoinHandle<()>,
    syncer: Syncer,
}

/// The durable engine (see the module docs).
pub struct DurableBackend {
    shared: Arc<Shared>,
    /// Where writes go (`gate.rs`).
    gate: Arc<Gate>,
    background: Mutex<Option<Background>>,
    /// Serialises `close` calls.
    closing: Mutex<()>,
    closed: AtomicBool,
    dir: PathBuf,
    /// The write-ahead log's counters (for [`DurableBackend::write_log_stats`]).
    log: Arc<WalShared>,
    fsync: FsyncPolicy,
}

impl DurableBackend {
    /// The write-ahead log's counters (what [`Backend::metrics`] reports): totals since the
    /// store was opened, except the sizes.
    pub fn write_log_stats(&self) -> WriteLogStats {
        let c = &self.log.counters;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let seconds = |a: &std::sync::atomic::AtomicU64| load(a) as f64 / 1e9;
        WriteLogStats {
            fsync_policy: self.fsync.to_string(),
            records: load(&c.records),
            appended_bytes: load(&c.appended_bytes),
            log_bytes: load(&c.log_bytes),
            unsynced_records: load(&c.appended_lsn).saturating_sub(load(&c.synced_lsn)),
            fsyncs: load(&c.fsyncs),
            fsync_seconds: seconds(&c.fsync_nanos),
            checkpoints: load(&c.checkpoints),
            checkpoint_seconds: seconds(&c.checkpoint_nanos),
            flushes: load(&c.flushes),
            flush_slices: load(&c.flush_slices),
            flush_seconds: seconds(&c.flush_nanos),
            memtable_bytes: load(&c.memtable_bytes),
        }
    }

    /// Opens (creating if needed) the data directory `dir` with default options.
    ///
    /// Fails with a typed [`OpenError`] when the directory cannot be created or written,
    /// holds a file that is not tableq's or is corrupt or of an incompatible format, or is
    /// in use by another process (or another `DurableBackend` of this one).
    pub fn open(dir: impl AsRef<Path>) -> Result<DurableBackend, OpenError> {
        DurableBackend::open_with(dir, DurableOptions::default())
    }

    /// Opens the data directory `dir` with `options`: the data file (created if missing),
    /// then the write-ahead log, whose records past the last checkpoint are replayed and
    /// checkpointed before this returns.
    pub fn open_with(
        dir: impl AsRef<Path>,
        options: DurableOptions,
    ) -> Result<DurableBackend, OpenError> {
        DurableBackend::open_logged(dir.as_ref(), options, |file| {
            Arc::new(wal::DiskLog::new(file))
        })
    }

    /// [`open_with`](DurableBackend::open_with), writing the log through `log_file` (tests
    /// wrap the file to count or delay `fsync`s).
    fn open_logged(
        dir: &Path,
        options: DurableOptions,
        log_file: impl FnOnce(std::fs::File) -> Arc<dyn LogFile>,
    ) -> Result<DurableBackend, OpenError> {
        let dir = dir.to_path_buf();
        let opened = open::open(&dir, &options)?;
        let clock = Clock::new();
        if let Some(t) = opened.max_timestamp {
            clock.observe(t);
        }
        let data_path = dir.join(DATA_FILE);
        let (wal_path, found) = open::find_log(&dir)?;
        let bad_log = |detail: String| OpenError::Corrupt {
            path: wal_path.clone(),
            detail,
        };
        let empty = log_format::Contents {
            base_lsn: opened.wal_lsn + 1,
            generation: None,
            reach: None,
            records: Vec::new(),
            valid_len: 0,
        };
        let (file, contents) = match &found {
            Some((file, bytes)) => {
                let contents = log_format::read(bytes, opened.wal_lsn + 1)
                    .map_err(|e| bad_log(e.to_string()))?;
                (Some(file), contents)
            }
            None => (None, empty.clone()),
        };
        // Does the log reach as far as the data file says? (`log_check.rs`)
        let problems = log_check::compare(
            &match &found {
                Some((_, bytes)) => LogFound::Read {
                    len: bytes.len() as u64,
                    contents: &contents,
                },
                None => LogFound::Missing,
            },
            opened.wal_generation,
            opened.wal_lsn,
        );
        let mut discard = found.is_none();
        for problem in &problems {
            if problem.loses_writes() {
                if !options.accept_log_loss {
                    return Err(log_refusal(problem, wal_path.clone()));
                }
                tracing::warn!(
                    log = %wal_path.display(),
                    "{problem}: acknowledged writes are lost (accepted: --accept-log-loss)"
                );
            } else {
                tracing::warn!(log = %wal_path.display(), "{problem}");
            }
            discard |= problem.discards_log();
        }
        // A log of this build that holds no records yet can be replaced as well (created
        // before its generation reached the data file).
        discard |= opened.wal_generation.is_none();
        let generation = opened.wal_generation.unwrap_or_else(open::new_generation);
        let (file, contents) = match file {
            Some(file) if !discard => (file.try_clone(), contents),
            _ => {
                if found.is_some() && !contents.records.is_empty() {
                    let aside = open::set_log_aside(&dir)?;
                    tracing::warn!(
                        log = %wal_path.display(),
                        "the write-ahead log was moved aside to {} ({} records not replayed)",
                        aside.display(),
                        contents.records.len()
                    );
                }
                (
                    Ok(open::create_log(&dir, opened.wal_lsn + 1, generation)?),
                    empty,
                )
            }
        };
        let file = file.map_err(|source| OpenError::Io {
            path: wal_path.clone(),
            source,
        })?;
        if opened.wal_generation.is_none() {
            open::record_generation(&opened.db, &data_path, generation)?;
        }
        let file = log_file(file);
        file.truncate(contents.valid_len.max(HEADER_LEN))
            .map_err(|source| OpenError::Io {
                path: wal_path.clone(),
                source,
            })?;
        let next_lsn = contents.last_lsn().max(opened.wal_lsn) + 1;
        let log = wal::Wal::new(
            file,
            options.fsync,
            generation,
            contents.valid_len.max(HEADER_LEN),
            next_lsn,
        );
        let shared = Arc::new(Shared {
            db: RwLock::new(Some(opened.db)),
            catalog: RwLock::new(opened.catalog),
            clock,
            limits: Limits {
                rows: options.block_rows.max(1),
                bytes: options.block_bytes.max(1),
            },
            refusal: Mutex::new(None),
            dir: dir.clone(),
            data_dir: Arc::from(dir.as_path()),
            options: options.clone(),
            blocks_version: AtomicU64::new(0),
            copies: Arc::new(CopyBudget::new(options.cache_bytes / 2)),
            map_builds: Arc::default(),
            rows_cache: Mutex::new(None),
        });
        let checkpoints = CheckpointLimits {
            log_bytes: options.checkpoint_log_bytes,
            interval: options.checkpoint_interval,
            memtable_bytes: options.memtable_bytes,
            flush_interval: options.flush_interval,
            flush_slice: options.flush_slice,
        };
        let mut writer = writer::Writer::new(shared.clone(), opened.names, log, checkpoints);
        // A replay that cannot write (a full disk) is an I/O error; a record that cannot be
        // decoded or does not follow the data file is the log's fault; anything else (a
        // damaged block met while folding the replayed rows in) is the data file's.
        let replayed =
            writer
                .replay(&contents, opened.wal_lsn)
                .map_err(|e| match writer::io_kind(&e) {
                    Some(kind) => OpenError::Io {
                        path: data_path.clone(),
                        source: io::Error::new(kind, e.to_string()),
                    },
                    None if is_data_file_fault(&e) => OpenError::Corrupt {
                        path: data_path.clone(),
                        detail: e.to_string(),
                    },
                    None => bad_log(e.to_string()),
                })?;
        drop(contents);
        drop(found);
        let io = |source: io::Error| OpenError::Io {
            path: wal_path.clone(),
            source,
        };
        if replayed > 0 {
            writer.checkpoint().map_err(|e| OpenError::Storage {
                path: dir.join(DATA_FILE),
                source: Box::new(e),
            })?;
        } else {
            writer.wal.reset().map_err(io)?;
        }
        let log = writer.wal.shared().clone();
        // The background thread: flushes, checkpoints, the timer (a flush of what the
        // memtables hold, checkpoints due by time, the probe that ends a refusal of
        // writes), and every group under `always`.
        let tick = options
            .checkpoint_interval
            .min(options.flush_interval)
            .min(BACKGROUND_TICK);
        let leaders = matches!(options.fsync, FsyncPolicy::Interval(_));
        let gate = Arc::new(Gate::new(writer, leaders, tick));
        let thread = {
            let gate = gate.clone();
            std::thread::Builder::new()
                .name("tableq-durable-writer".into())
                .spawn(move || gate.run())
                .map_err(io)?
        };
        // The background fsync of the interval mode.
        let (sync, every) = match options.fsync {
            FsyncPolicy::Always => (false, Duration::from_secs(1)),
            FsyncPolicy::Interval(every) => (true, every.min(Duration::from_secs(1))),
        };
        let syncer = Syncer::start(log.clone(), sync, every, || {}).map_err(io)?;
        Ok(DurableBackend {
            shared,
            gate,
            background: Mutex::new(Some(Background { thread, syncer })),
            closing: Mutex::new(()),
            closed: AtomicBool::new(false),
            dir,
            log,
            fsync: options.fsync,
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

    /// A consistent snapshot of `table` (a redb read transaction, shared with the other
    /// snapshots of the same blocks version): the
    /// [`EntitySource`](tableq_exec::EntitySource) queries run on. Take one per query page
    /// and drop it: a live snapshot keeps the pages of its version from being reused and
    /// holds every block it has read.
    pub fn snapshot(&self, table: &str) -> Result<DurableSnapshot, StoreError> {
        self.check_open()?;
        let start = self.shared.begin_read(table)?;
        DurableSnapshot::new(&start, &self.shared.data_dir, &self.shared.copies)
    }

    /// Hands a request to the writer (`gate.rs`: committed on this thread when the writer
    /// is free) and returns the channel its answer comes on.
    fn submit<T>(&self, make: impl FnOnce(Reply<T>) -> Request) -> oneshot::Receiver<T> {
        let (answer, lead) = self.enqueue(make);
        if lead {
            self.gate.lead();
        }
        answer
    }

    /// Queues a request at the gate without leading its commit (refused at once after the
    /// close): its answer's channel, and whether a caller must lead the commit
    /// ([`Gate::enqueue`]).
    fn enqueue<T>(&self, make: impl FnOnce(Reply<T>) -> Request) -> (oneshot::Receiver<T>, bool) {
        let (reply, answer) = oneshot::channel();
        let request = make(reply);
        if self.closed.load(Ordering::Acquire) {
            request.refuse(StoreError::Closed);
            return (answer, false);
        }
        let lead = self.gate.enqueue(request);
        (answer, lead)
    }

    /// Hands a request to the writer and waits for its answer.
    fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Request) -> Result<T, StoreError> {
        self.check_open()?;
        self.submit(make).recv().map_err(|_| writer_gone())
    }

    /// Stops the writer (after it answered every queued request and checkpointed) and
    /// closes the database.
    fn shutdown(&self) -> Result<(), StoreError> {
        let _closing = self.closing.lock().unwrap_or_else(PoisonError::into_inner);
        self.closed.store(true, Ordering::Release);
        let background = self
            .background
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut result = Ok(());
        if let Some(Background { thread, mut syncer }) = background {
            self.gate.close();
            if thread.join().is_err() {
                result = Err(writer_gone());
                // The thread ended without its last checkpoint: the writer lets go of
                // redb here (the log keeps every acknowledged write).
                self.gate.with_writer(|w| w.stored_rows = None);
            }
            syncer.stop();
        }
        // A block map being built holds a read transaction of the data file.
        self.shared.map_builds.finish();
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

/// Whether a replay failed on the data file (a damaged block, an error of redb) rather than
/// on the log (a record that does not decode or does not fit).
fn is_data_file_fault(e: &StoreError) -> bool {
    match e {
        StoreError::Damaged(_) => true,
        StoreError::Storage(inner) => {
            let inner: &(dyn std::error::Error + 'static) = inner.as_ref();
            inner.is::<redb::Error>()
                || inner.is::<redb::StorageError>()
                || inner.is::<redb::CommitError>()
                || inner.is::<redb::TransactionError>()
                || inner.is::<redb::TableError>()
        }
        _ => false,
    }
}

/// The error that refuses to open a data directory whose log lost acknowledged writes.
fn log_refusal(problem: &LogProblem, path: PathBuf) -> OpenError {
    let (expected, found) = problem.expected_found();
    match problem {
        LogProblem::Missing { .. } => OpenError::LogMissing { path, expected },
        LogProblem::OtherGeneration { .. } | LogProblem::Unexpected { .. } => {
            OpenError::LogMismatch {
                path,
                expected,
                found,
            }
        }
        _ => OpenError::LogTruncated {
            path,
            expected,
            found,
        },
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
    /// Where the data is, and what an acknowledged write survives under the fsync policy.
    fn describe(&self) -> String {
        let survives = match self.fsync {
            FsyncPolicy::Always => "write-ahead log fsynced before every reply: an \
                                    acknowledged write survives a crash of the process or of \
                                    the machine"
                .to_owned(),
            FsyncPolicy::Interval(every) => format!(
                "write-ahead log fsynced every {} ms: an acknowledged write survives a crash \
                 of the process; a crash of the machine may lose the writes of the last {} ms",
                every.as_millis(),
                every.as_millis()
            ),
        };
        format!("durable at {} ({survives})", self.dir.display())
    }

    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.check_open()?;
        validate::table_name(name)?;
        self.call(|reply| Request::CreateTable {
            name: name.to_owned(),
            reply,
        })?
    }

    fn delete_table(&self, name: &str) -> Result<(), StoreError> {
        self.call(|reply| Request::DeleteTable {
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

    fn get_row(
        &self,
        table: &str,
        pk: &str,
        rk: &str,
        visit: &mut dyn FnMut(&dyn SourceRow),
    ) -> Result<bool, StoreError> {
        self.snapshot(table)?.visit_entity(pk, rk, visit)
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
        // Checked here, on the caller's thread, not by the writer (see `Request::Write`).
        let ops = check_ops(ops);
        self.call(|reply| Request::Write {
            table: table.to_owned(),
            ops,
            reply,
        })?
    }

    /// Queues the write at the gate. Under `interval`, its commit is led by the returned
    /// write (`PendingWrite::queued`): awaited, after the tasks ready behind it have
    /// queued theirs, so that one turn of the event loop commits its writes as one group
    /// (one `write(2)`, no `fsync`, no other thread) — or answered by whoever holds the
    /// writer. Under `always`, by the background thread after its `fsync`.
    fn submit_batch(&self, table: &str, ops: Vec<WriteOp>) -> PendingWrite {
        let ops = check_ops(ops);
        let (answer, lead) = self.enqueue(|reply| Request::Write {
            table: table.to_owned(),
            ops,
            reply,
        });
        if lead {
            return PendingWrite::queued(answer, self.gate.clone());
        }
        match answer.try_recv() {
            Ok(result) => PendingWrite::ready(result),
            Err(oneshot::TryRecvError::Empty) => PendingWrite::waiting(answer),
            Err(oneshot::TryRecvError::Disconnected) => {
                PendingWrite::ready(Err(writer_gone().into()))
            }
        }
    }

    fn writes_never_block(&self) -> bool {
        true
    }

    fn service_properties(&self) -> Result<ServiceProperties, StoreError> {
        self.check_open()?;
        settings::service(&self.shared.read_txn()?)
    }

    fn set_service_properties(&self, properties: &ServiceProperties) -> Result<(), StoreError> {
        self.check_open()?;
        properties.validate()?;
        self.call(|reply| Request::SetServiceProperties {
            stored: properties.to_stored(),
            reply,
        })?
    }

    fn table_acl(&self, table: &str) -> Result<Vec<SignedIdentifier>, StoreError> {
        self.check_open()?;
        let (entry, txn) = self.shared.begin_settings_read(table)?;
        settings::acl(&txn, entry.id)
    }

    fn set_table_acl(&self, table: &str, policies: &[SignedIdentifier]) -> Result<(), StoreError> {
        self.check_open()?;
        acl::validate(policies)?;
        self.call(|reply| Request::SetTableAcl {
            name: table.to_owned(),
            stored: (!policies.is_empty()).then(|| acl::to_stored(policies)),
            reply,
        })?
    }

    fn explain(&self, table: &str, plan: &Plan) -> Result<ScanExplain, StoreError> {
        self.table(table)?;
        let _ = plan;
        let limits = self.shared.limits;
        let mut explain = ScanExplain::engine("durable");
        explain.details.push(format!(
            "redb file {} behind the write-ahead log {} (fsync {}); rows in blocks of up to \
             {} rows / {} KiB keyed by (table, PartitionKey, first RowKey); one read \
             transaction per page",
            self.dir.join(DATA_FILE).display(),
            self.dir.join(WAL_FILE).display(),
            self.fsync,
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

    /// Not ready while writes are refused (a full disk, a log that cannot be written or
    /// synced, a data file being reopened after an I/O failure): the cause.
    fn ready(&self) -> Result<(), StoreError> {
        self.check_open()?;
        match &*self
            .shared
            .refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(refusal) => Err(StoreError::WritesRefused(refusal.reason.clone())),
            None => Ok(()),
        }
    }

    fn metrics(&self) -> crate::metrics::StoreMetrics {
        let stats = self.write_log_stats();
        let mut m = crate::metrics::StoreMetrics::new();
        m.counter(
            "wal_records_total",
            "Records appended to the write-ahead log (one per write, table change or setting)",
            stats.records,
        )
        .counter(
            "wal_appended_bytes_total",
            "Bytes appended to the write-ahead log",
            stats.appended_bytes,
        )
        .gauge(
            "wal_log_bytes",
            "The write-ahead log's size now (each checkpoint drops the records it holds)",
            stats.log_bytes as f64,
        )
        .gauge(
            "wal_unsynced_records",
            "Records appended but not yet fsynced (0 under --fsync always)",
            stats.unsynced_records as f64,
        )
        .counter(
            "wal_fsyncs_total",
            "fsyncs of the write-ahead log",
            stats.fsyncs,
        )
        .gauge(
            "wal_fsync_seconds_sum",
            "Seconds spent in fsyncs of the write-ahead log since the store opened",
            stats.fsync_seconds,
        )
        .counter(
            "checkpoints_total",
            "Checkpoints (durable commits of the data file, after which the log drops the records they hold)",
            stats.checkpoints,
        )
        .gauge(
            "checkpoint_seconds_sum",
            "Seconds spent in checkpoints since the store opened (beside the writers for most)",
            stats.checkpoint_seconds,
        )
        .counter(
            "flushes_total",
            "Flushes of the memtables (rows written since the last flush, in memory in front \
             of the data file) into the data file; checkpoints not counted",
            stats.flushes,
        )
        .counter(
            "flush_slices_total",
            "Slices the flushes were folded in: a flush holds the writer one slice at a time, \
             and writes commit between slices",
            stats.flush_slices,
        )
        .gauge(
            "flush_seconds_sum",
            "Seconds spent in flushes since the store opened",
            stats.flush_seconds,
        )
        .gauge(
            "memtable_bytes",
            "Bytes of rows in the memtables, waiting for the next flush",
            stats.memtable_bytes as f64,
        )
        .gauge(
            "data_file_bytes",
            "The data file's size on disk",
            std::fs::metadata(self.dir.join(DATA_FILE)).map_or(0.0, |m| m.len() as f64),
        )
        .gauge(
            "writes_refused",
            "1 while writes are refused (a full disk, a log that cannot be written), else 0",
            if self.ready().is_err() { 1.0 } else { 0.0 },
        )
        .gauge(
            "verified_copies_bytes",
            "Bytes held by verified copies of blocks, which point gets and filtered scans read \
             instead of the data file (at most verified_copies_limit_bytes)",
            self.shared.copies.used() as f64,
        )
        .gauge(
            "verified_copies_limit_bytes",
            "The most the verified copies may hold: half of --cache-size",
            self.shared.copies.limit() as f64,
        );
        m
    }

    fn close(&self) -> Result<(), StoreError> {
        self.shutdown()
    }
}

#[cfg(test)]
mod checkpoint_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;
