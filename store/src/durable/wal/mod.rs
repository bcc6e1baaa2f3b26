//! The write-ahead log in front of redb: what makes a write acknowledged before its redb
//! commit reached the disk, and what brings it back after a crash.
//!
//! # Why a log in front of redb
//!
//! A durable redb commit (`Durability::Immediate`) writes the changed pages and `fsync`s
//! them: ≈ 0.3–0.5 ms per commit on the reference machine, which made a single insert wait
//! for the disk. The log closes that gap. Every change the writer commits is first appended
//! here as one record with one `write(2)`; then the change is made visible (an entity write
//! in its table's memtable, `memtable.rs`; a table or setting change by a non-durable redb
//! commit), and the reply is sent. A `kill -9`, a panic or an OOM kill therefore loses
//! nothing acknowledged: the record is in the operating system's page cache, and opening
//! the data directory replays every record past the last durable commit. When the log is
//! `fsync`ed is the durability mode ([`FsyncPolicy`]): before the reply (`always`,
//! group-committed), or in the background every interval (the default, 1 s), so a power
//! loss loses at most that interval.
//!
//! The alternative considered was an engine with this mode built in (an LSM tree with a
//! journal, such as fjall). It would have replaced the block layout that lets scans read
//! rows in place (`format/block.rs`) and the MVCC snapshots query pages run on, to gain what the
//! log and the memtables give on top of redb: a reply that waits for one `write(2)` and an
//! in-memory insert, with redb's cost paid per flush instead of per write. The measured
//! effect (single inserts through the server, before and after the memtables) is in
//! `benches/README.md`, section "The Azurite duel"; an LSM engine was not benchmarked.
//!
//! # Checkpoints
//!
//! A checkpoint is a durable redb commit that records the number of the last log record
//! the data file holds (`wal_lsn` in the meta table); the log then drops the records up to
//! it. Due when the log passes
//! [`DurableOptions::checkpoint_log_bytes`](super::DurableOptions::checkpoint_log_bytes)
//! (64 MiB by default: about 200 000 small entities, replayed in about half a second) or
//! when [`DurableOptions::checkpoint_interval`](super::DurableOptions::checkpoint_interval)
//! has passed since the last one with records pending (30 s), a checkpoint runs **beside
//! the writer** (`writer/checkpoint.rs`): a flush in slices folds the memtables as they
//! were at its *point* (the last record then), a commit naming the point is made durable
//! on a thread of its own while writes go on appending, and the log keeps the records
//! after the point (`tail.rs`: copied into a new file that is renamed over the log). When
//! the store closes, when redb is reopened, and when the log reaches twice its bound, a
//! checkpoint folds the memtables in one durable transaction holding the writer, and the
//! log is emptied (truncated to its header, which names the next record number). The log
//! is thus bounded (a caller commits nothing while it is at twice its bound), and so is the
//! memory redb holds for non-durable commits.
//!
//! # Files
//!
//! `tableq.wal` next to the data file, written through `file.rs` (and, while a checkpoint
//! keeps the log's tail, `tableq.wal.tail` beside it: `tail.rs`); its layout and the
//! torn-tail rule are the durable format's (`format/log.rs`); records hold one change
//! each — a table created or deleted, one write's resolved changes with its Timestamp, or
//! a setting (`format/record.rs`). Replay puts them into the memtables as live writes did —
//! a put's row as logged, renumbered into its table's names — and folds the memtables
//! into redb's blocks as flushes do (`writer/replay.rs`, `writer/txn.rs`), so a replayed
//! state is the state that was acknowledged.

mod file;
mod tail;

pub(crate) use file::{DiskLog, LogFile};
pub(crate) use tail::{Tail, sync_dir, tail_path};

