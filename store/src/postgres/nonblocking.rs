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
//! * **Connections are shared, and gets pipelined on them**: a get does not take a
//!   connection for itself but sends its statement on one that other gets may be waiting
//!   on; tokio-postgres writes the statements of gets issued together in one write and
//!   hands each its own reply in order. PostgreSQL's backend then reads several statements
//!   at one wake-up instead of sleeping and waking for each: with 8 clients on this
//!   2-core machine, 32–43 µs of PostgreSQL's CPU a statement one at a time against
//!   13–15 µs four at a time on 2 connections (pgbench, `benches/README.md`). A thread
//!   opens another connection only when each of its own has [`PIPELINE_DEPTH`] gets in
//!   flight (a slow statement delays only the gets queued behind it on its connection).
//! * **At most `pool_size` connections**, each set up like the blocking pool's
//!   (`SET statement_timeout` and the layout's session setup) and with its own prepared
//!   statements. At the cap, a get pipelines on the least busy connection open, this
//!   thread's or another's.
//! * **Deadlines**: opening a connection is bounded by the connect timeout, each round trip
//!   by the statement timeout plus the cancel margin, as in `client.rs`.
//! * **A connection is used on the thread that opened it** when it can be: `tableq serve`
//!   runs one single-threaded runtime per thread, and a connection driven by another
//!   thread's runtime would cost the two wake-ups between threads this module saves.
//! * **Connections that fail leave the pool**: after an error or a timeout of any get on
//!   it, or when the server (or the end of the runtime that drove it) closed it, no new get
//!   is sent on it; the gets already waiting on it finish or fail, and the last one closes
//!   it. The gets waiting for a connection to open fail with it when it cannot (one
//!   connect timeout for all of them, not one each in turn).

use super::config::PostgresConfig;
use super::error::PostgresError;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row, Statement};

/// Gets in flight on each of a thread's connections before the thread opens another.
pub(crate) const PIPELINE_DEPTH: usize = 16;

/// One connection (opened by the first get that uses it), and the gets using it.
struct Conn {
    ready: tokio::sync::OnceCell<Ready>,
    /// The thread that chose to open it, whose runtime drives it.
    home: ThreadId,
    /// Gets sent on it (or waiting for it to open) and not yet answered.
    in_flight: AtomicUsize,
    /// Opening it or a get on it failed: no new get is sent on it.
    failed: AtomicBool,
    /// Opening it timed out.
    open_timed_out: AtomicBool,
}

/// An open connection and its prepared statements.
struct Ready {
    client: tokio_postgres::Client,
    statements: Mutex<HashMap<String, Statement>>,
}

impl Conn {
    fn usable(&self) -> bool {
        !self.failed.load(Ordering::Relaxed)
            && self.ready.get().is_none_or(|r| !r.client.is_closed())
    }

    fn load(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// The pool (see the module docs).
pub(crate) struct AsyncPool {
    config: tokio_postgres::Config,
    session: String,
    target: String,
    size: usize,
    connect_timeout: Duration,
    call_timeout: Duration,
    /// The usable connections, open or being opened.
    conns: Mutex<Vec<Arc<Conn>>>,
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
            conns: Mutex::new(Vec::new()),
            opened: AtomicU64::new(0),
        }
    }

    fn conns(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Usable connections, open or being opened.
    pub(crate) fn open(&self) -> usize {
        self.conns().iter().filter(|c| c.usable()).count()
    }

    /// Connections opened since the start.
    pub(crate) fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Takes every connection out of the pool: each closes (and its driver ends) when the
    /// gets using it are answered.
    pub(crate) fn close_idle(&self) {
        self.conns().clear();
    }

    /// A connection to send a get on: this thread's least busy one while it has fewer than
    /// [`PIPELINE_DEPTH`] gets in flight (the gets that arrive while it opens wait for it),
    /// else a new one whose driver is a task of the caller's runtime (so this must be
    /// awaited inside a tokio runtime), else — at `pool_size` — the least busy one.
    /// `Ok(None)` only when `pool_size` is 0.
    pub(crate) async fn lease(&self) -> Result<Option<Lease<'_>>, PostgresError> {
        let here = std::thread::current().id();
        let conn = {
            let mut conns = self.conns();
            // Connections that failed or were closed meanwhile (by the server, or with the
            // runtime that drove them) leave the pool.
            conns.retain(|c| c.usable());
            let mine = conns
                .iter()
                .filter(|c| c.home == here)
                .min_by_key(|c| c.load());
            match mine {
                Some(c) if c.load() < PIPELINE_DEPTH => c.clone(),
                _ if conns.len() < self.size => {
                    let c = Arc::new(Conn {
                        ready: tokio::sync::OnceCell::new(),
                        home: here,
                        in_flight: AtomicUsize::new(0),
                        failed: AtomicBool::new(false),
                        open_timed_out: AtomicBool::new(false),
                    });
                    conns.push(c.clone());
                    c
                }
                _ => match conns.iter().min_by_key(|c| c.load()) {
                    Some(c) => c.clone(),
                    None => return Ok(None),
                },
            }
        };
        let lease = Lease::new(self, conn);
        // The first get to reach a new connection opens it; one dropped meanwhile leaves
        // that to the next. When opening failed, the gets that waited for it fail with it
        // at once (the same timeout, else `Unusable`: left to the blocking path) instead of
        // each trying in turn — one connect timeout after another.
        let conn = &lease.conn;
        let opened = conn.ready.get_or_try_init(|| async {
            if conn.open_timed_out.load(Ordering::Relaxed) {
                return Err(self.connect_timed_out());
            }
            if conn.failed.load(Ordering::Relaxed) {
                return Err(PostgresError::Unusable);
            }
            self.connect().await
        });
        if let Err(e) = opened.await {
            if matches!(e, PostgresError::ConnectTimeout { .. }) {
                conn.open_timed_out.store(true, Ordering::Relaxed);
            }
            conn.failed.store(true, Ordering::Relaxed);
            return Err(e);
        }
        Ok(Some(lease))
    }

