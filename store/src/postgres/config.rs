//! Connection settings of the PostgreSQL engine ([`PostgresConfig`]).
//!
//! A configuration starts from a URL, `postgres://user[:password]@host[:port]/database`,
//! parsed by the client crate (every libpq-style parameter it knows, e.g.
//! `?connect_timeout=5&application_name=x`, is accepted), plus two parameters of tableq's
//! own that are taken out of the URL before it is handed on:
//!
//! * `schema=NAME` — the PostgreSQL schema holding tableq's tables (default `tableq`;
//!   lowercase letters, digits and `_`, at most 63 characters);
//! * `pool_size=N` — the most connections the engine opens (default 8);
//! * `statement_timeout=MS` — the longest one statement may take, in milliseconds (default
//!   20000): PostgreSQL cancels it after that (`SET statement_timeout`), and the engine gives
//!   up on the connection shortly after in case the server cannot (frozen, unreachable) —
//!   the operation fails with [`crate::StoreError::Timeout`] (500 `OperationTimedOut`);
//! * `pool_timeout=MS` — the longest an operation waits for a connection, opening one
//!   included, in milliseconds (default 10000): then [`crate::StoreError::Unavailable`] (503
//!   `ServerBusy`).
//!
//! So an operation fails within `pool_timeout` + `statement_timeout` + 1 s per statement
//! (31 s with the defaults) whatever the database does.
//!
//! ```
//! use tableq_store::postgres::PostgresConfig;
//! let config = PostgresConfig::from_url("postgres://app@db.example:5433/tables?schema=t1&pool_size=4").unwrap();
//! assert_eq!((config.schema_name(), config.pool_size()), ("t1", 4));
//! assert_eq!(config.target(), "app@db.example:5433/tables");
//! assert!(PostgresConfig::from_url("mysql://x").is_err());
//! ```

use std::time::Duration;

/// The engine's errors, also named here (their home is `error.rs`).
pub use super::error::PostgresError;

/// Where and how to connect (see the module docs).
#[derive(Clone)]
pub struct PostgresConfig {
    pub(crate) client: tokio_postgres::Config,
    target: String,
    pool_size: usize,
    schema: String,
    pub(crate) checkout_timeout: Duration,
    pub(crate) statement_timeout: Duration,
    pub(crate) pushdown: bool,
}

impl std::fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresConfig")
            .field("target", &self.target)
            .field("pool_size", &self.pool_size)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// The default schema name.
pub const DEFAULT_SCHEMA: &str = "tableq";
/// The default pool size.
pub const DEFAULT_POOL_SIZE: usize = 8;
/// The default statement timeout.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(20);
/// The default time an operation waits for a connection.
pub const DEFAULT_POOL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the engine waits past the statement timeout for PostgreSQL to cancel a
/// statement itself, before it gives up on the connection.
pub(crate) const CANCEL_MARGIN: Duration = Duration::from_secs(1);

