//! [`Backend`]: the one interface every storage engine implements and every caller (the
//! HTTP server, the CLI's `import`, embedders) uses. Callers hold an `Arc<dyn Backend>` and
//! never name an engine.
//!
//! # Contract for implementors
//!
//! * **Tables** are unique case-insensitively ([`tableq_model::validate::table_key`]); the
//!   case given at creation is kept and returned. Names are validated with
//!   [`tableq_model::validate::table_name`] on creation (→ the model's error). Every entity
//!   operation on a missing table fails with [`StoreError::TableNotFound`]; deleting a
//!   missing table with [`StoreError::TableToDeleteNotFound`]. Deleting a table deletes its
//!   entities.
//! * **Writes** go through [`crate::resolve()`] (the service's semantics) under exclusive write
//!   access to the table, are applied atomically (all operations of a
//!   [`write_batch`](Backend::write_batch) or none), and return only once as durable as
//!   the engine promises (the durable engine: in its write-ahead log, `fsync`ed per its
//!   [`FsyncPolicy`](crate::FsyncPolicy)). Concurrent writers are serialised: no lost
//!   update.
//! * **Reads** see committed writes only. A [`query`](Backend::query) page runs against one
//!   consistent snapshot; across pages, the continuation protocol of `tableq-exec` applies
//!   (every entity present for the whole paging is returned exactly once, in key order).
//! * **Service properties and access policies** (typed: [`ServiceProperties`],
//!   [`SignedIdentifier`]) are stored as durably as entities: per account (one value per
//!   backend; the defaults until set), and per table — a table's policies are deleted with
//!   it, so a table re-created under the same name has none. Both are validated before
//!   they are stored ([`ServiceProperties::validate`], [`crate::acl::validate`]:
//!   [`StoreError::InvalidSetting`]).
//! * **Errors** are [`StoreError`]s; engine failures are [`StoreError::Storage`] (500) and
//!   never leave a partial write visible.
//!
//! A backend test suite (`store/tests/suite/`) states this contract as tests, and every
//! engine runs it.

use crate::acl::SignedIdentifier;
use crate::error::{BatchError, StoreError};
use crate::op::{WriteOp, Written};
use crate::service::ServiceProperties;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tableq_exec::{EntityRef, ExecStats, Key, PageOptions, RowView, SourceRow};
use tableq_model::Entity;
use tableq_planner::plan::Plan;

/// A table as the catalog knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// The name in the case it was created with.
    pub name: String,
}

/// The end of one query page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryPage {
    /// Where the next page starts (the key of the next entity to examine, inclusive), or
    /// `None` when the query is complete.
    pub continuation: Option<Key>,
    /// What the page cost.
    pub stats: ExecStats,
}

/// How a backend would read a plan, for `explain` (engine-specific detail such as the SQL
/// it sends and which part of the residual it pushes down).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ScanExplain {
    /// The engine's name, e.g. `memory`, `durable`, `postgres`.
    pub engine: String,
    /// Lines of engine-specific detail, in reading order.
    pub details: Vec<String>,
}

impl ScanExplain {
    /// An explanation with no detail beyond the engine's name.
    pub fn engine(engine: impl Into<String>) -> ScanExplain {
        ScanExplain {
            engine: engine.into(),
            details: Vec::new(),
        }
    }
}

/// The counters of an engine's write-ahead log, for metrics
/// ([`DurableBackend::write_log_stats`](crate::DurableBackend::write_log_stats)): totals since the engine was opened, except the sizes.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct WriteLogStats {
    /// The durability mode, as `--fsync` spells it (`always`, `interval=1000`).
    pub fsync_policy: String,
    /// Records appended (one per write, table creation or deletion).
    pub records: u64,
    /// Bytes appended.
    pub appended_bytes: u64,
    /// The log file's size now (it is emptied by each checkpoint).
    pub log_bytes: u64,
    /// Records appended but not yet `fsync`ed (0 under `always`).
    pub unsynced_records: u64,
    /// `fsync`s of the log.
    pub fsyncs: u64,
    /// Seconds spent in them (with `fsyncs`, a Prometheus summary's `_sum` and `_count`).
    pub fsync_seconds: f64,
    /// Checkpoints (durable commits of the data file, after which the log drops the records
    /// they hold).
    pub checkpoints: u64,
    /// Seconds spent in them (a checkpoint beside the writers: from the start of its
    /// durable commit to the log's cut, which writes do not wait for).
    pub checkpoint_seconds: f64,
    /// Flushes of the rows written since the last flush (kept in memory in front of the
    /// data file) into the data file, checkpoints not counted.
    pub flushes: u64,
    /// The slices the flushes were folded in (a flush holds the writer one slice at a
    /// time; writes commit between slices).
    pub flush_slices: u64,
    /// Seconds spent in them.
    pub flush_seconds: f64,
    /// Bytes of rows in memory, waiting for the next flush.
    pub memtable_bytes: u64,
}

