//! Continuations and page iteration: where a page ends ([`Resume`]), how that position
//! becomes the continuation key handed to the client (the next existing entity to examine,
//! inclusive), and the [`Pages`] iterator that follows continuations.
//!
//! Resuming at a continuation with the same plan yields exactly the remaining results:
//! entities before it are never revisited, so inserts and deletes between pages cannot
//! cause a result to be skipped or repeated.
//!
//! ```
//! use tableq_exec::{Executor, Key, VecSource, PageOptions};
//! use tableq_model::Entity;
//! use tableq_planner::{plan::{KeyRange, KeySet, Plan}, predicate::Predicate};
//! let snapshot = VecSource::new((0..5).map(|i| Entity::new("p", format!("r{i}"))));
//! let plan = Plan { ranges: KeySet::from(KeyRange::partition("p")), residual: Predicate::TRUE, select: None, top: None };
//! let executor = Executor::new(&snapshot);
//! let pages: Vec<_> = executor.pages(&plan, PageOptions::default().with_page_size(2)).collect::<Result<_, _>>().unwrap();
//! let continuations: Vec<_> = pages.iter().map(|p| p.continuation.clone()).collect();
//! assert_eq!(continuations, [Some(Key::new("p", "r2")), Some(Key::new("p", "r4")), None]);
//! ```

use super::{ExecError, Executor};
use crate::key::{Key, Scan};
use crate::result::Page;
use crate::source::{EntitySource, SourceRow};
use tableq_planner::plan::{KeyRange, Plan};

/// Where the next page starts.
pub(super) enum Resume {
    /// A key that exists (or a position no result lies before).
    At(Key),
    /// Resume scanning the ranges from number `range` at `from`: resolved to the next
    /// existing key.
    Position { range: usize, from: Option<Key> },
}

/// The key of a row.
pub(super) fn key_of<R: SourceRow>(row: &R) -> Key {
    Key::new(row.partition_key(), row.row_key())
}

impl<S: EntitySource + ?Sized> Executor<'_, S> {
    /// The continuation for a page that ended at `resume` (`None`: the plan is done).
    pub(super) fn continuation(
        &self,
        ranges: &[KeyRange],
        resume: Option<Resume>,
    ) -> Result<Option<Key>, S::Error> {
        match resume {
            None => Ok(None),
            Some(Resume::At(key)) => Ok(Some(key)),
            Some(Resume::Position { range, from }) => self.resolve(ranges, range, from),
        }
    }

    /// The key of the first entity at or after a position (in range number `range` or a
    /// later one), if any. Every entity a scan of a range yields is in the range, so this
    /// is the first entity of the first non-empty scan.
    fn resolve(
        &self,
        ranges: &[KeyRange],
        range: usize,
        from: Option<Key>,
    ) -> Result<Option<Key>, S::Error> {
        for r in &ranges[range.min(ranges.len())..] {
            if let Some((pk, rk)) = r.as_point() {
                if from.as_ref().is_none_or(|f| f.cmp_pair(pk, rk).is_le())
                    && self.source.get(pk, rk)?.is_some()
                {
                    return Ok(Some(Key::new(pk, rk)));
                }
                continue;
            }
            let scan = Scan {
                range: r,
                from: from.as_ref(),
                until: None,
            };
            if let Some(row) = self.source.scan(scan).next() {
                return Ok(Some(key_of(&row?)));
            }
        }
        Ok(None)
    }
}

/// The pages of a plan ([`Executor::pages`]).
pub struct Pages<'p, 's, S: ?Sized> {
    pub(super) executor: &'p Executor<'s, S>,
    pub(super) plan: &'p Plan,
    pub(super) options: super::PageOptions,
    pub(super) next: Option<Key>,
    pub(super) done: bool,
}

impl<S: EntitySource + ?Sized> Iterator for Pages<'_, '_, S> {
    type Item = Result<Page, ExecError<S::Error>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let page = self
            .executor
            .execute_page(self.plan, self.next.as_ref(), &self.options);
        match &page {
            Ok(p) => {
                self.next = p.continuation.clone();
                self.done = self.next.is_none();
            }
            Err(_) => self.done = true,
        }
        Some(page)
    }
}
