//! The PostgreSQL engine's errors ([`PostgresError`]): what failed (the URL, the
//! connection, the schema, the pool, a statement, stored data), whether it means the
//! connection is gone, and how each maps to the store's [`crate::StoreError`] (timeouts
//! 500 `OperationTimedOut`, an unreachable server 503 `ServerBusy`, the rest 500).

use std::time::Duration;
use tokio_postgres::error::SqlState;

/// Why the PostgreSQL engine could not be opened or failed (converted to
/// [`crate::StoreError::Storage`] on the [`crate::Backend`] interface).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The URL or a tableq parameter in it is malformed.
    #[error("invalid PostgreSQL URL: {0}")]
    InvalidUrl(String),
    /// The server could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL at {target}: {source}")]
    Connect {
        /// `user@host:port/database` (never the password).
        target: String,
        /// The client's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The server cannot hold tableq's data (version, encoding).
    #[error("PostgreSQL at {target} cannot be used: {message}")]
    Unsupported {
        /// `user@host:port/database`.
        target: String,
        /// What is wrong.
        message: String,
    },
    /// The schema exists but is not the one this version of tableq writes.
    #[error("schema {schema:?}: {message}")]
    Schema {
        /// The schema name.
        schema: String,
        /// What does not match.
        message: String,
    },
    /// No connection became free in time.
    #[error("no free PostgreSQL connection after {waited:?} (pool size {size})")]
    PoolTimeout {
        /// How long the caller waited.
        waited: Duration,
        /// The pool size.
        size: usize,
    },
    /// The server did not complete the connection in time.
    #[error("PostgreSQL at {target} did not accept a connection within {after:?}")]
    ConnectTimeout {
        /// `user@host:port/database`.
        target: String,
        /// The connect timeout.
        after: Duration,
    },
    /// A statement did not finish in time; the connection is dropped.
    #[error("PostgreSQL did not answer within {after:?} (statement_timeout)")]
    Timeout {
        /// The statement timeout (plus the margin given to the server to cancel it itself).
        after: Duration,
    },
    /// The connection failed earlier (timed out or closed) and cannot be used again.
    #[error("the PostgreSQL connection is no longer usable")]
    Unusable,
    /// A statement failed.
    #[error("PostgreSQL: {}", db_message(.0))]
    Database(#[from] tokio_postgres::Error),
    /// Stored data could not be decoded.
    #[error(transparent)]
    Decode(#[from] super::encode::DecodeError),
}

/// The server's message (with its SQLSTATE) when there is one, else the client's.
fn db_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        ),
        None => e.to_string(),
    }
}

impl PostgresError {
    /// Whether the error says the connection is gone (the server closed it, the network
    /// failed): a read is retried once on a fresh connection.
    pub fn is_connection_failure(&self) -> bool {
        match self {
            PostgresError::Database(e) => is_connection_failure(e),
            _ => false,
        }
    }
}

/// Timeouts become [`crate::StoreError::Timeout`] (500 `OperationTimedOut`); an unreachable
/// server, an exhausted pool or a lost connection [`crate::StoreError::Unavailable`] (503
/// `ServerBusy`); anything else [`crate::StoreError::Storage`] (500).
impl From<PostgresError> for crate::StoreError {
    fn from(e: PostgresError) -> crate::StoreError {
        use crate::StoreError;
        match &e {
            PostgresError::Timeout { .. } => StoreError::Timeout(Box::new(e)),
            PostgresError::Database(db) if db.code() == Some(&SqlState::QUERY_CANCELED) => {
                StoreError::Timeout(Box::new(e))
            }
            PostgresError::PoolTimeout { .. }
            | PostgresError::Connect { .. }
            | PostgresError::ConnectTimeout { .. }
            | PostgresError::Unusable => StoreError::Unavailable(Box::new(e)),
            _ if e.is_connection_failure() => StoreError::Unavailable(Box::new(e)),
            _ => StoreError::storage(e),
        }
    }
}

/// Whether `e` means the connection is gone: the server closed it (a restart, an
/// administrator's `pg_terminate_backend`, a FATAL error) or the network failed
/// (`client.rs` retries a read once on a fresh connection then).
pub(crate) fn is_connection_failure(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return matches!(db.severity(), "FATAL" | "PANIC")
            || code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03");
    }
    std::error::Error::source(e).is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
}
