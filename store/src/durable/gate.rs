//! The front door of the write path: callers queue requests here, and whoever holds the
//! writer commits them in groups.
//!
//! **Leaders** (the default, `--fsync interval=MS`): a caller queues its request, then
//! tries to take the writer. If it is free, the caller becomes the leader: it commits the
//! queued requests — its own among them — in groups (`writer/`) on its own thread and
//! answers every request of each group. If another thread holds the writer, the caller
//! just waits for its answer (or, async, returns a pending write): the holder commits the
//! request with its next group. A single writer thus commits without any thread hand-off
//! (no wake-up of another thread, two fewer context switches per write), and concurrent
//! writers still share groups, one `write(2)` per group. An async caller
//! (`Backend::submit_batch`) only [`enqueue`](Gate::enqueue)s: its pending write yields
//! once, so that the other requests of the same turn of its event loop queue theirs, and
//! then [`lead`](Gate::lead)s — one group for all of them, where leading at once gave
//! each its own (`PendingWrite::queued` in `crate::backend`).
//!
//! **The background thread** (`tableq-durable-writer`) does what must not delay a caller:
//! flushes of the memtables into redb and checkpoints (when a leader finds one due, it
//! hands over, and requests queued meanwhile wait for the background thread, which commits
//! them between the slices of the flush — `writer/flush.rs`; a checkpoint's durable commit
//! runs on a thread of its own while groups go on, and the background thread looks every
//! 2 ms whether it is done — `writer/checkpoint.rs`),
//! the timer's work (a flush of what the memtables hold, a
//! checkpoint due by time, probing a full disk), and every group under
//! `--fsync always`, whose commit waits for an `fsync`. A leader also hands over after a
//! few groups, so that a caller is not kept leading by a stream of others' writes.
//!
//! No request is left behind: every holder of the writer takes the queue after it got the
//! writer, and looks at the queue again after it let the writer go.
//!
//! ```text
//! caller A ─ queue A ─ try writer ✓ ─ commit [A] ─ commit [B C] ─ release ─ queue empty ✓
//! caller B ─ queue B ─ try writer ✗ ─ wait ······························ answered
//! caller C ─ queue C ─ try writer ✗ ─ wait ······························ answered
//! ```

use super::writer::{Request, Writer};
use crate::backend::CommitQueued;
use crate::error::StoreError;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// Most requests committed together.
pub(crate) const MAX_GROUP: usize = 256;
/// Most groups a caller commits as the leader before it hands the rest to the background
/// thread.
const LEADER_GROUPS: usize = 4;

/// The queue and what the background thread is asked to do.
#[derive(Default)]
struct Queue {
    requests: VecDeque<Request>,
    /// The background thread should take the writer (a leader handed over, or the commit
    /// of every group is the background thread's: `--fsync always`).
    wanted: bool,
    /// The store is closing: requests are refused; the background thread commits what is
    /// queued, checkpoints and ends.
    closing: bool,
    /// The background thread has ended (closed, or — a bug — panicked): requests that
    /// only it would commit are refused instead of waiting for ever.
    stopped: bool,
}

/// The queue, the writer, and the background thread's wake-up (see the module docs).
pub(crate) struct Gate {
    queue: Mutex<Queue>,
    wake: Condvar,
    writer: Mutex<Writer>,
    /// Callers may lead (`interval` mode); otherwise every group is the background
    /// thread's.
    leaders: bool,
    /// How often the background thread does its timer work.
    tick: Duration,
}

/// A write queued by [`enqueue`](Gate::enqueue) is committed by [`lead`](Gate::lead).
impl CommitQueued for Gate {
    fn commit_queued(&self) {
        self.lead();
    }
}

