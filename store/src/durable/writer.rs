//! The writer thread: group commit through the write-ahead log, checkpoints, and the
//! refusal of writes while the disk cannot take them.
//!
//! Every change — entity writes, table creation and deletion — is a [`Request`] queued for
//! one thread, which owns redb's single write transaction at a time:
//!
//! 1. take the first request, then every request queued behind it (up to 256): a group;
//! 2. begin one write transaction and handle the group's requests in order, each against
//!    the transaction's current state (so a request sees the ones before it): an entity
//!    write is resolved first ([`crate::resolve()`]: validation, existence, `If-Match`,
//!    merge, Timestamp) and applied only if it succeeds, so a failing request leaves no
//!    trace; each request that changed something gets one log record (`wal/record.rs`);
//! 3. append the group's records to the log with one `write(2)` — and `fsync` it under
//!    [`FsyncPolicy::Always`](super::FsyncPolicy::Always) — then commit the transaction without waiting for the disk
//!    (`Durability::None`: readers see it at once);
//! 4. only then reply to every request of the group — with its result if both succeeded,
//!    with an error (and nothing stored, the records taken back) if either failed.
//!
//! Callers that arrive while a group is being written queue up and share the next one, so
//! concurrent writers pay one `write(2)` (and under `always` one `fsync`) per group.
//!
//! **Checkpoints** (a durable redb commit recording the last record number, then the log
//! emptied) run between groups when the log passes its size bound, when the background
//! timer finds one due, and on close. **Refusal**: when the log cannot be written (a full
//! disk), when a background `fsync` failed, or when redb failed an I/O and must be reopened,
//! writes are answered at once with [`StoreError::WritesRefused`] (503) naming the cause,
//! reads go on, and [`Backend::ready`](crate::Backend::ready) reports the cause. Every
//! timer tick, and every refused write at most every 200 ms, probes the disk (the log
//! grows by 1 MiB and is cut back: `Wal::probe`); once it takes writes again, redb is reopened
//! if needed (the log replayed into it, so nothing acknowledged is lost) and writes resume
//! by themselves.
//!
//! ```text
//! callers ──▶ queue ──▶ [writer] begin ─ resolve+apply A ─ resolve B (fails) ─ resolve+apply C ─ log A,C ─ commit ──▶ replies A ✓ B ✗ C ✓
//! ```

use super::Shared;
use super::open::{self, FORMAT_VERSION};
use super::schema::{META_FORMAT, META_NEXT_TABLE, META_WAL_LSN};
use super::txn::{GroupState, Tables, TxnReader, storage};
use super::wal::{self, Wal};
use crate::backend::TableInfo;
use crate::codec::Names;
use crate::error::{BatchError, StoreError};
use crate::op::{WriteOp, Written};
use crate::resolve::resolve;
use redb::{Durability, ReadableTable};
use std::collections::HashMap;
use std::io;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};
use tableq_model::validate;

/// Most requests committed together.
const MAX_GROUP: usize = 256;
/// How often a failed checkpoint is tried again (at most).
const CHECKPOINT_RETRY: Duration = Duration::from_secs(1);
/// How often the disk is probed while writes are refused (at most).
const PROBE_EVERY: Duration = Duration::from_millis(200);

/// A change for the writer thread, with the channel its answer goes to.
pub(crate) enum Request {
    /// `Backend::write_batch`.
    Write {
        table: String,
        ops: Vec<WriteOp>,
        reply: SyncSender<Result<Vec<Written>, BatchError>>,
    },
    /// `Backend::create_table` (the name is already validated).
    CreateTable {
        name: String,
        reply: SyncSender<Result<TableInfo, StoreError>>,
    },
    /// `Backend::delete_table`.
    DeleteTable {
        name: String,
        reply: SyncSender<Result<(), StoreError>>,
    },
    /// `Backend::set_service_properties` (validated, in the stored form).
    SetServiceProperties {
        stored: String,
        reply: SyncSender<Result<(), StoreError>>,
    },
    /// `Backend::set_table_acl` (validated, in the stored form; `None` = no policies).
    SetTableAcl {
        name: String,
        stored: Option<String>,
        reply: SyncSender<Result<(), StoreError>>,
    },
    /// The background timer: checkpoint if one is due, probe the disk if writes are
    /// refused.
    Tick,
}

