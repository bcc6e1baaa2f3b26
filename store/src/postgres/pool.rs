//! A small blocking connection pool: at most `size` connections ([`Client`]s with a
//! deadline on every call), each with its own cache of prepared statements (the fixed
//! statements of the engine are prepared once per connection and then cost one round trip
//! each).
//!
//! * Checking out waits up to the pool timeout (`pool_timeout`), opening a connection
//!   included: then [`PostgresError::PoolTimeout`].
//! * Every new connection runs `SET statement_timeout` (PostgreSQL cancels a statement past
//!   it) and the layout's session setup.
//! * A connection that timed out or was closed by the server is dropped when handed back
//!   instead of being reused; when the server closed one, the idle ones are dropped too
//!   (a restart closes them all, and each would otherwise fail once when next used).
//! * The pool counts what happened (checkouts that timed out, connections opened and
//!   dropped) for the engine's metrics ([`PoolStats`]).

use super::client::{Client, ConnectFailure, Health};
use super::config::PostgresConfig;
use super::error::PostgresError;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio_postgres::Statement;

/// SQL run once on every new connection: `enable_sort = off` makes every scan of the engine
/// (all ordered by the key) walk the primary-key index — on one server an index scan from
/// the page's start position with the residual as a filter, on a coordinator a Merge Append
/// of per-shard remote `ORDER BY`s — so a page reads from where it starts until it is
/// full, and its cost does not depend on how many pages came before. Without it the planner
/// turns a selective residual (whose selectivity it guesses low) into a sequential scan of
/// the whole table and a sort, on every page; a coordinator, whose estimates for foreign
/// tables favour a local sort, fetches every match of every shard.
pub(crate) const SCAN_SESSION: &str = "SET enable_sort = off";

/// SQL run once on every new connection of a partitioned layout: prepared statements (the
/// point get, the writes' key lookups) keep one generic plan, and PostgreSQL prunes the
/// partitions that cannot hold the statement's PartitionKey when it starts the plan —
/// without it the coordinator plans every execution again (a generic plan over every
/// foreign partition looks dearer than a custom one to the plan cache, which does not count
/// run-time pruning).
pub(crate) const PARTITIONED_SESSION: &str = "SET plan_cache_mode = force_generic_plan";

/// The shortest connect timeout a checkout near its deadline still allows.
const MIN_CONNECT_TIMEOUT: Duration = Duration::from_millis(100);

/// One connection and its prepared statements.
pub(crate) struct Conn {
    pub(crate) client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// The prepared statement for `sql` (prepared on first use on this connection).
    pub(crate) fn prepared(&mut self, sql: &str) -> Result<Statement, PostgresError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }
}

struct State {
    idle: Vec<Conn>,
    open: usize,
    waiting: usize,
}

/// What the pool did so far, and how it stands (for metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PoolStats {
    pub size: usize,
    pub open: usize,
    pub idle: usize,
    pub waiting: usize,
    pub checkout_timeouts: u64,
    pub opened: u64,
    pub connect_failures: u64,
    pub dropped_timed_out: u64,
    pub dropped_closed: u64,
}

/// The pool (see the module docs).
pub(crate) struct Pool {
    config: tokio_postgres::Config,
    session: Mutex<String>,
    target: String,
    size: usize,
    timeout: Duration,
    connect_timeout: Duration,
    call_timeout: Duration,
    state: Mutex<State>,
    freed: Condvar,
    checkout_timeouts: AtomicU64,
    opened: AtomicU64,
    connect_failures: AtomicU64,
    dropped_timed_out: AtomicU64,
    dropped_closed: AtomicU64,
}

impl Pool {
    pub(crate) fn new(config: &PostgresConfig) -> Pool {
        let statement_ms = config.statement_timeout.as_millis();
        Pool {
            config: config.client.clone(),
            session: Mutex::new(format!("SET statement_timeout = {statement_ms}")),
            target: config.target().to_owned(),
            size: config.pool_size(),
            timeout: config.checkout_timeout,
            connect_timeout: config.connect_timeout(),
            call_timeout: config.call_timeout(),
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
                waiting: 0,
            }),
            freed: Condvar::new(),
            checkout_timeouts: AtomicU64::new(0),
            opened: AtomicU64::new(0),
            connect_failures: AtomicU64::new(0),
            dropped_timed_out: AtomicU64::new(0),
            dropped_closed: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a connection outside the pool's accounting, within `connect_timeout` (at
    /// start-up, with a clear error for unreachable servers; for readiness checks).
    pub(crate) fn connect(&self, connect_timeout: Duration) -> Result<Conn, PostgresError> {
        let client = Client::connect(&self.config, connect_timeout, self.call_timeout).map_err(
            |failure| {
                self.connect_failures.fetch_add(1, Ordering::Relaxed);
                match failure {
                    ConnectFailure::Refused(source) => PostgresError::Connect {
                        target: self.target.clone(),
                        source,
                    },
                    ConnectFailure::TimedOut(after) => PostgresError::ConnectTimeout {
                        target: self.target.clone(),
                        after,
                    },
                    ConnectFailure::Runtime(e) => PostgresError::Unsupported {
                        target: self.target.clone(),
                        message: format!("cannot start the client's runtime: {e}"),
                    },
                }
            },
        )?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        let mut conn = Conn {
            client,
            statements: HashMap::new(),
        };
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        conn.client.batch_execute(&session)?;
        Ok(conn)
    }

