//! Opening a data directory: checks with a clear, typed error for every way it can be
//! unusable ([`OpenError`]), creation of a new data file, the format check of an existing
//! one, loading what stays in memory (catalog, property names, the clock's floor, the last
//! checkpointed log record), and opening the write-ahead log.
//!
//! ```text
//! ./tableq-data/            the data directory (created if missing)
//!   tableq.redb             the redb file: meta, tables, names, rows (`format/`)
//!   tableq.wal              the write-ahead log (`wal/`, its layout in `format/`)
//! ```
//!
//! **Creation is atomic.** A new data file (or log) is written under a temporary name
//! (`tableq.redb.tmp`), made durable, and only then renamed into place, so a start that
//! fails half way — a full disk, a kill — never leaves a file that later starts refuse.
//! A data file left uninitialised by an older build (empty or all zero bytes: its header
//! never reached the disk) holds no data and is replaced.

use super::format::log::{WAL_FILE, header};
use super::format::tables::{
    DATA_FILE, FORMAT_VERSION, META, META_CLOCK, META_FORMAT, META_NEXT_TABLE, META_WAL_GENERATION,
    META_WAL_LSN, NAMES, OLDEST_FORMAT, ROWS, TABLES, decode_table,
};
use super::options::DurableOptions;
use super::shared::{Catalog, TableEntry};
use super::wal::{sync_dir, tail_path};
use crate::codec::Names;
use redb::{Database, DatabaseError, ReadableDatabase, ReadableTable, StorageError, TableHandle};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tableq_model::DateTime;

/// The directory `tableq serve` uses when no `--data DIR` is given.
pub const DEFAULT_DATA_DIR: &str = "./tableq-data";
/// Suffix of the temporary name a new file is initialised under.
const TEMP_SUFFIX: &str = ".tmp";

/// Why a data directory cannot be opened. Every variant names the path concerned and
/// reads as a complete sentence for an operator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The directory does not exist and cannot be created.
    #[error("cannot create the data directory {}: {source}", path.display())]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The path exists but is not a directory.
    #[error("the data directory {} exists but is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The directory or its data file cannot be written (permissions, read-only file
    /// system).
    #[error("the data directory {} is not writable: {source}", path.display())]
    NotWritable {
        /// The file or directory that cannot be written.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Another process (or another open backend in this one) has the data file open.
    #[error(
        "the data directory {} is in use: another tableq server (or another program) has \
         {DATA_FILE} open",
        path.display()
    )]
    Locked {
        /// The data file.
        path: PathBuf,
    },
    /// The data file exists but is not a tableq data file (not a redb database, or a redb
    /// database of another program).
    #[error("{} is not a tableq data file: {reason}", path.display())]
    NotTableqData {
        /// The data file.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The data file was written by an incompatible version of tableq (or of its storage
    /// library).
    #[error(
        "{} was written in {what} format version {found}; this tableq reads version {supported}",
        path.display()
    )]
    IncompatibleFormat {
        /// The data file.
        path: PathBuf,
        /// Whose format: `tableq` or `redb`.
        what: &'static str,
        /// The version found.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// The data file was written by an older tableq whose format this build does not read
    /// (format 1 or 2: blocks without checksums).
    #[error(
        "{} was written by an older tableq (data format {found}: blocks without checksums); \
         this tableq reads formats 3 to {FORMAT_VERSION} only. Move the data with the older tableq \
         (query every table to JSON lines) and `tableq import` it into a new data directory",
        path.display()
    )]
    OlderFormat {
        /// The data file.
        path: PathBuf,
        /// The version found.
        found: u64,
    },
    /// The write-ahead log is missing although the data file says it was created: the
    /// writes acknowledged since the last checkpoint are gone. `tableq serve
    /// --accept-log-loss` starts anyway.
    #[error(
        "the write-ahead log {} is missing, but the data file says one was created ({expected}): \
         writes acknowledged since the last checkpoint would be lost. Restore the log, or \
         start with --accept-log-loss to accept the loss",
        path.display()
    )]
    LogMissing {
        /// The log file.
        path: PathBuf,
        /// What the data file says.
        expected: String,
    },
    /// The write-ahead log ends before what it must hold (cut, damaged before its reach
    /// marker, or starting after records the data file lacks).
    #[error(
        "the write-ahead log {} is truncated: expected {expected}, found {found}; acknowledged \
         writes would be lost. Restore the log, or start with --accept-log-loss to accept the \
         loss",
        path.display()
    )]
    LogTruncated {
        /// The log file.
        path: PathBuf,
        /// What it must hold.
        expected: String,
        /// What it holds.
        found: String,
    },
    /// The write-ahead log is not this data file's (another directory's, or left next to a
    /// data file made anew).
    #[error(
        "the write-ahead log {} does not belong to this data file: expected {expected}, \
         found {found}. Restore the right log, or start with --accept-log-loss to set this \
         one aside",
        path.display()
    )]
    LogMismatch {
        /// The log file.
        path: PathBuf,
        /// What the data file says.
        expected: String,
        /// What the log says.
        found: String,
    },
    /// The data file, or the write-ahead log, is damaged (`path` says which).
    #[error("{} is corrupt: {detail}", path.display())]
    Corrupt {
        /// The data file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// Another I/O failure.
    #[error("cannot open {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Another failure of the storage library.
    #[error("cannot open {}: {source}", path.display())]
    Storage {
        /// The data file.
        path: PathBuf,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl OpenError {
    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            OpenError::CreateDirectory { path, .. }
            | OpenError::NotADirectory { path }
            | OpenError::NotWritable { path, .. }
            | OpenError::Locked { path }
            | OpenError::NotTableqData { path, .. }
            | OpenError::IncompatibleFormat { path, .. }
            | OpenError::OlderFormat { path, .. }
            | OpenError::LogMissing { path, .. }
            | OpenError::LogTruncated { path, .. }
            | OpenError::LogMismatch { path, .. }
            | OpenError::Corrupt { path, .. }
            | OpenError::Io { path, .. }
            | OpenError::Storage { path, .. } => path,
        }
    }
}

