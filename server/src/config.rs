//! [`ServerConfig`]: what a server serves (its account) and its limits.
//!
//! ```
//! use tableq_server::{ServerConfig, DEV_ACCOUNT};
//! let config = ServerConfig::default();
//! assert_eq!(config.account.name, DEV_ACCOUNT);
//! assert_eq!(config.max_body_bytes, 4 * 1024 * 1024);
//! ```

use std::time::Duration;
use tableq_parser::FilterOptions;

/// The development storage account's name.
pub const DEV_ACCOUNT: &str = "devstoreaccount1";
/// The development storage account's well-known key (public; see the data-model spec).
pub const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The development storage table port.
pub const DEFAULT_PORT: u16 = 10002;

/// A storage account: the first path segment of every URL, and (for the authorization that
/// comes with the next protocol issue) its key.
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

/// How a server behaves (every field has the service's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The account served (one account per store).
    pub account: Account,
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
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            account: Account::default(),
            max_body_bytes: 4 * 1024 * 1024,
            page_budget: Duration::from_secs(5),
            filter_options: FilterOptions::default(),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}
