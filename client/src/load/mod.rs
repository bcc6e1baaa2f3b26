//! Bulk loading: many entities into one table, grouped by PartitionKey into changesets.
//!
//! * [`group`] — the batching rules ([`PartitionGroups`], [`worker_for`]): which entities
//!   travel together and which writer takes them. They live here, in the client, because
//!   this is the lowest crate both loaders can reach: the client depends on `tableq-model`
//!   alone, and `tableq import --data` (in the `tableq` binary, which depends on the client
//!   and on the store) batches `tableq_store` writes with the same rules as the HTTP loader
//!   below batches `$batch` requests. The store cannot host them (the client may not depend
//!   on it), and the model is the data model, not a loader.
//! * [`bulk`] — [`BulkLoader`]: the changesets sent as `$batch` requests over concurrent
//!   connections, with per-entity rejections (`tableq import --endpoint`, `tableq
//!   bench-http`).

pub mod bulk;
pub mod group;

pub use bulk::{BulkLoader, LoadItem, LoadMode, LoadReport};
pub use group::{GroupLimits, MAX_CHANGESET_BYTES, MAX_PENDING, PartitionGroups, worker_for};
