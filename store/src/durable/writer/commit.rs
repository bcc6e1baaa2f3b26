//! The writer's work ([`Writer::commit`] and the background thread's): a group of
//! requests committed (entity writes through the log into the memtables, other requests
//! one by one in redb transactions), flushes and checkpoints, the refusal of writes while
//! the disk cannot take them and the recovery that ends it (see the writer's module docs).

use super::checkpoint::{Checkpoint, InFlight, LogPoint};
use super::flush::Flush;
use super::state::Writer;
use super::txn::{GroupState, MemReader, Tables, storage};
use crate::backend::TableInfo;
use crate::codec::Names;
use crate::durable::edit::{apply_entries_until, apply_memtable};
use crate::durable::format::log as log_format;
use crate::durable::format::log::WAL_FILE;
use crate::durable::format::record;
use crate::durable::format::tables::{
    DATA_FILE, FORMAT_VERSION, META_FORMAT, META_NEXT_TABLE, META_WAL_LSN,
};
use crate::durable::memtable::MemTable;
use crate::durable::open;
use crate::durable::settings;
use crate::durable::shared::Refusal;
use crate::durable::wal::CutError;
use crate::error::{BatchError, StoreError};
use crate::op::Written;
use crate::resolve::{CheckedOps, resolve_checked};
use redb::{Durability, ReadableTable};
use std::collections::HashMap;
use std::io;
use std::sync::PoisonError;
use std::time::{Duration, Instant};
use tableq_model::validate;

/// How often a failed checkpoint or flush is tried again (at most).
const CHECKPOINT_RETRY: Duration = Duration::from_secs(1);
/// How often the disk is probed while writes are refused (at most).
const PROBE_EVERY: Duration = Duration::from_millis(200);
/// How often the background thread looks whether a checkpoint beside the writer is done.
const CHECKPOINT_POLL: Duration = Duration::from_millis(2);

/// Where a request's answer goes.
pub(crate) type Reply<T> = oneshot::Sender<T>;

/// A change for the writer, with the channel its answer goes to.
pub(crate) enum Request {
    /// `Backend::write_batch`: its operations as the caller's thread checked them
    /// ([`check_ops`](crate::check_ops): validation and duplicates need no stored state,
    /// so they are not the writer's work), or why they failed — reported after the table's
    /// existence, as `resolve` reports it.
    Write {
        table: String,
        ops: Result<CheckedOps, BatchError>,
        reply: Reply<Result<Vec<Written>, BatchError>>,
    },
    /// `Backend::create_table` (the name is already validated).
    CreateTable {
        name: String,
        reply: Reply<Result<TableInfo, StoreError>>,
    },
    /// `Backend::delete_table`.
    DeleteTable {
        name: String,
        reply: Reply<Result<(), StoreError>>,
    },
    /// `Backend::set_service_properties` (validated, in the stored form).
    SetServiceProperties {
        stored: String,
        reply: Reply<Result<(), StoreError>>,
    },
    /// `Backend::set_table_acl` (validated, in the stored form; `None` = no policies).
    SetTableAcl {
        name: String,
        stored: Option<String>,
        reply: Reply<Result<(), StoreError>>,
    },
}

impl Request {
    /// Answers the request with `error` (nothing was done).
    pub(crate) fn refuse(self, error: StoreError) {
        // A caller that gave up waiting is not an error of the write.
        match self {
            Request::Write { reply, .. } => {
                let _ = reply.send(Err(error.into()));
            }
            Request::CreateTable { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::DeleteTable { reply, .. }
            | Request::SetServiceProperties { reply, .. }
            | Request::SetTableAcl { reply, .. } => {
                let _ = reply.send(Err(error));
            }
        }
    }

    fn is_write(&self) -> bool {
        matches!(self, Request::Write { .. })
    }
}

impl Writer {
    /// Commits a group of requests: runs of entity writes through the memtables, other
    /// requests one by one (see the module docs).
    pub(crate) fn commit(&mut self, group: Vec<Request>) {
        let mut run: Vec<Request> = Vec::with_capacity(group.len());
        for request in group {
            if request.is_write() {
                run.push(request);
                continue;
            }
            if !run.is_empty() {
                self.commit_writes(std::mem::take(&mut run));
            }
            self.commit_one(request);
        }
        if !run.is_empty() {
            self.commit_writes(run);
        }
    }

