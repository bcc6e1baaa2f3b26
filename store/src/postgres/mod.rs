//! [`PostgresBackend`]: the PostgreSQL engine (`tableq serve --store postgres://…`). Tables
//! live in PostgreSQL — one server, or a coordinator whose entity table is hash-partitioned
//! on PartitionKey into foreign tables on other servers (`postgres_fdw`) — and queries push
//! their key ranges and residual comparisons down as SQL.
//!
//! # Layout (created on first use, see [`schema`])
//!
//! One row per entity in `<schema>.entities (table_id, pk, rk, ts, props)`: keys as `text
//! COLLATE "C"` in an order-preserving encoding (SQL order = the spec's UTF-16 order,
//! [`encode`]), the Timestamp as ticks, custom properties as typed `jsonb`
//! (`{"Age": ["i", 42]}`), primary key `(table_id, pk, rk)`. Tables are rows of
//! `<schema>.tables` (ids never reused; names unique case-insensitively).
//!
//! # Reads (`source.rs`, [`pushdown`])
//!
//! A query page runs tableq's executor over rows fetched with SQL in one `REPEATABLE READ`
//! transaction: every key range of the plan becomes a `WHERE` on `pk`/`rk` (points as
//! `pk = $1 AND rk = ANY($2)`), the residual is translated to SQL (`props @@ jsonpath` for
//! custom properties) where that decides it exactly — today every comparison — and `$top`
//! becomes `LIMIT page+1`, so one statement returns the page and its continuation. `explain`
//! shows the SQL, what is pushed down, and PostgreSQL's own plan.
//!
//! A page's cost does not depend on how many pages came before it: every connection runs
//! with `enable_sort = off` (`pool.rs`), so on one server the primary key's index serves
//! `ORDER BY pk, rk LIMIT n` from the page's start position with the residual as a filter,
//! and on a coordinator the page is a Merge Append of the shards' remote `ORDER BY pk, rk`
//! scans (start position and residual shipped to each), pulled [`schema::FETCH_SIZE`] rows
//! at a time as the merge needs them.
//!
//! A point get is one prepared statement (table check and entity in one round trip), run
//! outside any transaction. On a coordinator it goes straight to the shard that holds the
//! PartitionKey when the layout allows (`route.rs`: one round trip instead of
//! postgres_fdw's ≈ 5; a miss still asks the coordinator); else the coordinator's statement
//! keeps one generic plan, which PostgreSQL prunes to that shard when it starts it.
//! An async caller (the HTTP server) gets without a blocking thread through
//! [`Backend::get_nonblocking`]: the same statements on connections its own runtime
//! drives (`nonblocking.rs`).
//!
//! # Writes (`write.rs`)
//!
//! One SQL transaction per atomic write: the named entities are row-locked
//! (`SELECT … FOR UPDATE`), [`crate::resolve()`] decides, then plain `INSERT`/`UPDATE`/
//! `DELETE`; unique violations, serialization failures and deadlocks are retried.
//!
//! # Blocking calls with deadlines
//!
//! The [`Backend`] interface is blocking (callers run it off their async workers, like the
//! embedded engines), and a page's statements are strictly sequential (each batch starts
//! after the previous one's last key). Each connection is `tokio-postgres` behind blocking
//! calls on a small runtime of its own (`client.rs`), every call bounded by the statement
//! timeout; a small pool (`pool.rs`) keeps one prepared-statement cache per connection and
//! bounds the wait for a connection. Call the engine from a thread that is not driving an
//! async runtime (e.g. inside `tokio::task::spawn_blocking`) — except
//! [`Backend::get_nonblocking`], which is awaited on one.
//!
//! # When the database misbehaves
//!
//! * **Frozen or unreachable**: an operation fails within `pool_timeout` +
//!   `statement_timeout` (+ 1 s) — [`StoreError::Timeout`] (500 `OperationTimedOut`) when a
//!   statement ran out of time, [`StoreError::Unavailable`] (503 `ServerBusy`) when no
//!   connection could be had — and the engine recovers by itself once the server answers
//!   again (timed-out connections are dropped, new ones opened on demand).
//! * **Restarted**: connections the restart closed are dropped with every idle one; a read
//!   that met one is run again once on a fresh connection, and a write that failed before
//!   its `COMMIT` was sent is run again (it cannot have been applied).
//! * **Errors** name the server (`user@host:port/database`) for the operator's log; the
//!   HTTP server never puts a storage failure's text in a response.
//! * **Readiness** ([`Backend::ready`]): one bounded round trip, and not ready on a standby
//!   (`pg_is_in_recovery()`).
//!
//! ```no_run
//! use tableq_model::Entity;
//! use tableq_store::{Backend, WriteOp};
//! use tableq_store::postgres::PostgresBackend;
//! let store = PostgresBackend::open("postgres://postgres@127.0.0.1:5432/tableq")?;
//! store.create_table("Orders")?;
//! store.write("orders", WriteOp::Insert { entity: Entity::new("p", "r") })?;
//! assert!(store.get("Orders", "p", "r")?.is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod client;
pub mod config;
pub mod encode;
mod error;
mod nonblocking;
mod pool;
pub mod pushdown;
mod resilience;
mod route;
pub mod schema;
pub(crate) mod source;
mod sql;
pub(crate) mod write;