use crate::durable::format::log::{HEADER_LEN, header, push_record, reach};
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// When the write-ahead log is `fsync`ed, i.e. what an acknowledged write survives (see
/// the module docs of [`crate::durable`]).
///
/// ```
/// use std::time::Duration;
/// use tableq_store::FsyncPolicy;
/// assert_eq!(FsyncPolicy::parse("always"), Ok(FsyncPolicy::Always));
/// assert_eq!(FsyncPolicy::parse("interval=250"), Ok(FsyncPolicy::Interval(Duration::from_millis(250))));
/// assert_eq!(FsyncPolicy::default().to_string(), "interval=1000");
/// assert!(FsyncPolicy::parse("interval=0").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Reply only after the log record is `fsync`ed (writers arriving together share one
    /// `fsync`): an acknowledged write survives a crash of the machine.
    Always,
    /// Reply once the record is written to the operating system; `fsync` in the background
    /// at this interval: an acknowledged write survives a crash of the process, and a crash
    /// of the machine loses at most the writes of the last interval.
    Interval(Duration),
}

impl FsyncPolicy {
    /// The default interval: 1 s, Redis's `appendfsync everysec` (a machine crash loses at
    /// most about a second; one background `fsync` a second costs nothing measurable).
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(1000);
    /// The longest interval accepted (a minute).
    pub const MAX_INTERVAL: Duration = Duration::from_secs(60);

    /// Parses `always` or `interval=MS` (milliseconds, 1 to 60 000).
    pub fn parse(text: &str) -> Result<FsyncPolicy, String> {
        let text = text.trim();
        if text == "always" {
            return Ok(FsyncPolicy::Always);
        }
        let Some(ms) = text.strip_prefix("interval=") else {
            return Err(format!(
                "`{text}` is not a fsync policy: use `always` or `interval=MS` (milliseconds)"
            ));
        };
        match ms.trim().parse::<u64>() {
            Ok(ms) if (1..=FsyncPolicy::MAX_INTERVAL.as_millis() as u64).contains(&ms) => {
                Ok(FsyncPolicy::Interval(Duration::from_millis(ms)))
            }
            _ => Err(format!(
                "`interval={ms}`: the interval is a number of milliseconds from 1 to {}",
                FsyncPolicy::MAX_INTERVAL.as_millis()
            )),
        }
    }
}

impl Default for FsyncPolicy {
    fn default() -> FsyncPolicy {
        FsyncPolicy::Interval(FsyncPolicy::DEFAULT_INTERVAL)
    }
}

/// `always` or `interval=MS`, as [`FsyncPolicy::parse`] reads it.
impl fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsyncPolicy::Always => f.write_str("always"),
            FsyncPolicy::Interval(d) => write!(f, "interval={}", d.as_millis()),
        }
    }
}

/// Counters shared by the writer, the background syncer and stats readers.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) records: AtomicU64,
    pub(crate) appended_bytes: AtomicU64,
    pub(crate) log_bytes: AtomicU64,
    /// The last record written to the file, and the last one known durable.
    pub(crate) appended_lsn: AtomicU64,
    pub(crate) synced_lsn: AtomicU64,
    /// The file's length after the last record written, and at the last `fsync`.
    pub(crate) appended_len: AtomicU64,
    pub(crate) synced_len: AtomicU64,
    /// How many times records were taken back ([`Wal::take_back`]): a copy of the log's
    /// tail made meanwhile is not used (`tail.rs`).
    pub(crate) take_backs: AtomicU64,
    pub(crate) fsyncs: AtomicU64,
    pub(crate) fsync_nanos: AtomicU64,
    pub(crate) checkpoints: AtomicU64,
    pub(crate) checkpoint_nanos: AtomicU64,
    /// Flushes of the memtables into redb (checkpoints not counted) and their time.
    pub(crate) flushes: AtomicU64,
    pub(crate) flush_nanos: AtomicU64,
    /// The slices flushes were folded in (`writer/flush.rs`).
    pub(crate) flush_slices: AtomicU64,
    /// The memtables' bytes now (the writer updates it).
    pub(crate) memtable_bytes: AtomicU64,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What the writer, the syncer and readers of statistics share about the log.
