//! One query, from the text a client sends to the plan that reads it: [`Query`] owns
//! "query text → plan" for the server and every command-line tool.
//!
//! A query is built from its `$filter`, `$select` and `$top` texts ([`Query::parse`], each
//! parsed by `tableq-parser` under the caller's [`FilterOptions`]). An invalid option is a
//! [`QueryError`]: the option's name and the parser's spanned diagnostic, whose caret points
//! into that option's text as the client wrote it.
//!
//! **Restrictions** that are not the user's text — a SAS token's key range, say — are typed
//! predicates added with [`Query::restrict`]. They are joined to the lowered filter with
//! [`Predicate::and`] when the plan is made, never spliced into the text: they do not count
//! against the comparison limit, they cannot make the user's filter unparsable, and no
//! diagnostic ever points into text the user did not write.
//!
//! ```
//! use tableq_model::{CmpOp, Value};
//! use tableq_parser::{FilterOptions, QueryOption};
//! use tableq_planner::{Predicate, Query, QueryText, Strategy};
//!
//! let text = QueryText { filter: Some("Age gt 30"), select: Some("Name"), top: Some("5") };
//! let mut query = Query::parse(text, &FilterOptions::default()).unwrap();
//! // A restriction of the program's own: only partition `p`.
//! query.restrict(Predicate::compare("PartitionKey", CmpOp::Eq, Value::from("p")));
//! let plan = query.plan();
//! assert_eq!(plan.ranges.ranges()[0].strategy(), Strategy::Partition);
//! assert_eq!(plan.residual.to_string(), "Age gt 30");
//! assert_eq!((plan.select, plan.top), (Some(vec!["Name".to_owned()]), Some(5)));
//!
//! // An error names the option, and its span lies in that option's text.
//! let bad = QueryText { filter: Some("Age gt 30"), top: Some("0"), ..QueryText::default() };
//! let err = Query::parse(bad, &FilterOptions::default()).unwrap_err();
//! assert_eq!(err.option(), QueryOption::Top);
//! assert_eq!(err.error().source_text(), "0");
//! ```

use crate::explain::Explanation;
use crate::lower;
use crate::pipeline::{Planner, projection};
use crate::plan::Plan;
use crate::predicate::Predicate;
use std::fmt;
use tableq_parser::ast::{Filter, Select, Top};
use tableq_parser::{
    FilterOptions, ParseError, QueryOption, parse_filter, parse_select, parse_top,
};

/// The text of a query's options as a client sends them (after URL decoding); `None` for an
/// option that is not given. An absent or blank `$filter` means every entity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryText<'a> {
    /// `$filter`.
    pub filter: Option<&'a str>,
    /// `$select`.
    pub select: Option<&'a str>,
    /// `$top`.
    pub top: Option<&'a str>,
}

/// A parsed query: the user's filter, projection and page size, and the restrictions the
/// program added (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    filter: Filter,
    select: Option<Select>,
    top: Option<Top>,
    /// The conjunction of every restriction ([`Predicate::TRUE`] when there is none).
    restriction: Predicate,
}

/// An invalid query option: which option, and the parser's diagnostic over its text.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryError {
    option: QueryOption,
    error: ParseError,
}

impl QueryError {
    /// The option whose text is invalid.
    pub fn option(&self) -> QueryOption {
        self.option
    }

    /// The diagnostic: kind, span (byte offsets into the option's text), hint.
    pub fn error(&self) -> &ParseError {
        &self.error
    }

    /// `$filter: <summary>`: one line, for logs and HTTP error messages.
    pub fn summary(&self) -> String {
        format!("{}: {}", self.option, self.error.summary())
    }
}

impl fmt::Display for QueryError {
    /// The option's name, then the parser's caret diagnostic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.option, self.error)
    }
}

impl std::error::Error for QueryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl Query {
    /// Parses `$filter` (with `options`' limits), then `$select`, then `$top`; the first
    /// invalid one is the error.
    pub fn parse(text: QueryText<'_>, options: &FilterOptions) -> Result<Query, QueryError> {
        let error = |option| move |error| QueryError { option, error };
        let filter =
            parse_filter(text.filter.unwrap_or(""), options).map_err(error(QueryOption::Filter))?;
        let select = text
            .select
            .map(parse_select)
            .transpose()
            .map_err(error(QueryOption::Select))?;
        let top = text
            .top
            .map(parse_top)
            .transpose()
            .map_err(error(QueryOption::Top))?;
        Ok(Query::from_ast(filter, select, top))
    }

    /// A query from options already parsed.
    pub fn from_ast(filter: Filter, select: Option<Select>, top: Option<Top>) -> Query {
        Query {
            filter,
            select,
            top,
            restriction: Predicate::TRUE,
        }
    }

