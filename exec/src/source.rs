//! The storage abstraction: [`EntitySource`], the rows it yields ([`SourceRow`]) and the
//! optional property-slot hook that lets compiled predicates skip name lookups.
//!
//! # Contract for implementors
//!
//! * **Order.** [`EntitySource::scan`] yields exactly the entities of the [`Scan`] — key in
//!   the rectangle `scan.range`, `>= scan.from`, `< scan.until` — in strictly ascending
//!   (PartitionKey, RowKey) order under the UTF-16 ordinal order
//!   ([`tableq_model::order::compare_str`]; Rust's `str::cmp` differs for supplementary-plane
//!   characters). [`Scan::contains`] is the reference for "in the scan". The executor's
//!   scans use the ranges of a [`KeySet`](tableq_planner::plan::KeySet): non-empty, with
//!   canonical bounds; [`KeyInterval::start_key`](tableq_planner::plan::KeyInterval::start_key)
//!   and [`end_key`](tableq_planner::plan::KeyInterval::end_key) give where an ordered store
//!   seeks to and stops.
//! * **Snapshots.** Every scan, split and get on one `&self` must observe one consistent
//!   state of the table: an entity is seen entirely before or entirely after a concurrent
//!   write, never half-written, and two scans of the same source value agree. The executor
//!   runs a page against one `&self`; to give each page a fresh view, make the source value a
//!   snapshot (as `tableq-store`'s `MemorySnapshot` is) and take a new one per page.
//!   Entities inserted or deleted between pages are handled by the continuation protocol.
//! * **Splits.** [`EntitySource::split`] cuts the front of a scan into contiguous, ordered
//!   [`Chunk`]s that can be scanned independently and in parallel. The default returns the
//!   whole scan as one chunk (correct, only less parallel).
//! * **No I/O in the query crates.** A source backed by disk or network does its I/O inside
//!   these calls (blocking); tableq-exec itself never performs I/O and is not async.
//!
//! * **Errors.** A source that can fail (disk, network) names its error type
//!   ([`EntitySource::Error`]): a scan yields `Result` rows, `get` and `split` return
//!   `Result`. The executor stops a page at the first error that affects it — in key order,
//!   as a sequential scan would meet it — and returns it as
//!   [`ExecError::Source`](crate::ExecError::Source), typed; errors in chunks read ahead
//!   past the page's end are ignored, like their rows. After a scan yielded an error the
//!   executor does not ask that iterator for more. A source that cannot fail uses
//!   [`std::convert::Infallible`] and wraps its row iterator in [`OkRows`]: the executor's
//!   error paths then compile away (this is how [`VecSource`](crate::VecSource) and
//!   `tableq-store`'s `MemorySnapshot` stay as fast as if errors did not exist).
//!
//! # Example: a `BTreeMap` store
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::convert::Infallible;
//! use tableq_exec::{EntityRef, EntitySource, Executor, OkRows, PageOptions, Scan};
//! use tableq_model::{order::OrdinalString, Entity, Value};
//! use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
//!
//! /// Entities keyed by (PartitionKey, RowKey) in UTF-16 ordinal order.
//! struct Store(BTreeMap<(OrdinalString, OrdinalString), Entity>);
//!
//! impl EntitySource for Store {
//!     type Error = Infallible;
//!     type Row<'a> = EntityRef<'a>;
//!     type Rows<'a> = OkRows<Box<dyn Iterator<Item = EntityRef<'a>> + 'a>>;
//!
//!     fn scan<'a>(&'a self, scan: Scan<'a>) -> Self::Rows<'a> {
//!         // Start at the PartitionKey interval's first key or at `from`, whichever is later;
//!         // stop past the interval or at `until`; skip RowKeys outside the rectangle.
//!         let pk = &scan.range.partition_key;
//!         let mut start = (OrdinalString(pk.start_key().into_owned()), OrdinalString::default());
//!         if let Some(k) = scan.from {
//!             start = start.max((OrdinalString(k.partition_key.clone()), OrdinalString(k.row_key.clone())));
//!         }
//!         OkRows::new(Box::new(
//!             self.0
//!                 .range(start..)
//!                 .map(|(_, e)| EntityRef(e))
//!                 .take_while(move |e| {
//!                     pk.position(e.0.partition_key()).is_le()
//!                         && scan.until.is_none_or(|u| u.cmp_pair(e.0.partition_key(), e.0.row_key()).is_gt())
//!                 })
//!                 .filter(move |e| scan.contains(e.0.partition_key(), e.0.row_key())),
//!         ))
//!     }
//!
//!     fn get<'a>(&'a self, partition_key: &str, row_key: &str) -> Result<Option<EntityRef<'a>>, Infallible> {
//!         let key = (OrdinalString(partition_key.into()), OrdinalString(row_key.into()));
//!         Ok(self.0.get(&key).map(EntityRef))
//!     }
//! }
//!
//! let mut map = BTreeMap::new();
//! for i in 0..10 {
//!     let mut e = Entity::new("p", format!("r{i}"));
//!     e.set("Age", Value::Int32(i));
//!     map.insert((OrdinalString("p".into()), OrdinalString(format!("r{i}"))), e);
//! }
//! let store = Store(map);
//! let plan = Plan {
//!     ranges: KeySet::all(),
//!     residual: Predicate::TRUE,
//!     select: None,
//!     top: Some(4),
//! };
//! let page = Executor::new(&store).execute_page(&plan, None, &PageOptions::default()).unwrap();
//! assert_eq!(page.rows.len(), 4);
//! assert_eq!(page.continuation.unwrap().row_key, "r4");
//! ```
//!
//! # Example: a source that fails
//!
//! ```
//! use tableq_exec::{EntityRef, EntitySource, ExecError, Executor, PageOptions, Scan};
//! use tableq_model::Entity;
//! use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("disk read failed")]
//! struct DiskError;
//!
//! /// Reads fine up to the third entity, then the disk fails.
//! struct Failing(Vec<Entity>);
//!
//! impl EntitySource for Failing {
//!     type Error = DiskError;
//!     type Row<'a> = EntityRef<'a>;
//!     type Rows<'a> = Box<dyn Iterator<Item = Result<EntityRef<'a>, DiskError>> + 'a>;
//!
//!     fn scan<'a>(&'a self, scan: Scan<'a>) -> Self::Rows<'a> {
//!         let rows = self.0.iter().enumerate().filter(move |(_, e)| scan.contains(e.partition_key(), e.row_key()));
//!         Box::new(rows.map(|(i, e)| if i < 3 { Ok(EntityRef(e)) } else { Err(DiskError) }))
//!     }
//!
//!     fn get<'a>(&'a self, _: &str, _: &str) -> Result<Option<EntityRef<'a>>, DiskError> {
//!         Err(DiskError)
//!     }
//! }
//!
//! let store = Failing((0..5).map(|i| Entity::new("p", format!("r{i}"))).collect());
//! let plan = Plan { ranges: KeySet::all(), residual: Predicate::TRUE, select: None, top: None };
//! let executor = Executor::new(&store);
//! // The first page of two rows never reaches the failing entity…
//! let first = executor.execute_page(&plan, None, &PageOptions::default().with_page_size(2)).unwrap();
//! assert_eq!(first.rows.len(), 2);
//! // …the next one does, and gets the source's own error back.
//! let err = executor.execute_page(&plan, first.continuation.as_ref(), &PageOptions::default()).unwrap_err();
//! assert!(matches!(err, ExecError::Source(DiskError)));
//! ```

