//! The conformance corpus (`tests/conformance/`, format in its README) run against every
//! engine: the parser (error cases), the naive reference evaluator, the planner + parallel
//! executor over a `MemorySnapshot`, and the `tableq eval` binary with each of its engines
//! (`stream`: one pass over the file; `table`: an indexed table and the executor).
//!
//! Each test runs every case and reports *all* failures at once, each with the case's file,
//! line, name and the spec sentence it checks.

use crate::corpus;

use corpus::{Case, Expect, Limit};
use std::collections::BTreeMap;
use std::process::Command;
use tableq::exec::{Executor, Key, PageOptions, ResultRow};
use tableq::model::json::{DecodeOptions, EntityWriter, MetadataLevel, decode_entity};
use tableq::model::{Entity, order::compare_str};
use tableq::parser::ast::{Filter, Select, Top};
use tableq::parser::{ErrorKind, FilterOptions, ParseError, Unsupported};
use tableq::parser::{parse_filter, parse_select, parse_top};
use tableq_store::MemorySnapshot;

/// Entities of every set, sorted by key (UTF-16 order).
fn entity_sets() -> BTreeMap<String, Vec<Entity>> {
    corpus::sets()
        .into_iter()
        .map(|(name, lines)| {
            let mut entities: Vec<Entity> = lines
                .iter()
                .map(|(n, text)| {
                    decode_entity(text, &DecodeOptions::STORED)
                        .unwrap_or_else(|e| panic!("sets/{name}.jsonl:{n}: invalid entity: {e:?}"))
                })
                .collect();
            entities.sort_by(|a, b| {
                compare_str(a.partition_key(), b.partition_key())
                    .then_with(|| compare_str(a.row_key(), b.row_key()))
            });
            (name, entities)
        })
        .collect()
}

fn filter_options(limit: Limit) -> FilterOptions {
    match limit {
        Limit::Default => FilterOptions::default(),
        Limit::Unlimited => FilterOptions::unlimited(),
        Limit::Max(n) => FilterOptions {
            max_comparisons: Some(n),
            ..FilterOptions::default()
        },
    }
}

/// Where a parse error came from.
#[derive(Debug)]
enum Part {
    Filter,
    Select,
    Top,
}

struct Query {
    filter: Filter,
    select: Option<Select>,
    top: Option<Top>,
}

fn parse(case: &Case) -> Result<Query, (Part, ParseError)> {
    let filter = parse_filter(
        case.filter.as_deref().unwrap_or(""),
        &filter_options(case.limit),
    )
    .map_err(|e| (Part::Filter, e))?;
    let select = case
        .select
        .as_deref()
        .map(parse_select)
        .transpose()
        .map_err(|e| (Part::Select, e))?;
    let top = case
        .top
        .as_deref()
        .map(parse_top)
        .transpose()
        .map_err(|e| (Part::Top, e))?;
    Ok(Query {
        filter,
        select,
        top,
    })
}

/// The corpus kind of a parse error (see the corpus README).
fn kind_of(part: &Part, e: &ParseError) -> &'static str {
    match part {
        Part::Select => return "select",
        Part::Top => return "top",
        Part::Filter => {}
    }
    match e.kind() {
        ErrorKind::InvalidNumber(_)
        | ErrorKind::Int32OutOfRange
        | ErrorKind::Int64OutOfRange
        | ErrorKind::DoubleOutOfRange
        | ErrorKind::NegativeNaN
        | ErrorKind::InvalidDateTime
        | ErrorKind::DateTimeOutOfRange
        | ErrorKind::InvalidGuid
        | ErrorKind::InvalidBinary => "literal",
        ErrorKind::Unsupported(Unsupported::Null) => "null",
        ErrorKind::Unsupported(_) => "unsupported",
        ErrorKind::PropertyVsProperty | ErrorKind::LiteralVsLiteral => "operands",
        ErrorKind::TooDeep { .. } => "too-deep",
        ErrorKind::TooManyComparisons { .. } => "too-many-comparisons",
        ErrorKind::TooLong { .. } => "too-long",
        _ => "syntax",
    }
}

