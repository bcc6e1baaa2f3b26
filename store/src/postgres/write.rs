//! The write path: one SQL transaction per atomic write, decided by [`resolve()`].
//!
//! 1. `SELECT id FROM tables WHERE key = $1 FOR KEY SHARE` — the table exists and cannot
//!    be deleted until the write commits.
//! 2. When `resolve` first asks for the current state, every entity the write names is read
//!    and row-locked in one statement (`… FOR UPDATE`, shipped to the shard when the table
//!    is partitioned). Entities that do not exist cannot be locked: a concurrent insert of
//!    the same key surfaces at commit as a unique violation.
//! 3. The changes are applied: new entities in one multi-row `INSERT` (through
//!    `unnest`), existing ones by `UPDATE`/`DELETE` on the primary key (never
//!    `INSERT … ON CONFLICT`, which postgres_fdw does not support), conditional on the
//!    Timestamp read under the lock (`… AND ts = $old`): `resolve` decided `If-Match` on
//!    that version, and a statement that finds it changed fails the attempt (retried).
//! 4. Commit. A unique violation (racing insert), a serialization failure (postgres_fdw
//!    runs remote transactions at `REPEATABLE READ`, so a concurrent update of a locked row
//!    fails instead of waiting) or a deadlock rolls the write back and runs it again from
//!    step 1, up to [`MAX_ATTEMPTS`] times: the retry re-decides it on the new state
//!    (a racing insert then makes an `Insert` fail with `EntityAlreadyExists`).
//!
//! A write whose connection turns out closed by the server (a restart) before its `COMMIT`
//! was sent cannot have been applied, and is run again too; a failure while committing is
//! reported as it is (the outcome is unknown). A statement that runs out of time is not
//! retried ([`crate::StoreError::Timeout`]).
//!
//! postgres_fdw commits the remote transactions at local commit without two-phase commit;
//! a write that touches one shard (every batch of the service: one PartitionKey) is atomic.

use super::client::{Health, Transaction};
use super::encode::{Jsonb, JsonbText, decode_entity, encode_props, encode_str};
use super::error::PostgresError;
use super::sql::{Param, SqlBuilder, points_cond};
use super::{PostgresBackend, Statements};
use crate::error::{BatchError, StoreError};
use crate::op::{WriteOp, Written};
use crate::resolve::{Change, StateReader, resolve};
use std::collections::HashMap;
use std::time::Duration;
use tableq_model::Entity;
use tokio_postgres::error::SqlState;

/// How often a write is attempted before a retryable failure is reported.
pub(crate) const MAX_ATTEMPTS: u32 = 40;

/// Why one attempt failed.
enum Failure {
    /// The write's own outcome (a semantic error): report it.
    Final(BatchError),
    /// A database failure; retry when [`retryable`].
    Database(PostgresError),
    /// A conditional `UPDATE`/`DELETE` found the row changed: retry.
    Changed,
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Failure {
        Failure::Database(e.into())
    }
}

impl From<PostgresError> for Failure {
    fn from(e: PostgresError) -> Failure {
        Failure::Database(e)
    }
}

fn retryable(e: &PostgresError) -> bool {
    match e {
        PostgresError::Database(e) => matches!(
            e.code(),
            Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE
                || *c == SqlState::T_R_DEADLOCK_DETECTED
                || *c == SqlState::UNIQUE_VIOLATION
        ),
        _ => false,
    }
}

/// Sleeps a little longer after each failed attempt, with jitter from the clock.
fn backoff(attempt: u32) {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() % 1000)
        .unwrap_or(0);
    std::thread::sleep(Duration::from_micros(
        200 * u64::from(attempt.min(20)) + u64::from(jitter),
    ));
}