use crate::batch::Columns;
use crate::comparison::{ValueTest, WORD_ROWS};
use crate::key::{Chunk, Scan};
pub use crate::slot::{PropertySlot, SlotLookup};
use std::convert::Infallible;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use tableq_model::json::ListProperties;
use tableq_model::{DateTime, Entity, EntityView, ValueRef};

/// One entity as a source yields it: readable through [`EntityView`], its custom
/// properties listed through [`ListProperties`] (the model's one way of listing a row's
/// properties, which the JSON writers read too: a row goes to the wire without an adapter),
/// and convertible to an owned [`Entity`] for results.
pub trait SourceRow: ListProperties + Send + Sync {
    /// The entity as an owned value (what result pages hold).
    fn to_entity(&self) -> Entity;

    /// A custom property by a slot the source issued through
    /// [`EntitySource::property_slot`]. Sources that return [`SlotLookup::Slot`] must
    /// implement this; the default (for sources without slots) answers `None`.
    fn custom_by_slot(&self, slot: PropertySlot) -> Option<ValueRef<'_>> {
        let _ = slot;
        None
    }

    /// Whether the custom property in `slot` satisfies `test` (`false` when the row has no
    /// such property): how compiled predicates test slots. The default decodes the value
    /// ([`custom_by_slot`](SourceRow::custom_by_slot)); a source that can read a stored
    /// number without decoding a whole value overrides it, calling the typed
    /// [`ValueTest::matches_int32`] and the like — it must answer exactly as the default.
    #[inline]
    fn test_slot(&self, slot: PropertySlot, test: &ValueTest) -> bool {
        self.custom_by_slot(slot).is_some_and(|v| test.matches(v))
    }
}