    /// Whether the background thread has work the caller holding the writer must not do:
    /// a flush or a checkpoint due by size, or — while a flush is folded in slices — its
    /// next slice (one is due once writes had as long as a slice since the last: writes
    /// and the flush share the writer's time; at twice the memtable limit the flush has all
    /// of it, which bounds the memtables). While a checkpoint's commit runs beside the
    /// writer, only the memtables or the log at twice their bound: writers then wait for it.
    pub(crate) fn background_due(&self) -> bool {
        let log = self.wal.record_bytes();
        let limits = &self.checkpoints;
        let over_twice = self.mem_bytes >= limits.memtable_bytes.saturating_mul(2)
            || log >= limits.log_bytes.saturating_mul(2);
        if self.checkpointing.is_some() {
            return over_twice;
        }
        match &self.flushing {
            None => log >= limits.log_bytes || self.mem_bytes >= limits.memtable_bytes,
            Some(flush) => flush.last_slice.elapsed() >= limits.flush_slice || over_twice,
        }
    }

    /// How soon the background thread should come back without being asked: at once while
    /// a flush is folded in slices and may go on (no failed slice waiting to be tried
    /// again), after [`CHECKPOINT_POLL`] while a checkpoint's commit runs beside the writer
    /// (to keep the log's tail once it is done), else — and while writes are refused — at
    /// its timer (`None`).
    pub(crate) fn poll_within(&self) -> Option<Duration> {
        if self.refusal().is_some() {
            None
        } else if self.checkpointing.is_some() {
            Some(CHECKPOINT_POLL)
        } else if self.flushing.is_some() && !self.retry_wait() {
            Some(Duration::ZERO)
        } else {
            None
        }
    }

    /// A checkpoint or flush failed less than [`CHECKPOINT_RETRY`] ago.
    fn retry_wait(&self) -> bool {
        self.last_checkpoint_failure
            .is_some_and(|at| at.elapsed() < CHECKPOINT_RETRY)
    }

