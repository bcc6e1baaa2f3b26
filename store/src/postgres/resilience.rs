//! How the engine copes with a database that misbehaves, and what it tells the operator:
//!
//! * [`PostgresBackend::read`] — a read that met a connection the server had closed (a
//!   restart) runs once more on a fresh connection, after the idle ones are dropped;
//! * [`PostgresBackend::write_with_retry`] — a write whose connection was closed before its
//!   `COMMIT` was sent cannot have been applied, and runs again;
//! * readiness ([`Backend::ready`](crate::Backend::ready)): one bounded round trip on an
//!   idle connection or a connection of its own, and not ready on a standby;
//! * metrics ([`Backend::metrics`](crate::Backend::metrics)): the pool's state and counts.
//!
//! Statement and checkout timeouts are the client's and the pool's (`client.rs`,
//! `pool.rs`).

use super::client::{Client, Health};
use super::error::PostgresError;
use super::{PostgresBackend, pool};
use crate::error::StoreError;
use crate::metrics::StoreMetrics;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_postgres::Statement;

/// How long a readiness check may take (connecting included).
const READY_TIMEOUT: Duration = Duration::from_secs(2);

impl PostgresBackend {
    /// Runs the read `f` on a pooled connection; when it fails because the server had
    /// closed that connection (a restart), runs it once more on a fresh one — if `again`
    /// still allows it (a query that already handed rows to its caller cannot start over).
    pub(crate) fn read<T>(
        &self,
        again: &dyn Fn() -> bool,
        mut f: impl FnMut(&mut pool::PooledConn<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        match f(&mut conn) {
            Err(_) if conn.client.health() == Health::Closed && again() => {
                drop(conn);
                self.pool.drop_idle();
                self.read_retries.fetch_add(1, Ordering::Relaxed);
                let mut fresh = self.conn()?;
                f(&mut fresh)
            }
            other => other,
        }
    }

    /// Runs `f` with a prepared statement for `sql` on a pooled connection (a read:
    /// retried once on a fresh connection, see [`PostgresBackend::read`]).
    pub(crate) fn with_statement<T>(
        &self,
        sql: &str,
        f: impl Fn(&mut Client, &Statement) -> Result<T, PostgresError>,
    ) -> Result<T, StoreError> {
        self.read(&|| true, |conn| {
            let stmt = conn.prepared(sql)?;
            Ok(f(&mut conn.client, &stmt)?)
        })
    }

    /// Runs the write `f` on a pooled connection; `f` sets `committing` just before it
    /// sends `COMMIT`. When it fails because the server had closed the connection before
    /// that (a restart), nothing can have been applied, and it runs again on a fresh
    /// connection (twice at most).
    pub(crate) fn write_with_retry<T>(
        &self,
        mut f: impl FnMut(&mut pool::PooledConn<'_>, &Cell<bool>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut conn = self.conn()?;
            let committing = Cell::new(false);
            match f(&mut conn, &committing) {
                Err(_)
                    if conn.client.health() == Health::Closed
                        && !committing.get()
                        && attempt < 3 =>
                {
                    drop(conn);
                    self.pool.drop_idle();
                    self.write_retries.fetch_add(1, Ordering::Relaxed);
                }
                other => return other,
            }
        }
    }

    /// Notes a write retried after its connection was closed before `COMMIT`.
    pub(crate) fn note_write_retry(&self) {
        self.pool.drop_idle();
        self.write_retries.fetch_add(1, Ordering::Relaxed);
    }

    /// [`Backend::ready`](crate::Backend::ready): see the module docs.
    pub(crate) fn check_ready(&self) -> Result<(), StoreError> {
        self.check_open()?;
        let unready = |reason: String| StoreError::Unavailable(reason.into());
        // An idle connection if there is one (a closed one is dropped and a fresh one
        // tried); else a connection of its own, outside the pool, so that a pool busy with
        // long statements does not make the store look unready.
        let mut checked = None;
        if let Some(mut conn) = self.pool.try_idle() {
            let r = conn.client.check(READY_TIMEOUT);
            if conn.client.health() != Health::Closed {
                checked = Some(r);
            }
        }
        let checked = match checked {
            Some(r) => r,
            None => {
                let mut conn = self.pool.connect(READY_TIMEOUT).map_err(|e| {
                    unready(match e {
                        PostgresError::Connect { source, .. } => {
                            format!("cannot connect to PostgreSQL: {source}")
                        }
                        PostgresError::ConnectTimeout { after, .. } => {
                            format!("PostgreSQL did not accept a connection within {after:?}")
                        }
                        _ => "cannot connect to PostgreSQL".to_owned(),
                    })
                })?;
                let r = conn.client.check(READY_TIMEOUT);
                conn.client.close();
                r
            }
        };
        match checked {
            Ok(true) => Ok(()),
            Ok(false) => Err(unready(
                "PostgreSQL is a standby in recovery: it takes no writes".into(),
            )),
            Err(PostgresError::Timeout { after }) => Err(unready(format!(
                "PostgreSQL did not answer a readiness check within {after:?}"
            ))),
            Err(e) => Err(unready(format!("the readiness check failed: {e}"))),
        }
    }

    /// [`Backend::metrics`](crate::Backend::metrics): the pool's state and what the engine retried.
    pub(crate) fn report(&self) -> StoreMetrics {
        let p = self.pool.stats();
        let mut m = StoreMetrics::new();
        m.gauge(
            "pg_pool_size",
            "The most PostgreSQL connections the engine opens (pool_size)",
            p.size as f64,
        )
        .gauge(
            "pg_pool_connections_open",
            "PostgreSQL connections open, in use or idle",
            p.open as f64,
        )
        .gauge(
            "pg_pool_connections_idle",
            "PostgreSQL connections open and idle",
            p.idle as f64,
        )
        .gauge(
            "pg_pool_waiting",
            "Operations waiting for a PostgreSQL connection",
            p.waiting as f64,
        )
        .counter(
            "pg_pool_checkout_timeouts_total",
            "Operations that found no PostgreSQL connection within pool_timeout (503)",
            p.checkout_timeouts,
        )
        .counter(
            "pg_connections_opened_total",
            "PostgreSQL connections opened",
            p.opened,
        )
        .counter(
            "pg_connect_failures_total",
            "Attempts to open a PostgreSQL connection that failed or timed out",
            p.connect_failures,
        )
        .counter(
            "pg_connections_timed_out_total",
            "PostgreSQL connections dropped after a statement ran out of time",
            p.dropped_timed_out,
        )
        .counter(
            "pg_connections_closed_total",
            "PostgreSQL connections dropped because the server had closed them (or after one \
             was: idle ones are dropped then)",
            p.dropped_closed,
        )
        .counter(
            "pg_read_retries_total",
            "Reads run again on a fresh connection after meeting a closed one",
            self.read_retries.load(Ordering::Relaxed),
        )
        .counter(
            "pg_write_retries_total",
            "Writes run again after their connection was closed before COMMIT",
            self.write_retries.load(Ordering::Relaxed),
        )
        .counter(
            "pg_rows_fetched_total",
            "Rows received from PostgreSQL by queries",
            self.rows_fetched(),
        )
        .gauge(
            "pg_nonblocking_connections_open",
            "PostgreSQL connections for point gets driven by the server's event loop",
            self.nonblocking.open() as f64,
        )
        .counter(
            "pg_nonblocking_connections_opened_total",
            "PostgreSQL connections opened for point gets driven by the server's event loop",
            self.nonblocking.opened(),
        )
        .counter(
            "pg_nonblocking_gets_total",
            "Point gets answered on the server's event loop, without a blocking thread",
            self.nonblocking_gets(),
        );
        m
    }
}
