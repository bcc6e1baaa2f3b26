//! Point gets that wait on PostgreSQL without holding a thread: connections driven by the
//! caller's own async runtime (the HTTP server's event loop), for
//! [`Backend::get_nonblocking`](crate::Backend::get_nonblocking).
//!
//! The engine's other calls are blocking (`client.rs`): an async caller hands each to a
//! blocking thread, whose client runs its own runtime. For a point get — one round trip of
//! microseconds on the server — those hand-offs (the event loop wakes a blocking thread,
//! which wakes the event loop when done) cost more CPU than the rest of the request. Here
//! a get instead runs on the caller's runtime: the connection's driver is a task of the
//! runtime that opened it, and the caller's task waits for the reply like for any socket.
//!
//! * **A pool of its own**, beside the blocking one: at most `pool_size` connections, each
//!   set up like the blocking pool's (`SET statement_timeout` and the layout's session
//!   setup) and with its own prepared statements. At the cap, a get takes the blocking path.
//! * **Deadlines**: opening a connection is bounded by the connect timeout, each round trip
//!   by the statement timeout plus the cancel margin, as in `client.rs`.
//! * **A connection is lent on the thread that opened it** when it can be: `tableq serve`
//!   runs one single-threaded runtime per thread, and a connection driven by another
//!   thread's runtime would cost the two wake-ups between threads this module saves.
//! * **Connections that fail are dropped**, never handed out again: after an error, a
//!   timeout, or when the server (or the end of the runtime that drove it) closed them.

use super::config::PostgresConfig;
use super::error::PostgresError;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row, Statement};

/// One connection and its prepared statements.
struct Conn {
    client: tokio_postgres::Client,
    statements: HashMap<String, Statement>,
    /// The thread that opened it, whose runtime drives it.
    home: ThreadId,
}

/// The pool (see the module docs).
pub(crate) struct AsyncPool {
    config: tokio_postgres::Config,
    session: String,
    target: String,
    size: usize,
    connect_timeout: Duration,
    call_timeout: Duration,
    idle: Mutex<Vec<Conn>>,
    open: AtomicUsize,
    opened: AtomicU64,
}

impl std::fmt::Debug for AsyncPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncPool")
            .field("target", &self.target)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl AsyncPool {
    /// A pool for `config`'s server; every new connection runs `session` first (the
    /// blocking pool's session SQL, `SET statement_timeout` included).
    pub(crate) fn new(config: &PostgresConfig, session: String) -> AsyncPool {
        AsyncPool {
            config: config.client.clone(),
            session,
            target: config.target().to_owned(),
            size: config.pool_size(),
            connect_timeout: config.connect_timeout(),
            call_timeout: config.call_timeout(),
            idle: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            opened: AtomicU64::new(0),
        }
    }

    /// Connections open (idle or lent).
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections opened since the start.
    pub(crate) fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Drops the idle connections (their drivers end with them).
    pub(crate) fn close_idle(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner));
        self.open.fetch_sub(idle.len(), Ordering::Relaxed);
    }

    /// A connection: an idle one, else a new one whose driver is a task of the caller's
    /// runtime (so this must be awaited inside a tokio runtime). `Ok(None)` when `size`
    /// connections are open already.
    pub(crate) async fn lease(&self) -> Result<Option<Lease<'_>>, PostgresError> {
        let here = std::thread::current().id();
        let found = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            // Connections closed meanwhile (by the server, or with the runtime that drove
            // them) leave the pool.
            let before = idle.len();
            idle.retain(|c| !c.client.is_closed());
            self.open.fetch_sub(before - idle.len(), Ordering::Relaxed);
            // This thread's own, else (when no other may be opened) another thread's.
            let at = idle.iter().rposition(|c| c.home == here).or_else(|| {
                (self.open.load(Ordering::Relaxed) >= self.size)
                    .then(|| idle.len().checked_sub(1))
                    .flatten()
            });
            at.map(|at| idle.swap_remove(at))
        };
        if let Some(conn) = found {
            return Ok(Some(Lease {
                pool: self,
                conn: Some(conn),
                usable: true,
            }));
        }
        if self.open.fetch_add(1, Ordering::Relaxed) >= self.size {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return Ok(None);
        }
        // From here a failure hands the slot back when `lease` is dropped.
        let mut lease = Lease {
            pool: self,
            conn: None,
            usable: false,
        };
        let (client, connection) =
            match tokio::time::timeout(self.connect_timeout, self.config.connect(NoTls)).await {
                Ok(Ok(pair)) => pair,
                Ok(Err(source)) => {
                    return Err(PostgresError::Connect {
                        target: self.target.clone(),
                        source,
                    });
                }
                Err(_) => {
                    return Err(PostgresError::ConnectTimeout {
                        target: self.target.clone(),
                        after: self.connect_timeout,
                    });
                }
            };
        tokio::spawn(async move {
            let _ = connection.await;
        });
        self.opened.fetch_add(1, Ordering::Relaxed);
        timed(self.call_timeout, client.batch_execute(&self.session)).await?;
        lease.conn = Some(Conn {
            client,
            statements: HashMap::new(),
            home: here,
        });
        lease.usable = true;
        Ok(Some(lease))
    }
}

/// Runs `call` within `timeout`.
async fn timed<T>(
    timeout: Duration,
    call: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, PostgresError> {
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(PostgresError::Timeout { after: timeout }),
    }
}

/// A connection lent by [`AsyncPool::lease`]; handed back when dropped, unless a call on
/// it failed.
pub(crate) struct Lease<'a> {
    pool: &'a AsyncPool,
    conn: Option<Conn>,
    usable: bool,
}

impl Lease<'_> {
    /// Every row of the statement `sql` (prepared on this connection's first use of it).
    pub(crate) async fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, PostgresError> {
        let timeout = self.pool.call_timeout;
        let conn = self.conn.as_mut().ok_or(PostgresError::Unusable)?;
        // Any failure leaves the connection out of the pool.
        self.usable = false;
        let statement = match conn.statements.get(sql) {
            Some(s) => s.clone(),
            None => {
                let s = timed(timeout, conn.client.prepare(sql)).await?;
                conn.statements.insert(sql.to_owned(), s.clone());
                s
            }
        };
        let rows = timed(timeout, conn.client.query(&statement, params)).await?;
        self.usable = true;
        Ok(rows)
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.usable
            && !conn.client.is_closed()
        {
            let mut idle = self
                .pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            idle.push(conn);
            return;
        }
        self.pool.open.fetch_sub(1, Ordering::Relaxed);
    }
}