impl PostgresBackend {
    pub(crate) fn write_ops(
        &self,
        table: &str,
        ops: Vec<WriteOp>,
    ) -> Result<Vec<Written>, BatchError> {
        let key = tableq_model::validate::table_key(table);
        let mut attempt = 0u32;
        loop {
            self.check_open()?;
            attempt += 1;
            let mut conn = self.pool.get().map_err(StoreError::from)?;
            let committing = std::cell::Cell::new(false);
            let outcome = (|| {
                let stmts = self.prepare_write(&mut conn)?;
                let mut tx = conn.client.transaction()?;
                let written = self.attempt(&mut tx, &stmts, table, &key, ops.clone())?;
                committing.set(true);
                tx.commit()?;
                Ok(written)
            })();
            let closed_before_commit = conn.client.health() == Health::Closed && !committing.get();
            match outcome {
                Ok(w) => return Ok(w),
                Err(Failure::Final(e)) if !closed_before_commit => return Err(e),
                Err(Failure::Changed) if attempt < MAX_ATTEMPTS => backoff(attempt),
                Err(_) if closed_before_commit && attempt < MAX_ATTEMPTS => {
                    drop(conn);
                    self.note_write_retry();
                }
                Err(Failure::Database(e)) if retryable(&e) && attempt < MAX_ATTEMPTS => {
                    drop(conn);
                    backoff(attempt);
                }
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::Changed) => {
                    return Err(StoreError::storage(format!(
                        "the entities kept changing during {MAX_ATTEMPTS} attempts of this write"
                    ))
                    .into());
                }
                Err(Failure::Database(e)) => return Err(StoreError::from(e).into()),
            }
        }
    }

    fn attempt(
        &self,
        tx: &mut Transaction<'_>,
        stmts: &WriteStatements,
        table: &str,
        key: &str,
        ops: Vec<WriteOp>,
    ) -> Result<Vec<Written>, Failure> {
        let Some(row) = tx.query_opt(&stmts.lock_table, &[&key])? else {
            return Err(Failure::Final(
                StoreError::TableNotFound(table.to_owned()).into(),
            ));
        };
        let table_id: i64 = row.try_get(0)?;
        let keys: Vec<(String, String)> = ops
            .iter()
            .map(|op| {
                let (pk, rk) = op.keys();
                (pk.to_owned(), rk.to_owned())
            })
            .collect();
        let mut reader = LockingReader {
            tx,
            stmts,
            relation: &self.sql.entities,
            table_id,
            keys,
            loaded: None,
            failure: None,
        };
        let resolved = match resolve(ops, &mut reader, &self.clock) {
            Ok(r) => r,
            Err(e) => {
                return Err(match reader.failure.take() {
                    Some(db) => Failure::Database(db),
                    None => Failure::Final(e),
                });
            }
        };
        let existing = reader.loaded.take().unwrap_or_default();
        let ts = resolved.timestamp.ticks();
        let mut inserts: Vec<&Entity> = Vec::new();
        for change in &resolved.changes {
            match change {
                Change::Put(e) => {
                    let k = (e.partition_key().to_owned(), e.row_key().to_owned());
                    if let Some(old) = existing.get(&k).and_then(Entity::timestamp) {
                        let n = tx.execute(
                            &stmts.update,
                            &[
                                &table_id,
                                &encode_str(e.partition_key()).as_ref(),
                                &encode_str(e.row_key()).as_ref(),
                                &ts,
                                &Jsonb(encode_props(e)),
                                &old.ticks(),
                            ],
                        )?;
                        if n != 1 {
                            return Err(Failure::Changed);
                        }
                    } else {
                        inserts.push(e);
                    }
                }
                Change::Delete {
                    partition_key,
                    row_key,
                } => {
                    let old = existing
                        .get(&(partition_key.clone(), row_key.clone()))
                        .and_then(Entity::timestamp)
                        .ok_or(Failure::Changed)?;
                    let n = tx.execute(
                        &stmts.delete,
                        &[
                            &table_id,
                            &encode_str(partition_key).as_ref(),
                            &encode_str(row_key).as_ref(),
                            &old.ticks(),
                        ],
                    )?;
                    if n != 1 {
                        return Err(Failure::Changed);
                    }
                }
            }
        }
        match inserts.as_slice() {
            [] => {}
            [e] => {
                tx.execute(
                    &stmts.insert_one,
                    &[
                        &table_id,
                        &encode_str(e.partition_key()).as_ref(),
                        &encode_str(e.row_key()).as_ref(),
                        &ts,
                        &Jsonb(encode_props(e)),
                    ],
                )?;
            }
            many => {
                let pks: Vec<String> = many
                    .iter()
                    .map(|e| encode_str(e.partition_key()).into_owned())
                    .collect();
                let rks: Vec<String> = many
                    .iter()
                    .map(|e| encode_str(e.row_key()).into_owned())
                    .collect();
                let props: Vec<Jsonb> = many.iter().map(|e| Jsonb(encode_props(e))).collect();
                tx.execute(&stmts.insert_many, &[&table_id, &ts, &pks, &rks, &props])?;
            }
        }
        Ok(resolved.written)
    }

    fn prepare_write(
        &self,
        conn: &mut super::pool::Conn,
    ) -> Result<WriteStatements, PostgresError> {
        let s: &Statements = &self.sql;
        Ok(WriteStatements {
            lock_table: conn.prepared(&s.lock_table)?,
            lock_one: conn.prepared(&s.lock_one)?,
            insert_one: conn.prepared(&s.insert_one)?,
            insert_many: conn.prepared(&s.insert_many)?,
            update: conn.prepared(&s.update)?,
            delete: conn.prepared(&s.delete)?,
        })
    }
}