/// What opening loads.
pub(crate) struct Opened {
    pub(crate) db: Database,
    pub(crate) catalog: Catalog,
    /// Table id → property names (the writer's working copies).
    pub(crate) names: HashMap<u64, Names>,
    /// The largest Timestamp any commit stored.
    pub(crate) max_timestamp: Option<DateTime>,
    /// The number of the last log record the durable file contains.
    pub(crate) wal_lsn: u64,
    /// The generation of the log the data file goes with (`None` until its first log was
    /// created).
    pub(crate) wal_generation: Option<u64>,
}

/// An I/O error on `path`, classified.
pub(crate) fn io_error(path: &Path, source: io::Error) -> OpenError {
    let path = path.to_path_buf();
    match source.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            OpenError::NotWritable { path, source }
        }
        io::ErrorKind::InvalidData => OpenError::NotTableqData {
            path,
            reason: source.to_string(),
        },
        _ => OpenError::Io { path, source },
    }
}

pub(crate) fn storage_error(path: &Path, e: StorageError) -> OpenError {
    match e {
        StorageError::Io(source) => io_error(path, source),
        StorageError::Corrupted(detail) => OpenError::Corrupt {
            path: path.to_path_buf(),
            detail,
        },
        other => OpenError::Storage {
            path: path.to_path_buf(),
            source: Box::new(other),
        },
    }
}

pub(crate) fn database_error(path: &Path, e: DatabaseError) -> OpenError {
    match e {
        DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch => {
            OpenError::Locked {
                path: path.to_path_buf(),
            }
        }
        DatabaseError::UpgradeRequired(found) => OpenError::IncompatibleFormat {
            path: path.to_path_buf(),
            what: "redb",
            found: u64::from(found),
            supported: 3,
        },
        DatabaseError::RepairAborted => OpenError::Corrupt {
            path: path.to_path_buf(),
            detail: "the file needs a repair that could not be completed".into(),
        },
        DatabaseError::Storage(e) => storage_error(path, e),
        other => OpenError::Storage {
            path: path.to_path_buf(),
            source: Box::new(other),
        },
    }
}