impl Gate {
    pub(crate) fn new(writer: Writer, leaders: bool, tick: Duration) -> Gate {
        Gate {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            writer: Mutex::new(writer),
            leaders,
            tick,
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `request` (its answer goes to the request's reply channel): `true` when the
    /// caller must then [`lead`](Gate::lead) its commit — callers may lead, and `lead`
    /// commits it with whatever else is queued on the caller's thread if the writer is
    /// free — `false` when it was refused or is the background thread's (`--fsync always`).
    pub(crate) fn enqueue(&self, request: Request) -> bool {
        let mut queue = self.queue();
        if queue.closing {
            drop(queue);
            request.refuse(StoreError::Closed);
            return false;
        }
        if queue.stopped && !self.leaders {
            drop(queue);
            request.refuse(StoreError::storage(
                "the durable store's writer thread stopped unexpectedly",
            ));
            return false;
        }
        queue.requests.push_back(request);
        if !self.leaders {
            queue.wanted = true;
            self.wake.notify_one();
            return false;
        }
        true
    }

    /// Takes the writer if it is free and commits what is queued (see the module docs).
    pub(crate) fn lead(&self) {
        loop {
            let mut writer = match self.writer.try_lock() {
                Ok(w) => w,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                // The holder takes the queue before it lets the writer go.
                Err(TryLockError::WouldBlock) => return,
            };
            let handed_over = self.drain(&mut writer, LEADER_GROUPS, true);
            drop(writer);
            if handed_over || self.queue().requests.is_empty() {
                return;
            }
        }
    }

    /// Commits queued requests, at most `groups` groups; `true` when it stopped with work
    /// left for the background thread (and woke it). A `leader` commits nothing while
    /// background work is due (`Writer::background_due`: a flush or checkpoint, or the
    /// next slice of a flush in progress): that bounds the memtables and the log by twice
    /// their limits plus one group, however fast writers come.
    fn drain(&self, writer: &mut Writer, groups: usize, leader: bool) -> bool {
        for _ in 0..groups {
            if leader && writer.background_due() {
                self.hand_over();
                return true;
            }
            let group: Vec<Request> = {
                let mut queue = self.queue();
                let n = queue.requests.len().min(MAX_GROUP);
                queue.requests.drain(..n).collect()
            };
            if group.is_empty() {
                return false;
            }
            writer.commit(group);
            if writer.background_due() {
                self.hand_over();
                return true;
            }
        }
        if self.queue().requests.is_empty() {
            false
        } else {
            self.hand_over();
            true
        }
    }

    /// Asks the background thread to take the writer.
    fn hand_over(&self) {
        self.queue().wanted = true;
        self.wake.notify_one();
    }

    /// Refuses new requests and wakes the background thread, which commits what is
    /// queued, checkpoints and ends.
    pub(crate) fn close(&self) {
        self.queue().closing = true;
        self.wake.notify_one();
    }

    /// Runs `f` on the writer (waiting for it).
    pub(crate) fn with_writer<T>(&self, f: impl FnOnce(&mut Writer) -> T) -> T {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut writer)
    }

    /// The background thread's loop: waits for a hand-over, a request under `always`, the
    /// timer or the close; then does the writer's background work and commits what is
    /// queued. Ends after the close, once the queue is empty and the last checkpoint made.
    pub(crate) fn run(&self) {
        /// Marks the thread stopped however it ends, and answers what it left queued.
        struct Stopped<'g>(&'g Gate);
        impl Drop for Stopped<'_> {
            fn drop(&mut self) {
                let left: Vec<Request> = {
                    let mut queue = self.0.queue();
                    queue.stopped = true;
                    queue.requests.drain(..).collect()
                };
                for request in left {
                    request.refuse(StoreError::storage(
                        "the durable store's writer thread stopped before committing the write",
                    ));
                }
            }
        }
        let _stopped = Stopped(self);
        let mut next_tick = Instant::now() + self.tick;
        // When the writer's background work goes on without being asked (`poll_within`):
        // the next slice of a flush at once, a checkpoint beside the writer soon.
        let mut back_at: Option<Instant> = None;
        loop {
            let (closing, timer) = {
                let mut queue = self.queue();
                loop {
                    if queue.wanted || queue.closing {
                        break;
                    }
                    let now = Instant::now();
                    let until = back_at.map_or(next_tick, |at| at.min(next_tick));
                    if now >= until {
                        break;
                    }
                    queue = self
                        .wake
                        .wait_timeout(queue, until - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                queue.wanted = false;
                let timer = Instant::now() >= next_tick;
                (queue.closing, timer)
            };
            if timer {
                next_tick = Instant::now() + self.tick;
            }
            let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            writer.background(timer);
            while self.drain(&mut writer, usize::MAX, false) {
                // `drain` stopped for background work (a flush due, or its next slice): do
                // it, go on.
                self.queue().wanted = false;
                writer.background(false);
            }
            back_at = writer.poll_within().map(|d| Instant::now() + d);
            if closing && self.queue().requests.is_empty() {
                writer.close();
                return;
            }
        }
    }
}
