//! Page after page: the [`Pages`] iterator that follows continuations
//! ([`Executor::pages`]), and every result at once ([`Executor::execute_all`]).
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

use super::error::ExecError;
use super::options::PageOptions;
use super::page::Executor;
use crate::key::Key;
use crate::result::{ExecStats, Page, ResultRow};
use crate::source::EntitySource;
use tableq_planner::plan::Plan;

impl<'s, S: EntitySource + ?Sized> Executor<'s, S> {
    /// Iterates over the pages of `plan`, following continuations, on this executor's
    /// source (one consistent view for all pages when the source is a snapshot).
    pub fn pages<'p>(&'p self, plan: &'p Plan, options: PageOptions) -> Pages<'p, 's, S> {
        Pages {
            executor: self,
            plan,
            options,
            next: None,
            done: false,
        }
    }

    /// Every result of `plan` (all pages concatenated) and the summed statistics.
    pub fn execute_all(
        &self,
        plan: &Plan,
        options: &PageOptions,
    ) -> Result<(Vec<ResultRow>, ExecStats), ExecError<S::Error>> {
        let mut rows = Vec::new();
        let mut stats = ExecStats::default();
        for page in self.pages(plan, options.clone()) {
            let page = page?;
            rows.extend(page.rows);
            stats += page.stats;
        }
        Ok((rows, stats))
    }
}

/// The pages of a plan ([`Executor::pages`]).
pub struct Pages<'p, 's, S: ?Sized> {
    executor: &'p Executor<'s, S>,
    plan: &'p Plan,
    options: PageOptions,
    next: Option<Key>,
    done: bool,
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