/// Any other redb error while reading the file's tables: the file is not what it should be.
pub(crate) fn corrupt(path: &Path, e: impl std::fmt::Display) -> OpenError {
    OpenError::Corrupt {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// Makes sure `dir` is a directory, creating it (and its parents) if missing.
fn prepare_directory(dir: &Path) -> Result<(), OpenError> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(OpenError::NotADirectory {
            path: dir.to_path_buf(),
        }),
        // Missing (or a parent is not a directory, or cannot be searched): creating it
        // either works or says why not.
        Err(_) => std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDirectory {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// A write transaction for a durable commit at open (the file's format, tables, log
/// generation) that records redb's allocator state, as checkpoints do (`writer/txn.rs`), so
/// that a crash before the first checkpoint costs no walk of the file either.
fn begin_durable(db: &Database) -> Result<redb::WriteTransaction, redb::TransactionError> {
    let mut txn = db.begin_write()?;
    txn.set_quick_repair(true);
    Ok(txn)
}

fn builder(options: &DurableOptions) -> redb::Builder {
    let mut builder = Database::builder();
    builder
        .set_cache_size(options.cache_bytes)
        .set_check_integrity_on_open(options.verify_on_open);
    builder
}

/// The same path with [`TEMP_SUFFIX`].
fn temporary(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(TEMP_SUFFIX);
    PathBuf::from(name)
}

/// Whether `path` is empty or all zero bytes (a file whose contents never reached the
/// disk). Reads it in 1 MiB steps and stops at the first other byte.
fn is_uninitialised(path: &Path) -> Result<bool, OpenError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(|e| io_error(path, e))?;
        if n == 0 {
            return Ok(true);
        }
        if buffer[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
    }
}

/// Makes a new file's name and contents durable: `fsync`s the directory after a rename.
fn sync_directory(dir: &Path) -> Result<(), OpenError> {
    sync_dir(dir).map_err(|e| io_error(dir, e))
}

/// Creates the data file atomically: initialised under a temporary name, closed (so its
/// contents are durable), renamed into place. On failure no file is left behind.
fn create_data_file(dir: &Path, file: &Path, options: &DurableOptions) -> Result<(), OpenError> {
    let temp = temporary(file);
    let _ = std::fs::remove_file(&temp);
    let made = (|| {
        let db = builder(options)
            .create(&temp)
            .map_err(|e| database_error(file, e))?;
        initialise(&db, file)?;
        db.close().map_err(|e| database_error(file, e))?;
        std::fs::File::open(&temp)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error(file, e))?;
        std::fs::rename(&temp, file).map_err(|e| io_error(file, e))
    })();
    if made.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    made?;
    sync_directory(dir)
}

/// Opens (or creates) the data file in `dir` and loads the catalog.
pub(crate) fn open(dir: &Path, options: &DurableOptions) -> Result<Opened, OpenError> {
    prepare_directory(dir)?;
    let file = dir.join(DATA_FILE);
    match std::fs::metadata(&file) {
        Ok(m) if !m.is_file() => {
            return Err(OpenError::NotTableqData {
                path: file,
                reason: "it is not a regular file".into(),
            });
        }
        Ok(_) => {
            if is_uninitialised(&file)? {
                std::fs::remove_file(&file).map_err(|e| io_error(&file, e))?;
                create_data_file(dir, &file, options)?;
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_data_file(dir, &file, options)?,
        Err(e) => return Err(io_error(&file, e)),
    }
    let db = builder(options)
        .create(&file)
        .map_err(|e| database_error(&file, e))?;
    if is_new(&db, &file)? {
        // A file of this build always has its tables (it was created atomically); one
        // without is from an older build that stopped before its first commit.
        initialise(&db, &file)?;
    } else {
        mark_format(&db, &file)?;
    }
    load(db, &file)
}

/// Marks a data file of an older format this build reads (3, 4) with [`FORMAT_VERSION`],
/// durably, before anything is written to it: blocks written from now on are of the new
/// layout, which an older build must refuse rather than read as damage.
fn mark_format(db: &Database, file: &Path) -> Result<(), OpenError> {
    let run = || -> Result<(), redb::Error> {
        let older = {
            let txn = db.begin_read()?;
            let meta = txn.open_table(META)?;
            meta.get(META_FORMAT)?
                .is_some_and(|found| found.value() < FORMAT_VERSION)
        };
        if older {
            let txn = begin_durable(db)?;
            txn.open_table(META)?.insert(META_FORMAT, FORMAT_VERSION)?;
            txn.commit()?;
        }
        Ok(())
    };
    run().map_err(|e| redb_error(file, e))
}

/// A log file found: the open file (read and write) and its bytes.
pub(crate) type FoundLog = (std::fs::File, Vec<u8>);

/// The write-ahead log of `dir` as found: its path, and the open file (read and write) with
/// its bytes, or `None` when there is no file. A next log that a checkpoint was making when
/// the process stopped (`tableq.wal.tail`, `wal/tail.rs`) is removed: it never took the
/// log's name, and the log holds every record it copied.
pub(crate) fn find_log(dir: &Path) -> Result<(PathBuf, Option<FoundLog>), OpenError> {
    let path = dir.join(WAL_FILE);
    let tail = tail_path(&path);
    match std::fs::remove_file(&tail) {
        Ok(()) => tracing::info!(file = %tail.display(), "removed an unfinished log copy"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&tail, e)),
    }
    match std::fs::metadata(&path) {
        Ok(m) if !m.is_file() => {
            return Err(OpenError::NotTableqData {
                path,
                reason: "it is not a regular file".into(),
            });
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((path, None)),
        Err(e) => return Err(io_error(&path, e)),
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| io_error(&path, e))?;
    let bytes = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
    Ok((path, Some((file, bytes))))
}

/// Creates the write-ahead log of `dir` atomically — empty, of `generation`, its first
/// record numbered `base_lsn` — replacing any file there (which the caller set aside or
/// found unused); returns it open for reading and writing.
pub(crate) fn create_log(
    dir: &Path,
    base_lsn: u64,
    generation: u64,
) -> Result<std::fs::File, OpenError> {
    let path = dir.join(WAL_FILE);
    let temp = temporary(&path);
    let made = std::fs::write(&temp, header(base_lsn, generation))
        .and_then(|()| std::fs::File::open(&temp)?.sync_all())
        .and_then(|()| std::fs::rename(&temp, &path));
    if let Err(e) = made {
        let _ = std::fs::remove_file(&temp);
        return Err(io_error(&path, e));
    }
    sync_directory(dir)?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| io_error(&path, e))
}

/// Moves a log that cannot be used aside (`tableq.wal.discarded-SECONDS`), keeping it for
/// whoever wants to look at what was lost; returns the new name.
pub(crate) fn set_log_aside(dir: &Path) -> Result<PathBuf, OpenError> {
    let path = dir.join(WAL_FILE);
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = dir.join(format!("{WAL_FILE}.discarded-{seconds}"));
    std::fs::rename(&path, &aside).map_err(|e| io_error(&path, e))?;
    Ok(aside)
}

/// Whether the file holds no table at all (just created, or created by a run that stopped
/// before its first commit); checks the format of a file that has tables.
pub(crate) fn is_new(db: &impl ReadableDatabase, file: &Path) -> Result<bool, OpenError> {
    let txn = db.begin_read().map_err(|e| corrupt(file, e))?;
    let tables: Vec<String> = txn
        .list_tables()
        .map_err(|e| storage_error(file, e))?
        .map(|t| t.name().to_owned())
        .collect();
    if tables.is_empty() {
        return Ok(true);
    }
    if !tables.iter().any(|t| t == META.name()) {
        return Err(OpenError::NotTableqData {
            path: file.to_path_buf(),
            reason: format!(
                "a redb database of another program (tables: {})",
                tables.join(", ")
            ),
        });
    }
    let meta = txn.open_table(META).map_err(|e| corrupt(file, e))?;
    let format = meta
        .get(META_FORMAT)
        .map_err(|e| storage_error(file, e))?
        .map(|v| v.value());
    match format {
        Some(found) if (OLDEST_FORMAT..=FORMAT_VERSION).contains(&found) => Ok(false),
        Some(found @ 1..OLDEST_FORMAT) => Err(OpenError::OlderFormat {
            path: file.to_path_buf(),
            found,
        }),
        Some(found) => Err(OpenError::IncompatibleFormat {
            path: file.to_path_buf(),
            what: "tableq",
            found,
            supported: FORMAT_VERSION,
        }),
        None => Err(OpenError::NotTableqData {
            path: file.to_path_buf(),
            reason: "its meta table has no format version".into(),
        }),
    }
}

/// Writes the empty tables and the format version, durably.
fn initialise(db: &Database, file: &Path) -> Result<(), OpenError> {
    let run = || -> Result<(), redb::Error> {
        let txn = begin_durable(db)?;
        {
            let mut meta = txn.open_table(META)?;
            meta.insert(META_FORMAT, FORMAT_VERSION)?;
            meta.insert(META_NEXT_TABLE, 1)?;
            txn.open_table(TABLES)?;
            txn.open_table(NAMES)?;
            txn.open_table(ROWS)?;
        }
        txn.commit()?;
        Ok(())
    };
    run().map_err(|e| redb_error(file, e))
}

/// What a failed redb call on `file` means for opening it.
fn redb_error(file: &Path, e: redb::Error) -> OpenError {
    match e {
        redb::Error::Io(source) => io_error(file, source),
        redb::Error::Corrupted(detail) => OpenError::Corrupt {
            path: file.to_path_buf(),
            detail,
        },
        other => OpenError::Storage {
            path: file.to_path_buf(),
            source: Box::new(other),
        },
    }
}

/// Reads the catalog, the property names and the clock's floor.
fn load(db: Database, file: &Path) -> Result<Opened, OpenError> {
    let bad = |detail: &str| OpenError::Corrupt {
        path: file.to_path_buf(),
        detail: detail.to_owned(),
    };
    let txn = db.begin_read().map_err(|e| corrupt(file, e))?;
    let meta = txn.open_table(META).map_err(|e| corrupt(file, e))?;
    let tables = txn.open_table(TABLES).map_err(|e| corrupt(file, e))?;
    let names_table = txn.open_table(NAMES).map_err(|e| corrupt(file, e))?;
    txn.open_table(ROWS).map_err(|e| corrupt(file, e))?;
    let max_timestamp = match meta.get(META_CLOCK).map_err(|e| storage_error(file, e))? {
        Some(ticks) => Some(
            i64::try_from(ticks.value())
                .ok()
                .and_then(DateTime::from_ticks)
                .ok_or_else(|| bad("the stored clock is out of range"))?,
        ),
        None => None,
    };
    let wal_lsn = meta
        .get(META_WAL_LSN)
        .map_err(|e| storage_error(file, e))?
        .map_or(0, |v| v.value());
    let wal_generation = meta
        .get(META_WAL_GENERATION)
        .map_err(|e| storage_error(file, e))?
        .map(|v| v.value());
    let mut names: HashMap<u64, Names> = HashMap::new();
    for item in names_table.iter().map_err(|e| storage_error(file, e))? {
        let (key, name) = item.map_err(|e| storage_error(file, e))?;
        let (table, number) = key.value();
        let list = names.entry(table).or_default();
        if list.len() != number as usize || list.push(name.value()).is_none() {
            return Err(bad("property names are not numbered densely"));
        }
    }
    let mut catalog = Catalog::new();
    for item in tables.iter().map_err(|e| storage_error(file, e))? {
        let (key, value) = item.map_err(|e| storage_error(file, e))?;
        let (id, name) = decode_table(value.value()).ok_or_else(|| bad("bad table record"))?;
        let table_names = names.entry(id).or_default().clone();
        catalog.insert(
            key.value().to_owned(),
            Arc::new(TableEntry::new(id, name, table_names)),
        );
    }
    drop((meta, tables, names_table, txn));
    Ok(Opened {
        db,
        catalog,
        names,
        max_timestamp,
        wal_lsn,
        wal_generation,
    })
}

/// Records durably in the data file that its log is of `generation` (once, when its first
/// log was created: from then on the log must be there).
pub(crate) fn record_generation(
    db: &Database,
    file: &Path,
    generation: u64,
) -> Result<(), OpenError> {
    let run = || -> Result<(), redb::Error> {
        let txn = begin_durable(db)?;
        txn.open_table(META)?
            .insert(META_WAL_GENERATION, generation)?;
        txn.commit()?;
        Ok(())
    };
    run().map_err(|e| redb_error(file, e))
}

/// A new log generation: the clock's nanoseconds and the process id, never 0.
pub(crate) fn new_generation() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (nanos ^ (u64::from(std::process::id()) << 40)).max(1)
}