/// An ordered store of entities the executor can query. See the module docs for the
/// contract (order, snapshot consistency, splits, errors) and example implementations.
pub trait EntitySource: Sync {
    /// Why a read failed (a disk or network error, a corrupt record, …);
    /// [`Infallible`] for sources that cannot fail. The executor hands it back unchanged in
    /// [`ExecError::Source`](crate::ExecError::Source).
    type Error: std::error::Error + Send + Sync + 'static;

    /// The row representation scans yield (often a borrowed view into the store).
    type Row<'a>: SourceRow
    where
        Self: 'a;

    /// The iterator [`scan`](EntitySource::scan) returns: rows, or the error that ended the
    /// scan (the executor asks for nothing more after an error). Infallible sources wrap
    /// their row iterator in [`OkRows`].
    type Rows<'a>: Iterator<Item = Result<Self::Row<'a>, Self::Error>>
    where
        Self: 'a;

    /// Every entity of `scan`, in ascending key order (see the module docs).
    fn scan<'a>(&'a self, scan: Scan<'a>) -> Self::Rows<'a>;

    /// Calls `visit` with every entity of `scan`, in ascending key order, until it returns
    /// [`ControlFlow::Break`]: the same rows, in the same order and with the same errors as
    /// [`scan`](EntitySource::scan) yields them (the first error ends the scan and is
    /// returned; a break returns `Ok`).
    ///
    /// This is how the executor reads a chunk. The default iterates over
    /// [`scan`](EntitySource::scan); a source whose rows live in blocks overrides it with a
    /// loop per block, which compiles into a tighter loop around `visit` than an iterator
    /// that keeps its position between calls.
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// use tableq_exec::{EntitySource, Scan, VecSource};
    /// use tableq_model::{Entity, EntityView};
    /// use tableq_planner::plan::KeyRange;
    /// let source = VecSource::new((0..5).map(|i| Entity::new("p", format!("r{i}"))));
    /// let range = KeyRange::full();
    /// let mut keys = Vec::new();
    /// source.scan_each(Scan { range: &range, from: None, until: None }, |row| {
    ///     keys.push(row.row_key().to_owned());
    ///     if keys.len() == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    /// }).unwrap();
    /// assert_eq!(keys, ["r0", "r1"]);
    /// ```
    #[inline]
    fn scan_each<'a, F>(&'a self, scan: Scan<'a>, mut visit: F) -> Result<(), Self::Error>
    where
        F: FnMut(Self::Row<'a>) -> ControlFlow<()>,
    {
        for row in self.scan(scan) {
            if visit(row?).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Calls `visit` with the entities of `scan` that pass `filter`, in ascending key
    /// order, and with how many did not ([`Filtered`]): the rows [`scan_each`] yields,
    /// filtered. A [`ControlFlow::Break`] from `visit` stops the scan *before the next
    /// entity*, which is then handed over as [`Filtered::Next`] (not tested) if the scan
    /// has one. Errors as in [`scan_each`].
    ///
    /// Rows that fail are reported ([`Filtered::Skipped`]) at least every
    /// `report_every` rows (at most every [`FILTER_BATCH`]; a visitor that keeps a work
    /// budget asks for its interval), so that the visitor may stop between them.
    ///
    /// This is how the executor scans a chunk with a residual. The default tests each row
    /// ([`RowFilter::test_row`]). A source that stores properties as columns overrides it and hands
    /// runs of rows to [`filter_run`], which tests a whole column at a time
    /// ([`crate::batch`]); it must visit exactly what the default visits.
    ///
    /// [`scan_each`]: EntitySource::scan_each
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// use tableq_exec::{CompiledPredicate, EntitySource, Filtered, Scan, VecSource};
    /// use tableq_model::{CmpOp, Entity, EntityView, Value};
    /// use tableq_planner::{plan::KeyRange, predicate::Predicate};
    /// let source = VecSource::new((0..6).map(|i| {
    ///     let mut e = Entity::new("p", format!("r{i}"));
    ///     e.set("N", Value::Int32(i));
    ///     e
    /// }));
    /// let odd = Predicate::or([1, 3, 5].map(|n| Predicate::compare("N", CmpOp::Eq, Value::Int32(n))));
    /// let filter = CompiledPredicate::compile(&odd, &source);
    /// let range = KeyRange::full();
    /// let mut seen = Vec::new();
    /// source.scan_filtered(Scan { range: &range, from: None, until: None }, &filter, usize::MAX, |f| {
    ///     match f {
    ///         Filtered::Match { row, skipped } => seen.push(format!("{skipped} then {}", row.row_key())),
    ///         Filtered::Skipped(n) => seen.push(format!("{n} more")),
    ///         Filtered::Next(row) => seen.push(format!("next {}", row.row_key())),
    ///     }
    ///     // Stop after the second match.
    ///     if seen.len() == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    /// }).unwrap();
    /// assert_eq!(seen, ["1 then r1", "1 then r3", "next r4"]);
    /// ```
    fn scan_filtered<'a, P, F>(
        &'a self,
        scan: Scan<'a>,
        filter: &P,
        report_every: usize,
        visit: F,
    ) -> Result<(), Self::Error>
    where
        P: RowFilter + ?Sized,
        F: FnMut(Filtered<Self::Row<'a>>) -> ControlFlow<()>,
    {
        filter_each(self, scan, filter, report_every, visit)
    }

    /// The entity with exactly these keys (`Ok(None)` when there is none).
    fn get<'a>(
        &'a self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Self::Row<'a>>, Self::Error>;

    /// Cuts the front of `scan` into at most `max_chunks` contiguous chunks of about
    /// `chunk_rows` entities each, in key order, for parallel scanning.
    ///
    /// The chunks must cover the scan from its start without gaps or overlap:
    /// `chunks[0].from` is `None` or a key `<=` the scan's first entity, and each
    /// `chunks[i].until == chunks[i + 1].from`. The last chunk's `until` is `None` when the
    /// chunks reach the end of the scan; otherwise the executor asks again for the rest,
    /// starting there. An empty vector means the scan holds no entity.
    ///
    /// The default returns one chunk: the whole scan. An error fails the page.
    fn split(
        &self,
        scan: Scan<'_>,
        chunk_rows: usize,
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, Self::Error> {
        let _ = (chunk_rows, max_chunks);
        Ok(vec![Chunk {
            from: scan.from.cloned(),
            until: scan.until.cloned(),
            rows: None,
        }])
    }

    /// Resolves a custom property name once per query (see [`SlotLookup`]). The default:
    /// [`SlotLookup::ByName`]. Infallible: a source that cannot tell answers `ByName`.
    fn property_slot(&self, name: &str) -> SlotLookup {
        let _ = name;
        SlotLookup::ByName
    }
}

/// The most rows a filtered scan tests between two reports to its visitor
/// ([`EntitySource::scan_filtered`], [`filter_run`]): its batches of rows tested at once,
/// and the longest run of failing rows between two [`Filtered::Skipped`] (or
/// [`Filtered::Match`]) visits. A visitor that keeps a work budget or watches a shared
/// limit asks for fewer (`report_every`).
pub const FILTER_BATCH: usize = 1024;

/// What a filtered scan tells its visitor ([`EntitySource::scan_filtered`]).
#[derive(Debug)]
pub enum Filtered<R> {
    /// `row` passes the filter; the `skipped` rows before it (since the last report) did
    /// not.
    Match {
        /// The matching row.
        row: R,
        /// Rows before it that did not match.
        skipped: u64,
    },
    /// This many rows (since the last report) did not pass.
    Skipped(u64),
    /// The visitor stopped the scan: this is the entity after the last one reported (not
    /// tested), where the scan would have gone on.
    Next(R),
}

/// A row predicate a source can evaluate one row at a time or over a run of rows stored
/// as columns: what [`EntitySource::scan_filtered`] filters with.
/// [`CompiledPredicate`](crate::CompiledPredicate) implements it.
pub trait RowFilter: Sync {
    /// Whether `row` passes.
    fn test_row<R: SourceRow + ?Sized>(&self, row: &R) -> bool;

    /// Tests every row of a run at once: `out` becomes the run's bitmap
    /// ([`Columns::words`] words; bit set = the row passes, bits outside the run clear).
    /// `row(i)` is row `i` of the column space, for the comparisons without a column form;
    /// it is called only for rows of the run. The answer for each row must be
    /// [`test_row`](RowFilter::test_row)'s.
    fn test_run<C, R>(&self, columns: &C, row: &dyn Fn(usize) -> R, out: &mut Vec<u64>)
    where
        C: Columns + ?Sized,
        R: SourceRow;
}

/// [`EntitySource::scan_filtered`] row by row (its default): [`EntitySource::scan_each`]
/// with each row tested by [`RowFilter::test_row`]. For a source's own override to fall
/// back on (the durable engine's, when its memtable holds entries in the scan).
pub fn filter_each<'a, S, P, F>(
    source: &'a S,
    scan: Scan<'a>,
    filter: &P,
    report_every: usize,
    mut visit: F,
) -> Result<(), S::Error>
where
    S: EntitySource + ?Sized,
    P: RowFilter + ?Sized,
    F: FnMut(Filtered<S::Row<'a>>) -> ControlFlow<()>,
{
    let every = report_every.clamp(1, FILTER_BATCH) as u64;
    let mut skipped = 0u64;
    let mut stopped = false;
    source.scan_each(scan, |row| {
        if stopped {
            let _ = visit(Filtered::Next(row));
            return ControlFlow::Break(());
        }
        let flow = if filter.test_row(&row) {
            visit(Filtered::Match {
                row,
                skipped: std::mem::take(&mut skipped),
            })
        } else {
            skipped += 1;
            if skipped < every {
                return ControlFlow::Continue(());
            }
            visit(Filtered::Skipped(std::mem::take(&mut skipped)))
        };
        stopped = flow.is_break();
        ControlFlow::Continue(())
    })?;
    if !stopped && skipped > 0 {
        let _ = visit(Filtered::Skipped(skipped));
    }
    Ok(())
}

/// Where [`filter_run`] left a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every row of the run was tested and reported.
    Done,
    /// The visitor stopped after row `i` (column space): the scan stops before the row
    /// after it, which the source hands over as [`Filtered::Next`].
    StoppedAfter(usize),
}

/// Filters one run of rows stored as columns for
/// [`EntitySource::scan_filtered`]: tests the run `report_every` rows at a time (at most
/// [`FILTER_BATCH`]) with [`RowFilter::test_run`], visits each match as
/// [`Filtered::Match`] and reports the rest after each batch. `test(i)` is row `i` of the
/// column space as a comparison without a column reads it; `take(i)` is the same row as
/// the visitor gets it (a source that reads rows in place and keeps only what it hands
/// over passes two functions, others the same one twice); `scratch` is reused between
/// calls. The source then goes on with its next run, or, on [`RunEnd::StoppedAfter`],
/// hands its next row to the visitor as [`Filtered::Next`] and stops.
pub fn filter_run<C, T, R, P, F>(
    filter: &P,
    columns: &C,
    test: &dyn Fn(usize) -> T,
    take: &dyn Fn(usize) -> R,
    report_every: usize,
    scratch: &mut Vec<u64>,
    visit: &mut F,
) -> RunEnd
where
    C: Columns + ?Sized,
    T: SourceRow,
    P: RowFilter + ?Sized,
    F: FnMut(Filtered<R>) -> ControlFlow<()>,
{
    let run = columns.rows();
    let batch_rows = report_every.clamp(1, FILTER_BATCH);
    let mut start = run.start;
    while start < run.end {
        let end = run.end.min(start + batch_rows);
        let batch = Batch {
            columns,
            rows: start..end,
        };
        filter.test_run(&batch, test, scratch);
        let first_word = start / WORD_ROWS;
        // The next row to account for: every row before it was reported.
        let mut next = start;
        for (k, &word) in scratch.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = (first_word + k) * WORD_ROWS + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let skipped = (i - next) as u64;
                next = i + 1;
                if visit(Filtered::Match {
                    row: take(i),
                    skipped,
                })
                .is_break()
                {
                    return RunEnd::StoppedAfter(i);
                }
            }
        }
        if next < end && visit(Filtered::Skipped((end - next) as u64)).is_break() {
            return RunEnd::StoppedAfter(end - 1);
        }
        start = end;
    }
    RunEnd::Done
}

/// Rows `rows` of a run, for one [`RowFilter::test_run`].
struct Batch<'c, C: ?Sized> {
    columns: &'c C,
    rows: std::ops::Range<usize>,
}