    /// The background thread's work: end a refusal if the disk allows; finish a checkpoint
    /// whose commit ran beside the writer once it is done (waiting for it when the
    /// memtables or the log reached twice their bound); go on with a flush in progress (one
    /// slice); when a checkpoint is due, begin its flush (or its commit at once, when the
    /// memtables hold nothing) — or, with the log at twice its bound, checkpoint on the
    /// writer; begin a flush if the memtables are due (by size, or — on a `timer` tick —
    /// by age).
    pub(crate) fn background(&mut self, timer: bool) {
        if let Some(refusal) = self.refusal() {
            self.recover(&refusal);
        }
        if self.refusal().is_some() {
            return;
        }
        let limits = self.checkpoints;
        if self.checkpointing.is_some() {
            match self.land_checkpoint(self.background_due()) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    self.last_checkpoint_failure = Some(Instant::now());
                    self.failed(e);
                    return;
                }
            }
        }
        if self.retry_wait() {
            return;
        }
        let pending = self.wal.record_bytes();
        let checkpoint = pending >= limits.log_bytes
            || (timer && pending > 0 && self.last_checkpoint.elapsed() >= limits.interval);
        let flush = self.mem_bytes >= limits.memtable_bytes
            || (timer && self.mem_bytes > 0 && self.last_flush.elapsed() >= limits.flush_interval);
        let result = if pending >= limits.log_bytes.saturating_mul(2) {
            self.checkpoint()
        } else if self.flushing.is_some() {
            self.flush_slice()
        } else if checkpoint {
            self.begin_checkpoint()
        } else if flush {
            self.begin_flush(None);
            self.flush_slice()
        } else {
            return;
        };
        if let Err(e) = result {
            self.last_checkpoint_failure = Some(Instant::now());
            self.failed(e);
        }
    }

    /// The last work before the store closes: a checkpoint, so that the log is empty after
    /// a clean close; then the writer lets go of its read snapshot.
    pub(crate) fn close(&mut self) {
        if let Err(e) = self.land_checkpoint(true) {
            self.failed(e);
        }
        if (self.wal.record_bytes() > 0 || self.mem_bytes > 0) && self.refusal().is_none() {
            let _ = self.checkpoint();
        }
        self.stored_rows = None;
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

    /// `Err` (answered to the group) when writes are refused and the disk is not back.
    fn check_refusal(&mut self) -> Result<(), StoreError> {
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
                return Err(StoreError::WritesRefused(refusal.reason));
            }
        }
        Ok(())
    }

    /// Commits a run of entity writes through the memtables.
    fn commit_writes(&mut self, mut run: Vec<Request>) {
        if let Err(e) = self.check_refusal() {
            let message = e.to_string();
            for request in run {
                request.refuse(StoreError::WritesRefused(message.clone()));
            }
            return;
        }
        let mut state = GroupState::default();
        let mut records = Vec::new();
        let mut answers = Vec::with_capacity(run.len());
        let mut failure = None;
        for request in run.iter_mut() {
            let Request::Write { table, ops, .. } = request else {
                continue;
            };
            let ops = std::mem::replace(ops, Ok(CheckedOps::default()));
            match self.write(table, ops, &mut state, &mut records) {
                Ok(answer) => answers.push(answer),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if failure.is_none() {
            self.publish_names(&mut state);
            // The log first: nothing becomes visible before its record is written.
            if let Err(e) = self.wal.append(&records) {
                failure = Some(self.log_failure(&e));
            }
        }
        if let Some(e) = failure {
            self.undo(state);
            let e = self.failed(e);
            let message = e.to_string();
            let refused = matches!(e, StoreError::WritesRefused(_));
            for request in run {
                request.refuse(if refused {
                    StoreError::WritesRefused(message.clone())
                } else {
                    StoreError::storage(message.clone())
                });
            }
            return;
        }
        self.publish_memtables(&state);
        self.wal.set_memtable_bytes(self.mem_bytes);
        for (request, answer) in run.into_iter().zip(answers) {
            if let Request::Write { reply, .. } = request {
                let _ = reply.send(answer);
            }
        }
    }

    /// Commits a table creation or deletion or a setting in its own redb transaction.
    fn commit_one(&mut self, mut request: Request) {
        if let Err(e) = self.check_refusal() {
            request.refuse(e);
            return;
        }
        let mut appended = None;
        let result = self.in_transaction(Durability::None, |w, t, state| {
            let mut records = Vec::new();
            let answer = w.handle(&mut request, t, state, &mut records)?;
            // The log first: nothing becomes visible before its record is written.
            appended = Some(w.wal.append(&records).map_err(|e| w.log_failure(&e))?);
            Ok(answer)
        });
        match result {
            Ok(answer) => {
                // Its commit holds a record after a checkpoint's point: that flush ends as
                // a plain one (`checkpoint.rs`).
                if let Some(flush) = &mut self.flushing {
                    flush.checkpoint_at = None;
                }
                answer.send(request)
            }
            Err(e) => {
                // The commit failed after the record was written: take it back, so that
                // a replay does not apply a change the caller was told failed.
                if let Some(appended) = appended {
                    self.wal.take_back(appended);
                }
                let e = self.failed(e);
                request.refuse(e);
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
        let file = self.shared.dir.join(DATA_FILE);
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

    /// Folds the memtables into redb in one non-durable transaction and empties them (the
    /// tests' flush; the engine's own are folded in slices: [`Writer::flush_slice`]).
    #[cfg(test)]
    pub(crate) fn flush(&mut self) -> Result<(), StoreError> {
        let started = Instant::now();
        self.fold(Durability::None, None, true)?;
        self.wal.count_flush(started.elapsed());
        Ok(())
    }

    /// One slice of a flush, which begins if none is in progress (the tests' way to write
    /// between slices).
    #[cfg(test)]
    pub(crate) fn slice(&mut self) -> Result<(), StoreError> {
        if self.flushing.is_none() {
            self.begin_flush(None);
        }
        self.flush_slice()
    }

    /// Freezes the memtables for a flush in slices (`flush.rs`), a checkpoint's when it
    /// has a point.
    fn begin_flush(&mut self, checkpoint_at: Option<LogPoint>) {
        let mut flush = Flush::freeze(&self.mem, self.mem_max_timestamp);
        flush.checkpoint_at = checkpoint_at;
        self.flushing = Some(flush);
    }

    /// Folds the next slice of the flush in progress into redb (at most the limits'
    /// `flush_slice`, then to the end of a block) in a non-durable transaction; the last
    /// slice gives readers the memtables without what the flush folded (`flush.rs`). A
    /// failed slice leaves the flush where it was.
    pub(crate) fn flush_slice(&mut self) -> Result<(), StoreError> {
        let Some(mut flush) = self.flushing.take() else {
            return Ok(());
        };
        let started = Instant::now();
        let until = started + self.checkpoints.flush_slice;
        let position = flush.position();
        let folded = self.in_transaction(Durability::None, |w, t, state| {
            state.changes_blocks = true;
            state.max_timestamp = flush.max_timestamp;
            while let Some((id, entries)) = flush.next() {
                // A table deleted since the flush began took its blocks with it.
                let Some(names) = w.names.get(&id).filter(|_| w.table_keys.contains_key(&id))
                else {
                    flush.advance(entries.len());
                    continue;
                };
                let n = apply_entries_until(
                    &mut t.rows,
                    id,
                    names,
                    w.shared.limits,
                    entries,
                    until,
                    &mut state.block_edits,
                )?;
                flush.advance(n);
                if Instant::now() >= until {
                    break;
                }
            }
            if flush.finished() {
                state.next_mem = Some(flush.rest(&w.mem));
            }
            // Clones of two pointers a table: the commit gives readers `next_mem`.
            Ok(state.next_mem.clone())
        });
        flush.busy += started.elapsed();
        flush.last_slice = Instant::now();
        let rest = match folded {
            Err(e) => {
                flush.restore(position);
                self.flushing = Some(flush);
                return Err(e);
            }
            Ok(rest) => rest,
        };
        self.wal.count_flush_slice();
        match rest {
            Some(rest) => {
                self.mem_bytes = rest.values().map(MemTable::bytes).sum();
                self.mem = rest;
                self.wal.set_memtable_bytes(self.mem_bytes);
                self.last_flush = Instant::now();
                self.wal.count_flush(flush.busy);
                if let Some(point) = flush.checkpoint_at {
                    self.start_checkpoint(point);
                }
                Ok(())
            }
            None => {
                self.flushing = Some(flush);
                Ok(())
            }
        }
    }

    /// Whether the memtables hold enough to be folded into redb (by size).
    pub(crate) fn memtables_full(&self) -> bool {
        self.mem_bytes >= self.checkpoints.memtable_bytes
    }

    /// A flush during replay: the memtables folded into redb non-durably, readers left
    /// with the memtables they have (see `replay.rs`).
    pub(crate) fn fold_unpublished(&mut self) -> Result<(), StoreError> {
        // Readers keep their version while its blocks change: no map may follow.
        self.maps_follow = false;
        self.shared.map_builds.recent.forget();
        self.fold(Durability::None, None, false)
    }

    /// Begins a checkpoint beside the writer (no flush in progress): its point is the last
    /// record in the log; its flush folds the memtables in slices (the first one here), and
    /// its durable commit starts after the last — at once when the memtables hold nothing,
    /// every record being in redb already.
    pub(crate) fn begin_checkpoint(&mut self) -> Result<(), StoreError> {
        let point = LogPoint {
            lsn: self.wal.last_lsn(),
            len: self.wal.len(),
        };
        if self.mem.values().all(MemTable::is_empty) {
            self.start_checkpoint(point);
            return Ok(());
        }
        self.begin_flush(Some(point));
        self.flush_slice()
    }

    /// Starts the durable commit of a checkpoint whose point every record up to is in
    /// redb, beside the writer (`checkpoint.rs`).
    fn start_checkpoint(&mut self, point: LogPoint) {
        #[cfg(test)]
        let hold = self.hold_checkpoints.clone();
        #[cfg(not(test))]
        let hold = None;
        let checkpoint = Checkpoint {
            shared: self.shared.clone(),
            wal: self.wal.shared().clone(),
            log_path: self.log_path(),
            generation: self.wal.generation(),
            point,
        };
        self.checkpointing = Some(InFlight::start(checkpoint, hold));
    }

    /// Finishes the checkpoint beside the writer, if one is in flight and done (waiting
    /// for it when `wait`): the log keeps only the records after its point. `Ok(false)`
    /// while it runs; `Err` when its commit failed or the log could not be cut (the log
    /// stays whole then).
    pub(crate) fn land_checkpoint(&mut self, wait: bool) -> Result<bool, StoreError> {
        let Some(inflight) = &mut self.checkpointing else {
            return Ok(true);
        };
        let Some(landed) = inflight.poll(wait) else {
            return Ok(false);
        };
        let (point, started) = (inflight.point, inflight.started);
        self.checkpointing = None;
        let tail = landed?;
        self.last_checkpoint = Instant::now();
        self.last_checkpoint_failure = None;
        // The data file holds every record up to the point, durably: the log may drop
        // them. If that fails they stay (a replay skips them), and the next checkpoint
        // tries again — or, at twice the log's bound, empties the log in place.
        let cut = self
            .wal
            .keep_after(point.lsn, point.len, tail, &self.log_path());
        self.wal.count_checkpoint(started.elapsed());
        match cut {
            Ok(()) => Ok(true),
            Err(CutError::Whole(e)) => {
                tracing::warn!(
                    log = %self.log_path().display(),
                    "the write-ahead log keeps the records the checkpoint holds: {e}"
                );
                Ok(true)
            }
            Err(CutError::NotDurable(e)) => Err(self.log_failure(&e)),
        }
    }

    /// A durable redb commit of the memtables that records the last log record it
    /// contains; then the log is emptied (after a checkpoint in flight beside the writer,
    /// if there is one).
    pub(crate) fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.land_checkpoint(true)?;
        let started = Instant::now();
        let lsn = self.wal.last_lsn();
        self.fold(Durability::Immediate, Some(lsn), true)?;
        self.last_checkpoint = Instant::now();
        self.last_checkpoint_failure = None;
        // Every record is now in the durable file: the log may be emptied. If that fails
        // the records stay, and are skipped by a replay (their numbers are not above the
        // checkpoint's).
        self.wal.reset().map_err(storage)?;
        self.wal.count_checkpoint(started.elapsed());
        Ok(())
    }

    /// Folds the memtables into redb's blocks in one transaction committed with
    /// `durability` (recording `lsn` as the last record the file holds, for a checkpoint);
    /// readers get the commit and empty memtables together (unless `publish` is false:
    /// they keep theirs).
    fn fold(
        &mut self,
        durability: Durability,
        lsn: Option<u64>,
        publish: bool,
    ) -> Result<(), StoreError> {
        let timestamp = self.mem_max_timestamp;
        self.in_transaction(durability, |w, t, state| {
            state.changes_blocks = publish;
            if publish {
                state.next_mem = Some(HashMap::new());
            }
            state.max_timestamp = timestamp;
            for (id, mem) in &w.mem {
                if mem.is_empty() {
                    continue;
                }
                let names = w.names.get(id).ok_or_else(|| {
                    storage(format!("the memtable of table {id} has no property names"))
                })?;
                apply_memtable(
                    &mut t.rows,
                    *id,
                    names,
                    w.shared.limits,
                    mem,
                    &mut state.block_edits,
                )?;
            }
            if let Some(lsn) = lsn {
                t.meta.insert(META_WAL_LSN, lsn).map_err(storage)?;
                t.meta
                    .insert(META_FORMAT, FORMAT_VERSION)
                    .map_err(storage)?;
            }
            Ok(())
        })?;
        self.mem.clear();
        self.mem_bytes = 0;
        self.mem_max_timestamp = None;
        self.flushing = None;
        self.wal.set_memtable_bytes(0);
        self.last_flush = Instant::now();
        Ok(())
    }

    /// Closes redb and opens it again (after an I/O failure), then replays the log into it
    /// and checkpoints: what was acknowledged is back (the memtables' rows among it), and
    /// redb writes again.
    fn reopen(&mut self) -> Result<(), StoreError> {
        let options = self.shared.options.clone();
        self.stored_rows = None;
        // A checkpoint in flight holds redb: let it end (its result no longer matters: the
        // replay starts from whatever the data file holds).
        if let Some(mut inflight) = self.checkpointing.take() {
            let _ = inflight.poll(true);
        }
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
            self.shared.blocks_changed();
            self.maps_follow = false;
            self.shared.map_builds.recent.forget();
            (opened.catalog, opened.names, opened.wal_lsn)
        };
        let (catalog, names, wal_lsn) = opened;
        // Everything in the memtables is in the log, which the replay applies to redb.
        self.flushing = None;
        self.mem.clear();
        self.mem_bytes = 0;
        self.mem_max_timestamp = None;
        *self
            .shared
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner) = catalog;
        self.names_stored = names.iter().map(|(id, n)| (*id, n.len())).collect();
        self.names = names;
        self.load_catalog();
        let bytes = std::fs::read(self.log_path()).map_err(storage)?;
        let contents = log_format::read(&bytes, wal_lsn + 1).map_err(storage)?;
        self.replay(&contents, wal_lsn)?;
        self.checkpoint()
    }

    fn log_path(&self) -> std::path::PathBuf {
        self.shared.dir.join(WAL_FILE)
    }

    /// Handles a request that is not an entity write in a redb transaction; `Err` only for
    /// storage failures. Pushes the request's log record, if it changed anything.
    fn handle(
        &mut self,
        request: &mut Request,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        records: &mut Vec<Vec<u8>>,
    ) -> Result<Answer, StoreError> {
        Ok(match request {
            Request::Write { .. } => {
                return Err(storage("an entity write reached a redb transaction"));
            }
            Request::CreateTable { name, .. } => {
                Answer::CreateTable(self.create_table(name, t, state, records)?)
            }
            Request::DeleteTable { name, .. } => {
                Answer::DeleteTable(self.delete_table(name, t, state, records)?)
            }
            Request::SetServiceProperties { stored, .. } => {
                records.push(record::set_service(stored).map_err(storage)?);
                settings::put_service(t.txn, stored)?;
                Answer::Setting(Ok(()))
            }
            Request::SetTableAcl { name, stored, .. } => {
                match self.tables.get(&validate::table_key(name)) {
                    Some(&(id, _)) => {
                        records.push(record::set_acl(id, stored.as_deref()).map_err(storage)?);
                        settings::put_acl(t.txn, id, stored.as_deref())?;
                        Answer::Setting(Ok(()))
                    }
                    None => Answer::Setting(Err(StoreError::TableNotFound(name.clone()))),
                }
            }
        })
    }

    /// One entity write into its table's memtable; `Ok(Err)` for a write the service
    /// refuses (nothing changed), `Err` for a storage failure (which fails the run).
    fn write(
        &mut self,
        table: &str,
        ops: Result<CheckedOps, BatchError>,
        state: &mut GroupState,
        records: &mut Vec<Vec<u8>>,
    ) -> Result<Result<Vec<Written>, BatchError>, StoreError> {
        let key = validate::table_key(table);
        let Some(&(id, _)) = self.tables.get(&key) else {
            return Ok(Err(StoreError::TableNotFound(table.to_owned()).into()));
        };
        let ops = match ops {
            Ok(ops) => ops,
            Err(e) => return Ok(Err(e)),
        };
        self.stored_rows()?;
        let resolved = {
            let Some(rows) = self.stored_rows.as_ref() else {
                return Err(storage("the writer's read snapshot is missing"));
            };
            let empty = Names::default();
            let mut reader = MemReader::new(
                self.mem.get(&id),
                rows,
                id,
                self.names.get(&id).unwrap_or(&empty),
            );
            match resolve_checked(ops, &mut reader, &self.shared.clock) {
                Ok(r) => r,
                Err(e) if matches!(e.error, StoreError::Storage(_)) => return Err(e.error),
                Err(e) => return Ok(Err(e)),
            }
        };
        if resolved.changes.is_empty() {
            return Ok(Ok(resolved.written));
        }
        records.push(record::write(id, resolved.timestamp, &resolved.changes).map_err(storage)?);
        self.apply_to_memtable(state, id, &resolved.changes, resolved.timestamp)?;
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
        if let Some((_, existing)) = self.tables.get(&key) {
            return Ok(Err(StoreError::TableAlreadyExists {
                existing: existing.clone(),
            }));
        }
        let id = t
            .meta
            .get(META_NEXT_TABLE)
            .map_err(storage)?
            .map_or(1, |v| v.value());
        records.push(record::create_table(id, name).map_err(storage)?);
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
        let Some(&(id, _)) = self.tables.get(&key) else {
            return Ok(Err(StoreError::TableToDeleteNotFound(name.to_owned())));
        };
        records.push(record::delete_table(id, &key).map_err(storage)?);
        self.drop_table(t, state, key, id)?;
        Ok(Ok(()))
    }
}

/// The answer of a request that is not an entity write, held until its commit.
enum Answer {
    CreateTable(Result<TableInfo, StoreError>),
    DeleteTable(Result<(), StoreError>),
    /// A settings change (service properties or a table's policies).
    Setting(Result<(), StoreError>),
}

impl Answer {
    /// Sends the answer to `request`'s caller.
    fn send(self, request: Request) {
        // A caller that gave up waiting is not an error of the write.
        match (request, self) {
            (Request::CreateTable { reply, .. }, Answer::CreateTable(a)) => {
                let _ = reply.send(a);
            }
            (Request::DeleteTable { reply, .. }, Answer::DeleteTable(a))
            | (Request::SetServiceProperties { reply, .. }, Answer::Setting(a))
            | (Request::SetTableAcl { reply, .. }, Answer::Setting(a)) => {
                let _ = reply.send(a);
            }
            (request, _) => request.refuse(storage("a request got another request's answer")),
        }
    }
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