pub(crate) struct WalShared {
    pub(crate) file: Arc<dyn LogFile>,
    pub(crate) counters: Counters,
    /// The last background `fsync` failure, until an `fsync` succeeds again.
    pub(crate) sync_error: Mutex<Option<String>>,
    /// Serialises `fsync`s (the writer's and the syncer's) so the durable mark only grows;
    /// holds the record number the file's reach marker names (`format/log.rs`).
    sync_lock: Mutex<u64>,
}

impl WalShared {
    /// `fsync`s the log and marks every record appended before it durable; then writes the
    /// file's reach marker (`format/log.rs`) naming them. The marker is written only after the
    /// `fsync` returned, so it never names a record the disk may not hold; it reaches the
    /// disk itself with the next `fsync` (a process crash keeps it in the page cache).
    pub(crate) fn sync(&self) -> io::Result<()> {
        let mut marked = self
            .sync_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let appended = self.counters.appended_lsn.load(Ordering::Acquire);
        let appended_len = self.counters.appended_len.load(Ordering::Acquire);
        let started = Instant::now();
        let result = self.file.sync();
        self.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.counters
            .fsync_nanos
            .fetch_add(nanos(started.elapsed()), Ordering::Relaxed);
        let mut error = self
            .sync_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match &result {
            Ok(()) => {
                self.counters
                    .synced_lsn
                    .fetch_max(appended, Ordering::AcqRel);
                self.counters
                    .synced_len
                    .fetch_max(appended_len, Ordering::AcqRel);
                *error = None;
                // A marker that cannot be written claims less than is durable: harmless
                // (the next `fsync` tries again).
                if appended > *marked
                    && self
                        .file
                        .write_reach(&reach(appended, appended_len))
                        .is_ok()
                {
                    *marked = appended;
                }
            }
            Err(e) => *error = Some(e.to_string()),
        }
        result
    }

    /// The last background `fsync` failure, while no `fsync` has succeeded since.
    pub(crate) fn sync_error(&self) -> Option<String> {
        self.sync_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A copy of the log's records from offset `from` — the first numbered `base_lsn` — to
    /// what is appended now, in a new log file of `generation` beside `log_path`
    /// (`tail.rs`; any thread).
    pub(crate) fn copy_tail(
        &self,
        log_path: &std::path::Path,
        from: u64,
        base_lsn: u64,
        generation: u64,
    ) -> io::Result<Tail> {
        // Taken-back records are counted after the cut: read the count first.
        let take_backs = self.counters.take_backs.load(Ordering::Acquire);
        let end = self.counters.appended_len.load(Ordering::Acquire);
        tail::copy_tail(
            self.file.as_ref(),
            log_path,
            tail::TailSpan {
                from,
                take_backs,
                end,
                base_lsn,
                generation,
            },
        )
    }

    /// Whether records were appended since the last successful `fsync`.
    pub(crate) fn unsynced(&self) -> bool {
        self.counters.appended_lsn.load(Ordering::Acquire)
            > self.counters.synced_lsn.load(Ordering::Acquire)
    }
}

/// Why the log could not drop the records a checkpoint holds ([`Wal::keep_after`]).
#[derive(Debug)]
pub(crate) enum CutError {
    /// Nothing changed: the log is whole (a replay skips the records the data file holds),
    /// and the next checkpoint tries again.
    Whole(io::Error),
    /// The new log took the old one's name, but the directory's `fsync` failed: after a
    /// power loss the old name may come back without the records appended since.
    NotDurable(io::Error),
}

/// Where a group's records went, to take them back if the redb commit fails.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Appended {
    start_len: u64,
    first_lsn: u64,
}

/// The log as the writer thread holds it.
pub(crate) struct Wal {
    shared: Arc<WalShared>,
    policy: FsyncPolicy,
    /// The log's generation (its header's; the data file records it).
    generation: u64,
    /// Bytes in the file (header and records).
    len: u64,
    /// The number the next record gets.
    next_lsn: u64,
    /// A reusable buffer for a group's records.
    buffer: Vec<u8>,
}