    fn connect_timed_out(&self) -> PostgresError {
        PostgresError::ConnectTimeout {
            target: self.target.clone(),
            after: self.connect_timeout,
        }
    }

    /// A new connection, set up, whose driver is a task of the caller's runtime.
    async fn connect(&self) -> Result<Ready, PostgresError> {
        let (client, connection) =
            match tokio::time::timeout(self.connect_timeout, self.config.connect(NoTls)).await {
                Ok(Ok(pair)) => pair,
                Ok(Err(source)) => {
                    return Err(PostgresError::Connect {
                        target: self.target.clone(),
                        source,
                    });
                }
                Err(_) => return Err(self.connect_timed_out()),
            };
        tokio::spawn(async move {
            let _ = connection.await;
        });
        self.opened.fetch_add(1, Ordering::Relaxed);
        timed(self.call_timeout, client.batch_execute(&self.session)).await?;
        Ok(Ready {
            client,
            statements: Mutex::new(HashMap::new()),
        })
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

/// A connection lent by [`AsyncPool::lease`] for one get, which other gets may share.
pub(crate) struct Lease<'a> {
    pool: &'a AsyncPool,
    conn: Arc<Conn>,
}

impl<'a> Lease<'a> {
    fn new(pool: &'a AsyncPool, conn: Arc<Conn>) -> Lease<'a> {
        conn.in_flight.fetch_add(1, Ordering::Relaxed);
        Lease { pool, conn }
    }

    /// Every row of the statement `sql` (prepared on this connection's first use of it).
    /// A failure takes the connection out of the pool.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, PostgresError> {
        let result = self.try_query(sql, params).await;
        if result.is_err() {
            self.conn.failed.store(true, Ordering::Relaxed);
        }
        result
    }

    async fn try_query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, PostgresError> {
        let timeout = self.pool.call_timeout;
        let conn = self.conn.ready.get().ok_or(PostgresError::Unusable)?;
        let known = conn
            .statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sql)
            .cloned();
        let statement = match known {
            Some(s) => s,
            None => {
                // Two gets may prepare it at once: both statements work, one is kept.
                let s = timed(timeout, conn.client.prepare(sql)).await?;
                conn.statements
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(sql.to_owned())
                    .or_insert(s)
                    .clone()
            }
        };
        timed(timeout, conn.client.query(&statement, params)).await
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.conn.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gets that waited for a connection whose opening timed out fail with it at once,
    /// instead of each opening it again in turn; the failed connection leaves the pool.
    #[test]
    fn gets_waiting_for_a_connection_that_cannot_open_fail_with_it() {
        // Accepts TCP connections (in its backlog) and never answers: opening times out.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let url = format!("postgres://nobody@127.0.0.1:{port}/none?connect_timeout=1");
        let config = PostgresConfig::from_url(&url).unwrap();
        let pool = Arc::new(AsyncPool::new(&config, String::new()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcomes = runtime.block_on(async {
            let gets: Vec<_> = (0..6)
                .map(|_| {
                    let pool = pool.clone();
                    tokio::spawn(async move { pool.lease().await.map(|lease| lease.is_some()) })
                })
                .collect();
            let mut outcomes = Vec::new();
            for get in gets {
                outcomes.push(get.await.unwrap());
            }
            outcomes
        });
        let timed_out = outcomes
            .iter()
            .filter(|o| matches!(o, Err(PostgresError::ConnectTimeout { .. })))
            .count();
        assert_eq!(timed_out, 6, "{outcomes:?}");
        // One attempt to connect, not one a get.
        silent.set_nonblocking(true).unwrap();
        let attempts = std::iter::from_fn(|| silent.accept().ok()).count();
        assert_eq!(attempts, 1);
        assert_eq!(pool.open(), 0);
        assert_eq!(pool.opened(), 0);
    }
}