/// The prepared statements of a write.
struct WriteStatements {
    lock_table: tokio_postgres::Statement,
    lock_one: tokio_postgres::Statement,
    insert_one: tokio_postgres::Statement,
    insert_many: tokio_postgres::Statement,
    update: tokio_postgres::Statement,
    delete: tokio_postgres::Statement,
}

type Existing = HashMap<(String, String), Entity>;

/// Reads (and row-locks) the current state of every entity of the write on first use.
struct LockingReader<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    stmts: &'t WriteStatements,
    relation: &'t str,
    table_id: i64,
    keys: Vec<(String, String)>,
    loaded: Option<Existing>,
    failure: Option<PostgresError>,
}

impl LockingReader<'_, '_> {
    fn load(&mut self) -> Result<Existing, PostgresError> {
        let rows = if let [(pk, rk)] = self.keys.as_slice() {
            self.tx.query(
                &self.stmts.lock_one,
                &[
                    &self.table_id,
                    &encode_str(pk).as_ref(),
                    &encode_str(rk).as_ref(),
                ],
            )?
        } else {
            let mut b = SqlBuilder::new();
            b.push("SELECT pk, rk, ts, props FROM ")
                .push(self.relation)
                .push(" WHERE table_id = ")
                .param(Param::Int8(self.table_id))
                .push(" AND (");
            points_cond(&self.keys).render(&mut b);
            b.push(") ORDER BY pk, rk FOR UPDATE");
            self.tx.query_typed(&b.sql, &b.typed_params())?
        };
        let mut out = HashMap::with_capacity(rows.len());
        for r in &rows {
            let pk: &str = r.try_get(0)?;
            let rk: &str = r.try_get(1)?;
            let ts: i64 = r.try_get(2)?;
            let props: JsonbText<'_> = r.try_get(3)?;
            let e = decode_entity(pk, rk, ts, props.0)?;
            out.insert((e.partition_key().to_owned(), e.row_key().to_owned()), e);
        }
        Ok(out)
    }
}

impl StateReader for LockingReader<'_, '_> {
    fn current(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        if self.loaded.is_none() {
            match self.load() {
                Ok(map) => self.loaded = Some(map),
                Err(e) => {
                    let message = e.to_string();
                    self.failure = Some(e);
                    return Err(StoreError::storage(message));
                }
            }
        }
        Ok(self
            .loaded
            .as_ref()
            .and_then(|m| m.get(&(pk.to_owned(), rk.to_owned())))
            .cloned())
    }
}