pub use config::PostgresConfig;
pub use error::PostgresError;
pub use schema::{Layout, provision_sharded};

use crate::acl::{self, SignedIdentifier};
use crate::backend::{Backend, NonBlockingGet, QueryPage, ScanExplain, TableInfo};
use crate::clock::Clock;
use crate::error::{BatchError, StoreError};
use crate::metrics::StoreMetrics;
use crate::op::{WriteOp, Written};
use crate::service::ServiceProperties;
use encode::{JsonbText, decode_entity, encode_str};
use nonblocking::AsyncPool;
use pool::Pool;
use route::Routes;
use source::PageSource;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};
use tableq_exec::{DEFAULT_PAGE_SIZE, ExecError, Executor, Key, PageOptions, RowView};
use tableq_model::{DateTime, Entity, validate};
use tableq_planner::plan::Plan;

/// The engine's fixed SQL for one schema.
pub(crate) struct Statements {
    /// `"schema".entities`.
    pub(crate) entities: String,
    lookup_table: String,
    pub(crate) lock_table: String,
    create_table: String,
    lookup_name: String,
    drop_table: String,
    drop_entities: String,
    list_tables: String,
    /// A point get: the entity's `(ts, props)`; `(NULL, NULL)` when the table (key `$1`,
    /// id `$2`) exists without the entity; no row when it does not exist. The entity's
    /// index is probed first and the table's only when that finds nothing (`LIMIT 1` over
    /// `UNION ALL`): an entity row of table id `$2` implies the table, since a table's
    /// entities go in the transaction that deletes it and ids are never reused. A join of
    /// the two cost PostgreSQL a sixth more a get (pgbench, 2026-12-06).
    get: String,
    pub(crate) lock_one: String,
    pub(crate) insert_one: String,
    pub(crate) insert_many: String,
    pub(crate) update: String,
    pub(crate) delete: String,
    get_setting: String,
    put_setting: String,
    get_acl: String,
    put_acl: String,
}