impl Wal {
    /// A log of `generation` over `file`, which holds `len` bytes whose next record is
    /// number `next_lsn` (opening resets the log, or replays it and checkpoints, before
    /// anything is appended).
    pub(crate) fn new(
        file: Arc<dyn LogFile>,
        policy: FsyncPolicy,
        generation: u64,
        len: u64,
        next_lsn: u64,
    ) -> Wal {
        let last = next_lsn.saturating_sub(1);
        let shared = Arc::new(WalShared {
            file,
            counters: Counters::default(),
            sync_error: Mutex::new(None),
            sync_lock: Mutex::new(last),
        });
        let c = &shared.counters;
        c.appended_lsn.store(last, Ordering::Release);
        c.synced_lsn.store(last, Ordering::Release);
        c.appended_len.store(len, Ordering::Release);
        c.synced_len.store(len, Ordering::Release);
        c.log_bytes.store(len, Ordering::Relaxed);
        Wal {
            shared,
            policy,
            generation,
            len,
            next_lsn,
            buffer: Vec::new(),
        }
    }

    /// What the syncer and statistics share.
    pub(crate) fn shared(&self) -> &Arc<WalShared> {
        &self.shared
    }

    /// Bytes of records in the log (after its header).
    pub(crate) fn record_bytes(&self) -> u64 {
        self.len.saturating_sub(HEADER_LEN)
    }

    /// Bytes in the file (its header and records).
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The log's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The number of the last record appended (0 before the first).
    pub(crate) fn last_lsn(&self) -> u64 {
        self.next_lsn.saturating_sub(1)
    }

    /// Makes the next record number `lsn + 1` (after a replay: the log's records up to
    /// `lsn` are applied, and new ones follow them).
    pub(crate) fn continue_after(&mut self, lsn: u64) {
        self.next_lsn = lsn.saturating_add(1);
        let c = &self.shared.counters;
        c.appended_lsn.store(lsn, Ordering::Release);
        c.synced_lsn.store(lsn, Ordering::Release);
    }

    /// Appends one record per body with one `write(2)` and, under
    /// [`FsyncPolicy::Always`], `fsync`s before returning. On failure nothing of them stays
    /// in the log (the file is cut back, best effort).
    pub(crate) fn append(&mut self, bodies: &[Vec<u8>]) -> io::Result<Appended> {
        let appended = Appended {
            start_len: self.len,
            first_lsn: self.next_lsn,
        };
        if bodies.is_empty() {
            return Ok(appended);
        }
        self.buffer.clear();
        let mut lsn = self.next_lsn;
        for body in bodies {
            push_record(&mut self.buffer, lsn, body);
            lsn += 1;
        }
        let written = self.shared.file.append(&self.buffer).and_then(|()| {
            let c = &self.shared.counters;
            c.appended_len
                .store(self.len + self.buffer.len() as u64, Ordering::Release);
            c.appended_lsn.store(lsn - 1, Ordering::Release);
            match self.policy {
                FsyncPolicy::Always => self.shared.sync(),
                FsyncPolicy::Interval(_) => Ok(()),
            }
        });
        if let Err(e) = written {
            self.take_back(appended);
            return Err(e);
        }
        let c = &self.shared.counters;
        c.records.fetch_add(bodies.len() as u64, Ordering::Relaxed);
        c.appended_bytes
            .fetch_add(self.buffer.len() as u64, Ordering::Relaxed);
        self.len += self.buffer.len() as u64;
        self.next_lsn = lsn;
        c.log_bytes.store(self.len, Ordering::Relaxed);
        if self.buffer.capacity() > 1 << 20 {
            self.buffer = Vec::new();
        }
        Ok(appended)
    }

