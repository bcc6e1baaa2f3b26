//! The read path: one query page as an [`EntitySource`] over one PostgreSQL transaction, so
//! that tableq's [`Executor`](tableq_exec::Executor) runs the page (ranges, `$top`,
//! continuation, `$select`, anything not pushed down) on rows fetched with SQL.
//!
//! * The page runs in one `REPEATABLE READ READ ONLY` transaction: every statement of the
//!   page sees one snapshot (the executor's consistency contract).
//! * A scan of a key range is a sequence of keyset-paginated statements
//!   `… WHERE table_id = $1 AND <range> AND <after the last row> AND <pushed-down residual>
//!   ORDER BY pk, rk LIMIT $n`: the first asks for the page size + 1 rows when the pushdown
//!   is exact (the page and the key of the next candidate, i.e. the continuation, in one
//!   round trip), later ones for 4× more (at most [`MAX_BATCH`]). With an inexact pushdown
//!   the first batch is at least 256 rows.
//! * Point ranges (`PartitionKey eq … and RowKey eq …`, and OR-ed points) are fetched
//!   together in one statement per 500 points before the page runs
//!   (`(pk = $p AND rk = ANY($rks)) OR …`); the executor's point lookups read them from
//!   memory.
//! * A failed statement ends the scan; the failure is kept and the whole page fails with
//!   it ([`PageSource::finish`]): never a silently short page.
//!
//! Rows are decoded to owned [`Entity`] values (the executor's row type here).

use super::client::Transaction;
use super::encode::{JsonbText, decode_entity};
use super::error::PostgresError;
use super::sql::{Cond, Param, SqlBuilder, points_cond, scan_cond};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tableq_exec::{EntitySource, Key, Scan};
use tableq_model::Entity;
use tableq_model::order::compare_str;
use tableq_planner::plan::{KeyRange, KeySet};

/// The largest batch one statement fetches.
pub(crate) const MAX_BATCH: usize = 8192;
/// The smallest first batch when the pushdown is inexact.
const MIN_INEXACT_BATCH: usize = 256;
/// Points fetched by one statement.
const POINTS_PER_STATEMENT: usize = 500;

/// One page's view of a table (see the module docs).
pub(crate) struct PageSource<'c> {
    tx: Mutex<Transaction<'c>>,
    /// `"schema".entities`.
    relation: String,
    table_id: i64,
    pushdown: Cond,
    first_batch: usize,
    points: HashMap<(String, String), Option<Entity>>,
    error: Mutex<Option<PostgresError>>,
    fetched: AtomicU64,
}