impl Statements {
    fn new(schema: &str) -> Statements {
        let e = format!("\"{schema}\".entities");
        let t = format!("\"{schema}\".tables");
        Statements {
            lookup_table: format!("SELECT id, name FROM {t} WHERE key = $1"),
            lock_table: format!("SELECT id FROM {t} WHERE key = $1 FOR KEY SHARE"),
            create_table: format!(
                "INSERT INTO {t} (key, name) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING id"
            ),
            lookup_name: format!("SELECT name FROM {t} WHERE key = $1"),
            drop_table: format!("DELETE FROM {t} WHERE key = $1 RETURNING id"),
            drop_entities: format!("DELETE FROM {e} WHERE table_id = $1"),
            list_tables: format!("SELECT name FROM {t} ORDER BY key"),
            get: format!(
                "SELECT ts, props FROM (\
                 SELECT e.ts, e.props FROM {e} e WHERE e.table_id = $2 AND e.pk = $3 AND e.rk = $4 \
                 UNION ALL SELECT NULL, NULL FROM {t} t WHERE t.key = $1 AND t.id = $2) u LIMIT 1"
            ),
            lock_one: format!(
                "SELECT pk, rk, ts, props FROM {e} WHERE table_id = $1 AND pk = $2 AND rk = $3 FOR UPDATE"
            ),
            insert_one: format!(
                "INSERT INTO {e} (table_id, pk, rk, ts, props) VALUES ($1, $2, $3, $4, $5)"
            ),
            insert_many: format!(
                "INSERT INTO {e} (table_id, pk, rk, ts, props) \
                 SELECT $1, u.pk, u.rk, $2, u.props FROM unnest($3::text[], $4::text[], $5::jsonb[]) AS u (pk, rk, props)"
            ),
            update: format!(
                "UPDATE {e} SET ts = $4, props = $5 WHERE table_id = $1 AND pk = $2 AND rk = $3 AND ts = $6"
            ),
            delete: format!(
                "DELETE FROM {e} WHERE table_id = $1 AND pk = $2 AND rk = $3 AND ts = $4"
            ),
            get_setting: format!("SELECT value FROM \"{schema}\".settings WHERE key = $1"),
            put_setting: format!(
                "INSERT INTO \"{schema}\".settings (key, value) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            ),
            get_acl: format!(
                "SELECT a.value FROM {t} t LEFT JOIN \"{schema}\".acls a ON a.table_id = t.id \
                 WHERE t.key = $1"
            ),
            put_acl: format!(
                "INSERT INTO \"{schema}\".acls (table_id, value) SELECT id, $2 FROM {t} WHERE key = $1 \
                 ON CONFLICT (table_id) DO UPDATE SET value = EXCLUDED.value RETURNING table_id"
            ),
            entities: e,
        }
    }
}

/// The entity of a row `(ts, props)` stored under the encoded keys `epk`, `erk`.
fn stored_entity(row: &tokio_postgres::Row, epk: &str, erk: &str) -> Result<Entity, PostgresError> {
    let ts: i64 = row.try_get(0)?;
    let props: JsonbText<'_> = row.try_get(1)?;
    Ok(decode_entity(epk, erk, ts, props.0)?)
}

/// The key of the service properties in `settings`.
const SERVICE_SETTING: &str = "service";

/// The PostgreSQL engine (see the module docs).
pub struct PostgresBackend {
    config: PostgresConfig,
    pool: Pool,
    pub(crate) sql: Statements,
    layout: Layout,
    pub(crate) clock: Clock,
    closed: AtomicBool,
    fetched: AtomicU64,
    /// Reads run again on a fresh connection after meeting a closed one.
    read_retries: AtomicU64,
    /// Writes run again after their connection was closed before `COMMIT`.
    write_retries: AtomicU64,
    /// Table key → id, as last seen: a hint for point gets, which check it in the same
    /// statement (a stale id finds no table row and is looked up again).
    ids: RwLock<HashMap<String, i64>>,
    /// On a coordinator, the shards point gets go straight to (`route.rs`).
    routes: Option<Routes>,
    /// Point gets answered by a shard directly.
    routed_gets: AtomicU64,
    /// The coordinator's (or the one server's) connections for point gets that do not
    /// block a thread (`nonblocking.rs`).
    nonblocking: AsyncPool,
    /// Point gets answered without a blocking thread.
    nonblocking_gets: AtomicU64,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("config", &self.config)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl PostgresBackend {
    /// Opens the engine at `url` (see [`PostgresConfig::from_url`]), creating its schema on
    /// first use.
    pub fn open(url: &str) -> Result<PostgresBackend, PostgresError> {
        PostgresBackend::open_with(PostgresConfig::from_url(url)?)
    }

    /// Opens the engine with `config`: connects (a clear [`PostgresError::Connect`] when
    /// the server cannot be reached), checks the server, creates or checks the schema, and
    /// makes the clock start after the newest stored Timestamp.
    pub fn open_with(config: PostgresConfig) -> Result<PostgresBackend, PostgresError> {
        let pool = Pool::new(&config);
        let mut conn = pool.connect(pool.connect_timeout())?;
        let layout = schema::ensure(&mut conn, &config)?;
        pool.add_session_setup(pool::SCAN_SESSION);
        conn.client.batch_execute(pool::SCAN_SESSION)?;
        if matches!(layout, Layout::Partitioned { .. }) {
            pool.add_session_setup(pool::PARTITIONED_SESSION);
            conn.client.batch_execute(pool::PARTITIONED_SESSION)?;
        }
        let sql = Statements::new(config.schema_name());
        let clock = Clock::new();
        {
            let mut tx = conn.client.transaction()?;
            // Let each partition (shard) compute its own maximum.
            tx.batch_execute(
                "SET LOCAL enable_partitionwise_aggregate = on; SET LOCAL enable_sort = on",
            )?;
            let newest: Option<i64> = tx
                .query_one(&format!("SELECT max(ts) FROM {}", sql.entities), &[])?
                .try_get(0)
                .map_err(PostgresError::from)?;
            tx.commit()?;
            if let Some(t) = newest.and_then(DateTime::from_ticks) {
                clock.observe(t);
            }
        }
        let routes = match layout {
            Layout::Single => None,
            Layout::Partitioned { .. } => match Routes::discover(&mut conn, &config) {
                Ok(routes) => {
                    tracing::info!(
                        target = config.target(),
                        shards = routes.len(),
                        "point gets go straight to the shard holding the PartitionKey"
                    );
                    Some(routes)
                }
                Err(reason) => {
                    tracing::warn!(
                        target = config.target(),
                        "point gets go through the coordinator: {reason}"
                    );
                    None
                }
            },
        };
        pool.adopt(conn);
        Ok(PostgresBackend {
            nonblocking: AsyncPool::new(&config, pool.session_sql()),
            nonblocking_gets: AtomicU64::new(0),
            config,
            pool,
            sql,
            layout,
            clock,
            closed: AtomicBool::new(false),
            fetched: AtomicU64::new(0),
            read_retries: AtomicU64::new(0),
            write_retries: AtomicU64::new(0),
            ids: RwLock::new(HashMap::new()),
            routes,
            routed_gets: AtomicU64::new(0),
        })
    }

    /// The entity table's layout (one table, or partitioned over shards).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The configuration.
    pub fn config(&self) -> &PostgresConfig {
        &self.config
    }

    /// How many shards point gets go straight to (0: through the coordinator or one
    /// server; see `route.rs`).
    pub fn routed_shards(&self) -> usize {
        self.routes.as_ref().map_or(0, Routes::len)
    }

    /// Point gets a shard answered directly since opening.
    pub fn routed_gets(&self) -> u64 {
        self.routed_gets.load(Ordering::Relaxed)
    }

    /// A point get straight from the shard holding `epk` (encoded keys), when routes are
    /// known, the table's id is, and the shard has the row; `None` sends the get through
    /// the coordinator, which tells a missing entity from a missing table (`route.rs`).
    fn routed_get(&self, key: &str, epk: &str, erk: &str) -> Option<Entity> {
        let routes = self.routes.as_ref()?;
        let id = *self
            .ids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)?;
        let shard = routes.shard(epk);
        let mut conn = shard.pool.get().ok()?;
        let get = conn.prepared(&shard.get).ok()?;
        let row = conn.client.query_opt(&get, &[&id, &epk, &erk]).ok()??;
        let entity = stored_entity(&row, epk, erk).ok()?;
        self.routed_gets.fetch_add(1, Ordering::Relaxed);
        Some(entity)
    }