    /// Whether the log can grow again (after a failed append): appends 1 MiB of zeros and
    /// cuts them off again. A crash in between leaves a zero tail, which reading discards.
    pub(crate) fn probe(&mut self) -> io::Result<()> {
        let zeros = vec![0u8; 64 * 1024];
        let mut result = Ok(());
        for _ in 0..16 {
            result = self.shared.file.append(&zeros);
            if result.is_err() {
                break;
            }
        }
        let cut = self.shared.file.truncate(self.len);
        result.and(cut)
    }

    /// Takes back records appended by [`append`](Wal::append) (their redb commit failed:
    /// they must not be replayed). Best effort: the file is cut back to where they began.
    /// The reach marker is taken back with them when it named one of them (their numbers
    /// are given again to the next records).
    pub(crate) fn take_back(&mut self, appended: Appended) {
        let mut marked = self
            .shared
            .sync_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let _ = self.shared.file.truncate(appended.start_len);
        self.shared
            .counters
            .take_backs
            .fetch_add(1, Ordering::AcqRel);
        self.len = appended.start_len;
        self.next_lsn = appended.first_lsn;
        let last = appended.first_lsn.saturating_sub(1);
        let c = &self.shared.counters;
        c.appended_lsn.fetch_min(last, Ordering::AcqRel);
        c.synced_lsn.fetch_min(last, Ordering::AcqRel);
        c.appended_len.fetch_min(self.len, Ordering::AcqRel);
        c.synced_len.fetch_min(self.len, Ordering::AcqRel);
        if *marked > last {
            let len = c.synced_len.load(Ordering::Acquire);
            if self.shared.file.write_reach(&reach(last, len)).is_ok() {
                *marked = last;
            }
        }
        c.log_bytes.store(self.len, Ordering::Relaxed);
    }

    /// Empties the log after a checkpoint made every record in it durable in redb: the file
    /// keeps only a header naming the next record number, `fsync`ed.
    ///
    /// The file is cut before the new header is written: a crash in between leaves the old
    /// header, whose records are all in the data file, and no records — a valid log.
    pub(crate) fn reset(&mut self) -> io::Result<()> {
        {
            let mut marked = self
                .shared
                .sync_lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let file = &self.shared.file;
            file.truncate(HEADER_LEN)?;
            file.write_header(&header(self.next_lsn, self.generation))?;
            // Every record so far is in the data file: the new log's marker starts empty.
            let c = &self.shared.counters;
            c.appended_len.store(HEADER_LEN, Ordering::Release);
            c.synced_len.store(HEADER_LEN, Ordering::Release);
            *marked = c.synced_lsn.load(Ordering::Acquire);
        }
        self.shared.sync()?;
        self.len = HEADER_LEN;
        self.shared
            .counters
            .log_bytes
            .store(self.len, Ordering::Relaxed);
        Ok(())
    }

