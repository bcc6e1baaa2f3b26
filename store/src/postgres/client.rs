//! A blocking PostgreSQL client whose every round trip has a deadline: `tokio-postgres`
//! driven by a small single-threaded runtime of its own (as the `postgres` crate does),
//! with each call bounded by the statement timeout.
//!
//! Why not the `postgres` crate's client: it has no timeout for a statement, and a server
//! that stops answering without closing the connection (frozen by `SIGSTOP`, a stalled
//! disk, a half-open network path — the kernel still acknowledges the bytes) holds the
//! caller forever. Here a call that runs out of time fails with
//! [`PostgresError::Timeout`] and leaves the connection marked unusable, so the pool drops
//! it instead of handing it out again.
//!
//! A connection also remembers whether it was **closed by the server** (a restart, an
//! administrator's `pg_terminate_backend`, a FATAL error, a network error): the engine
//! then retries a read once, on a fresh connection, and the pool drops the idle ones, which
//! a restart has closed too.

use std::future::Future;
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{IsolationLevel, NoTls, Row, Statement, ToStatement};

use super::error::{PostgresError, is_connection_failure};

/// How a connection stands after its last call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Health {
    /// Usable.
    Ok,
    /// A call ran out of time: the server may still be working on it (or frozen).
    TimedOut,
    /// The server closed the connection, or the network failed.
    Closed,
}

/// Runs `fut` on `rt` within `timeout`, noting in `health` what a failure says about the
/// connection.
fn run<T>(
    rt: &Runtime,
    timeout: Duration,
    health: &mut Health,
    fut: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, PostgresError> {
    if *health != Health::Ok {
        return Err(PostgresError::Unusable);
    }
    // The timer is made inside the runtime (it needs the runtime's time driver).
    match rt.block_on(async { tokio::time::timeout(timeout, fut).await }) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            if is_connection_failure(&e) {
                *health = Health::Closed;
            }
            Err(PostgresError::Database(e))
        }
        Err(_) => {
            *health = Health::TimedOut;
            Err(PostgresError::Timeout { after: timeout })
        }
    }
}

/// One connection (see the module docs).
pub(crate) struct Client {
    rt: Runtime,
    inner: tokio_postgres::Client,
    driver: JoinHandle<()>,
    timeout: Duration,
    health: Health,
}

impl Client {
    /// Connects (within `connect_timeout`, handshake included); every later call is
    /// bounded by `timeout`.
    pub(crate) fn connect(
        config: &tokio_postgres::Config,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<Client, ConnectFailure> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ConnectFailure::Runtime)?;
        let connecting =
            async { tokio::time::timeout(connect_timeout, config.connect(NoTls)).await };
        let (inner, connection) = match rt.block_on(connecting) {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(ConnectFailure::Refused(e)),
            Err(_) => return Err(ConnectFailure::TimedOut(connect_timeout)),
        };
        let driver = rt.spawn(async move {
            let _ = connection.await;
        });
        Ok(Client {
            rt,
            inner,
            driver,
            timeout,
            health: Health::Ok,
        })
    }

    /// How the connection stands.
    pub(crate) fn health(&self) -> Health {
        if self.health == Health::Ok && self.inner.is_closed() {
            Health::Closed
        } else {
            self.health
        }
    }

    /// Prepares a statement.
    pub(crate) fn prepare(&mut self, sql: &str) -> Result<Statement, PostgresError> {
        run(
            &self.rt,
            self.timeout,
            &mut self.health,
            self.inner.prepare(sql),
        )
    }

    /// Runs statements with the simple query protocol.
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), PostgresError> {
        run(
            &self.rt,
            self.timeout,
            &mut self.health,
            self.inner.batch_execute(sql),
        )
    }

    /// Every row of a statement.
    pub(crate) fn query<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, PostgresError> {
        run(
            &self.rt,
            self.timeout,
            &mut self.health,
            self.inner.query(statement, params),
        )
    }

    /// The one row of a statement.
    pub(crate) fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, PostgresError> {
        run(
            &self.rt,
            self.timeout,
            &mut self.health,
            self.inner.query_one(statement, params),
        )
    }

    /// The row of a statement, if any.
    pub(crate) fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, PostgresError> {
        run(
            &self.rt,
            self.timeout,
            &mut self.health,
            self.inner.query_opt(statement, params),
        )
    }

    /// The number of rows a statement changed.
    pub(crate) fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, PostgresError> {
        run(
            &self.rt,
            self.timeout,
            &mut self.health,
            self.inner.execute(statement, params),
        )
    }

    /// A transaction (default isolation: READ COMMITTED).
    pub(crate) fn transaction(&mut self) -> Result<Transaction<'_>, PostgresError> {
        let Client {
            rt,
            inner,
            timeout,
            health,
            ..
        } = self;
        let tx = run(rt, *timeout, health, inner.transaction())?;
        Ok(Transaction {
            rt,
            tx: Some(tx),
            timeout: *timeout,
            health,
        })
    }

    /// A `REPEATABLE READ READ ONLY` transaction: one snapshot for every statement.
    pub(crate) fn snapshot(&mut self) -> Result<Transaction<'_>, PostgresError> {
        let Client {
            rt,
            inner,
            timeout,
            health,
            ..
        } = self;
        let start = inner
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start();
        let tx = run(rt, *timeout, health, start)?;
        Ok(Transaction {
            rt,
            tx: Some(tx),
            timeout: *timeout,
            health,
        })
    }

    /// Whether the server answers within `timeout`, and whether it takes writes (`false`
    /// on a standby in recovery).
    pub(crate) fn check(&mut self, timeout: Duration) -> Result<bool, PostgresError> {
        let row = run(
            &self.rt,
            timeout,
            &mut self.health,
            self.inner.query_one("SELECT pg_is_in_recovery()", &[]),
        )?;
        Ok(!row.try_get::<_, bool>(0)?)
    }

    /// Closes the connection politely when it is healthy (the server is told, within a
    /// short wait); otherwise just drops it.
    pub(crate) fn close(self) {
        let Client {
            rt,
            inner,
            driver,
            health,
            ..
        } = self;
        drop(inner);
        if health == Health::Ok {
            let _ = rt
                .block_on(async { tokio::time::timeout(Duration::from_millis(500), driver).await });
        }
    }
}

