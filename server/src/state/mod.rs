//! Layer 1, shared state: what the whole server shares, built before any request and read
//! by every layer above. Imports nothing of the crate outside this directory.
//!
//! * [`config`] — the configuration and its limits; [`tls`] — certificates and keys on
//!   disk; [`token`] — bearer tokens: trusted keys, the local issuer, role assignments;
//! * [`accounts`] — the hosted accounts ([`accounts::Hosted`]): each one's key
//!   ([`key_memo`]), store, configuration and cached CORS rules ([`accounts::AppState`]);
//! * [`shared`] — what all requests of one server share (metrics, body budget, timeouts);
//!   [`metrics`] — the counters; [`budget`] — the request-body budget;
//! * [`faults`] — the decisions of the throttling emulation and of injected faults;
//! * [`scope`] — one request's scope, which the pipeline fills (operation, rows, held
//!   budget) and the connection's wrapper reads back.

pub(crate) mod accounts;
pub(crate) mod budget;
pub mod config;
pub mod faults;
pub(crate) mod key_memo;
pub(crate) mod metrics;
pub(crate) mod scope;
pub(crate) mod shared;
pub mod tls;
pub mod token;