/// Checks an error case against the parser; `None` when it conforms.
fn check_parse_error(case: &Case) -> Option<String> {
    let Expect::Error {
        kinds,
        at,
        messages,
    } = &case.expect
    else {
        return None;
    };
    let (part, err) = match parse(case) {
        Ok(_) => return Some("accepted; expected an error".to_owned()),
        Err(x) => x,
    };
    let kind = kind_of(&part, &err);
    let mut problems = Vec::new();
    if !kinds.iter().any(|k| k == kind) {
        problems.push(format!(
            "error kind {kind} ({:?} in {part:?}), expected {}",
            err.kind(),
            kinds.join("|")
        ));
    }
    if let Some((start, end)) = at
        && !(*start..*end).contains(&err.offset())
    {
        problems.push(format!(
            "error at byte {}, expected {}",
            err.offset(),
            if end - start == 1 {
                start.to_string()
            } else {
                format!("{start}..{end}")
            }
        ));
    }
    let rendered = format!("{err}\n{}", err.summary());
    for m in messages {
        if !rendered.contains(m.as_str()) {
            problems.push(format!("message lacks {m:?}: {}", err.summary()));
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

fn keys_of<'a>(entities: impl IntoIterator<Item = &'a Entity>) -> Vec<(String, String)> {
    entities
        .into_iter()
        .map(|e| (e.partition_key().to_owned(), e.row_key().to_owned()))
        .collect()
}

fn show_keys(keys: &[(String, String)]) -> String {
    if keys.is_empty() {
        return "none".to_owned();
    }
    keys.iter()
        .map(|(p, r)| format!("{}/{}", p.escape_debug(), r.escape_debug()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `check` on every case and fails with a report of every failing case.
fn run_all(engine: &str, mut check: impl FnMut(&Case) -> Option<String>) {
    let cases = corpus::cases();
    let mut failures = Vec::new();
    for case in &cases {
        if let Some(problem) = check(case) {
            failures.push(format!("  {}\n      {problem}", case.describe()));
        }
    }
    assert!(
        failures.is_empty(),
        "{engine}: {} of {} conformance cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_is_well_formed_and_large_enough() {
    let cases = corpus::cases();
    assert!(cases.len() >= 150, "only {} cases", cases.len());
    let sets = entity_sets();
    for case in &cases {
        assert!(
            sets.contains_key(&case.set),
            "{}: unknown set {}",
            case.origin,
            case.set
        );
    }
    let errors = cases
        .iter()
        .filter(|c| matches!(c.expect, Expect::Error { .. }))
        .count();
    assert!(errors >= 50 && cases.len() - errors >= 100);
}

#[test]
fn parser_rejects_every_error_case() {
    run_all("parser", check_parse_error);
}

#[test]
fn naive_evaluator_conforms() {
    let sets = entity_sets();
    run_all("naive evaluator", |case| {
        let Expect::Matches { keys, .. } = &case.expect else {
            return check_parse_error(case);
        };
        let query = match parse(case) {
            Ok(q) => q,
            Err((part, e)) => return Some(format!("{part:?} rejected: {}", e.summary())),
        };
        let limit = query.top.map_or(usize::MAX, |t| t.value as usize);
        let got: Vec<&Entity> = sets[&case.set]
            .iter()
            .filter(|e| tableq::planner::ast_eval::matches(&query.filter, *e))
            .take(limit)
            .collect();
        let got = keys_of(got);
        (got != *keys).then(|| format!("got {}, expected {}", show_keys(&got), show_keys(keys)))
    });
}

/// The printed form of a result row: the projection in selection order, as `tableq eval`
/// prints it (the corpus `row:` lines are compared with this), written by the model's
/// streaming writer.
fn projected_json(row: &ResultRow) -> serde_json::Value {
    let writer =
        EntityWriter::new(MetadataLevel::MinimalMetadata).with_select(row.select.as_deref());
    let text = writer.to_string(&row.entity, Default::default());
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

#[test]
fn executor_conforms() {
    let sets = entity_sets();
    let sources: BTreeMap<&String, MemorySnapshot> = sets
        .iter()
        .map(|(name, entities)| {
            let source = MemorySnapshot::from_entities(entities.iter().cloned())
                .unwrap_or_else(|e| panic!("set {name}: {e}"));
            (name, source)
        })
        .collect();
    run_all("executor", |case| {
        let Expect::Matches { keys, rows } = &case.expect else {
            return check_parse_error(case);
        };
        let query = match parse(case) {
            Ok(q) => q,
            Err((part, e)) => return Some(format!("{part:?} rejected: {}", e.summary())),
        };
        let plan = tableq::planner::plan(&query.filter, query.select.as_ref(), query.top.as_ref());
        let snapshot = sources[&case.set].clone();
        let mut problems = Vec::new();
        // Two threads and single-entity pages (continuations after every match), then one
        // thread with the default page size: both must give the same answer.
        for (threads, options) in [
            (2, PageOptions::default().with_page_size(1)),
            (1, PageOptions::default()),
        ] {
            let executor = match Executor::new(&snapshot).with_threads(threads) {
                Ok(x) => x,
                Err(e) => return Some(format!("executor: {e}")),
            };
            let mut got: Vec<ResultRow> = Vec::new();
            let mut next: Option<Key> = None;
            loop {
                let page = match executor.execute_page(&plan, next.as_ref(), &options) {
                    Ok(p) => p,
                    Err(e) => return Some(format!("execution failed: {e}")),
                };
                got.extend(page.rows);
                next = page.continuation;
                let top_reached = query
                    .top
                    .as_ref()
                    .is_some_and(|t| got.len() >= t.value as usize);
                if next.is_none() || top_reached || got.len() > 100_000 {
                    break;
                }
            }
            let got_keys = keys_of(got.iter().map(|r| &r.entity));
            if got_keys != *keys {
                problems.push(format!(
                    "{threads} thread(s), page size {:?}: got {}, expected {}",
                    options.page_size,
                    show_keys(&got_keys),
                    show_keys(keys)
                ));
                continue;
            }
            for (row, expected) in got.iter().zip(rows) {
                let actual = projected_json(row);
                if actual != *expected {
                    problems.push(format!("row {actual} expected {expected}"));
                }
            }
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    });
}

#[test]
fn cli_eval_stream_engine_conforms() {
    cli_eval_conforms("stream");
}

#[test]
fn cli_eval_table_engine_conforms() {
    cli_eval_conforms("table");
}

fn cli_eval_conforms(engine: &str) {
    let bin = env!("CARGO_BIN_EXE_tableq");
    run_all(&format!("tableq eval --engine {engine}"), |case| {
        let mut cmd = Command::new(bin);
        cmd.args(["eval", "--engine", engine]);
        if let Some(f) = &case.filter {
            cmd.arg(format!("--filter={f}"));
        }
        if let Some(s) = &case.select {
            cmd.arg(format!("--select={s}"));
        }
        if let Some(t) = &case.top {
            cmd.arg(format!("--top={t}"));
        }
        match case.limit {
            Limit::Default => {}
            Limit::Unlimited => {
                cmd.arg("--no-limits");
            }
            Limit::Max(n) => {
                cmd.arg(format!("--max-comparisons={n}"));
            }
        }
        cmd.arg(corpus::set_path(&case.set));
        let out = match cmd.output() {
            Ok(o) => o,
            Err(e) => return Some(format!("cannot run {bin}: {e}")),
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        match &case.expect {
            Expect::Error { messages, .. } => {
                let mut problems = Vec::new();
                if out.status.code() != Some(2) {
                    problems.push(format!("exit status {:?}, expected 2", out.status.code()));
                }
                if !stdout.is_empty() {
                    problems.push(format!("printed {stdout:?} for an invalid query"));
                }
                for m in messages {
                    if !stderr.contains(m.as_str()) {
                        problems.push(format!("stderr lacks {m:?}: {stderr}"));
                    }
                }
                (!problems.is_empty()).then(|| problems.join("; "))
            }
            Expect::Matches { keys, rows } => {
                if !out.status.success() {
                    return Some(format!("exit status {:?}: {stderr}", out.status.code()));
                }
                let mut printed = Vec::new();
                for line in stdout.lines() {
                    match serde_json::from_str::<serde_json::Value>(line) {
                        Ok(v) => printed.push(v),
                        Err(e) => return Some(format!("line {line:?} is not JSON: {e}")),
                    }
                }
                if case.select.is_some() {
                    if printed.len() != keys.len() {
                        return Some(format!(
                            "printed {} rows, expected {} ({})",
                            printed.len(),
                            keys.len(),
                            show_keys(keys)
                        ));
                    }
                    let diffs: Vec<String> = printed
                        .iter()
                        .zip(rows)
                        .filter(|(a, b)| a != b)
                        .map(|(a, b)| format!("row {a} expected {b}"))
                        .collect();
                    return (!diffs.is_empty()).then(|| diffs.join("; "));
                }
                let got: Vec<(String, String)> = printed
                    .iter()
                    .map(|v| {
                        let s =
                            |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("?").to_owned();
                        (s("PartitionKey"), s("RowKey"))
                    })
                    .collect();
                (got != *keys)
                    .then(|| format!("got {}, expected {}", show_keys(&got), show_keys(keys)))
            }
        }
    });
}