impl PostgresConfig {
    /// Parses a `postgres://` (or `postgresql://`) URL with the optional `schema`,
    /// `pool_size`, `statement_timeout` and `pool_timeout` parameters (see the module docs).
    /// Without `connect_timeout`, connecting gives up after 10 s.
    pub fn from_url(url: &str) -> Result<PostgresConfig, PostgresError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(PostgresError::InvalidUrl(
                "expected postgres://user@host:port/database".into(),
            ));
        }
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut schema = DEFAULT_SCHEMA.to_owned();
        let mut pool_size = DEFAULT_POOL_SIZE;
        let mut statement_timeout = DEFAULT_STATEMENT_TIMEOUT;
        let mut pool_timeout = DEFAULT_POOL_TIMEOUT;
        let millis = |name: &str, v: &str| {
            v.parse::<u64>()
                .ok()
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis)
                .ok_or_else(|| {
                    PostgresError::InvalidUrl(format!(
                        "{name}={v}: want a number of milliseconds above 0"
                    ))
                })
        };
        let mut rest: Vec<&str> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("schema", v)) => schema = v.to_owned(),
                Some(("pool_size", v)) => {
                    pool_size = v.parse().map_err(|_| {
                        PostgresError::InvalidUrl(format!("pool_size={v} is not a number"))
                    })?
                }
                Some(("statement_timeout", v)) => {
                    statement_timeout = millis("statement_timeout", v)?
                }
                Some(("pool_timeout", v)) => pool_timeout = millis("pool_timeout", v)?,
                _ => rest.push(pair),
            }
        }
        let client_url = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut client: tokio_postgres::Config = client_url
            .parse()
            .map_err(|e: tokio_postgres::Error| PostgresError::InvalidUrl(e.to_string()))?;
        if client.get_connect_timeout().is_none() {
            client.connect_timeout(Duration::from_secs(10));
        }
        if client.get_user().is_none() {
            return Err(PostgresError::InvalidUrl(
                "the URL names no user (postgres://USER@host/database)".into(),
            ));
        }
        let target = describe(&client);
        PostgresConfig {
            client,
            target,
            pool_size: DEFAULT_POOL_SIZE,
            schema: DEFAULT_SCHEMA.into(),
            checkout_timeout: pool_timeout,
            statement_timeout,
            pushdown: true,
        }
        .with_pool_size(pool_size)?
        .with_schema(schema)
    }

    /// The settings for one shard behind this coordinator (`route.rs`): its own client
    /// settings, this configuration's pool size, timeouts and behaviour.
    pub(crate) fn for_shard(&self, mut client: tokio_postgres::Config) -> PostgresConfig {
        if let Some(t) = self.client.get_connect_timeout() {
            client.connect_timeout(*t);
        }
        PostgresConfig {
            target: describe(&client),
            client,
            ..self.clone()
        }
    }

    /// Sets the most connections the engine opens (at least 1).
    pub fn with_pool_size(mut self, size: usize) -> Result<PostgresConfig, PostgresError> {
        if size == 0 || size > 1000 {
            return Err(PostgresError::InvalidUrl(format!(
                "pool_size {size}: want 1…1000"
            )));
        }
        self.pool_size = size;
        Ok(self)
    }

    /// Sets the schema holding tableq's tables.
    pub fn with_schema(
        mut self,
        schema: impl Into<String>,
    ) -> Result<PostgresConfig, PostgresError> {
        let schema = schema.into();
        let ok = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !schema.as_bytes()[0].is_ascii_digit()
            && !schema.starts_with("pg_");
        if !ok {
            return Err(PostgresError::InvalidUrl(format!(
                "schema {schema:?}: want lowercase letters, digits and _, not starting with a \
                 digit or pg_, at most 63 characters"
            )));
        }
        self.schema = schema;
        Ok(self)
    }

    /// How long an operation waits for a connection, opening one included, before failing
    /// (default 10 s; URL parameter `pool_timeout`).
    pub fn with_checkout_timeout(mut self, timeout: Duration) -> PostgresConfig {
        self.checkout_timeout = timeout;
        self
    }

    /// The longest one statement may take (default 20 s; URL parameter
    /// `statement_timeout`).
    pub fn with_statement_timeout(mut self, timeout: Duration) -> PostgresConfig {
        self.statement_timeout = timeout;
        self
    }

    /// The statement timeout.
    pub fn statement_timeout(&self) -> Duration {
        self.statement_timeout
    }

    /// How long an operation waits for a connection.
    pub fn pool_timeout(&self) -> Duration {
        self.checkout_timeout
    }

    /// Turns residual pushdown off (`false`: every row of the key ranges is fetched and the
    /// executor evaluates the whole residual) or on (the default). For measuring what
    /// pushdown saves, and for tracking down a suspected pushdown bug.
    pub fn with_pushdown(mut self, enabled: bool) -> PostgresConfig {
        self.pushdown = enabled;
        self
    }

    /// The schema name.
    pub fn schema_name(&self) -> &str {
        &self.schema
    }

    /// How long opening a connection may take: the URL's `connect_timeout`, else 10 s.
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.client
            .get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(10))
    }

    /// How long one round trip may take on the client's side: the statement timeout (after
    /// which PostgreSQL cancels the statement) plus the margin for the cancel to arrive.
    pub(crate) fn call_timeout(&self) -> Duration {
        self.statement_timeout + CANCEL_MARGIN
    }

    /// The pool size.
    pub fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// `user@host:port/database` (for messages; never the password).
    pub fn target(&self) -> &str {
        &self.target
    }
}

fn describe(c: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match c.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{}@{host}:{port}/{}",
        c.get_user().unwrap_or("?"),
        c.get_dbname()
            .unwrap_or_else(|| c.get_user().unwrap_or("?"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let c = PostgresConfig::from_url("postgres://u:secret@h/db?connect_timeout=3&schema=abc_1")
            .unwrap();
        assert_eq!(c.schema_name(), "abc_1");
        assert_eq!(c.pool_size(), DEFAULT_POOL_SIZE);
        assert_eq!(c.target(), "u@h:5432/db");
        assert!(!format!("{c:?}").contains("secret"));
        assert_eq!(
            c.client.get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        assert_eq!(c.statement_timeout(), DEFAULT_STATEMENT_TIMEOUT);
        assert_eq!(c.pool_timeout(), DEFAULT_POOL_TIMEOUT);
        let c =
            PostgresConfig::from_url("postgres://u@h/db?statement_timeout=1500&pool_timeout=200")
                .unwrap();
        assert_eq!(c.statement_timeout(), Duration::from_millis(1500));
        assert_eq!(c.pool_timeout(), Duration::from_millis(200));
        for bad in [
            "http://h/db",
            "postgres://h/db",
            "postgres://u@h/db?pool_size=x",
            "postgres://u@h/db?pool_size=0",
            "postgres://u@h/db?schema=Upper",
            "postgres://u@h/db?schema=pg_x",
            "postgres://u@h/db?schema=1a",
            "postgres://u@h/db?nonsense=1",
            "postgres://u@h/db?statement_timeout=0",
            "postgres://u@h/db?pool_timeout=soon",
            "postgres://u@h:notaport/db",
        ] {
            assert!(
                matches!(
                    PostgresConfig::from_url(bad),
                    Err(PostgresError::InvalidUrl(_))
                ),
                "{bad}"
            );
        }
    }
}