/// Why connecting failed.
#[derive(Debug)]
pub(crate) enum ConnectFailure {
    /// The server refused or could not be reached.
    Refused(tokio_postgres::Error),
    /// No answer within the connect timeout.
    TimedOut(Duration),
    /// The client's runtime could not be started.
    Runtime(std::io::Error),
}

/// A transaction on a [`Client`]; rolled back when dropped without
/// [`commit`](Transaction::commit).
pub(crate) struct Transaction<'a> {
    rt: &'a Runtime,
    tx: Option<tokio_postgres::Transaction<'a>>,
    timeout: Duration,
    health: &'a mut Health,
}

impl Transaction<'_> {
    /// Every row of a statement.
    pub(crate) fn query<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, PostgresError> {
        let tx = self.tx.as_ref().ok_or(PostgresError::Unusable)?;
        run(
            self.rt,
            self.timeout,
            self.health,
            tx.query(statement, params),
        )
    }

    /// The one row of a statement.
    pub(crate) fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, PostgresError> {
        let tx = self.tx.as_ref().ok_or(PostgresError::Unusable)?;
        run(
            self.rt,
            self.timeout,
            self.health,
            tx.query_one(statement, params),
        )
    }

    /// The row of a statement, if any.
    pub(crate) fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, PostgresError> {
        let tx = self.tx.as_ref().ok_or(PostgresError::Unusable)?;
        run(
            self.rt,
            self.timeout,
            self.health,
            tx.query_opt(statement, params),
        )
    }

    /// A statement with parameters of the given types, unprepared.
    pub(crate) fn query_typed(
        &mut self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>, PostgresError> {
        let tx = self.tx.as_ref().ok_or(PostgresError::Unusable)?;
        run(
            self.rt,
            self.timeout,
            self.health,
            tx.query_typed(sql, params),
        )
    }

    /// The number of rows a statement changed.
    pub(crate) fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, PostgresError> {
        let tx = self.tx.as_ref().ok_or(PostgresError::Unusable)?;
        run(
            self.rt,
            self.timeout,
            self.health,
            tx.execute(statement, params),
        )
    }

    /// Runs statements with the simple query protocol.
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), PostgresError> {
        let tx = self.tx.as_ref().ok_or(PostgresError::Unusable)?;
        run(self.rt, self.timeout, self.health, tx.batch_execute(sql))
    }

    /// Commits.
    pub(crate) fn commit(mut self) -> Result<(), PostgresError> {
        let tx = self.tx.take().ok_or(PostgresError::Unusable)?;
        run(self.rt, self.timeout, self.health, tx.commit())
    }
}

/// A transaction dropped without [`commit`](Transaction::commit) (a failed `If-Match`, a
/// retry, an error) is rolled back here and now. tokio-postgres only *queues* the
/// `ROLLBACK` when its transaction is dropped, and this client's connection is driven only
/// while a call runs (`run`): left queued, the session would stay idle in its transaction
/// — holding the row locks of its `SELECT … FOR UPDATE` — until the connection's next use,
/// and every write of those rows would wait for that, up to the statement timeout.
impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            // A failure marks the connection unusable (`health`): the pool then drops it
            // rather than hand out a session still in a transaction.
            let _ = run(self.rt, self.timeout, self.health, tx.rollback());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_connection_error_is_a_connection_failure() {
        // A refused connection gives an I/O error: the kind the pool must not reuse.
        let config: tokio_postgres::Config = "postgres://u@127.0.0.1:1/db".parse().unwrap();
        match Client::connect(&config, Duration::from_secs(2), Duration::from_secs(2)) {
            Err(ConnectFailure::Refused(e)) => assert!(is_connection_failure(&e), "{e}"),
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("port 1 accepted a PostgreSQL connection"),
        }
    }
}