    /// Point gets answered without a blocking thread since opening
    /// ([`Backend::get_nonblocking`]).
    pub fn nonblocking_gets(&self) -> u64 {
        self.nonblocking_gets.load(Ordering::Relaxed)
    }

    /// [`Backend::get_nonblocking`]: the same statements as [`Backend::get`] on connections
    /// of the caller's runtime (`nonblocking.rs`). It answers when it knows the table's id
    /// (from creating the table or an earlier get) and a statement settles the get: a row,
    /// a missing entity of an existing table, or a timeout (which `get` would meet too). It
    /// leaves to `get` the first get of a table this engine neither created nor read, a
    /// table that is gone or has a new id, and a failed connection
    /// (gets share the connections, pipelined: `nonblocking.rs`).
    async fn get_on_caller(
        &self,
        table: &str,
        pk: &str,
        rk: &str,
    ) -> Option<Result<Option<Entity>, StoreError>> {
        if let Err(closed) = self.check_open() {
            return Some(Err(closed));
        }
        let key = validate::table_key(table);
        let id = *self
            .ids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)?;
        let (epk, erk) = (encode_str(pk), encode_str(rk));
        if let Some(routes) = &self.routes {
            // A row from the shard is the answer; anything else asks the coordinator.
            let shard = routes.shard(&epk);
            if let Ok(Some(conn)) = shard.nonblocking.lease().await
                && let Ok(rows) = conn.query(&shard.get, &[&id, &epk, &erk]).await
                && let Some(row) = rows.first()
                && let Ok(entity) = stored_entity(row, &epk, &erk)
            {
                self.routed_gets.fetch_add(1, Ordering::Relaxed);
                self.nonblocking_gets.fetch_add(1, Ordering::Relaxed);
                return Some(Ok(Some(entity)));
            }
        }
        let conn = match self.nonblocking.lease().await {
            Ok(Some(conn)) => conn,
            Err(e @ (PostgresError::Timeout { .. } | PostgresError::ConnectTimeout { .. })) => {
                return Some(Err(e.into()));
            }
            Ok(None) | Err(_) => return None,
        };
        let rows = match conn
            .query(&self.sql.get, &[&key, &id, &epk.as_ref(), &erk.as_ref()])
            .await
        {
            Ok(rows) => rows,
            Err(e @ PostgresError::Timeout { .. }) => return Some(Err(e.into())),
            Err(_) => return None,
        };
        // No row: the table is gone, or was re-created with a new id.
        let row = rows.first()?;
        let answer = (|| {
            let ts: Option<i64> = row.try_get(0).map_err(PostgresError::from)?;
            let Some(ts) = ts else {
                return Ok(None);
            };
            let props: JsonbText<'_> = row.try_get(1).map_err(PostgresError::from)?;
            Ok(Some(
                decode_entity(&epk, &erk, ts, props.0).map_err(PostgresError::from)?,
            ))
        })();
        self.nonblocking_gets.fetch_add(1, Ordering::Relaxed);
        Some(answer)
    }