    /// Limits the query to entities that also satisfy `restriction` (joined with `and` to
    /// the filter and to earlier restrictions when the plan is made).
    pub fn restrict(&mut self, restriction: Predicate) {
        let earlier = std::mem::replace(&mut self.restriction, Predicate::TRUE);
        self.restriction = Predicate::and([earlier, restriction]);
    }

    /// The user's filter as parsed.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The user's `$select`, if given.
    pub fn select(&self) -> Option<&Select> {
        self.select.as_ref()
    }

    /// The user's `$top`, if given.
    pub fn top(&self) -> Option<&Top> {
        self.top.as_ref()
    }

    /// The restrictions added with [`Query::restrict`] (`true` when none).
    pub fn restriction(&self) -> &Predicate {
        &self.restriction
    }

    /// The projected property names (`None` for all), as in [`Plan::select`].
    pub fn projection(&self) -> Option<Vec<String>> {
        projection(self.select.as_ref())
    }

    /// What a matching entity satisfies: the lowered filter and every restriction.
    pub fn predicate(&self) -> Predicate {
        Predicate::and([lower::lower(&self.filter), self.restriction.clone()])
    }

    /// Plans the query with the default [`Planner`].
    pub fn plan(&self) -> Plan {
        self.plan_with(&Planner::new())
    }

    /// Plans the query with `planner`'s settings.
    pub fn plan_with(&self, planner: &Planner) -> Plan {
        planner.plan_predicate(self.predicate(), self.select(), self.top())
    }

    /// Plans the query and keeps every stage, for `explain`.
    pub fn explain(&self, planner: &Planner) -> Explanation {
        planner.explain_predicate(self.predicate(), self.select(), self.top())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::{CmpOp, Value};
    use tableq_parser::ErrorKind;

    fn text<'a>(filter: &'a str) -> QueryText<'a> {
        QueryText {
            filter: Some(filter),
            ..QueryText::default()
        }
    }

    #[test]
    fn errors_name_their_option_and_point_into_its_text() {
        let options = FilterOptions::default();
        let e = Query::parse(text("Age EQ 3"), &options).unwrap_err();
        assert_eq!(e.option(), QueryOption::Filter);
        assert_eq!(e.error().span().range(), 4..6);
        assert!(
            e.summary()
                .starts_with("$filter: unknown operator `EQ` at byte 4")
        );
        assert!(
            e.to_string()
                .starts_with("$filter: error: unknown operator `EQ`")
        );
        let select = QueryText {
            select: Some("A,,B"),
            ..text("Age eq 3")
        };
        let e = Query::parse(select, &options).unwrap_err();
        assert_eq!(e.option(), QueryOption::Select);
        assert_eq!(e.error().source_text(), "A,,B");
        // The filter is checked first.
        let both = QueryText {
            select: Some("A,,B"),
            ..text("(")
        };
        assert_eq!(
            Query::parse(both, &options).unwrap_err().option(),
            QueryOption::Filter
        );
        assert!(Query::parse(QueryText::default(), &options).is_ok());
    }

    #[test]
    fn restrictions_join_the_filter_but_not_its_limit() {
        let fifteen = vec!["A eq 1"; 15].join(" or ");
        let mut q = Query::parse(text(&fifteen), &FilterOptions::default()).unwrap();
        for k in ["a", "b", "c", "d"] {
            q.restrict(Predicate::negate(Predicate::compare(
                "PartitionKey",
                CmpOp::Eq,
                Value::from(k),
            )));
        }
        assert_eq!(q.restriction().comparisons(), 4);
        let plan = q.plan();
        assert_eq!(plan.residual.to_string(), "A eq 1");
        assert_eq!(plan.ranges.len(), 5);
        // A contradiction reads nothing.
        q.restrict(Predicate::FALSE);
        assert!(q.plan().ranges.is_empty());
        // Too many comparisons of the user's own are still refused.
        let sixteen = vec!["A eq 1"; 16].join(" or ");
        let e = Query::parse(text(&sixteen), &FilterOptions::default()).unwrap_err();
        assert!(matches!(
            e.error().kind(),
            ErrorKind::TooManyComparisons { count: 16, .. }
        ));
    }

    #[test]
    fn plans_match_the_planner_on_the_same_ast() {
        let q = Query::parse(
            QueryText {
                filter: Some("PartitionKey eq 'p' and not false"),
                select: Some("B,A,B"),
                top: Some("7"),
            },
            &FilterOptions::default(),
        )
        .unwrap();
        let direct = Planner::new().plan(q.filter(), q.select(), q.top());
        assert_eq!(q.plan(), direct);
        assert_eq!(q.projection(), Some(vec!["B".to_owned(), "A".to_owned()]));
        let x = q.explain(&Planner::new().verbose(true));
        assert_eq!(x.plan, direct);
    }
}
