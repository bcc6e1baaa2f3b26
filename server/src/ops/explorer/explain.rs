//! `x-tableq-explain`: how an entity query runs, for the explorer's query bar (and any other
//! client) — a tableq extension of `GET /{account}/{table}()`.
//!
//! The request is an ordinary entity query (same path, same `$filter`/`$select`/`$top`,
//! same authorization: a SAS token's key range restricts it exactly as it restricts the
//! query) with one more header:
//!
//! * **`x-tableq-explain: plan`** — nothing is read but the table's existence; the answer is
//!   `200 application/json` with the plan the query would run, made by the same
//!   [`Query`] owner as the query path (the explorer never parses a filter itself):
//!
//!   ```json
//!   {"valid": true,
//!    "filter": "PartitionKey eq 'a' and Age gt 3", "canonical": "…", "lowered": "…", "rewritten": "…",
//!    "shape": "partition", "exact": false,
//!    "ranges": [{"strategy": "partition", "description": "partition scan",
//!                "partition_key": "= 'a'", "row_key": "*"}],
//!    "residual": "Age gt 3", "select": null, "top": null,
//!    "restricted": false, "coarsened": false, "max_ranges": 256,
//!    "steps": [{"rule": "…", "before": "…", "after": "…"}],
//!    "engine": {"name": "durable", "details": ["…"]},
//!    "plan": { …the stable JSON of `tableq explain --json`… },
//!    "text": "ranges: 1, filtered by the residual\n  1. partition scan …"}
//!   ```
//!
//!   `shape` sums the ranges up: `empty` (the filter cannot match: nothing is read),
//!   `point`, `points` (an OR of point lookups), `partition`, `full`, or `ranges`. `exact`
//!   says whether the ranges capture the filter exactly (the residual `true` is then never
//!   evaluated). `restricted` says a SAS key range was joined to the filter. `engine` is
//!   the store's own account of how it reads the plan (for PostgreSQL: which conjuncts of
//!   the residual are pushed down into SQL, exactly or not, and PostgreSQL's plan); it is
//!   given to holders of the account key only — a SAS holder gets `null`, since it names
//!   files and servers.
//!
//!   An invalid option is still `200` (the explain worked; the query would not):
//!   `{"valid": false, "diagnostic": {"option": "$filter", "text": …, "message": …,
//!   "start": 6, "end": 8, "utf16_start": 6, "utf16_end": 8, "line": 1, "column": 7,
//!   "expected": ["`eq`", …], "hint": …, "label": …, "summary": …, "rendered": …}}` —
//!   byte offsets as everywhere in tableq, the same span in UTF-16 code units for
//!   JavaScript strings, and `rendered`, the caret diagnostic exactly as the CLI prints it.
//!
//! * **`x-tableq-explain: analyze`** — the query runs as without the header (same body,
//!   same continuation headers) and the response adds `x-tableq-stats`, the executor's
//!   statistics of this page as one JSON object:
//!   `{"examined":1000,"matched":100,"ranges":1,"chunks":2,"ms":1.234}` (entities read
//!   from the store, entities returned, key ranges and chunks read, milliseconds the server
//!   spent on the page: parsing, planning, reading and encoding).
//!
//! Any other value is 400 `InvalidHeaderValue`. Inside a `$batch` the header is ignored.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use tableq_model::ErrorCode;
use tableq_planner::explain::DisplayInterval;
use tableq_planner::plan::Plan;
use tableq_planner::{Planner, Query, QueryError, Strategy};
use tableq_store::ScanExplain;

use crate::ops::query::QueryRequest;
use crate::ops::tables::check_name;
use crate::protocol::context::{Ctx, blocking};
use crate::protocol::error::ApiError;
use crate::state::accounts::AppState;

/// The request header that asks for a plan or for statistics.
pub(crate) const EXPLAIN_HEADER: &str = "x-tableq-explain";

/// What `x-tableq-explain` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExplainMode {
    /// The plan instead of the rows.
    Plan,
    /// The rows, and the statistics of the page in [`STATS_HEADER`](crate::ops::query::STATS_HEADER) (written by the query,
    /// [`crate::ops::query`]).
    Analyze,
}

/// The mode a request asks for: `None` without the header.
pub(crate) fn mode(headers: &HeaderMap) -> Result<Option<ExplainMode>, ApiError> {
    let Some(value) = headers.get(EXPLAIN_HEADER) else {
        return Ok(None);
    };
    match value.to_str().map(str::trim) {
        Ok(v) if v.eq_ignore_ascii_case("plan") => Ok(Some(ExplainMode::Plan)),
        Ok(v) if v.eq_ignore_ascii_case("analyze") => Ok(Some(ExplainMode::Analyze)),
        _ => Err(ApiError::new(
            ErrorCode::InvalidHeaderValue,
            format!("{EXPLAIN_HEADER} must be `plan` or `analyze`"),
        )),
    }
}

