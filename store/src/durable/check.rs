//! `tableq check --data DIR`: the offline check of a data directory, like `pg_amcheck` —
//! every block of the data file and every record of the write-ahead log verified, and the
//! log compared with how far the data file says it must reach. Nothing is written: the data
//! file is opened with redb's read-only mode, which refuses a file a server holds
//! ([`OpenError::Locked`]) and a file that needs recovery after a crash (start and stop
//! the server once: it replays the log and checkpoints).
//!
//! Each block is checked as readers check it and more: its checksum, its header and row
//! offsets, every row ([`BlockView::check_rows`]: RowKeys in order, values in bounds,
//! property numbers known), that its columns hold what its rows hold
//! ([`BlockView::check_columns`]), and that its redb key is (table, PartitionKey, first
//! RowKey) of its rows. Each log record is decoded; the log's generation, first record and reach
//! marker are compared with the data file (`log_check.rs`).
//!
//! ```
//! use tableq_model::Entity;
//! use tableq_store::{Backend, DurableBackend, WriteOp, check_data_dir};
//! let dir = tempfile::tempdir().unwrap();
//! let store = DurableBackend::open(dir.path()).unwrap();
//! store.create_table("t1x").unwrap();
//! store.write("t1x", WriteOp::Insert { entity: Entity::new("p", "r") }).unwrap();
//! store.close().unwrap();
//! let report = check_data_dir(dir.path()).unwrap();
//! assert!(report.is_clean());
//! assert_eq!((report.tables, report.blocks, report.rows), (1, 1, 1));
//! ```