/// A request's answer, held until the commit.
enum Answer {
    Write(Result<Vec<Written>, BatchError>),
    CreateTable(Result<TableInfo, StoreError>),
    DeleteTable(Result<(), StoreError>),
    /// A settings change (service properties or a table's policies).
    Setting(Result<(), StoreError>),
}

/// When the writer checkpoints.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckpointLimits {
    pub(crate) log_bytes: u64,
    pub(crate) interval: Duration,
}

/// Why writes are refused, and what ends the refusal.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// The cause, as an operator reads it.
    pub(crate) reason: String,
    /// redb failed an I/O: the database must be reopened before writing again.
    pub(crate) reopen: bool,
}

/// The writer thread's state.
pub(crate) struct Writer {
    pub(crate) shared: Arc<Shared>,
    /// Table id → property names: the authoritative lists (readers get copies).
    pub(crate) names: HashMap<u64, Names>,
    /// Table id → catalog key.
    pub(crate) table_keys: HashMap<u64, String>,
    pub(crate) wal: Wal,
    checkpoints: CheckpointLimits,
    last_checkpoint: Instant,
    last_checkpoint_failure: Option<Instant>,
    /// The last probe of the disk while writes were refused.
    last_probe: Option<Instant>,
}

impl Writer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        names: HashMap<u64, Names>,
        wal: Wal,
        checkpoints: CheckpointLimits,
    ) -> Writer {
        let table_keys = shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(key, entry)| (entry.id, key.clone()))
            .collect();
        Writer {
            shared,
            names,
            table_keys,
            wal,
            checkpoints,
            last_checkpoint: Instant::now(),
            last_checkpoint_failure: None,
            last_probe: None,
        }
    }

    /// Serves requests until every sender is gone (the backend is closing), then
    /// checkpoints so that the log is empty after a clean close.
    pub(crate) fn run(mut self, requests: Receiver<Request>) {
        while let Ok(first) = requests.recv() {
            let mut group = Vec::with_capacity(8);
            let mut tick = false;
            let mut push = |r: Request, group: &mut Vec<Request>| match r {
                Request::Tick => tick = true,
                r => group.push(r),
            };
            push(first, &mut group);
            while group.len() < MAX_GROUP {
                match requests.try_recv() {
                    Ok(r) => push(r, &mut group),
                    Err(_) => break,
                }
            }
            if tick {
                self.tick();
            }
            if !group.is_empty() {
                self.commit_group(group);
            }
            self.checkpoint_if_due(false);
        }
        if self.wal.record_bytes() > 0 && self.refusal().is_none() {
            let _ = self.checkpoint();
        }
    }

    /// The current refusal, if writes are refused.
    fn refusal(&self) -> Option<Refusal> {
        self.shared
            .refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_refusal(&self, refusal: Option<Refusal>) {
        *self
            .shared
            .refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = refusal;
    }

    fn commit_group(&mut self, mut group: Vec<Request>) {
        // A background fsync that failed: the log may have lost acknowledged records in
        // the page cache; refuse writes until an fsync succeeds again.
        if self.wal.shared().sync_error().is_some() && self.wal.shared().sync().is_err() {
            let reason = format!(
                "the write-ahead log {} cannot be synced to disk: {}",
                self.log_path().display(),
                self.wal.shared().sync_error().unwrap_or_default()
            );
            self.set_refusal(Some(Refusal {
                reason,
                reopen: false,
            }));
        }
        if let Some(refusal) = self.refusal() {
            // Not "blocked for ever": try the disk first (a few µs when it is fine).
            if !self.recover(&refusal) {
                let error = || StoreError::WritesRefused(refusal.reason.clone());
                reply_all(group, error);
                return;
            }
        }
        let result = self.in_transaction(Durability::None, |w, t, state| {
            let mut records = Vec::new();
            let mut answers = Vec::with_capacity(group.len());
            for request in group.iter_mut() {
                answers.push(w.handle(request, t, state, &mut records)?);
            }
            // The log first: nothing becomes visible before its record is written.
            let appended = w.wal.append(&records).map_err(|e| w.log_failure(&e))?;
            Ok((answers, appended))
        });
        match result {
            Ok((answers, _)) => {
                for (request, answer) in group.into_iter().zip(answers) {
                    reply(request, answer);
                }
            }
            Err(e) => {
                let e = self.failed(e);
                let message = e.to_string();
                let refused = matches!(e, StoreError::WritesRefused(_));
                reply_all(group, || {
                    if refused {
                        StoreError::WritesRefused(message.clone())
                    } else {
                        StoreError::storage(message.clone())
                    }
                });
            }
        }
    }

    /// The error of a log append that failed, and the refusal it starts.
    fn log_failure(&self, e: &io::Error) -> StoreError {
        let reason = if is_disk_full(e) {
            format!(
                "the disk holding {} is full ({e}): writes are refused until space is freed; \
                 reads go on",
                self.log_path().display()
            )
        } else {
            format!(
                "the write-ahead log {} cannot be written ({e}): writes are refused until it \
                 can; reads go on",
                self.log_path().display()
            )
        };
        self.set_refusal(Some(Refusal {
            reason: reason.clone(),
            reopen: false,
        }));
        StoreError::WritesRefused(reason)
    }

    /// A failed group or checkpoint: a refusal stays as it is; a redb failure is an I/O
    /// problem of the data file, after which redb refuses to write until reopened.
    fn failed(&mut self, e: StoreError) -> StoreError {
        if matches!(e, StoreError::WritesRefused(_) | StoreError::Closed) {
            return e;
        }
        let Some(kind) = io_kind(&e) else {
            return e;
        };
        let file = self.shared.dir.join(super::DATA_FILE);
        let reason = if matches!(
            kind,
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
        ) {
            format!(
                "the disk holding {} is full ({e}): writes are refused until space is freed; \
                 reads go on",
                file.display()
            )
        } else {
            format!(
                "the data file {} failed an I/O ({e}): writes are refused until it is reopened",
                file.display()
            )
        };
        self.set_refusal(Some(Refusal {
            reason: reason.clone(),
            reopen: true,
        }));
        StoreError::WritesRefused(reason)
    }

    /// Ends a refusal if the disk takes writes again: probes it (at most every
    /// [`PROBE_EVERY`]), reopens redb if needed (replaying the log), and clears the
    /// refusal. `true` = writes may go on.
    fn recover(&mut self, refusal: &Refusal) -> bool {
        if self.last_probe.is_some_and(|at| at.elapsed() < PROBE_EVERY) {
            return false;
        }
        self.last_probe = Some(Instant::now());
        if self.wal.probe().is_err() {
            return false;
        }
        if self.wal.shared().sync_error().is_some() && self.wal.shared().sync().is_err() {
            return false;
        }
        if refusal.reopen
            && let Err(e) = self.reopen()
        {
            self.set_refusal(Some(Refusal {
                reason: format!("{} (reopening failed: {e})", refusal.reason),
                reopen: true,
            }));
            return false;
        }
        self.set_refusal(None);
        true
    }

    /// The timer: end a refusal if the disk allows, checkpoint if one is due.
    fn tick(&mut self) {
        if let Some(refusal) = self.refusal() {
            self.recover(&refusal);
        }
        self.checkpoint_if_due(true);
    }

    /// Checkpoints when the log passed its size bound, or (`timer`) when the interval has
    /// passed with records pending.
    fn checkpoint_if_due(&mut self, timer: bool) {
        let pending = self.wal.record_bytes();
        let due = pending >= self.checkpoints.log_bytes
            || (timer
                && pending > 0
                && self.last_checkpoint.elapsed() >= self.checkpoints.interval);
        let retry_wait = self
            .last_checkpoint_failure
            .is_some_and(|at| at.elapsed() < CHECKPOINT_RETRY);
        if !due || retry_wait || self.refusal().is_some() {
            return;
        }
        if let Err(e) = self.checkpoint() {
            self.last_checkpoint_failure = Some(Instant::now());
            self.failed(e);
        }
    }

    /// A durable redb commit that records the last log record it contains; then the log is
    /// emptied.
    pub(crate) fn checkpoint(&mut self) -> Result<(), StoreError> {
        let started = Instant::now();
        let lsn = self.wal.last_lsn();
        self.in_transaction(Durability::Immediate, |_, t, _| {
            t.meta.insert(META_WAL_LSN, lsn).map_err(storage)?;
            t.meta
                .insert(META_FORMAT, FORMAT_VERSION)
                .map_err(storage)?;
            Ok(())
        })?;
        self.last_checkpoint = Instant::now();
        self.last_checkpoint_failure = None;
        // Every record is now in the durable file: the log may be emptied. If that fails
        // the records stay, and are skipped by a replay (their numbers are not above the
        // checkpoint's).
        self.wal.reset().map_err(storage)?;
        self.wal.count_checkpoint(started.elapsed());
        Ok(())
    }

    /// Closes redb and opens it again (after an I/O failure), then replays the log into it
    /// and checkpoints: what was acknowledged is back, and redb writes again.
    fn reopen(&mut self) -> Result<(), StoreError> {
        let options = self.shared.options.clone();
        let opened = {
            let mut db = self
                .shared
                .db
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(old) = db.take() {
                // Its file is in an unknown state: its errors say nothing new.
                let _ = old.close();
            }
            let opened = open::open(&self.shared.dir, &options).map_err(storage)?;
            *db = Some(opened.db);
            (opened.catalog, opened.names, opened.wal_lsn)
        };
        let (catalog, names, wal_lsn) = opened;
        self.table_keys = catalog
            .iter()
            .map(|(key, entry)| (entry.id, key.clone()))
            .collect();
        *self
            .shared
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner) = catalog;
        self.names = names;
        let bytes = std::fs::read(self.log_path()).map_err(storage)?;
        let contents = wal::read(&bytes, wal_lsn + 1).map_err(storage)?;
        self.replay(&contents, wal_lsn)?;
        self.checkpoint()
    }

    fn log_path(&self) -> std::path::PathBuf {
        self.shared.dir.join(wal::WAL_FILE)
    }

    /// Handles one request; `Err` only for storage failures (which fail the group). Pushes
    /// the request's log record, if it changed anything.
    fn handle(
        &mut self,
        request: &mut Request,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        records: &mut Vec<Vec<u8>>,
    ) -> Result<Answer, StoreError> {
        Ok(match request {
            Request::Write { table, ops, .. } => {
                Answer::Write(self.write(table, std::mem::take(ops), t, state, records)?)
            }
            Request::CreateTable { name, .. } => {
                Answer::CreateTable(self.create_table(name, t, state, records)?)
            }
            Request::DeleteTable { name, .. } => {
                Answer::DeleteTable(self.delete_table(name, t, state, records)?)
            }
            Request::SetServiceProperties { stored, .. } => {
                records.push(wal::encode::set_service(stored).map_err(storage)?);
                super::settings::put_service(t.txn, stored)?;
                Answer::Setting(Ok(()))
            }
            Request::SetTableAcl { name, stored, .. } => {
                match t.lookup(&validate::table_key(name))? {
                    Some((id, _)) => {
                        records.push(wal::encode::set_acl(id, stored.as_deref()).map_err(storage)?);
                        super::settings::put_acl(t.txn, id, stored.as_deref())?;
                        Answer::Setting(Ok(()))
                    }
                    None => Answer::Setting(Err(StoreError::TableNotFound(name.clone()))),
                }
            }
            Request::Tick => unreachable_tick(),
        })
    }

    fn write(
        &mut self,
        table: &str,
        ops: Vec<WriteOp>,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        records: &mut Vec<Vec<u8>>,
    ) -> Result<Result<Vec<Written>, BatchError>, StoreError> {
        let key = validate::table_key(table);
        let Some((id, _)) = t.lookup(&key)? else {
            return Ok(Err(StoreError::TableNotFound(table.to_owned()).into()));
        };
        let names = self.names.entry(id).or_default();
        let mut reader = TxnReader {
            rows: &t.rows,
            table: id,
            names,
        };
        let resolved = match resolve(ops, &mut reader, &self.shared.clock) {
            Ok(r) => r,
            Err(e) if matches!(e.error, StoreError::Storage(_)) => return Err(e.error),
            Err(e) => return Ok(Err(e)),
        };
        if resolved.changes.is_empty() {
            return Ok(Ok(resolved.written));
        }
        records
            .push(wal::encode::write(id, resolved.timestamp, &resolved.changes).map_err(storage)?);
        self.apply_write(t, state, id, resolved.changes, resolved.timestamp)?;
        Ok(Ok(resolved.written))
    }

    fn create_table(
        &mut self,
        name: &str,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        records: &mut Vec<Vec<u8>>,
    ) -> Result<Result<TableInfo, StoreError>, StoreError> {
        let key = validate::table_key(name);
        if let Some((_, existing)) = t.lookup(&key)? {
            return Ok(Err(StoreError::TableAlreadyExists { existing }));
        }
        let id = t
            .meta
            .get(META_NEXT_TABLE)
            .map_err(storage)?
            .map_or(1, |v| v.value());
        records.push(wal::encode::create_table(id, name).map_err(storage)?);
        self.add_table(t, state, key, id, name)?;
        Ok(Ok(TableInfo {
            name: name.to_owned(),
        }))
    }

    fn delete_table(
        &mut self,
        name: &str,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        records: &mut Vec<Vec<u8>>,
    ) -> Result<Result<(), StoreError>, StoreError> {
        let key = validate::table_key(name);
        let Some((id, _)) = t.lookup(&key)? else {
            return Ok(Err(StoreError::TableToDeleteNotFound(name.to_owned())));
        };
        records.push(wal::encode::delete_table(id, &key).map_err(storage)?);
        self.drop_table(t, state, key, id)?;
        Ok(Ok(()))
    }
}

