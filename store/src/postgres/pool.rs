//! A small blocking connection pool: at most `size` [`postgres::Client`]s, each with its
//! own cache of prepared statements (the fixed statements of the engine are prepared once
//! per connection and then cost one round trip each).
//!
//! A connection that failed (closed by the server, network error) is dropped instead of
//! being returned; a new one is opened on demand. Checking out waits up to the configured
//! timeout when every connection is in use.

use super::config::{PostgresConfig, PostgresError};
use postgres::{Client, NoTls, Statement};
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// SQL run once on every new connection of a partitioned layout: `enable_sort = off` makes
/// the coordinator merge per-shard remote `ORDER BY`s instead of fetching whole partitions
/// to sort them locally (its estimates for foreign tables favour the local sort; every
/// query of the engine is ordered by the key). A single server keeps the default: there
/// the planner rightly sorts the few matches of a selective full scan.
pub(crate) const PARTITIONED_SESSION: &str = "SET enable_sort = off";

/// One connection and its prepared statements.
pub(crate) struct Conn {
    pub(crate) client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// The prepared statement for `sql` (prepared on first use on this connection).
    pub(crate) fn prepared(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
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
}

/// The pool (see the module docs).
pub(crate) struct Pool {
    config: postgres::Config,
    session: Mutex<&'static str>,
    target: String,
    size: usize,
    timeout: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

impl Pool {
    pub(crate) fn new(config: &PostgresConfig) -> Pool {
        Pool {
            config: config.client.clone(),
            session: Mutex::new(""),
            target: config.target().to_owned(),
            size: config.pool_size(),
            timeout: config.checkout_timeout,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        }
    }

    /// Opens a connection outside the pool's accounting (used once at start-up, with a clear
    /// error for unreachable servers).
    pub(crate) fn connect(&self) -> Result<Conn, PostgresError> {
        let mut client = self
            .config
            .connect(NoTls)
            .map_err(|source| PostgresError::Connect {
                target: self.target.clone(),
                source,
            })?;
        let session = *self.session.lock().unwrap_or_else(PoisonError::into_inner);
        if !session.is_empty() {
            client.batch_execute(session)?;
        }
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    /// Sets the SQL every new connection runs first (before any is pooled).
    pub(crate) fn set_session_setup(&self, sql: &'static str) {
        *self.session.lock().unwrap_or_else(PoisonError::into_inner) = sql;
    }

    /// Hands a connection back (e.g. the start-up one) to be reused.
    pub(crate) fn adopt(&self, conn: Conn) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.open < self.size {
            st.open += 1;
            st.idle.push(conn);
            drop(st);
            self.freed.notify_one();
        }
    }

    /// A connection: an idle one, a new one while fewer than `size` are open, or the next
    /// one returned (waiting up to the timeout).
    pub(crate) fn get(&self) -> Result<PooledConn<'_>, PostgresError> {
        let deadline = Instant::now() + self.timeout;
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(conn) = st.idle.pop() {
                if conn.client.is_closed() {
                    st.open -= 1;
                    continue;
                }
                return Ok(PooledConn {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if st.open < self.size {
                st.open += 1;
                drop(st);
                return match self.connect() {
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
            let now = Instant::now();
            if now >= deadline {
                return Err(PostgresError::PoolTimeout {
                    waited: self.timeout,
                    size: self.size,
                });
            }
            st = self
                .freed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn release_slot(&self) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.open = st.open.saturating_sub(1);
        drop(st);
        self.freed.notify_one();
    }

    fn put_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            self.release_slot();
            return;
        }
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.idle.push(conn);
        drop(st);
        self.freed.notify_one();
    }

    /// Closes every idle connection (connections in use close when returned after this
    /// only if the pool is dropped; the engine stops handing them out once closed).
    pub(crate) fn close_idle(&self) {
        let idle = {
            let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.open -= st.idle.len();
            std::mem::take(&mut st.idle)
        };
        for conn in idle {
            let _ = conn.client.close();
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
