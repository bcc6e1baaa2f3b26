//! # tableq-server — the Table service REST protocol over HTTP
//!
//! The emulator behind `tableq serve`: the Azure Table service's REST protocol (JSON for
//! the OData operations, XML for service properties, stats and table ACLs) on tokio + axum, so that the official SDKs work unchanged with
//! `UseDevelopmentStorage=true`. It serves any [`tableq_store::Backend`] and never names a
//! storage engine.
//!
//! * [`Server`] — bind an address (port 0 = any free port), serve until a shutdown future
//!   completes, then finish in-flight requests and close the store;
//! * [`ServerConfig`] / [`Account`] / [`AuthMode`] — the first account served, whether
//!   requests must be signed, and the limits (body size, page work budget, filter limits);
//!   [`Server::add_account`] hosts further accounts, each with its own store;
//! * [`auth`] — SharedKey / SharedKeyLite, SAS and bearer-token checks (the strings to sign
//!   and SAS fields are `tableq_client::sign`'s, which clients sign with);
//! * [`tls`] — HTTPS: certificates from PEM files or a self-signed CA kept on disk
//!   ([`Server::enable_https`]); [`token`] — Entra ID bearer tokens: the local issuer, trusted
//!   keys, role assignments ([`Server::enable_tokens`]);
//! * the pipeline every request takes (module `app`, see "Layers" below): path → account
//!   authorization → protocol headers → query string → metadata level → method dispatch →
//!   handler; `$batch` (module `ops::batch`) runs each operation of a changeset through the same steps
//!   and applies the changeset in one atomic store write;
//! * [`resource`] — request paths (`Tables('t')`, `t()`, `t(PartitionKey='p',RowKey='r')`)
//!   and response links, and the administration targets of the query string ([`xml`]: their
//!   XML; CORS rules enforced from the stored service properties); [`query_options`] — the query
//!   string; [`negotiate`] — `$format`/`Accept`,
//!   `Content-Type`, `Prefer`, versions, `X-HTTP-Method`; [`continuation`] — paging tokens;
//!   [`ApiError`] — error responses with the service's codes and sentences.
//!
//! ## Layers
//!
//! The crate is a stack of layers. **A module imports only modules of lower layers, of its
//! own layer, and its own children** — never one above it (`tests/server_layers.rs` checks
//! every import against this table, and `tests/dependency_policy.rs` that no imports run
//! in a circle). A value a lower layer needs from a higher one is passed down to it (the
//! request's SAS grant to `$batch`), or lives in the lower layer and is filled from above
//! (the request's scope: the router's handlers note their operation and rows there, the
//! connection's wrapper reads them back). This file is the face: module declarations and
//! re-exports only.
//!
//! Bottom-up:
//!
//! | # | layer | home | modules | what it owns |
//! |---|---|---|---|---|
//! | 1 | **state** | `state/` | `config`, `tls`, `token/`, `key_memo`, `accounts`, `metrics`, `budget`, `faults/`, `shared`, `scope` | shared state: configuration, certificates and keys, the hosted accounts (`Hosted`, `AppState`), the counters, the body budget, the throttle's buckets and the fault rules, one request's scope |
//! | 2 | **protocol** | `protocol/` | `formats`, `error`, `negotiate`, `resource`, `query_options`, `continuation`, `xml`, `encode`, `body`, `context` | the Table protocol's pieces: paths, query options, errors, negotiation, bodies, encoding, XML, paging tokens, the per-request context |
//! | 3 | **auth** | `auth/` | `auth`, `sas`, `bearer` | authorization: SharedKey, SAS and bearer-token checks; what a grant admits |
//! | 4 | **ops** | `ops/` | `tables`, `entities`, `query`, `batch/`, `admin`, `cors`, `explorer/` | the operations: one handler per REST operation, `$batch`, CORS, the explorer and explain |
//! | 5 | **routing** | `app.rs` | `app` | the pipeline every request takes: path → account authorization → protocol headers → query string → metadata level → method dispatch → handler |
//! | 6 | **serve** | `serve/` | `server`, `connection/`, `https`, `observe/` | around the pipeline (which each connection calls directly): binding and shutdown, connections (timeouts, cap, HTTPS), the operator endpoints, metrics and the request log |
//!
//! Store calls and query work run on tokio's blocking pool (the executor itself fans out on
//! rayon), never on the async workers — except short reads on an engine whose point reads
//! are local ([`tableq_store::Backend::point_reads_are_local`]: memory, redb): a point get,
//! or a query of at most 16 exact keys with a filter of at most 2 KiB, runs inline, which
//! spares the two thread wake-ups of the pool hop (≈ 35 µs of a ≈ 210 µs point get on the
//! reference machine). Writes always take the pool: they wait for a group commit.
//!
//! ```
//! use std::sync::Arc;
//! use tableq_server::{Server, ServerConfig};
//! use tableq_store::MemoryBackend;
//!
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! runtime.block_on(async {
//!     let server = Server::bind("127.0.0.1:0".parse().unwrap(),
//!                               Arc::new(MemoryBackend::new()), ServerConfig::default())
//!         .await
//!         .unwrap();
//!     assert!(server.connection_string().starts_with(
//!         "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="));
//!     // Serve until the future completes (here: at once), then close the store.
//!     server.run_until(async {}).await.unwrap();
//! });
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod app;
pub mod auth;
mod ops;
mod protocol;
mod serve;
mod state;

pub use protocol::query_options;
pub use protocol::{continuation, error, negotiate, resource, xml};
pub use state::{config, faults, tls, token};

pub use config::{
    Account, AuthMode, ConnectionLimits, DEFAULT_PORT, DEV_ACCOUNT, DEV_ACCOUNT_KEY, LogFormat,
    ServerConfig,
};
pub use error::ApiError;
pub use serve::server::{Reserved, Server, ServerError, router, shutdown_signal};