    /// Rows received from PostgreSQL by queries since opening (what pushdown saves shows
    /// here: a selective pushed-down scan receives about the matching rows).
    pub fn rows_fetched(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    pub(crate) fn check_open(&self) -> Result<(), StoreError> {
        if self.closed.load(Ordering::Acquire) {
            Err(StoreError::Closed)
        } else {
            Ok(())
        }
    }

    fn conn(&self) -> Result<pool::PooledConn<'_>, StoreError> {
        self.check_open()?;
        Ok(self.pool.get()?)
    }

    /// The id of the table with this key (remembered as a hint for point gets), if any.
    fn lookup_id(
        &self,
        conn: &mut pool::PooledConn<'_>,
        key: &str,
    ) -> Result<Option<i64>, StoreError> {
        let lookup = conn.prepared(&self.sql.lookup_table)?;
        let id: Option<i64> = match conn.client.query_opt(&lookup, &[&key])? {
            Some(row) => Some(row.try_get(0).map_err(PostgresError::from)?),
            None => None,
        };
        let mut ids = self.ids.write().unwrap_or_else(PoisonError::into_inner);
        match id {
            Some(id) => ids.insert(key.to_owned(), id),
            None => ids.remove(key),
        };
        Ok(id)
    }

    /// The page size a plan's page uses.
    fn page_limit(plan: &Plan, options: &PageOptions) -> usize {
        match (plan.top.map(|t| t as usize), options.page_size) {
            (Some(t), Some(p)) => t.min(p),
            (Some(t), None) => t,
            (None, Some(p)) => p,
            (None, None) => DEFAULT_PAGE_SIZE,
        }
    }