/// A storage engine with the Table service's semantics (see the module docs).
pub trait Backend: Send + Sync {
    /// A one-line description for start-up banners and logs, e.g.
    /// `durable at ./tableq-data (write-ahead log fsynced every 1000 ms: …)`.
    fn describe(&self) -> String;

    /// Creates a table. Fails if the name is invalid or taken (case-insensitively).
    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError>;

    /// Deletes a table and all its entities.
    fn delete_table(&self, name: &str) -> Result<(), StoreError>;

    /// The table with this name (case-insensitive), or [`StoreError::TableNotFound`].
    fn table(&self, name: &str) -> Result<TableInfo, StoreError>;

    /// Every table, ordered by [`tableq_model::validate::table_key`] (lowercase name).
    fn tables(&self) -> Result<Vec<TableInfo>, StoreError>;

    /// The entity with these keys (its Timestamp set), or `None`.
    fn get(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Entity>, StoreError>;

    /// [`get`](Backend::get) without an owned copy: hands the entity to `visit` as a row
    /// borrowed from the engine (its Timestamp set) and answers `true`, or answers `false`
    /// without calling `visit` when there is none. A caller that only prints the entity
    /// (the HTTP server's point get writes its JSON from the row) saves building an
    /// [`Entity`] and dropping it. Engines that read rows in place implement it; the
    /// default calls `get`.
    fn get_row(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        visit: &mut dyn FnMut(&dyn SourceRow),
    ) -> Result<bool, StoreError> {
        let found = self.get(table, partition_key, row_key)?;
        if let Some(entity) = &found {
            visit(&EntityRef(entity));
        }
        Ok(found.is_some())
    }

    /// [`get`](Backend::get) for an async caller, without blocking its thread: the engine
    /// waits for its network on the caller's tokio runtime (so the future must be polled
    /// inside one). It resolves to `None` when the engine did not answer this way (the
    /// default; an engine that does may still decline a get, e.g. when its connections for
    /// it are all in use): the caller then calls `get`, on a blocking thread unless
    /// [`point_reads_are_local`](Backend::point_reads_are_local).
    ///
    /// Engines whose point reads wait on a network (PostgreSQL) implement it: handing a get
    /// to a blocking thread costs two thread wake-ups, more than the get itself.
    fn get_nonblocking<'a>(
        &'a self,
        table: &'a str,
        partition_key: &'a str,
        row_key: &'a str,
    ) -> NonBlockingGet<'a> {
        let _ = (table, partition_key, row_key);
        Box::pin(std::future::ready(None))
    }

    /// Runs one page of `plan` from `continuation` (inclusive; `None` = from the start),
    /// handing each result in key order to `visit` (borrowed, projected to the plan's
    /// `$select`), and returns where the next page starts.
    fn query(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        visit: &mut dyn FnMut(RowView<'_>),
    ) -> Result<QueryPage, StoreError>;

    /// Applies `ops` atomically and in order, all sharing one Timestamp; returns what each
    /// wrote, in order. On failure nothing is applied and the error names the failing
    /// operation. An entity may appear only once (`InvalidDuplicateRow`).
    fn write_batch(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<Written>, BatchError>;

    /// Hands `ops` to the engine as [`write_batch`](Backend::write_batch) would, and
    /// returns their outcome as a future: already complete when the engine did the work on
    /// the calling thread, else completed by whoever commits the write (the durable engine's
    /// group commit). Await it, or [`PendingWrite::wait`] for it on a thread.
    ///
    /// The default calls `write_batch`, which may block the caller for as long as the
    /// engine takes (a network round trip for PostgreSQL): async callers must then call it
    /// on a blocking thread, unless [`writes_never_block`](Backend::writes_never_block).
    fn submit_batch(&self, table: &str, ops: Vec<WriteOp>) -> PendingWrite {
        PendingWrite::ready(self.write_batch(table, ops))
    }

    /// Whether [`submit_batch`](Backend::submit_batch) returns after microseconds of work
    /// on the calling thread, never waiting for a network, a disk sync or another writer
    /// (a write that has to wait is queued, and its [`PendingWrite`] completes later).
    /// Async callers (the HTTP server) then submit writes on their event loop instead of
    /// handing them to a blocking thread pool, which saves two thread wake-ups per write.
    ///
    /// The default, `false`, is the safe answer for an engine that writes over a network.
    fn writes_never_block(&self) -> bool {
        false
    }

    /// One write: [`write_batch`](Backend::write_batch) of a single operation.
    fn write(&self, table: &str, op: WriteOp) -> Result<Written, StoreError> {
        let mut written = self.write_batch(table, vec![op]).map_err(|e| e.error)?;
        written.pop().ok_or(StoreError::Closed)
    }

    /// The account's Table service properties ([`ServiceProperties::default`] until set).
    fn service_properties(&self) -> Result<ServiceProperties, StoreError>;

    /// Replaces the account's service properties (validated first; durable before it
    /// returns on a durable engine).
    fn set_service_properties(&self, properties: &ServiceProperties) -> Result<(), StoreError>;

    /// The stored access policies of `table` (empty until set), or
    /// [`StoreError::TableNotFound`].
    fn table_acl(&self, table: &str) -> Result<Vec<SignedIdentifier>, StoreError>;

    /// Replaces the stored access policies of `table` (validated first), or
    /// [`StoreError::TableNotFound`]. They are deleted with the table.
    fn set_table_acl(&self, table: &str, acl: &[SignedIdentifier]) -> Result<(), StoreError>;

    /// Whether a point read ([`get`](Backend::get), or a [`query`](Backend::query) of a
    /// few exact keys) is answered from this process's memory or local files in
    /// microseconds, never waiting on a network round trip or on a writer. Async callers
    /// (the HTTP server) then run such reads inline on their event loop instead of handing
    /// them to a blocking thread pool, which costs two thread wake-ups per request.
    ///
    /// The default, `false`, is the safe answer for an engine that reads over a network.
    fn point_reads_are_local(&self) -> bool {
        false
    }

    /// Whether the engine can take writes at this moment: `Ok(())`, or the reason it cannot
    /// (a full disk, an unreachable or frozen database). The emulator's readiness answer
    /// (`GET /health`) reports it, so an operator or an orchestrator sees a store that
    /// reads but cannot write. It must answer quickly (a bounded check, never a long wait).
    ///
    /// The default, `Ok(())`, suits an engine that has no failure mode of its own (memory).
    fn ready(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// What the engine reports about itself for monitoring (the emulator's `GET /metrics`:
    /// sizes, connection pools, write timings; see [`crate::metrics`]). It must be cheap
    /// and must not block.
    ///
    /// The default reports nothing.
    fn metrics(&self) -> crate::metrics::StoreMetrics {
        crate::metrics::StoreMetrics::new()
    }

    /// How the engine would read `plan` on `table` (for `explain`).
    fn explain(&self, table: &str, plan: &Plan) -> Result<ScanExplain, StoreError> {
        self.table(table)?;
        let _ = plan;
        Ok(ScanExplain::engine(self.describe()))
    }

    /// Makes every acknowledged write durable and releases the engine (files, locks,
    /// connections). Later calls fail with [`StoreError::Closed`]. Idempotent.
    fn close(&self) -> Result<(), StoreError>;
}

/// What [`Backend::write_batch`] returns.
type BatchOutcome = Result<Vec<Written>, BatchError>;

/// The outcome of a write handed to an engine with [`Backend::submit_batch`]: a future
/// (await it in async code) that is complete at once when the engine did the work on the
/// calling thread, or that completes when the engine's writer answers.
///
/// ```
/// use tableq_model::Entity;
/// use tableq_store::{Backend, MemoryBackend, WriteOp};
/// let store = MemoryBackend::new();
/// store.create_table("t1x").unwrap();
/// let pending = store.submit_batch("t1x", vec![WriteOp::Insert { entity: Entity::new("p", "r") }]);
/// assert_eq!(pending.wait().unwrap().len(), 1);
/// ```
#[must_use = "a write's outcome says whether it was stored"]
pub struct PendingWrite(Pending);

/// The outcome of [`Backend::get_nonblocking`]: `None` when the engine left the get to
/// [`Backend::get`], else what `get` would have answered.
pub type NonBlockingGet<'a> =
    Pin<Box<dyn Future<Output = Option<Result<Option<Entity>, StoreError>>> + Send + 'a>>;

enum Pending {
    /// Complete (`None` once taken by `poll`).
    Ready(Option<BatchOutcome>),
    /// Queued with no commit led yet ([`PendingWrite::queued`]): led by whichever comes
    /// first of the second poll, [`PendingWrite::wait`] and the drop.
    Queued {
        answer: oneshot::Receiver<BatchOutcome>,
        lead: Unled,
        /// Polled once already (and yielded).
        yielded: bool,
    },
    /// Answered later on this channel.
    Waiting(oneshot::Receiver<BatchOutcome>),
    /// Being awaited.
    Polled(oneshot::AsyncReceiver<BatchOutcome>),
}

/// An engine's writer, as far as a write queued without a commit needs it
/// ([`PendingWrite::queued`]).
pub(crate) trait CommitQueued: Send + Sync {
    /// Commits what is queued now (or leaves it to whoever is committing already, who
    /// takes the queue before it stops).
    fn commit_queued(&self);
}

/// The commit a queued write is owed: led when this is dropped, so that a queued write
/// is committed however its [`PendingWrite`] ends — awaited, waited for, or dropped
/// unpolled.
struct Unled(Arc<dyn CommitQueued>);

impl Drop for Unled {
    fn drop(&mut self) {
        self.0.commit_queued();
    }
}

impl PendingWrite {
    /// A write whose outcome is known.
    pub fn ready(outcome: Result<Vec<Written>, BatchError>) -> PendingWrite {
        PendingWrite(Pending::Ready(Some(outcome)))
    }

    /// A write answered later on `answer`; a channel closed without an answer is a storage
    /// failure.
    pub(crate) fn waiting(answer: oneshot::Receiver<BatchOutcome>) -> PendingWrite {
        PendingWrite(Pending::Waiting(answer))
    }

    /// A write queued for the engine's writer with no commit led yet, answered on
    /// `answer` (group commit across an event loop's requests). Awaited, its first poll
    /// yields to the tasks ready behind it — which queue their own writes — and its second
    /// leads the commit of everything queued by then (`writer`), so that the writes of
    /// one turn of the event loop share one group (one log append, one memtable version);
    /// [`wait`](PendingWrite::wait) and a drop lead at once.
    pub(crate) fn queued(
        answer: oneshot::Receiver<BatchOutcome>,
        writer: Arc<dyn CommitQueued>,
    ) -> PendingWrite {
        PendingWrite(Pending::Queued {
            answer,
            lead: Unled(writer),
            yielded: false,
        })
    }

    /// Blocks the calling thread until the outcome is known.
    pub fn wait(self) -> Result<Vec<Written>, BatchError> {
        match self.0 {
            Pending::Ready(Some(outcome)) => outcome,
            Pending::Ready(None) => Err(lost().into()),
            Pending::Queued { answer, lead, .. } => {
                drop(lead);
                answer.recv().unwrap_or_else(|_| Err(lost().into()))
            }
            Pending::Waiting(answer) => answer.recv().unwrap_or_else(|_| Err(lost().into())),
            Pending::Polled(answer) => {
                // Rare (waiting after polling): finish on a private single-threaded poll.
                wait_async(answer)
            }
        }
    }
}

/// The error of a write whose writer went away without answering.
fn lost() -> StoreError {
    StoreError::storage("the store's writer stopped before answering the write")
}

/// Drives `answer` to completion on this thread (parking between wake-ups).
fn wait_async(answer: oneshot::AsyncReceiver<BatchOutcome>) -> BatchOutcome {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut answer = std::pin::pin!(answer);
    loop {
        match answer.as_mut().poll(&mut cx) {
            Poll::Ready(outcome) => return outcome.unwrap_or_else(|_| Err(lost().into())),
            Poll::Pending => std::thread::park(),
        }
    }
}

impl Future for PendingWrite {
    type Output = Result<Vec<Written>, BatchError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match &mut self.0 {
                Pending::Ready(outcome) => {
                    return Poll::Ready(outcome.take().unwrap_or_else(|| Err(lost().into())));
                }
                Pending::Queued {
                    answer, yielded, ..
                } => {
                    if let Ok(outcome) = answer.try_recv() {
                        // Committed by another's lead already (dropping `lead` below
                        // commits whatever was queued since).
                        self.0 = Pending::Ready(Some(outcome));
                        continue;
                    }
                    if !*yielded {
                        // Behind the tasks that are ready now: they queue their writes,
                        // and the next poll commits them with this one.
                        *yielded = true;
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    let Pending::Queued { answer, lead, .. } =
                        std::mem::replace(&mut self.0, Pending::Ready(None))
                    else {
                        continue;
                    };
                    drop(lead);
                    self.0 = Pending::Waiting(answer);
                }
                Pending::Waiting(_) => {
                    let Pending::Waiting(answer) =
                        std::mem::replace(&mut self.0, Pending::Ready(None))
                    else {
                        continue;
                    };
                    self.0 = Pending::Polled(answer.into_future());
                }
                Pending::Polled(answer) => {
                    return Pin::new(answer)
                        .poll(cx)
                        .map(|r| r.unwrap_or_else(|_| Err(lost().into())));
                }
            }
        }
    }
}

impl std::fmt::Debug for PendingWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Pending::Ready(_) => "PendingWrite(ready)",
            Pending::Queued { .. } | Pending::Waiting(_) | Pending::Polled(_) => {
                "PendingWrite(waiting)"
            }
        })
    }
}
