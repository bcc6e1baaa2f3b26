//! [`BulkLoader`]: loads many entities into one table as `$batch` changesets over several
//! concurrent connections — what `tableq import --endpoint` and `tableq bench-http`'s load
//! step run.
//!
//! * Entities are grouped by PartitionKey into changesets by [`PartitionGroups`] with the
//!   service's limits ([`GroupLimits::SERVICE`]: at most
//!   [`MAX_OPERATIONS`](crate::batch::MAX_OPERATIONS) operations and at most
//!   [`MAX_CHANGESET_BYTES`](super::MAX_CHANGESET_BYTES) of bodies, under the service's 4 MiB
//!   request limit): each operation is an *Insert Entity* or, with [`LoadMode::Upsert`], an
//!   *Insert Or Replace Entity*, its body the entity's JSON text as given.
//! * A partition's changesets always go to the same connection ([`worker_for`]), so the
//!   entities of one partition are written in the order they were pushed.
//! * A changeset is all or nothing. When the reply names a failed operation with a code
//!   about that entity (`EntityAlreadyExists`, a validation code), that entity is reported
//!   as rejected ([`LoadReport::rejected`]) and the rest of the changeset is sent again. An
//!   answer about the whole run (`TableNotFound`, `AuthenticationFailed`, any 5xx, a reply
//!   without an index) or a connection failure stops the run: [`BulkLoader::push`] and
//!   [`BulkLoader::finish`] return it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tableq_client::ClientError> {
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use tableq_client::TableServiceClient;
//! use tableq_client::load::{BulkLoader, LoadItem, LoadMode, LoadReport};
//!
//! #[derive(Default)]
//! struct Count(AtomicU64);
//! impl LoadReport for Count {
//!     fn loaded(&self, n: u64) { self.0.fetch_add(n, Ordering::Relaxed); }
//!     fn rejected(&self, tag: u64, code: tableq_model::ErrorCode, message: String) {
//!         eprintln!("line {tag}: {code}: {message}");
//!     }
//! }
//!
//! let table = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?
//!     .table("people");
//! let count = Arc::new(Count::default());
//! let mut loader = BulkLoader::start(table, LoadMode::Insert, 8, count.clone())?;
//! loader.push(LoadItem {
//!     tag: 1,
//!     partition_key: "p".into(),
//!     row_key: "1".into(),
//!     body: r#"{"PartitionKey":"p","RowKey":"1","Age":42}"#.into(),
//! }).await?;
//! loader.finish().await?;
//! assert_eq!(count.0.load(Ordering::Relaxed), 1);
//! # Ok(()) }
//! ```

use super::group::{GroupLimits, PartitionGroups, worker_for};
use crate::batch::{BatchKind, BatchOperation};
use crate::error::ClientError;
use crate::table::{TableClient, UpdateMode};
use std::sync::{Arc, Mutex};
use tableq_model::ErrorCode;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How each entity is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// Insert Entity: existing keys are rejected (`EntityAlreadyExists`).
    Insert,
    /// Insert Or Replace Entity: the last write of a key wins.
    Upsert,
}

/// Where a [`BulkLoader`] reports what happened to each entity (called from its
/// connections' tasks).
pub trait LoadReport: Send + Sync {
    /// `count` entities were written.
    fn loaded(&self, count: u64);
    /// The entity pushed with `tag` was refused by the service for itself.
    fn rejected(&self, tag: u64, code: ErrorCode, message: String);
}

/// One entity on its way: the caller's tag (e.g. a line number), its keys, its JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadItem {
    /// What [`LoadReport::rejected`] names the entity by.
    pub tag: u64,
    /// The entity's PartitionKey.
    pub partition_key: String,
    /// The entity's RowKey.
    pub row_key: String,
    /// The entity as JSON (one line), sent as is.
    pub body: String,
}

/// One changeset's entities (one PartitionKey).
type Changeset = Vec<LoadItem>;

/// The first failure of a run, shared by the connections.
type Failure = Arc<Mutex<Option<ClientError>>>;

/// Loads entities through a running server (see the module docs).
pub struct BulkLoader {
    groups: PartitionGroups<LoadItem>,
    /// One queue per connection; a PartitionKey chooses its queue.
    senders: Vec<mpsc::Sender<Changeset>>,
    tasks: Vec<JoinHandle<()>>,
    failure: Failure,
}