    /// The connect timeout of the URL (default 10 s).
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// Adds SQL every new connection runs after `SET statement_timeout` (before any is
    /// pooled).
    pub(crate) fn add_session_setup(&self, sql: &str) {
        let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        session.push_str("; ");
        session.push_str(sql);
    }

    /// The SQL every new connection runs first (`SET statement_timeout` and the session
    /// setup added so far).
    pub(crate) fn session_sql(&self) -> String {
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Hands a connection back (e.g. the start-up one) to be reused.
    pub(crate) fn adopt(&self, conn: Conn) {
        let mut st = self.lock();
        if st.open < self.size {
            st.open += 1;
            st.idle.push(conn);
            drop(st);
            self.freed.notify_one();
        }
    }

    /// An idle connection if there is one now, without waiting or connecting.
    pub(crate) fn try_idle(&self) -> Option<PooledConn<'_>> {
        let conn = self.lock().idle.pop()?;
        Some(PooledConn {
            pool: self,
            conn: Some(conn),
        })
    }

    /// A connection: an idle one, a new one while fewer than `size` are open, or the next
    /// one returned — all within the pool timeout.
    pub(crate) fn get(&self) -> Result<PooledConn<'_>, PostgresError> {
        let deadline = Instant::now() + self.timeout;
        let mut st = self.lock();
        loop {
            if let Some(conn) = st.idle.pop() {
                if conn.client.health() != Health::Ok {
                    st.open -= 1;
                    self.dropped_closed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                return Ok(PooledConn {
                    pool: self,
                    conn: Some(conn),
                });
            }
            let now = Instant::now();
            if st.open < self.size {
                st.open += 1;
                drop(st);
                let connect_timeout = self
                    .connect_timeout
                    .min(deadline.saturating_duration_since(now))
                    .max(MIN_CONNECT_TIMEOUT);
                return match self.connect(connect_timeout) {
                    Ok(conn) => Ok(PooledConn {
                        pool: self,
                        conn: Some(conn),
                    }),
                    Err(e) => {
                        self.release_slot();
                        Err(e)
                    }
                };
            }
            if now >= deadline {
                self.checkout_timeouts.fetch_add(1, Ordering::Relaxed);
                return Err(PostgresError::PoolTimeout {
                    waited: self.timeout,
                    size: self.size,
                });
            }
            st.waiting += 1;
            st = self
                .freed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            st.waiting -= 1;
        }
    }

    fn release_slot(&self) {
        let mut st = self.lock();
        st.open = st.open.saturating_sub(1);
        drop(st);
        self.freed.notify_one();
    }

    fn put_back(&self, conn: Conn) {
        match conn.client.health() {
            Health::Ok => {
                self.lock().idle.push(conn);
                self.freed.notify_one();
            }
            Health::TimedOut => {
                self.dropped_timed_out.fetch_add(1, Ordering::Relaxed);
                drop(conn);
                self.release_slot();
            }
            Health::Closed => {
                self.dropped_closed.fetch_add(1, Ordering::Relaxed);
                drop(conn);
                self.release_slot();
                self.drop_idle();
            }
        }
    }

    /// Drops every idle connection (after one was found closed by the server: a restart
    /// closed the others too). They are reopened on demand.
    pub(crate) fn drop_idle(&self) {
        let idle = {
            let mut st = self.lock();
            let idle = std::mem::take(&mut st.idle);
            st.open -= idle.len();
            idle
        };
        if !idle.is_empty() {
            self.dropped_closed
                .fetch_add(idle.len() as u64, Ordering::Relaxed);
            self.freed.notify_all();
        }
        drop(idle);
    }

    /// Closes every idle connection (connections in use close when returned after this
    /// only if the pool is dropped; the engine stops handing them out once closed).
    pub(crate) fn close_idle(&self) {
        let idle = {
            let mut st = self.lock();
            st.open -= st.idle.len();
            std::mem::take(&mut st.idle)
        };
        for conn in idle {
            conn.client.close();
        }
    }

    /// How the pool stands.
    pub(crate) fn stats(&self) -> PoolStats {
        let st = self.lock();
        PoolStats {
            size: self.size,
            open: st.open,
            idle: st.idle.len(),
            waiting: st.waiting,
            checkout_timeouts: self.checkout_timeouts.load(Ordering::Relaxed),
            opened: self.opened.load(Ordering::Relaxed),
            connect_failures: self.connect_failures.load(Ordering::Relaxed),
            dropped_timed_out: self.dropped_timed_out.load(Ordering::Relaxed),
            dropped_closed: self.dropped_closed.load(Ordering::Relaxed),
        }
    }
}

/// A checked-out connection; returns to the pool when dropped.
pub(crate) struct PooledConn<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
}

impl Deref for PooledConn<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        // Always `Some` until drop.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for PooledConn<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for PooledConn<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.put_back(conn);
        }
    }
}