    /// Runs `f` on a page source for `table` and `plan` inside a read-only snapshot (a
    /// read: run again on a fresh connection after meeting a closed one, while `again`
    /// allows).
    fn with_page<T>(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        again: &dyn Fn() -> bool,
        mut f: impl FnMut(&PageSource<'_>, &pushdown::Pushdown) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let key = validate::table_key(table);
        let pushed = if self.config.pushdown {
            pushdown::pushdown(&plan.residual)
        } else {
            pushdown::nothing(&plan.residual)
        };
        self.read(again, |conn| {
            let lookup = conn.prepared(&self.sql.lookup_table)?;
            let mut tx = conn.client.snapshot()?;
            let Some(row) = tx.query_opt(&lookup, &[&key])? else {
                return Err(StoreError::TableNotFound(table.to_owned()));
            };
            let table_id: i64 = row.try_get(0).map_err(PostgresError::from)?;
            let mut source = PageSource::new(
                tx,
                self.sql.entities.clone(),
                table_id,
                pushed.cond.clone(),
                Self::page_limit(plan, options),
                pushed.is_exact(),
            );
            source.prefetch_points(&plan.ranges, continuation);
            let out = f(&source, &pushed);
            let (tx, failure, fetched) = source.finish();
            self.fetched.fetch_add(fetched, Ordering::Relaxed);
            if let Some(e) = failure {
                return Err(e.into());
            }
            let out = out?;
            tx.commit()?;
            Ok(out)
        })
    }
}

/// How often Create Table tries again when the table it conflicted with was deleted before
/// it could look at it.
const CREATE_ATTEMPTS: usize = 50;

/// What one attempt of Create Table found.
enum Created {
    /// Created by this call, with this id.
    Now(i64),
    /// It existed, with this name.
    Before(String),
    /// It conflicted, then was gone (deleted concurrently): try again.
    Vanished,
}

impl Backend for PostgresBackend {
    fn describe(&self) -> String {
        format!(
            "PostgreSQL at {}, schema {} (entities: {})",
            self.config.target(),
            self.config.schema_name(),
            self.layout
        )
    }

    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError> {
        self.check_open()?;
        validate::table_name(name)?;
        let key = validate::table_key(name);
        // `ON CONFLICT DO NOTHING` then a lookup, in one READ COMMITTED transaction: the
        // lookup sees the row that conflicted unless a concurrent Delete Table removed it in
        // between — then the insert is tried again, so a create racing a delete answers
        // created or already-exists, never not-found.
        for _ in 0..CREATE_ATTEMPTS {
            let outcome = self.write_with_retry(|conn, committing| {
                let create = conn.prepared(&self.sql.create_table)?;
                let lookup = conn.prepared(&self.sql.lookup_name)?;
                let mut tx = conn.client.transaction()?;
                let outcome = if let Some(row) = tx.query_opt(&create, &[&key, &name])? {
                    Created::Now(row.try_get(0).map_err(PostgresError::from)?)
                } else {
                    match tx.query_opt(&lookup, &[&key])? {
                        Some(row) => Created::Before(row.try_get(0).map_err(PostgresError::from)?),
                        None => Created::Vanished,
                    }
                };
                committing.set(true);
                tx.commit()?;
                Ok(outcome)
            })?;
            match outcome {
                Created::Now(id) => {
                    // Remembered, so that the table's first point gets can go on the
                    // event loop's connections (`get_on_caller`) rather than each waiting
                    // for a blocking thread until one of them has looked the id up.
                    self.ids
                        .write()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(key, id);
                    return Ok(TableInfo { name: name.into() });
                }
                Created::Before(existing) => {
                    return Err(StoreError::TableAlreadyExists { existing });
                }
                Created::Vanished => continue,
            }
        }
        // Created and deleted by others on every attempt: another create won each time.
        Err(StoreError::TableAlreadyExists {
            existing: name.to_owned(),
        })
    }

    fn delete_table(&self, name: &str) -> Result<(), StoreError> {
        self.check_open()?;
        let key = validate::table_key(name);
        self.write_with_retry(|conn, committing| {
            let drop_table = conn.prepared(&self.sql.drop_table)?;
            let drop_entities = conn.prepared(&self.sql.drop_entities)?;
            let mut tx = conn.client.transaction()?;
            let Some(row) = tx.query_opt(&drop_table, &[&key])? else {
                return Err(StoreError::TableToDeleteNotFound(name.to_owned()));
            };
            let id: i64 = row.try_get(0).map_err(PostgresError::from)?;
            tx.execute(&drop_entities, &[&id])?;
            committing.set(true);
            tx.commit()?;
            Ok(())
        })
    }