/// Ticks never reach `handle` (`run` takes them out of the group); answering one is a
/// no-op rather than a panic.
fn unreachable_tick() -> Answer {
    Answer::DeleteTable(Ok(()))
}

/// Whether an I/O error means the disk (or the user's quota) is full.
fn is_disk_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// The kind of the I/O error behind a storage failure, if it is one (redb wraps them).
pub(crate) fn io_kind(e: &StoreError) -> Option<io::ErrorKind> {
    let StoreError::Storage(inner) = e else {
        return None;
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(inner.as_ref());
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<io::Error>() {
            return Some(io.kind());
        }
        let storage = c
            .downcast_ref::<redb::StorageError>()
            .or_else(|| match c.downcast_ref::<redb::CommitError>() {
                Some(redb::CommitError::Storage(s)) => Some(s),
                _ => None,
            })
            .or_else(|| match c.downcast_ref::<redb::TransactionError>() {
                Some(redb::TransactionError::Storage(s)) => Some(s),
                _ => None,
            })
            .or_else(|| match c.downcast_ref::<redb::TableError>() {
                Some(redb::TableError::Storage(s)) => Some(s),
                _ => None,
            });
        match storage {
            Some(redb::StorageError::Io(io)) => return Some(io.kind()),
            Some(redb::StorageError::PreviousIo) => return Some(io::ErrorKind::Other),
            _ => {}
        }
        if let Some(redb::Error::Io(io)) = c.downcast_ref::<redb::Error>() {
            return Some(io.kind());
        }
        cause = c.source();
    }
    None
}

fn reply_all(group: Vec<Request>, error: impl Fn() -> StoreError) {
    for request in group {
        let answer = match &request {
            Request::Write { .. } => Answer::Write(Err(error().into())),
            Request::CreateTable { .. } => Answer::CreateTable(Err(error())),
            Request::DeleteTable { .. } | Request::Tick => Answer::DeleteTable(Err(error())),
            Request::SetServiceProperties { .. } | Request::SetTableAcl { .. } => {
                Answer::Setting(Err(error()))
            }
        };
        reply(request, answer);
    }
}

fn reply(request: Request, answer: Answer) {
    // A caller that gave up waiting is not an error of the write.
    match (request, answer) {
        (Request::Write { reply, .. }, Answer::Write(a)) => {
            let _ = reply.send(a);
        }
        (Request::CreateTable { reply, .. }, Answer::CreateTable(a)) => {
            let _ = reply.send(a);
        }
        (Request::DeleteTable { reply, .. }, Answer::DeleteTable(a))
        | (Request::SetServiceProperties { reply, .. }, Answer::Setting(a))
        | (Request::SetTableAcl { reply, .. }, Answer::Setting(a)) => {
            let _ = reply.send(a);
        }
        _ => {}
    }
}