    /// After a checkpoint that holds every record up to `lsn` — the file's first `point_len`
    /// bytes — keeps only the records after it (`tail.rs`): in `tail`, the copy the
    /// checkpoint's thread made of them (copied here when there is none, or when records were
    /// taken back since it began), completed with the records appended since, `fsync`ed,
    /// renamed over `log_path` and written from then on. With no record after the point the
    /// log is emptied in place ([`reset`](Wal::reset)).
    pub(crate) fn keep_after(
        &mut self,
        lsn: u64,
        point_len: u64,
        tail: Option<Tail>,
        log_path: &std::path::Path,
    ) -> Result<(), CutError> {
        if self.len <= point_len {
            drop(tail);
            return self.reset().map_err(CutError::Whole);
        }
        let usable = |t: &Tail| {
            t.from == point_len
                && t.copied_to <= self.len
                && t.take_backs == self.shared.counters.take_backs.load(Ordering::Acquire)
        };
        let mut tail = match tail {
            Some(t) if usable(&t) => t,
            other => {
                drop(other);
                self.shared
                    .copy_tail(log_path, point_len, lsn.saturating_add(1), self.generation)
                    .map_err(CutError::Whole)?
            }
        };
        let mut marked = self
            .shared
            .sync_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tail.copy_to(self.shared.file.as_ref(), self.len)
            .map_err(CutError::Whole)?;
        let Some(file) = tail.file.take() else {
            return Err(CutError::Whole(io::Error::other(
                "the log's tail was already used",
            )));
        };
        // Appends continue at its end, where the copy left its position.
        let renamed = file
            .sync_data()
            .and_then(|()| std::fs::rename(&tail.path, log_path));
        if let Err(e) = renamed {
            let _ = std::fs::remove_file(&tail.path);
            return Err(CutError::Whole(e));
        }
        // The new file has the log's name: from here on it is the log.
        self.shared.file.replace(file);
        let len = HEADER_LEN + (self.len - point_len);
        self.len = len;
        let last = self.last_lsn();
        let c = &self.shared.counters;
        c.appended_len.store(len, Ordering::Release);
        c.synced_len.store(len, Ordering::Release);
        c.appended_lsn.store(last, Ordering::Release);
        c.synced_lsn.store(last, Ordering::Release);
        c.log_bytes.store(len, Ordering::Relaxed);
        // Every record in it was `fsync`ed above; the marker says so at the next `fsync`.
        if self.shared.file.write_reach(&reach(last, len)).is_ok() {
            *marked = last;
        }
        drop(marked);
        log_path
            .parent()
            .map_or(Ok(()), sync_dir)
            .map_err(CutError::NotDurable)
    }

    /// Counts a checkpoint that took `took`.
    pub(crate) fn count_checkpoint(&self, took: Duration) {
        let c = &self.shared.counters;
        c.checkpoints.fetch_add(1, Ordering::Relaxed);
        c.checkpoint_nanos.fetch_add(nanos(took), Ordering::Relaxed);
    }

    /// Counts a flush of the memtables that took `took`.
    pub(crate) fn count_flush(&self, took: Duration) {
        let c = &self.shared.counters;
        c.flushes.fetch_add(1, Ordering::Relaxed);
        c.flush_nanos.fetch_add(nanos(took), Ordering::Relaxed);
    }

    /// Counts a slice of a flush.
    pub(crate) fn count_flush_slice(&self) {
        let c = &self.shared.counters;
        c.flush_slices.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the memtables' size.
    pub(crate) fn set_memtable_bytes(&self, bytes: usize) {
        self.shared
            .counters
            .memtable_bytes
            .store(bytes as u64, Ordering::Relaxed);
    }
}

/// The background `fsync` of [`FsyncPolicy::Interval`]: a thread that wakes every interval
/// and `fsync`s the log when records were appended since the last `fsync`, and that asks the
/// writer for a checkpoint when one is due.
pub(crate) struct Syncer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    /// Starts the thread: every `tick` it `fsync`s (when `sync` is set and records are
    /// pending) and calls `tick_work` (the checkpoint timer).
    pub(crate) fn start(
        shared: Arc<WalShared>,
        sync: bool,
        tick: Duration,
        mut tick_work: impl FnMut() + Send + 'static,
    ) -> io::Result<Syncer> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tableq-wal-sync".into())
            .spawn(move || {
                let (lock, wake) = &*flag;
                let mut stopped = lock.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    let (guard, _) = wake
                        .wait_timeout(stopped, tick)
                        .unwrap_or_else(PoisonError::into_inner);
                    stopped = guard;
                    if *stopped {
                        return;
                    }
                    drop(stopped);
                    if sync && shared.unsynced() {
                        // A failure is kept in `sync_error`: the writer refuses writes
                        // until an `fsync` succeeds again.
                        let _ = shared.sync();
                    }
                    tick_work();
                    stopped = lock.lock().unwrap_or_else(PoisonError::into_inner);
                }
            })?;
        Ok(Syncer {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread (after its current round).
    pub(crate) fn stop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.stop();
    }
}