impl<C: Columns + ?Sized> Columns for Batch<'_, C> {
    fn rows(&self) -> std::ops::Range<usize> {
        self.rows.clone()
    }
    fn column(&self, slot: PropertySlot) -> crate::batch::Column<'_> {
        self.columns.column(slot)
    }
    fn range(&self, slot: PropertySlot) -> Option<crate::batch::ColumnRange> {
        self.columns.range(slot)
    }
}

/// The rows of a source that cannot fail, as the `Result` items
/// [`EntitySource::Rows`] yields: every row `Ok`. With `E =` [`Infallible`] (the default)
/// the executor's error handling compiles away.
///
/// ```
/// use tableq_exec::OkRows;
/// let mut rows: OkRows<_> = OkRows::new([1, 2].into_iter());
/// assert_eq!(rows.next(), Some(Ok(1)));
/// ```
pub struct OkRows<I, E = Infallible> {
    rows: I,
    error: PhantomData<fn() -> E>,
}

impl<I, E> OkRows<I, E> {
    /// Wraps an iterator of rows.
    #[inline]
    pub fn new(rows: I) -> OkRows<I, E> {
        OkRows {
            rows,
            error: PhantomData,
        }
    }

    /// The wrapped iterator.
    pub fn into_inner(self) -> I {
        self.rows
    }
}