impl<'c> PageSource<'c> {
    /// A source over `tx` for the table `table_id`; `limit` is the page size and `exact`
    /// whether `pushdown` decides the residual exactly.
    pub(crate) fn new(
        tx: Transaction<'c>,
        relation: String,
        table_id: i64,
        pushdown: Cond,
        limit: usize,
        exact: bool,
    ) -> PageSource<'c> {
        let first = limit.saturating_add(1);
        let first_batch = if exact {
            first
        } else {
            first.max(MIN_INEXACT_BATCH)
        };
        PageSource {
            tx: Mutex::new(tx),
            relation,
            table_id,
            pushdown,
            first_batch: first_batch.min(MAX_BATCH),
            points: HashMap::new(),
            error: Mutex::new(None),
            fetched: AtomicU64::new(0),
        }
    }

    /// Fetches the point ranges of `ranges` at or after `from` (when there are two or more).
    pub(crate) fn prefetch_points(&mut self, ranges: &KeySet, from: Option<&Key>) {
        let points: Vec<(String, String)> = ranges
            .ranges()
            .iter()
            .filter_map(|r| Some((r.partition_key.as_point()?, r.row_key.as_point()?)))
            .filter(|(pk, rk)| from.is_none_or(|f| f.cmp_pair(pk, rk).is_le()))
            .map(|(pk, rk)| (pk.to_owned(), rk.to_owned()))
            .collect();
        if points.len() < 2 {
            return;
        }
        for chunk in points.chunks(POINTS_PER_STATEMENT) {
            let mut b = self.select();
            b.push(" AND (");
            points_cond(chunk).render(&mut b);
            b.push(")");
            self.push_pushdown(&mut b);
            match self.run(&b) {
                Ok(rows) => {
                    for k in chunk {
                        self.points.insert(k.clone(), None);
                    }
                    for e in rows {
                        let k = (e.partition_key().to_owned(), e.row_key().to_owned());
                        self.points.insert(k, Some(e));
                    }
                }
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
    }

    /// `SELECT … FROM entities WHERE table_id = $1` (conditions follow with ` AND …`).
    fn select(&self) -> SqlBuilder {
        let mut b = SqlBuilder::new();
        b.push("SELECT pk, rk, ts, props FROM ")
            .push(&self.relation)
            .push(" WHERE table_id = ")
            .param(Param::Int8(self.table_id));
        b
    }

    fn push_pushdown(&self, b: &mut SqlBuilder) {
        if self.pushdown != Cond::True {
            b.push(" AND (");
            self.pushdown.render(b);
            b.push(")");
        }
    }

    /// The statement reading up to `limit` rows of `range` from a position.
    pub(crate) fn scan_sql(
        &self,
        range: &KeyRange,
        from: Option<&Key>,
        after: Option<&Key>,
        until: Option<&Key>,
        limit: usize,
    ) -> Option<SqlBuilder> {
        let cond = scan_cond(range, from, after, until);
        if cond == Cond::False {
            return None;
        }
        let mut b = self.select();
        if cond != Cond::True {
            b.push(" AND ");
            cond.render(&mut b);
        }
        self.push_pushdown(&mut b);
        b.push(" ORDER BY pk, rk LIMIT ")
            .param(Param::Int8(limit as i64));
        Some(b)
    }

    /// The first statement of a scan of `range` (for `explain`).
    pub(crate) fn first_scan_sql(
        &self,
        range: &KeyRange,
        from: Option<&Key>,
    ) -> Option<SqlBuilder> {
        self.scan_sql(range, from, None, None, self.first_batch)
    }

    fn failed(&self) -> bool {
        self.error.lock().map(|e| e.is_some()).unwrap_or(true)
    }

    /// The recorded failure, if any (moved out: it is reported once).
    fn take_error(&self) -> Option<PostgresError> {
        self.error.lock().ok().and_then(|mut slot| slot.take())
    }

    fn fail(&self, e: PostgresError) {
        if let Ok(mut slot) = self.error.lock()
            && slot.is_none()
        {
            *slot = Some(e);
        }
    }

    /// Runs a statement and decodes its rows.
    fn run(&self, b: &SqlBuilder) -> Result<Vec<Entity>, PostgresError> {
        let rows = {
            let mut tx = self.tx.lock().map_err(|_| {
                PostgresError::Decode(super::encode::DecodeError(
                    "poisoned transaction lock".into(),
                ))
            })?;
            tx.query_typed(&b.sql, &b.typed_params())?
        };
        self.fetched.fetch_add(rows.len() as u64, Ordering::Relaxed);
        rows.iter()
            .map(|r| {
                let pk: &str = r.try_get(0)?;
                let rk: &str = r.try_get(1)?;
                let ts: i64 = r.try_get(2)?;
                let props: JsonbText<'_> = r.try_get(3)?;
                Ok(decode_entity(pk, rk, ts, props.0)?)
            })
            .collect()
    }

    /// Ends the page: the transaction, the first failure if any, and the rows fetched.
    pub(crate) fn finish(self) -> (Transaction<'c>, Option<PostgresError>, u64) {
        let error = self.error.into_inner().unwrap_or_else(|e| e.into_inner());
        let tx = self.tx.into_inner().unwrap_or_else(|e| e.into_inner());
        (tx, error, self.fetched.into_inner())
    }

    /// Runs an arbitrary statement's `EXPLAIN (VERBOSE, COSTS OFF)` in this snapshot.
    pub(crate) fn explain(&self, b: &SqlBuilder) -> Result<Vec<String>, PostgresError> {
        let mut tx = self.tx.lock().map_err(|_| {
            PostgresError::Decode(super::encode::DecodeError(
                "poisoned transaction lock".into(),
            ))
        })?;
        let rows = tx.query_typed(
            &format!("EXPLAIN (VERBOSE, COSTS OFF) {}", b.sql),
            &b.typed_params(),
        )?;
        rows.iter()
            .map(|r| r.try_get::<_, String>(0).map_err(PostgresError::from))
            .collect()
    }
}

/// The rows of one scan, fetched in batches (see the module docs).
pub(crate) struct PgRows<'s, 'c> {
    source: &'s PageSource<'c>,
    range: KeyRange,
    from: Option<Key>,
    until: Option<Key>,
    after: Option<Key>,
    buffer: std::vec::IntoIter<Entity>,
    batch: usize,
    done: bool,
}

impl PgRows<'_, '_> {
    fn fetch(&mut self) {
        if self.source.failed() {
            self.done = true;
            return;
        }
        let Some(b) = self.source.scan_sql(
            &self.range,
            self.from.as_ref(),
            self.after.as_ref(),
            self.until.as_ref(),
            self.batch,
        ) else {
            self.done = true;
            return;
        };
        match self.source.run(&b) {
            Ok(rows) => {
                if rows.len() < self.batch {
                    self.done = true;
                }
                if let Some(last) = rows.last() {
                    self.after = Some(Key::new(last.partition_key(), last.row_key()));
                }
                self.batch = self.batch.saturating_mul(4).min(MAX_BATCH);
                self.buffer = rows.into_iter();
            }
            Err(e) => {
                self.source.fail(e);
                self.done = true;
            }
        }
    }
}

impl Iterator for PgRows<'_, '_> {
    type Item = Result<Entity, PostgresError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.buffer.next() {
                return Some(Ok(e));
            }
            if self.done {
                // A failed statement ends the scan with its error (once): the executor stops
                // the page there instead of returning a short one.
                return self.source.take_error().map(Err);
            }
            self.fetch();
        }
    }
}

impl<'c> EntitySource for PageSource<'c> {
    type Error = PostgresError;
    type Row<'a>
        = Entity
    where
        Self: 'a;
    type Rows<'a>
        = PgRows<'a, 'c>
    where
        Self: 'a;

    fn scan<'a>(&'a self, scan: Scan<'a>) -> PgRows<'a, 'c> {
        PgRows {
            source: self,
            range: scan.range.clone(),
            from: scan.from.cloned(),
            until: scan.until.cloned(),
            after: None,
            buffer: Vec::new().into_iter(),
            batch: self.first_batch,
            done: false,
        }
    }

    fn get(&self, partition_key: &str, row_key: &str) -> Result<Option<Entity>, PostgresError> {
        if let Some(found) = self
            .points
            .get(&(partition_key.to_owned(), row_key.to_owned()))
        {
            return Ok(found.clone());
        }
        if let Some(e) = self.take_error() {
            return Err(e);
        }
        let range = KeyRange::point(partition_key, row_key);
        let Some(b) = self.scan_sql(&range, None, None, None, 1) else {
            return Ok(None);
        };
        let mut rows = self.run(&b)?;
        Ok(rows.pop().filter(|e| {
            compare_str(e.partition_key(), partition_key).is_eq()
                && compare_str(e.row_key(), row_key).is_eq()
        }))
    }
}
