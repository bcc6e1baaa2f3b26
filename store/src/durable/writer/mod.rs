//! The writer: group commit through the write-ahead log into the memtables, flushes and
//! checkpoints into redb, and the refusal of writes while the disk cannot take them.
//!
//! Every change — entity writes, table creation and deletion, settings — is a [`Request`]
//! queued at the gate (`gate.rs`); whoever holds the writer takes the queued requests as a
//! group and [`Writer::commit`]s them:
//!
//! 1. **entity writes** (runs of consecutive ones) are resolved in order, each against the
//!    current state — its table's memtable with the group's earlier writes, then redb
//!    ([`crate::resolve()`]: validation, existence, `If-Match`, merge, Timestamp) — and
//!    applied to the memtable only if they succeed, so a failing request leaves no trace;
//!    each write that changed something gets one log record (`format/record.rs`);
//! 2. the run's records are appended to the log with one `write(2)` — and `fsync`ed under
//!    [`FsyncPolicy::Always`](crate::durable::FsyncPolicy::Always);
//! 3. only then are the new memtable versions published to readers and every request of
//!    the run answered — with its result if the log took the records, with an error (and
//!    nothing changed) if it did not;
//! 4. **table creation and deletion and settings** are committed one at a time in a redb
//!    transaction (`Durability::None`), after their record is in the log.
//!
//! A write thus costs no redb transaction at all: a **flush** folds the memtables into
//! redb's blocks when they hold
//! [`DurableOptions::memtable_bytes`](crate::durable::DurableOptions::memtable_bytes), and at every
//! tick of the background thread, in slices — non-durable transactions of at most
//! [`DurableOptions::flush_slice`](crate::durable::DurableOptions::flush_slice) each —
//! between which the queued writes commit (`flush.rs`); a **checkpoint** (a durable redb
//! commit recording the last record number the data file holds, then the log cut to the
//! records after it) is due when the log passes its size bound and when its interval has
//! passed: it begins as a flush in slices that records its point (the last record when it
//! froze the memtables), and its durable commit runs on a thread of its own while writes
//! go on (`checkpoint.rs`). On close, on a reopen and when the log reaches twice its bound,
//! a checkpoint folds the memtables in one transaction whose commit is durable and empties
//! the log. Flushes and checkpoints run on the background thread, never on a caller's.
//!
//! **Refusal**: when the log cannot be written (a full disk), when a background `fsync`
//! failed, or when redb failed an I/O and must be reopened, writes are answered at once
//! with [`StoreError::WritesRefused`](crate::StoreError::WritesRefused) (503) naming the cause, reads go on, and
//! [`Backend::ready`](crate::Backend::ready) reports the cause. Every timer tick, and every
//! refused write at most every 200 ms, probes the disk (the log grows by 1 MiB and is cut
//! back: `Wal::probe`); once it takes writes again, redb is reopened if needed (the log
//! replayed into it, so nothing acknowledged is lost) and writes resume by themselves.
//!
//! ```text
//! group [A B C] ─ resolve A → memtable ─ resolve B (fails) ─ resolve C → memtable ─ log A,C ─ publish ──▶ A ✓ B ✗ C ✓
//! flush        ─ freeze ─ slice → redb ─ group ─ slice → redb ─ group ─ … ─ last slice: commit + memtables without the folded rows (one step for readers)
//! ```
//!
//! * `state.rs` — the [`Writer`] and what it holds;
//! * `commit.rs` — groups, flushes, checkpoints, refusals ([`Request`]: what callers queue);
//! * `flush.rs` — a flush in slices: the frozen memtables and how far they are folded;
//! * `checkpoint.rs` — a checkpoint's durable commit on its own thread, beside the writer;
//! * `txn.rs` — redb transactions and the memtable changes of writes, live and replayed;
//! * `replay.rs` — the log's records applied on opening (and after a reopen).

mod checkpoint;
mod commit;
mod flush;
mod replay;
mod state;
mod txn;

#[cfg(test)]
pub(crate) use checkpoint::Hold;
pub(crate) use commit::{Reply, Request, io_kind};
pub(crate) use state::{CheckpointLimits, Writer};
