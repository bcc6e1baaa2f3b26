//! # tableq-store — the table catalog and the write path, behind one interface
//!
//! The layer between the query core (`tableq-model` … `tableq-exec`) and the emulator's
//! HTTP server: tables, entity writes with the Table service's semantics, and reads that
//! hand the executor a consistent snapshot. Nothing here knows HTTP.
//!
//! * [`Backend`] — the interface (catalog, get, query page, atomic write, close) that every
//!   engine implements and every caller uses through `Arc<dyn Backend>`;
//! * [`WriteOp`] / [`IfMatch`] / [`Written`] — the six entity writes of the service and
//!   their `If-Match` conditions;
//! * [`resolve()`] — the service's write semantics (existence, conditions, replace vs
//!   merge, validation, one strictly increasing Timestamp per write), once for every
//!   engine;
//! * [`Clock`] — Timestamps that strictly increase per entity;
//! * [`MemoryBackend`] — the in-memory engine, its tables [`MemoryTable`]s (writers
//!   serialised, atomic batches) and their versions, [`MemorySnapshot`]s (a compact layout
//!   with a persistent write overlay; also what `tableq eval` loads files into);
//! * [`PostgresBackend`] — the PostgreSQL engine (one server or a partitioned cluster);
//! * [`DurableBackend`] — the durable engine (redb behind a write-ahead log, group commit,
//!   [`FsyncPolicy`]; [`durable`]);
//! * [`ServiceProperties`] ([`service`]) and [`SignedIdentifier`] ([`acl`]) — an account's
//!   service properties (CORS rules among them) and a table's stored access policies, as
//!   typed values every engine stores;
//! * [`StoreError`] / [`BatchError`] — failures with the service's error codes;
//! * the row codec (`codec`, crate-private) — how both engines that store rows in their
//!   own layout (memory partitions, durable blocks) encode property values.
//! * [`metrics::StoreMetrics`] — what an engine reports about itself for monitoring.
//!
//! The data flows one way: a backend reads through `tableq-exec`'s `EntitySource` and
//! `Executor`; `tableq-server` calls a backend and never names an engine.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod acl;
pub mod backend;
pub mod clock;
mod codec;
pub mod durable;
pub mod error;
pub mod memory;
pub mod metrics;
pub mod op;
pub mod postgres;
pub mod resolve;
pub mod service;
mod tree;

pub use self::postgres::{PostgresBackend, PostgresConfig, PostgresError};
pub use acl::{AccessPolicy, SignedIdentifier};
pub use backend::{
    Backend, NonBlockingGet, PendingWrite, QueryPage, ScanExplain, TableInfo, WriteLogStats,
};
pub use clock::Clock;
pub use durable::{
    CheckReport, DurableBackend, DurableOptions, DurableSnapshot, FsyncPolicy, LogFinding,
    OpenError, check_data_dir,
};
pub use error::{BatchError, Damage, StoreError};
pub use memory::{
    MemoryBackend, MemoryError, MemoryRow, MemoryRows, MemorySnapshot, MemoryTable, MemoryWriter,
    OverlayLimits,
};
pub use op::{IfMatch, WriteOp, Written};
pub use resolve::{Change, CheckedOps, Resolved, StateReader, check_ops, resolve, resolve_checked};
pub use service::{CorsMethod, CorsRule, ServiceProperties};
