//! Where a page's results go, wave by wave, in key order: [`Materialize`] builds owned
//! [`ResultRow`]s (in parallel for large waves), [`Visit`] hands borrowed [`RowView`]s to a
//! caller's closure on the calling thread (no allocation per row).
//!
//! ```
//! use tableq_exec::{Executor, VecSource, PageOptions};
//! use tableq_model::{Entity, Value};
//! use tableq_planner::{plan::{KeySet, Plan}, predicate::Predicate};
//! let mut e = Entity::new("p", "r");
//! e.set("A", Value::Int32(1));
//! let snapshot = VecSource::new([e]);
//! let plan = Plan { ranges: KeySet::all(), residual: Predicate::TRUE, select: Some(vec!["A".into(), "B".into()]), top: None };
//! let executor = Executor::new(&snapshot);
//! // Owned rows (Materialize)…
//! let page = executor.execute_page(&plan, None, &PageOptions::default()).unwrap();
//! assert_eq!(page.rows[0].nulls().collect::<Vec<_>>(), ["B"]);
//! // …or borrowed views handed to a closure (Visit): the same fields, nothing copied.
//! let mut fields = Vec::new();
//! executor.execute_page_with(&plan, None, &PageOptions::default(), |row| {
//!     row.fields(&mut |name, value| fields.push((name.to_owned(), value.is_some())));
//! }).unwrap();
//! assert_eq!(fields, [("A".to_owned(), true), ("B".to_owned(), false)]);
//! ```

use super::threads::Threads;
use crate::result::{ResultRow, RowView};
use crate::source::EntitySource;
use rayon::prelude::*;
use std::sync::Arc;

/// Results are converted to owned entities in parallel from this many rows per wave on
/// (below it, on the calling thread: cheaper for the allocator).
const PARALLEL_MATERIALIZE_ROWS: usize = 256;

/// Receives each wave's results, in key order.
pub(super) trait Sink<S: EntitySource + ?Sized> {
    /// Takes the matches of one wave (in key order, after those of earlier waves).
    fn wave<'a>(&mut self, rows: Vec<S::Row<'a>>)
    where
        S: 'a;
}

/// Builds owned result rows.
pub(super) struct Materialize<'e> {
    /// The threads large waves are converted on.
    pub(super) threads: &'e Threads,
    pub(super) rows: Vec<ResultRow>,
    pub(super) select: Option<Arc<[String]>>,
}

impl<S: EntitySource + ?Sized> Sink<S> for Materialize<'_> {
    fn wave<'a>(&mut self, rows: Vec<S::Row<'a>>)
    where
        S: 'a,
    {
        let select = self.select.as_ref();
        if rows.len() >= PARALLEL_MATERIALIZE_ROWS && self.threads.count > 1 {
            let projected = self.threads.install(|| {
                rows.par_iter()
                    .map(|r| ResultRow::project(r, select))
                    .collect::<Vec<_>>()
            });
            self.rows.extend(projected);
        } else {
            self.rows
                .extend(rows.iter().map(|r| ResultRow::project(r, select)));
        }
    }
}

/// Hands borrowed rows to a visitor.
pub(super) struct Visit<'p, F> {
    pub(super) visit: F,
    pub(super) select: Option<&'p [String]>,
}

impl<S: EntitySource + ?Sized, F: FnMut(RowView<'_>)> Sink<S> for Visit<'_, F> {
    fn wave<'a>(&mut self, rows: Vec<S::Row<'a>>)
    where
        S: 'a,
    {
        for row in &rows {
            (self.visit)(RowView::new(row, self.select));
        }
    }
}
