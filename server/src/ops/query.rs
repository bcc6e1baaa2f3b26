//! Query Entities: `GET /{account}/{table}()?$filter=&$select=&$top=&NextPartitionKey=&NextRowKey=`
//! — one page of a query ([`query`]), from the request's parameters ([`QueryRequest`], the
//! one way from a request to its parsed and planned query, which the explain of
//! [`crate::ops::explorer::explain`] takes too) to the page and its continuation headers.
//!
//! Pages run on the blocking pool with the configured work budget (5 s): a page ends
//! after `$top` (default 1000) entities or when the budget runs out, and then carries the
//! continuation headers. Queries of a few exact keys on a local engine run inline on the
//! event loop instead (see [`short_read`]). Resuming yields every entity present for the
//! whole paging exactly once, in key order, whatever is written between pages (the store's
//! continuation protocol). With `x-tableq-explain: analyze` the page carries the
//! executor's statistics ([`STATS_HEADER`]).
//!
//! ```text
//! GET /acct/t()?$filter=Age gt 2&$top=1   → 200 {"value":[…]} + x-ms-continuation-NextPartitionKey/NextRowKey
//! ```

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tableq_exec::{ExecStats, PageOptions};
use tableq_parser::FilterOptions;
use tableq_planner::plan::Plan;
use tableq_planner::{Query, QueryError, QueryText};

use crate::ops::tables::check_name;
use crate::protocol::context::{
    Ctx, SHORT_FILTER_BYTES, SHORT_READ_POINTS, blocking, json_response, set_header, short_read,
};
use crate::protocol::continuation::{
    NEXT_PARTITION_KEY_HEADER, NEXT_ROW_KEY_HEADER, encode_token, entity_continuation,
};
use crate::protocol::encode::PageWriter;
use crate::protocol::error::ApiError;
use crate::protocol::query_options::QueryParams;
use crate::state::accounts::AppState;
use crate::state::scope;

/// The response header with the statistics of an analyzed page.
pub(crate) const STATS_HEADER: &str = "x-tableq-stats";

/// The value of [`STATS_HEADER`] for a page.
pub(crate) fn stats_value(stats: &ExecStats, elapsed: Duration) -> String {
    json!({
        "examined": stats.examined,
        "matched": stats.matched,
        "ranges": stats.ranges,
        "chunks": stats.chunks,
        "ms": (elapsed.as_secs_f64() * 1e6).round() / 1e3,
    })
    .to_string()
}

/// `GET /t()`: one page of a query.
///
/// A short `$filter` is parsed and planned on the event loop; a plan of a few exact keys is
/// then a short read ([`short_read`]). Every other page (and the planning of a long filter)
/// runs on the blocking pool within the page budget. With `stats`, the response carries
/// the executor's statistics of the page ([`STATS_HEADER`]).
pub(crate) async fn query(
    state: &Arc<AppState>,
    ctx: &Ctx,
    table: String,
    stats: bool,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    check_name(&table)?;
    let continuation = entity_continuation(
        ctx.query.next_partition_key.as_deref(),
        ctx.query.next_row_key.as_deref(),
    )?;
    let query = QueryRequest {
        params: ctx.query.clone(),
        options: state.config.filter_options,
    };
    let budget = state.config.page_budget;
    let backend = state.backend.clone();
    let links = ctx.links.clone();
    let level = ctx.level;
    let run = move |plan: Plan| {
        let options = PageOptions::default().with_deadline(Instant::now() + budget);
        let mut writer = PageWriter::begin(&links, &table, level, plan.select.as_deref());
        let page = backend
            .query(&table, &plan, continuation.as_ref(), &options, &mut |row| {
                writer.row(row)
            })
            .map_err(ApiError::store)?;
        Ok((writer.finish(), page.continuation, page.stats))
    };
    let (body, next, page_stats) = if query.filter_len() <= SHORT_FILTER_BYTES {
        let plan = query.plan()?;
        if is_short_read(&plan) {
            short_read(&*state.backend, move || run(plan)).await?
        } else {
            blocking(move || run(plan)).await?
        }
    } else {
        blocking(move || run(query.plan()?)).await?
    };
    scope::note_rows(page_stats.examined, page_stats.matched);
    let mut response = json_response(StatusCode::OK, ctx.level, body);
    if let Some(next) = next {
        set_header(
            &mut response,
            NEXT_PARTITION_KEY_HEADER,
            &encode_token(&next.partition_key),
        )?;
        set_header(
            &mut response,
            NEXT_ROW_KEY_HEADER,
            &encode_token(&next.row_key),
        )?;
    }
    if stats {
        set_header(
            &mut response,
            STATS_HEADER,
            &stats_value(&page_stats, started.elapsed()),
        )?;
    }
    Ok(response)
}