impl<I: Iterator, E> Iterator for OkRows<I, E> {
    type Item = Result<I::Item, E>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.rows.next().map(Ok)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.rows.size_hint()
    }
}

impl<I: Clone, E> Clone for OkRows<I, E> {
    fn clone(&self) -> Self {
        OkRows::new(self.rows.clone())
    }
}

impl<I: std::fmt::Debug, E> std::fmt::Debug for OkRows<I, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OkRows").field(&self.rows).finish()
    }
}

/// A borrowed [`Entity`] as a [`SourceRow`]: the row type for stores that keep `Entity`
/// values (see the module example).
#[derive(Debug, Clone, Copy)]
pub struct EntityRef<'a>(pub &'a Entity);

impl EntityView for EntityRef<'_> {
    fn partition_key(&self) -> &str {
        self.0.partition_key()
    }
    fn row_key(&self) -> &str {
        self.0.row_key()
    }
    fn timestamp(&self) -> Option<DateTime> {
        self.0.timestamp()
    }
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        EntityView::custom(self.0, name)
    }
}

impl ListProperties for EntityRef<'_> {
    fn for_each_custom(&self, f: &mut dyn FnMut(&str, ValueRef<'_>)) {
        self.0.for_each_custom(f);
    }
}

impl SourceRow for EntityRef<'_> {
    fn to_entity(&self) -> Entity {
        self.0.clone()
    }
}

impl SourceRow for Entity {
    fn to_entity(&self) -> Entity {
        self.clone()
    }
}

/// A JSON line decoded in place (the [`stream`](crate::stream) engine's rows).
impl SourceRow for tableq_model::json::BorrowedEntity<'_> {
    fn to_entity(&self) -> Entity {
        tableq_model::json::BorrowedEntity::to_entity(self)
    }
}
