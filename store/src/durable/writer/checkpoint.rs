//! A checkpoint beside the writer ([`InFlight`]): the durable redb commit that names a log
//! point, made on a thread of its own while writes go on.
//!
//! A checkpoint is a durable commit that records the last log record the data file holds
//! (`wal_lsn`); its cost is redb's `fsync` of every page the non-durable commits since the
//! last one wrote — at 10 M entities under random inserts, hundreds of megabytes and
//! 0.9–4.4 s (`benches/README.md`). Made on the writer's thread, like the flush's fold it
//! followed, it stopped every write for that long. Now a checkpoint due by the log's size
//! or by time begins as a flush in slices (`flush.rs`) that records its **point**: the last
//! record appended when it froze the memtables, and where that record ends in the log
//! ([`LogPoint`]). Every record up to the point is then in redb once the flush's last slice
//! is committed — entity writes in the frozen memtables it folds, the other changes in
//! their own commits before the freeze — and nothing after it is, unless a table or a
//! setting changed during the flush: its commit holds a later record, so the flush then
//! ends as a plain one and the next checkpoint begins again.
//!
//! Then [`InFlight::start`] makes a commit that changes only the meta table (`wal_lsn` =
//! the point) durable on the checkpoint's thread (`tableq-checkpoint`), and copies the
//! log's records after the point into the next log file (`wal/tail.rs`). Meanwhile the
//! writer commits entity writes into the log and the memtables as always; what needs a
//! redb transaction waits for the checkpoint (the next flush's slices; a table or a
//! setting changed), and so do writers once the memtables or the log reach twice their
//! bound. When the thread is done, the writer keeps the log's records after the point
//! (`Wal::keep_after`) — the only part on its thread, the last records copied and one
//! `fsync` of them — and the checkpoint is counted.
//!
//! A crash at any step loses nothing: before the commit is durable the data file names the
//! last checkpoint's point and the log holds every record after it; after, it names this
//! one, and the log (old or new) holds every record after it. A failed commit is a failed
//! checkpoint (writes are refused until redb is reopened and the log replayed, as before).
//! The close, a reopen and a checkpoint made on the writer (the log at twice its bound)
//! first wait for one in flight.

use crate::durable::format::tables::{FORMAT_VERSION, META, META_FORMAT, META_WAL_LSN};
use crate::durable::shared::Shared;
use crate::durable::wal::{Tail, WalShared};
use crate::error::StoreError;
use redb::Durability;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

/// A place in the log: the number of a record and the file's length after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogPoint {
    pub(crate) lsn: u64,
    pub(crate) len: u64,
}

/// What the checkpoint's thread hands back: its commit's result and the copy of the log's
/// tail it made (`None` when the copy failed: the writer makes it).
pub(crate) type Landed = Result<Option<Tail>, StoreError>;

/// Holds a checkpoint's thread before its commit while set (tests: writes go on meanwhile;
/// the engine never sets one).
pub(crate) type Hold = Arc<(Mutex<bool>, Condvar)>;

/// A checkpoint whose durable commit runs on its own thread (see the module docs).
pub(crate) struct InFlight {
    pub(crate) point: LogPoint,
    pub(crate) started: Instant,
    done: Receiver<Landed>,
    thread: Option<JoinHandle<()>>,
    /// The result, once received and not yet taken (tests: [`InFlight::settle`]).
    landed: Option<Landed>,
}

/// What a checkpoint beside the writer commits, and where its log is.
#[derive(Clone)]
pub(crate) struct Checkpoint {
    pub(crate) shared: Arc<Shared>,
    pub(crate) wal: Arc<WalShared>,
    pub(crate) log_path: PathBuf,
    pub(crate) generation: u64,
    pub(crate) point: LogPoint,
}

impl InFlight {
    /// Commits `checkpoint`'s point durably on a new thread, then copies the log after it;
    /// if no thread can be started, does both on this one.
    pub(crate) fn start(checkpoint: Checkpoint, hold: Option<Hold>) -> InFlight {
        let started = Instant::now();
        let point = checkpoint.point;
        let (send, done) = mpsc::channel();
        let job = Job {
            checkpoint,
            hold,
            send,
        };
        let here = job.clone();
        let thread = std::thread::Builder::new()
            .name("tableq-checkpoint".into())
            .spawn(move || job.run())
            .map_err(|_| here.run())
            .ok();
        InFlight {
            point,
            started,
            done,
            thread,
            landed: None,
        }
    }

    /// The checkpoint's result once its thread is done (waiting for it when `wait`).
    pub(crate) fn poll(&mut self, wait: bool) -> Option<Landed> {
        if let Some(landed) = self.landed.take() {
            return Some(landed);
        }
        let landed = if wait {
            self.done.recv().unwrap_or_else(|_| Err(ended()))
        } else {
            match self.done.try_recv() {
                Ok(landed) => landed,
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => Err(ended()),
            }
        };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        Some(landed)
    }
}

/// The checkpoint's thread's work.
#[derive(Clone)]
struct Job {
    checkpoint: Checkpoint,
    hold: Option<Hold>,
    send: mpsc::Sender<Landed>,
}

impl Job {
    fn run(self) {
        if let Some(hold) = &self.hold {
            let (lock, wake) = &**hold;
            let mut held = lock.lock().unwrap_or_else(PoisonError::into_inner);
            while *held {
                held = wake.wait(held).unwrap_or_else(PoisonError::into_inner);
            }
        }
        let c = &self.checkpoint;
        let point = c.point;
        let landed = commit_point(&c.shared, point.lsn).map(|()| {
            c.wal
                .copy_tail(&c.log_path, point.len, point.lsn + 1, c.generation)
                .ok()
        });
        let _ = self.send.send(landed);
    }
}

#[cfg(test)]
impl InFlight {
    /// Waits for the thread's result and keeps it for the next [`poll`](InFlight::poll)
    /// (a test's crash between the commit and the log's cut).
    pub(crate) fn settle(&mut self) {
        self.landed = self.poll(true);
    }
}

fn ended() -> StoreError {
    StoreError::storage("the checkpoint's thread ended without an answer")
}

/// The durable commit of a checkpoint beside the writer: the meta table names `lsn` as
/// the last record the data file holds (with the format this build writes), and the commit
/// makes every non-durable commit before it durable too.
pub(crate) fn commit_point(shared: &Shared, lsn: u64) -> Result<(), StoreError> {
    let db = shared.db.read().unwrap_or_else(PoisonError::into_inner);
    let mut txn = db
        .as_ref()
        .ok_or(StoreError::Closed)?
        .begin_write()
        .map_err(StoreError::storage)?;
    txn.set_durability(Durability::Immediate)
        .map_err(StoreError::storage)?;
    // As for every durable commit: a crash's repair loads the allocator state (`txn.rs`).
    txn.set_quick_repair(true);
    {
        let mut meta = txn.open_table(META).map_err(StoreError::storage)?;
        meta.insert(META_WAL_LSN, lsn)
            .map_err(StoreError::storage)?;
        meta.insert(META_FORMAT, FORMAT_VERSION)
            .map_err(StoreError::storage)?;
    }
    txn.commit().map_err(StoreError::storage)
}
