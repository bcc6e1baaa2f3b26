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
//! assert!(config.explorer);
//! ```

use std::time::Duration;
use tableq_parser::FilterOptions;

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
    /// Whether the table explorer (a browser UI) is served under `/_explorer/` (default
    /// `true`; `tableq serve --no-explorer` turns it off). It talks to the same REST API,
    /// signed like every client, so it never reaches more than REST allows.
    pub explorer: bool,
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
            explorer: true,
        }
    }
}