    fn table(&self, name: &str) -> Result<TableInfo, StoreError> {
        let key = validate::table_key(name);
        let found = self.with_statement(&self.sql.lookup_table, |c, s| {
            Ok(match c.query_opt(s, &[&key])? {
                Some(r) => Some(r.try_get::<_, String>(1)?),
                None => None,
            })
        })?;
        found
            .map(|name| TableInfo { name })
            .ok_or_else(|| StoreError::TableNotFound(name.to_owned()))
    }

    fn tables(&self) -> Result<Vec<TableInfo>, StoreError> {
        self.with_statement(&self.sql.list_tables, |c, s| {
            c.query(s, &[])?
                .iter()
                .map(|r| {
                    Ok(TableInfo {
                        name: r.try_get(0)?,
                    })
                })
                .collect()
        })
    }

    fn get(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        let key = validate::table_key(table);
        let (epk, erk) = (encode_str(pk), encode_str(rk));
        self.check_open()?;
        if let Some(entity) = self.routed_get(&key, &epk, &erk) {
            return Ok(Some(entity));
        }
        self.read(&|| true, |conn| {
            // The id hint makes the entity lookup a primary-key probe (on the one shard that
            // holds `pk`) in the same statement that checks the table.
            let hint = self
                .ids
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&key)
                .copied();
            let get = conn.prepared(&self.sql.get)?;
            let mut id = match hint {
                Some(id) => id,
                None => match self.lookup_id(conn, &key)? {
                    Some(id) => id,
                    None => return Err(StoreError::TableNotFound(table.to_owned())),
                },
            };
            for _ in 0..2 {
                let rows = conn
                    .client
                    .query(&get, &[&key, &id, &epk.as_ref(), &erk.as_ref()])?;
                if let Some(row) = rows.first() {
                    let ts: Option<i64> = row.try_get(0).map_err(PostgresError::from)?;
                    let Some(ts) = ts else {
                        return Ok(None);
                    };
                    let props: JsonbText<'_> = row.try_get(1).map_err(PostgresError::from)?;
                    return Ok(Some(
                        decode_entity(&epk, &erk, ts, props.0).map_err(PostgresError::from)?,
                    ));
                }
                // The table is gone, or was re-created with a new id.
                match self.lookup_id(conn, &key)? {
                    Some(fresh) if fresh != id => id = fresh,
                    _ => break,
                }
            }
            self.ids
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
            Err(StoreError::TableNotFound(table.to_owned()))
        })
    }