/// `GET /{account}/{table}()` with `x-tableq-explain: plan`; `full_grant`: the request
/// was authorized without a SAS token (which may restrict what it sees).
pub(crate) async fn plan(
    state: &Arc<AppState>,
    ctx: &Ctx,
    full_grant: bool,
    table: String,
) -> Result<Response, ApiError> {
    check_name(&table)?;
    let request = QueryRequest {
        params: ctx.query.clone(),
        options: state.config.filter_options,
    };
    let restricted = ctx.query.restriction.is_some();
    let backend = state.backend.clone();
    let filter = ctx.query.filter.clone().unwrap_or_default();
    let document = blocking(move || {
        let query = match request.query() {
            Ok(query) => query,
            Err(e) => {
                // The table must exist all the same: the query would fail on it first.
                backend.table(&table).map_err(ApiError::store)?;
                return Ok(diagnostic_document(&e));
            }
        };
        let explanation = query.explain(&Planner::new().verbose(true));
        let engine = if full_grant {
            Some(
                backend
                    .explain(&table, &explanation.plan)
                    .map_err(ApiError::store)?,
            )
        } else {
            backend.table(&table).map_err(ApiError::store)?;
            None
        };
        Ok(plan_document(
            &filter,
            &query,
            &explanation,
            restricted,
            engine.as_ref(),
        ))
    })
    .await?;
    let mut response = (StatusCode::OK, document.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// What the plan's ranges amount to (see the module docs).
pub(crate) fn shape(plan: &Plan) -> &'static str {
    let ranges = plan.ranges.ranges();
    match ranges {
        [] => "empty",
        [one] => match one.strategy() {
            Strategy::Point => "point",
            Strategy::Partition => "partition",
            Strategy::Full => "full",
            Strategy::Range => "ranges",
        },
        many if many.iter().all(|r| r.strategy() == Strategy::Point) => "points",
        _ => "ranges",
    }
}

/// The document of a valid query.
fn plan_document(
    filter: &str,
    query: &Query,
    explanation: &tableq_planner::Explanation,
    restricted: bool,
    engine: Option<&ScanExplain>,
) -> Json {
    let plan = &explanation.plan;
    let ranges: Vec<Json> = plan
        .ranges
        .ranges()
        .iter()
        .map(|r| {
            json!({
                "strategy": r.strategy().as_str(),
                "description": r.strategy().description(),
                "partition_key": DisplayInterval(&r.partition_key).to_string(),
                "row_key": DisplayInterval(&r.row_key).to_string(),
            })
        })
        .collect();
    let steps: Vec<Json> = explanation
        .steps
        .iter()
        .map(|s| json!({"rule": s.rule, "before": s.before, "after": s.after}))
        .collect();
    json!({
        "valid": true,
        "filter": filter,
        "canonical": query.filter().to_string(),
        "lowered": explanation.lowered.to_string(),
        "rewritten": explanation.rewritten.to_string(),
        "shape": shape(plan),
        "exact": plan.is_exact(),
        "ranges": ranges,
        "residual": plan.residual.to_string(),
        "select": plan.select,
        "top": plan.top,
        "restricted": restricted,
        "coarsened": explanation.coarsened,
        "max_ranges": explanation.max_ranges,
        "steps": steps,
        "engine": engine.map(|e| json!({"name": e.engine, "details": e.details})),
        "plan": plan.to_json(),
        "text": plan.to_string(),
    })
}

/// The largest character boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The document of an invalid option.
fn diagnostic_document(error: &QueryError) -> Json {
    let e = error.error();
    let text = e.source_text();
    let start = floor_boundary(text, e.span().start);
    let end = floor_boundary(text, e.span().end).max(start);
    let utf16 = |at: usize| text[..at].encode_utf16().count();
    json!({
        "valid": false,
        "diagnostic": {
            "option": error.option().name(),
            "text": text,
            "message": e.message(),
            "start": start,
            "end": end,
            "utf16_start": utf16(start),
            "utf16_end": utf16(end),
            "line": e.line(),
            "column": e.column(),
            "expected": e.expected(),
            "hint": e.hint(),
            "label": e.label(),
            "summary": e.summary(),
            "rendered": e.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::query::stats_value;
    use std::time::Duration;
    use tableq_exec::ExecStats;
    use tableq_model::{CmpOp, Value};
    use tableq_parser::FilterOptions;
    use tableq_planner::{Predicate, QueryText};

    fn query(filter: &str) -> Query {
        Query::parse(
            QueryText {
                filter: Some(filter),
                ..QueryText::default()
            },
            &FilterOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{filter}: {e}"))
    }

    fn document(filter: &str) -> (Query, Json) {
        let q = query(filter);
        let doc = plan_document(
            filter,
            &q,
            &q.explain(&Planner::new().verbose(true)),
            false,
            None,
        );
        (q, doc)
    }

    #[test]
    fn shapes_name_what_is_read() {
        for (filter, want) in [
            ("PartitionKey eq 'a' and RowKey eq '1'", "point"),
            (
                "(PartitionKey eq 'a' and RowKey eq '1') or (PartitionKey eq 'b' and RowKey eq '2')",
                "points",
            ),
            ("PartitionKey eq 'a'", "partition"),
            ("PartitionKey eq 'a' and PartitionKey eq 'b'", "empty"),
            ("false", "empty"),
            ("Age gt 3", "full"),
            ("", "full"),
            ("PartitionKey ge 'a' and PartitionKey lt 'c'", "ranges"),
            ("PartitionKey eq 'a' or PartitionKey eq 'c'", "ranges"),
        ] {
            assert_eq!(shape(&query(filter).plan()), want, "{filter}");
        }
    }

    #[test]
    fn a_plan_document_is_the_query_paths_plan() {
        let (q, doc) = document("PartitionKey eq 'a' and RowKey ge '1' and Age gt 3");
        assert_eq!(doc["valid"], true);
        assert_eq!(
            doc["plan"],
            q.plan().to_json(),
            "the same plan as the query runs"
        );
        assert_eq!(doc["shape"], "ranges");
        assert_eq!(doc["exact"], false);
        assert_eq!(doc["residual"], "Age gt 3");
        assert_eq!(doc["ranges"][0]["partition_key"], "= 'a'");
        assert_eq!(doc["ranges"][0]["row_key"], "['1' .. +inf)");
        assert_eq!(doc["ranges"][0]["description"], "range scan");
        assert_eq!(doc["engine"], Json::Null);
        assert!(doc["text"].as_str().unwrap().starts_with("ranges: 1"));

        let (_, exact) = document("PartitionKey eq 'a'");
        assert_eq!(
            (&exact["exact"], &exact["residual"]),
            (&json!(true), &json!("true"))
        );
    }

    #[test]
    fn a_restriction_shows_in_the_plan_not_in_the_filter() {
        let mut q = query("Age gt 3");
        q.restrict(Predicate::compare(
            "PartitionKey",
            CmpOp::Eq,
            Value::from("p"),
        ));
        let doc = plan_document("Age gt 3", &q, &q.explain(&Planner::new()), true, None);
        assert_eq!(doc["filter"], "Age gt 3");
        assert_eq!(doc["restricted"], true);
        assert_eq!(doc["shape"], "partition");
    }

    #[test]
    fn diagnostics_carry_byte_and_utf16_spans() {
        let err = Query::parse(
            QueryText {
                filter: Some("Größe EQ 3"),
                ..QueryText::default()
            },
            &FilterOptions::default(),
        )
        .unwrap_err();
        let doc = diagnostic_document(&err);
        let d = &doc["diagnostic"];
        assert_eq!(doc["valid"], false);
        assert_eq!(d["option"], "$filter");
        // `Größe ` is 8 bytes and 6 UTF-16 code units.
        assert_eq!(
            (d["start"].as_u64(), d["end"].as_u64()),
            (Some(8), Some(10))
        );
        assert_eq!(
            (d["utf16_start"].as_u64(), d["utf16_end"].as_u64()),
            (Some(6), Some(8))
        );
        assert_eq!(d["column"], 7);
        assert!(d["hint"].as_str().unwrap().contains("`eq`"), "{d}");
        assert!(d["rendered"].as_str().unwrap().contains("^^"), "{d}");

        let top = Query::parse(
            QueryText {
                top: Some("0"),
                ..QueryText::default()
            },
            &FilterOptions::default(),
        )
        .unwrap_err();
        assert_eq!(diagnostic_document(&top)["diagnostic"]["option"], "$top");
    }

    #[test]
    fn modes_and_stats() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(EXPLAIN_HEADER, HeaderValue::from_str(v).unwrap());
            h
        };
        assert_eq!(mode(&HeaderMap::new()), Ok(None));
        assert_eq!(mode(&with("plan")), Ok(Some(ExplainMode::Plan)));
        assert_eq!(mode(&with(" Analyze")), Ok(Some(ExplainMode::Analyze)));
        assert_eq!(
            mode(&with("rows")).unwrap_err().code(),
            "InvalidHeaderValue"
        );
        let stats = ExecStats {
            ranges: 1,
            chunks: 2,
            examined: 30,
            matched: 4,
        };
        let value: Json =
            serde_json::from_str(&stats_value(&stats, Duration::from_micros(1500))).unwrap();
        assert_eq!(
            value,
            json!({"examined": 30, "matched": 4, "ranges": 1, "chunks": 2, "ms": 1.5})
        );
    }
}