use super::damage::describe;
use super::format::block::BlockView;
use super::format::keys::{decode_block_key, entity_key};
use super::format::log::{self as log_format, WAL_FILE};
use super::format::record;
use super::format::tables::{
    DATA_FILE, META, META_WAL_GENERATION, META_WAL_LSN, NAMES, ROWS, TABLES, decode_table,
};
use super::log_check::{self, LogFound};
use super::open::{self, OpenError};
use crate::error::Damage;
use redb::{ReadableDatabase, ReadableTable};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A problem of the write-ahead log found by [`check_data_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFinding {
    /// The log file.
    pub file: PathBuf,
    /// What is wrong.
    pub what: String,
    /// What it should hold.
    pub expected: String,
    /// What it holds.
    pub found: String,
}

/// What [`check_data_dir`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The data directory.
    pub dir: PathBuf,
    /// Tables in the catalog.
    pub tables: u64,
    /// Blocks verified.
    pub blocks: u64,
    /// Rows in the blocks that passed.
    pub rows: u64,
    /// Records in the log (intact ones).
    pub log_records: u64,
    /// Every damaged block.
    pub damaged_blocks: Vec<Damage>,
    /// Every way the log loses acknowledged writes or is damaged.
    pub log_problems: Vec<LogFinding>,
    /// What is worth knowing but loses nothing (a torn log tail, which a restart discards).
    pub warnings: Vec<String>,
}

impl CheckReport {
    /// Whether nothing is damaged or lost (warnings allowed).
    pub fn is_clean(&self) -> bool {
        self.damaged_blocks.is_empty() && self.log_problems.is_empty()
    }
}

/// Checks the data directory `dir` offline (see the module docs). Fails with an
/// [`OpenError`] when it cannot be checked at all: no data file, not tableq's, an older or
/// unknown format, in use by a server, needing recovery.
pub fn check_data_dir(dir: &Path) -> Result<CheckReport, OpenError> {
    let file = dir.join(DATA_FILE);
    if !file.is_file() {
        return Err(OpenError::NotTableqData {
            path: file,
            reason: "there is no data file (or it is not a regular file)".into(),
        });
    }
    let db = redb::Builder::new()
        .open_read_only(&file)
        .map_err(|e| match e {
            redb::DatabaseError::RepairAborted => OpenError::Corrupt {
                path: file.clone(),
                detail: "it was not closed cleanly and needs recovery; start and stop `tableq \
                         serve --data` on it once (it replays the log), then check again"
                    .into(),
            },
            e => open::database_error(&file, e),
        })?;
    let mut report = CheckReport {
        dir: dir.to_path_buf(),
        ..CheckReport::default()
    };
    if open::is_new(&db, &file)? {
        return Ok(report);
    }
    let txn = db.begin_read().map_err(|e| open::corrupt(&file, e))?;
    let storage = |e: redb::StorageError| open::storage_error(&file, e);
    let meta = txn.open_table(META).map_err(|e| open::corrupt(&file, e))?;
    let wal_lsn = meta
        .get(META_WAL_LSN)
        .map_err(storage)?
        .map_or(0, |v| v.value());
    let generation = meta
        .get(META_WAL_GENERATION)
        .map_err(storage)?
        .map(|v| v.value());
    let mut tables: HashMap<u64, String> = HashMap::new();
    for item in txn
        .open_table(TABLES)
        .map_err(|e| open::corrupt(&file, e))?
        .iter()
        .map_err(storage)?
    {
        let (_, value) = item.map_err(storage)?;
        let (id, name) =
            decode_table(value.value()).ok_or_else(|| open::corrupt(&file, "bad table record"))?;
        tables.insert(id, name);
    }
    report.tables = tables.len() as u64;
    let mut names: HashMap<u64, usize> = HashMap::new();
    for item in txn
        .open_table(NAMES)
        .map_err(|e| open::corrupt(&file, e))?
        .iter()
        .map_err(storage)?
    {
        let (key, _) = item.map_err(storage)?;
        *names.entry(key.value().0).or_default() += 1;
    }
    let rows = txn.open_table(ROWS).map_err(|e| open::corrupt(&file, e))?;
    for item in rows.iter().map_err(storage)? {
        let (key, value) = item.map_err(storage)?;
        let (key, bytes) = (key.value(), value.value());
        report.blocks += 1;
        let id = decode_block_key(key).map(|(id, _, _)| id);
        let table = id.and_then(|id| tables.get(&id)).map(String::as_str);
        let known = id.and_then(|id| names.get(&id)).copied().unwrap_or(0);
        let checked = BlockView::parse(bytes).and_then(|view| {
            view.check_rows(known)?;
            view.check_columns()?;
            let first = view.row(0).row_key()?;
            let expected = entity_key(id.unwrap_or(0), view.partition_key(), first);
            if expected != key {
                return Err(crate::codec::Corrupt(
                    "the block's key is not its first row's",
                ));
            }
            Ok(view.len())
        });
        match checked {
            Ok(n) => report.rows += n as u64,
            Err(e) => report
                .damaged_blocks
                .push(describe(dir, table, key, bytes, e)),
        }
    }
    drop((rows, meta, txn));
    let _ = db.close();
    check_log(dir, generation, wal_lsn, &mut report);
    Ok(report)
}

/// Checks the log against the data file's `generation` and `wal_lsn` into `report`.
fn check_log(dir: &Path, generation: Option<u64>, wal_lsn: u64, report: &mut CheckReport) {
    let path = dir.join(WAL_FILE);
    let finding = |what: String, expected: String, found: String| LogFinding {
        file: path.clone(),
        what,
        expected,
        found,
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            report.log_problems.push(finding(
                "the write-ahead log cannot be read".into(),
                "a readable file".into(),
                e.to_string(),
            ));
            return;
        }
    };
    let contents = match bytes.as_deref().map(|b| log_format::read(b, wal_lsn + 1)) {
        Some(Ok(contents)) => Some(contents),
        Some(Err(e)) => {
            report.log_problems.push(finding(
                "the write-ahead log is damaged".into(),
                "intact records up to its end (a torn last record at most)".into(),
                e.to_string(),
            ));
            return;
        }
        None => None,
    };
    let found = match (&bytes, &contents) {
        (Some(bytes), Some(contents)) => LogFound::Read {
            len: bytes.len() as u64,
            contents,
        },
        _ => LogFound::Missing,
    };
    for problem in log_check::compare(&found, generation, wal_lsn) {
        let (expected, found) = problem.expected_found();
        if problem.loses_writes() {
            let what = problem.to_string();
            let what = what.split(": expected").next().unwrap_or(&what).to_owned();
            report.log_problems.push(finding(what, expected, found));
        } else {
            report
                .warnings
                .push(format!("{}: {problem}", path.display()));
        }
    }
    if let Some(contents) = &contents {
        report.log_records = contents.records.len() as u64;
        for (lsn, body) in &contents.records {
            if let Err(e) = record::decode(body) {
                report.log_problems.push(finding(
                    format!("write-ahead log record {lsn} does not decode"),
                    "a record of this tableq".into(),
                    e.to_string(),
                ));
            }
        }
    }
}
