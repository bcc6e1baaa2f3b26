//! [`ServerConfig`]: what a server serves (its first account), whether requests must be
//! signed ([`AuthMode`]), and its limits. Further accounts, each with its own store, are
//! added with [`Server::add_account`](crate::Server::add_account).
//!
//! ```
//! use tableq_server::{AuthMode, ServerConfig, DEV_ACCOUNT};
//! let config = ServerConfig::default();
//! assert_eq!(config.account.name, DEV_ACCOUNT);
//! assert_eq!(config.auth, AuthMode::Required);
//! assert_eq!(config.max_body_bytes, 4 * 1024 * 1024);
//! assert_eq!(config.connections.header_timeout.as_secs(), 10);
//! assert!(config.explorer);
//! ```

use std::time::Duration;
use tableq_parser::FilterOptions;

pub use crate::state::faults::Limits;

pub use tableq_client::{DEFAULT_PORT, DEV_ACCOUNT, DEV_ACCOUNT_KEY};

/// A storage account: the first path segment of every URL, and the key its requests are
/// signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The account name, e.g. `devstoreaccount1`.
    pub name: String,
    /// The base64 account key.
    pub key: String,
}

impl Default for Account {
    /// The development account.
    fn default() -> Account {
        Account {
            name: DEV_ACCOUNT.into(),
            key: DEV_ACCOUNT_KEY.into(),
        }
    }
}

/// Whether requests must be signed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthMode {
    /// Every request must carry a valid SharedKey / SharedKeyLite signature or SAS token of
    /// its account, else 403 `AuthenticationFailed` (the service's behaviour; the default).
    #[default]
    Required,
    /// Nothing is checked but the account name (`tableq serve --no-auth`, for experiments).
    Off,
}

/// How a server behaves (every field has the service's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The first account served, with the store given to
    /// [`Server::bind`](crate::Server::bind) (default: the development account).
    pub account: Account,
    /// Whether requests must be signed (default [`AuthMode::Required`]).
    pub auth: AuthMode,
    /// The largest request body accepted (default 4 MiB, the service's); larger → 413
    /// `RequestBodyTooLarge` without reading the rest.
    pub max_body_bytes: usize,
    /// The work budget of one query page (default 5 s): when it runs out, the page ends
    /// early with a continuation.
    pub page_budget: Duration,
    /// Limits of `$filter` (default: the service's, 15 comparisons).
    pub filter_options: FilterOptions,
    /// How long a graceful shutdown waits for in-flight requests (default 30 s).
    pub shutdown_grace: Duration,
    /// Connection handling: the timeouts that close slow or idle connections, and the cap
    /// on open connections.
    pub connections: ConnectionLimits,
    /// The most request-body bytes held in memory at once, over all requests of the server
    /// (default 128 MiB): a request whose body does not fit waits up to
    /// [`body_budget_wait`](ServerConfig::body_budget_wait), then gets 503 `ServerBusy`.
    pub body_budget_bytes: usize,
    /// How long a request waits for room in the body budget (default 2 s).
    pub body_budget_wait: Duration,
    /// The shape of the request log (default [`LogFormat::Text`]).
    pub log_format: LogFormat,
    /// Whether the table explorer (a browser UI) is served under `/_explorer/` (default
    /// `true`; `tableq serve --no-explorer` turns it off). It talks to the same REST API,
    /// signed like every client, so it never reaches more than REST allows.
    pub explorer: bool,
    /// The Table service's scalability targets, emulated (default `None`: no throttling;
    /// `tableq serve --throttle`): a request beyond the entities per second of its
    /// partition or account gets 503 `ServerBusy`, and one that runs past its `timeout`
    /// query parameter 500 `OperationTimedOut`.
    pub throttle: Option<Limits>,
    /// Fault rules armed at start, as JSON (default `None`; `tableq serve --faults FILE`;
    /// see [`FaultRules::from_json`](crate::faults::FaultRules::from_json) for the format).
    /// They can be replaced at run time through `…/?restype=tableq&comp=faults`.
    pub faults: Option<String>,
    /// The seed of the faults' random draws when the rules name none (default `None`: one
    /// drawn at start).
    pub fault_seed: Option<u64>,
    /// Threads that accept and serve connections (default 1: the runtime
    /// [`Server::run_until`](crate::Server::run_until) runs on). Each thread beyond the
    /// first runs its own single-threaded tokio runtime with accept loops on the same
    /// listening sockets: a connection is served on the thread that accepted it, with no
    /// work-stealing and no wake-ups between threads (`tableq serve --workers N`; its
    /// default is one per core).
    pub threads: usize,
}

/// How each request is logged (one `info` event of target `tableq_server::request`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// A readable line: `GET /acct/t() 200 1.2ms request_id=… operation=QueryEntities …`.
    #[default]
    Text,
    /// Every item as its own event field (`method`, `path`, `status`, `error_code`,
    /// `operation`, `account`, `table`, `duration_ms`, `rows_examined`, `rows_returned`,
    /// `request_id`), for a subscriber that writes JSON (`tableq serve --log-format json`).
    Json,
}

/// How connections are kept in check (every field has a default that suits a local
/// emulator under normal and hostile clients alike).
///
/// ```
/// use tableq_server::config::ConnectionLimits;
/// let limits = ConnectionLimits::default();
/// assert_eq!(limits.idle_timeout.as_secs(), 120);
/// assert_eq!(limits.request_timeout.as_secs(), 30);
/// assert_eq!(limits.max_connections, None); // derived from the open-file limit
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// The longest a request's header may take to arrive, from its first byte (default
    /// 10 s); then the connection is closed.
    pub header_timeout: Duration,
    /// The longest a request body may go without a byte arriving, and a response without
    /// the client taking a byte of it (default 30 s); then the request fails (408) or the
    /// connection is closed.
    pub body_timeout: Duration,
    /// The longest a whole request — its header and its body — may take to arrive, from
    /// the header's first byte (default 30 s, the Table service's own server timeout);
    /// then a request whose body is incomplete fails (408 `RequestTimeout`) and its
    /// connection is closed (a header is also bounded by `header_timeout`). A client that
    /// sends a byte just often enough to pass `body_timeout` cannot hold its connection
    /// longer than this.
    pub request_timeout: Duration,
    /// The longest a keep-alive connection may stay idle between requests (default 2 min).
    pub idle_timeout: Duration,
    /// The most connections open at once; `None` (the default) derives it from the
    /// process's open-file limit (`ulimit -n`), keeping room for the store's files and
    /// database connections. At the cap, the connection that has waited longest for a
    /// request (idle, or sending a header, for at least a second) is closed to make room;
    /// otherwise new connections wait in the listen backlog until one closes, which every
    /// request does within `request_timeout` plus its handling. A new connection is never
    /// closed unanswered to make room for a newer one.
    pub max_connections: Option<usize>,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            max_connections: None,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            account: Account::default(),
            auth: AuthMode::Required,
            max_body_bytes: 4 * 1024 * 1024,
            page_budget: Duration::from_secs(5),
            filter_options: FilterOptions::default(),
            shutdown_grace: Duration::from_secs(30),
            connections: ConnectionLimits::default(),
            body_budget_bytes: 128 * 1024 * 1024,
            body_budget_wait: Duration::from_secs(2),
            log_format: LogFormat::Text,
            explorer: true,
            throttle: None,
            faults: None,
            fault_seed: None,
            threads: 1,
        }
    }
}