impl BulkLoader {
    /// Starts `connections` (at least 1) senders on the current tokio runtime; `Err` when
    /// called outside one.
    pub fn start(
        table: TableClient,
        mode: LoadMode,
        connections: usize,
        report: Arc<dyn LoadReport>,
    ) -> Result<BulkLoader, ClientError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            ClientError::Config("the bulk loader runs on a tokio runtime: start it in one".into())
        })?;
        let failure: Failure = Arc::default();
        let connections = connections.max(1);
        let mut senders = Vec::with_capacity(connections);
        let mut tasks = Vec::with_capacity(connections);
        for _ in 0..connections {
            let (sender, mut receiver) = mpsc::channel::<Changeset>(2);
            let (table, report, failure) = (table.clone(), report.clone(), failure.clone());
            tasks.push(runtime.spawn(async move {
                while let Some(changeset) = receiver.recv().await {
                    if failed(&failure).is_some() {
                        continue; // drain the queue
                    }
                    if let Err(e) = send_changeset(&table, mode, changeset, &*report).await
                        && let Ok(mut f) = failure.lock()
                    {
                        f.get_or_insert(e);
                    }
                }
            }));
            senders.push(sender);
        }
        Ok(BulkLoader {
            groups: PartitionGroups::new(GroupLimits::SERVICE),
            senders,
            tasks,
            failure,
        })
    }

    /// The failure that stopped the run, if any.
    pub fn failure(&self) -> Option<ClientError> {
        failed(&self.failure)
    }

    /// Takes one entity; `Err` once the run has stopped (the first failure).
    pub async fn push(&mut self, item: LoadItem) -> Result<(), ClientError> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        let (partition_key, row_key) = (item.partition_key.clone(), item.row_key.clone());
        let bytes = item.body.len();
        for (partition_key, items) in self.groups.push(&partition_key, &row_key, bytes, item) {
            self.send(&partition_key, items).await?;
        }
        Ok(())
    }

    /// Sends everything still pending, waits for every connection, and returns the first
    /// failure of the run, if any.
    pub async fn finish(mut self) -> Result<(), ClientError> {
        let sent = self.send_all().await;
        self.senders.clear();
        let mut joined = true;
        for task in std::mem::take(&mut self.tasks) {
            joined &= task.await.is_ok();
        }
        if let Some(e) = self.failure() {
            return Err(e);
        }
        sent?;
        if !joined {
            return Err(ClientError::Request("a loader connection stopped".into()));
        }
        Ok(())
    }

    /// Sends one partition's entities to its connection.
    async fn send(&mut self, partition_key: &str, items: Changeset) -> Result<(), ClientError> {
        if items.is_empty() {
            return Ok(());
        }
        let index = worker_for(partition_key, self.senders.len());
        let Some(sender) = self.senders.get(index) else {
            return Err(ClientError::Request("the load is finished".into()));
        };
        if sender.send(items).await.is_err() {
            return Err(self.failure().unwrap_or_else(|| {
                ClientError::Request("the loader's connections stopped".into())
            }));
        }
        Ok(())
    }

    async fn send_all(&mut self) -> Result<(), ClientError> {
        for (pk, items) in self.groups.drain() {
            self.send(&pk, items).await?;
        }
        Ok(())
    }
}

fn failed(failure: &Failure) -> Option<ClientError> {
    failure.lock().ok().and_then(|f| f.clone())
}

/// Sends one changeset: when the service rejects one of its entities, reports it and sends
/// the rest again.
async fn send_changeset(
    table: &TableClient,
    mode: LoadMode,
    mut items: Changeset,
    report: &dyn LoadReport,
) -> Result<(), ClientError> {
    let kind = match mode {
        LoadMode::Insert => BatchKind::Insert,
        LoadMode::Upsert => BatchKind::Upsert(UpdateMode::Replace),
    };
    while !items.is_empty() {
        let operations: Vec<BatchOperation<'_>> = items
            .iter()
            .map(|i| BatchOperation::json(kind.clone(), &i.partition_key, &i.row_key, &i.body))
            .collect();
        let result = table.submit_batch(&operations).await;
        drop(operations);
        match result {
            Ok(_) => {
                report.loaded(items.len() as u64);
                return Ok(());
            }
            Err(e) => match rejection(&e, items.len()) {
                Some((index, code, message)) => {
                    let item = items.remove(index);
                    report.rejected(item.tag, code, message);
                }
                None => return Err(e),
            },
        }
    }
    Ok(())
}

/// The failed operation of a changeset of `count`, when the error is about that entity
/// alone; `None` when it stops the run.
fn rejection(error: &ClientError, count: usize) -> Option<(usize, ErrorCode, String)> {
    let service = error.service()?;
    let index = service.index.filter(|i| *i < count)?;
    let code = service.error_code()?;
    let about_the_entity = (400..500).contains(&service.status) && !stops_the_run(code);
    about_the_entity.then(|| (index, code, service.message.clone()))
}

/// Error codes that would fail every request alike.
fn stops_the_run(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::TableNotFound
            | ErrorCode::AuthenticationFailed
            | ErrorCode::InvalidUri
            | ErrorCode::MethodNotAllowed
            | ErrorCode::InvalidHeaderValue
            | ErrorCode::InvalidContentType
            | ErrorCode::UnsupportedMediaType
            | ErrorCode::ResourceNotFound
            | ErrorCode::InvalidBatchRequest
            | ErrorCode::CommandsInBatchActOnDifferentPartitions
            | ErrorCode::RequestBodyTooLarge
    ) || code.http_status() >= 500
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ServiceError;

    fn refused(status: u16, code: &str, index: Option<usize>) -> ClientError {
        ClientError::Service(ServiceError {
            status,
            code: code.into(),
            message: "m".into(),
            index,
            request_id: None,
        })
    }

    #[test]
    fn only_errors_about_one_entity_reject_it() {
        assert_eq!(
            rejection(&refused(409, "EntityAlreadyExists", Some(1)), 2),
            Some((1, ErrorCode::EntityAlreadyExists, "m".into()))
        );
        // An index outside the changeset, no index, or a code about the whole run.
        assert_eq!(
            rejection(&refused(409, "EntityAlreadyExists", Some(2)), 2),
            None
        );
        assert_eq!(
            rejection(&refused(409, "EntityAlreadyExists", None), 2),
            None
        );
        assert_eq!(rejection(&refused(404, "TableNotFound", Some(0)), 2), None);
        assert_eq!(rejection(&refused(500, "InternalError", Some(0)), 2), None);
        assert_eq!(rejection(&ClientError::Protocol("x".into()), 2), None);
    }
}