/// A query's parameters, not yet parsed, and the parser's limits: the one way from a
/// request to its [`Query`], for the query itself and for its explain
/// ([`crate::ops::explorer::explain`]).
pub(crate) struct QueryRequest {
    /// The query string, with the restriction authorization added.
    pub params: QueryParams,
    /// The parser's limits.
    pub options: FilterOptions,
}

impl QueryRequest {
    /// The length of the `$filter` text in bytes.
    fn filter_len(&self) -> usize {
        self.params.filter.as_deref().map_or(0, str::len)
    }

    /// Parses the query, limited to the restriction authorization added.
    pub(crate) fn query(&self) -> Result<Query, QueryError> {
        let text = QueryText {
            filter: self.params.filter.as_deref(),
            select: self.params.select.as_deref(),
            top: self.params.top.as_deref(),
        };
        let mut query = Query::parse(text, &self.options)?;
        if let Some(restriction) = &self.params.restriction {
            query.restrict(restriction.clone());
        }
        Ok(query)
    }

    /// Parses and plans the query (400 with a caret diagnostic on the first error), limited
    /// to the restriction authorization added.
    fn plan(&self) -> Result<Plan, ApiError> {
        Ok(self
            .query()
            .map_err(|e| ApiError::invalid_query(&e))?
            .plan())
    }
}

/// The PartitionKey a query is confined to, when its `$filter` fixes one (every key range
/// of its plan lies in that one partition), for throttling and fault rules; `None`
/// otherwise, for a long filter (not planned twice) and for a filter that does not plan
/// (the query then answers its error).
pub(crate) fn single_partition(state: &AppState, ctx: &Ctx) -> Option<String> {
    let query = QueryRequest {
        params: ctx.query.clone(),
        options: state.config.filter_options,
    };
    if query.filter_len() > SHORT_FILTER_BYTES {
        return None;
    }
    let plan = query.plan().ok()?;
    let mut partitions = plan
        .ranges
        .ranges()
        .iter()
        .map(|r| r.partition_key.as_point());
    let first = partitions.next()??;
    partitions
        .all(|p| p == Some(first))
        .then(|| first.to_owned())
}

/// Whether a plan reads at most [`SHORT_READ_POINTS`] exact keys and nothing else.
fn is_short_read(plan: &Plan) -> bool {
    plan.ranges.len() <= SHORT_READ_POINTS
        && plan.ranges.ranges().iter().all(|r| r.as_point().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(filter: &str) -> Plan {
        QueryRequest {
            params: QueryParams {
                filter: Some(filter.to_owned()),
                ..QueryParams::default()
            },
            options: FilterOptions::unlimited(),
        }
        .plan()
        .unwrap_or_else(|e| panic!("{filter}: {e:?}"))
    }

    fn points(n: usize) -> String {
        (0..n)
            .map(|k| format!("(PartitionKey eq 'p' and RowKey eq 'r{k:02}')"))
            .collect::<Vec<_>>()
            .join(" or ")
    }

    #[test]
    fn short_reads_are_a_few_exact_keys() {
        assert!(is_short_read(&plan_of(&points(1))));
        assert!(is_short_read(&plan_of(&points(SHORT_READ_POINTS))));
        assert!(is_short_read(&plan_of(
            "PartitionKey eq 'p' and RowKey eq 'r' and Age gt 3"
        )));
        // Nothing to read at all is short too.
        assert!(is_short_read(&plan_of(
            "PartitionKey eq 'a' and PartitionKey eq 'b'"
        )));
        assert!(!is_short_read(&plan_of(&points(SHORT_READ_POINTS + 1))));
        assert!(!is_short_read(&plan_of("PartitionKey eq 'p'")));
        assert!(!is_short_read(&plan_of(
            "PartitionKey eq 'p' and RowKey ge 'a' and RowKey lt 'b'"
        )));
        assert!(!is_short_read(&plan_of("Age gt 3")));
        assert!(!is_short_read(&plan_of("")));
    }
}
