//! Layer 6, serving: what wraps the request pipeline (`crate::app`) — it may import every layer
//! below, and nothing imports it but the crate's face.
//!
//! * [`server`] — [`Server`](server::Server): bind, host accounts, HTTPS and tokens, run
//!   until shutdown, close the stores; the in-process [`router`](server::router);
//! * [`connection`] — the accept loop and each connection's hyper service (timeouts, the
//!   connection cap, lingering close); [`https`] — the TLS acceptor;
//! * [`observe`] — around each request: the operator endpoints (`/health`, `/metrics`),
//!   the explorer's files, the request's scope, the metrics and the log line.

pub(crate) mod connection;
pub(crate) mod https;
pub(crate) mod observe;
pub(crate) mod server;