    fn get_nonblocking<'a>(
        &'a self,
        table: &'a str,
        partition_key: &'a str,
        row_key: &'a str,
    ) -> NonBlockingGet<'a> {
        Box::pin(self.get_on_caller(table, partition_key, row_key))
    }

    fn query(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        visit: &mut dyn FnMut(RowView<'_>),
    ) -> Result<QueryPage, StoreError> {
        // A page that handed rows to `visit` cannot start over on a fresh connection.
        let delivered = Cell::new(false);
        let mut visit = |row: RowView<'_>| {
            delivered.set(true);
            visit(row)
        };
        let again = || !delivered.get();
        self.with_page(
            table,
            plan,
            continuation,
            options,
            &again,
            |source, pushed| {
                let exec_plan = Plan {
                    ranges: plan.ranges.clone(),
                    residual: pushed.remaining.clone(),
                    select: plan.select.clone(),
                    top: plan.top,
                };
                let executor = Executor::new(source)
                    .with_threads(1)
                    .map_err(StoreError::storage)?;
                let (continuation, stats) = executor
                    .execute_page_with(&exec_plan, continuation, options, &mut visit)
                    .map_err(|e| match e {
                        ExecError::Source(e) => StoreError::from(e),
                        other => StoreError::storage(other),
                    })?;
                Ok(QueryPage {
                    continuation,
                    stats,
                })
            },
        )
    }

    fn write_batch(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<Written>, BatchError> {
        self.check_open()?;
        if ops.is_empty() {
            self.table(table)?;
            return Ok(Vec::new());
        }
        self.write_ops(table, ops)
    }

    fn service_properties(&self) -> Result<ServiceProperties, StoreError> {
        let stored = self.with_statement(&self.sql.get_setting, |c, s| {
            Ok(match c.query_opt(s, &[&SERVICE_SETTING])? {
                Some(row) => Some(row.try_get::<_, String>(0)?),
                None => None,
            })
        })?;
        match stored {
            Some(text) => ServiceProperties::from_stored(&text).map_err(StoreError::storage),
            None => Ok(ServiceProperties::default()),
        }
    }

    fn set_service_properties(&self, properties: &ServiceProperties) -> Result<(), StoreError> {
        properties.validate()?;
        let stored = properties.to_stored();
        self.with_statement(&self.sql.put_setting, |c, s| {
            c.execute(s, &[&SERVICE_SETTING, &stored.as_str()])?;
            Ok(())
        })
    }

    fn table_acl(&self, table: &str) -> Result<Vec<SignedIdentifier>, StoreError> {
        let key = validate::table_key(table);
        let found = self.with_statement(&self.sql.get_acl, |c, s| {
            Ok(match c.query_opt(s, &[&key])? {
                Some(row) => Some(row.try_get::<_, Option<String>>(0)?),
                None => None,
            })
        })?;
        match found {
            None => Err(StoreError::TableNotFound(table.to_owned())),
            Some(None) => Ok(Vec::new()),
            Some(Some(text)) => acl::from_stored(&text).map_err(StoreError::storage),
        }
    }

    fn set_table_acl(&self, table: &str, policies: &[SignedIdentifier]) -> Result<(), StoreError> {
        acl::validate(policies)?;
        let key = validate::table_key(table);
        let stored = acl::to_stored(policies);
        let written = self.with_statement(&self.sql.put_acl, |c, s| {
            Ok(c.query_opt(s, &[&key, &stored])?.is_some())
        })?;
        if written {
            Ok(())
        } else {
            Err(StoreError::TableNotFound(table.to_owned()))
        }
    }

    fn explain(&self, table: &str, plan: &Plan) -> Result<ScanExplain, StoreError> {
        let mut out = ScanExplain::engine("postgres");
        out.details.push(self.describe());
        self.with_page(table, plan, None, &PageOptions::default(), &|| true, |source, pushed| {
            let d = &mut out.details;
            if pushed.conjuncts.is_empty() {
                d.push("residual: none (the key ranges are exact)".into());
            }
            for (c, how) in &pushed.conjuncts {
                d.push(format!("residual pushed down: {} — {c}", how.as_str()));
            }
            d.push(if pushed.remaining.is_true() {
                "executor evaluates: nothing more (ranges and pushdown are exact)".into()
            } else {
                format!("executor evaluates: {}", pushed.remaining)
            });
            let ranges = plan.ranges.ranges();
            let points = ranges
                .iter()
                .filter(|r| r.partition_key.as_point().is_some() && r.row_key.as_point().is_some())
                .count();
            if points >= 2 {
                d.push(format!(
                    "{points} point ranges fetched together: (pk = $p AND rk = ANY($rks)) OR …"
                ));
            }
            let Some(first) = ranges
                .iter()
                .find(|r| !(r.partition_key.as_point().is_some() && r.row_key.as_point().is_some()) || points < 2)
            else {
                return Ok(());
            };
            d.push(format!(
                "{} range(s); first statement of the first range (LIMIT = page size + 1 when the pushdown is exact):",
                ranges.len()
            ));
            let Some(sql) = source.first_scan_sql(first, None) else {
                return Ok(());
            };
            d.push(format!("  {}", sql.inline()));
            d.push("PostgreSQL plan:".into());
            for line in source.explain(&sql)? {
                d.push(format!("  {line}"));
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn ready(&self) -> Result<(), StoreError> {
        self.check_ready()
    }

    fn metrics(&self) -> StoreMetrics {
        self.report()
    }

    fn close(&self) -> Result<(), StoreError> {
        self.closed.store(true, Ordering::Release);
        self.pool.close_idle();
        self.nonblocking.close_idle();
        if let Some(routes) = &self.routes {
            routes.close_idle();
        }
        Ok(())
    }
}
