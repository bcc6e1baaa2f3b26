//! [`VecSource`]: the simplest [`EntitySource`] — owned entities in a vector sorted by key.
//! For tests, examples and embedders whose tables are small or built once; a storage engine
//! with compact layouts, versions and durable storage lives in `tableq-store`.
//!
//! Scans binary-search their first key and walk the vector; a point get is one binary
//! search; [`split`](EntitySource::split) cuts by row position, so parallel scans get
//! chunks of exactly the requested size. Reads cannot fail ([`Infallible`]).
//!
//! ```
//! use tableq_exec::{Executor, PageOptions, VecSource};
//! use tableq_model::{Entity, Value};
//! use tableq_planner::{plan::{KeyRange, KeySet, Plan}, predicate::Predicate};
//!
//! let source = VecSource::new((0..5).map(|i| {
//!     let mut e = Entity::new("p", format!("r{i}"));
//!     e.set("N", Value::Int32(i));
//!     e
//! }));
//! let plan = Plan { ranges: KeySet::from(KeyRange::partition("p")), residual: Predicate::TRUE, select: None, top: Some(2) };
//! let page = Executor::new(&source).execute_page(&plan, None, &PageOptions::default()).unwrap();
//! assert_eq!(page.rows.len(), 2);
//! assert_eq!(page.continuation.unwrap().row_key, "r2");
//! ```

use crate::key::{Chunk, Key, Scan, compare_keys};
use crate::source::{EntityRef, EntitySource, OkRows};
use std::cmp::Ordering;
use std::convert::Infallible;
use tableq_model::Entity;

/// Entities sorted by (PartitionKey, RowKey) in the spec's UTF-16 order, one per key (see
/// the module docs).
#[derive(Debug, Clone, Default)]
pub struct VecSource {
    rows: Vec<Entity>,
}

impl VecSource {
    /// A source holding `entities`; of several entities with the same keys the last one
    /// given is kept (as an upsert would).
    pub fn new(entities: impl IntoIterator<Item = Entity>) -> VecSource {
        let mut rows: Vec<Entity> = entities.into_iter().collect();
        // Stable: among equal keys the input order is kept, so the last is the one to keep.
        rows.sort_by(|a, b| {
            compare_keys(
                a.partition_key(),
                a.row_key(),
                b.partition_key(),
                b.row_key(),
            )
        });
        let mut kept: Vec<Entity> = Vec::with_capacity(rows.len());
        for e in rows {
            match kept.last_mut() {
                Some(last)
                    if last.partition_key() == e.partition_key()
                        && last.row_key() == e.row_key() =>
                {
                    *last = e
                }
                _ => kept.push(e),
            }
        }
        VecSource { rows: kept }
    }

    /// The entities, in key order.
    pub fn entities(&self) -> &[Entity] {
        &self.rows
    }

    /// The number of entities.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the source holds no entity.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The position of the first entity at or after `(partition_key, row_key)`.
    fn position(&self, partition_key: &str, row_key: &str) -> usize {
        self.rows.partition_point(|e| {
            compare_keys(e.partition_key(), e.row_key(), partition_key, row_key) == Ordering::Less
        })
    }

    /// The positions `start..end` that can hold entities of `scan` (every entity of the
    /// scan lies inside; entities inside may still be outside the scan's RowKey interval).
    fn bounds(&self, scan: &Scan<'_>) -> (usize, usize) {
        let pk = &scan.range.partition_key;
        let mut start = self.position(&pk.start_key(), "");
        if let Some(from) = scan.from {
            start = start.max(self.position(&from.partition_key, &from.row_key));
        }
        let mut end =
            start + self.rows[start..].partition_point(|e| pk.position(e.partition_key()).is_le());
        if let Some(until) = scan.until {
            end = end.min(self.position(&until.partition_key, &until.row_key));
        }
        (start, end.max(start))
    }
}

impl FromIterator<Entity> for VecSource {
    fn from_iter<I: IntoIterator<Item = Entity>>(entities: I) -> VecSource {
        VecSource::new(entities)
    }
}

/// The rows of a [`VecSource`] scan, in key order.
#[derive(Debug, Clone)]
pub struct VecRows<'a> {
    rows: std::slice::Iter<'a, Entity>,
    scan: Scan<'a>,
}

impl<'a> Iterator for VecRows<'a> {
    type Item = EntityRef<'a>;

    fn next(&mut self) -> Option<EntityRef<'a>> {
        let scan = self.scan;
        self.rows
            .find(|e| scan.contains(e.partition_key(), e.row_key()))
            .map(EntityRef)
    }
}

impl EntitySource for VecSource {
    type Error = Infallible;
    type Row<'a> = EntityRef<'a>;
    type Rows<'a> = OkRows<VecRows<'a>>;

    fn scan<'a>(&'a self, scan: Scan<'a>) -> OkRows<VecRows<'a>> {
        let (start, end) = self.bounds(&scan);
        OkRows::new(VecRows {
            rows: self.rows[start..end].iter(),
            scan,
        })
    }

    fn get<'a>(
        &'a self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<EntityRef<'a>>, Infallible> {
        let i = self.position(partition_key, row_key);
        Ok(self
            .rows
            .get(i)
            .filter(|e| e.partition_key() == partition_key && e.row_key() == row_key)
            .map(EntityRef))
    }

    /// Cuts by position: chunks of `chunk_rows` entities of the vector (fewer of them may
    /// lie in the scan's RowKey interval, so no row count is given).
    fn split(
        &self,
        scan: Scan<'_>,
        chunk_rows: usize,
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, Infallible> {
        let (start, end) = self.bounds(&scan);
        let mut chunks = Vec::new();
        let mut from = scan.from.cloned();
        let mut at = start;
        while at < end {
            let next = at.saturating_add(chunk_rows.max(1));
            if next >= end {
                chunks.push(Chunk {
                    from,
                    until: scan.until.cloned(),
                    rows: None,
                });
                break;
            }
            let boundary = Key::new(self.rows[next].partition_key(), self.rows[next].row_key());
            chunks.push(Chunk {
                from: from.replace(boundary.clone()),
                until: Some(boundary),
                rows: None,
            });
            if chunks.len() >= max_chunks.max(1) {
                // The executor asks again from the last chunk's end.
                break;
            }
            at = next;
        }
        Ok(chunks)
    }
}
