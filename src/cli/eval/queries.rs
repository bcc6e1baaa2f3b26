//! The queries of one `tableq eval` run: the one given by `--filter`/`--select`/`--top`, or
//! one per line of a `--queries` file. Every query is parsed and planned before any input is
//! read; an invalid one is reported with a caret diagnostic and the run stops (exit 2).
//!
//! **`--queries FILE` format.** One query per line; blank lines and lines starting with `#`
//! are skipped. A line is either a `$filter` (the whole line, as after URL decoding) or a
//! JSON object `{"filter": "...", "select": "...", "top": N}` (every key optional; `top` a
//! number or a string). `--select` and `--top` on the command line are the defaults for
//! lines that do not give their own.

use super::args::{Args, Engine};
use super::context::Failure;
use crate::cli::diagnostic::print_parse_error;
use std::time::{Duration, Instant};
use tableq::planner::{Plan, QueryText};

/// One parsed and planned query.
pub(super) struct Query {
    /// 1-based position among the queries.
    pub number: usize,
    /// Its line in the `--queries` file (1 for a single query).
    pub line: u64,
    /// The query as written, for headers: the filter, then `| select S` and `| top N`.
    pub text: String,
    /// The plan.
    pub plan: Plan,
    /// Time spent parsing.
    pub parse_time: Duration,
    /// Time spent planning.
    pub plan_time: Duration,
}

/// The query parts before parsing.
struct Parts {
    filter: String,
    select: Option<String>,
    top: Option<String>,
}

/// Parses and plans every query of the run.
pub(super) fn parse(args: &Args) -> Result<Vec<Query>, Failure> {
    let Some(path) = &args.queries else {
        let parts = Parts {
            filter: args.filter.clone().unwrap_or_default(),
            select: args.select.clone(),
            top: args.top.clone(),
        };
        let query = plan(args, 1, 1, &parts, "")?;
        return Ok(vec![query]);
    };
    let reads_stdin = args.file.as_ref().is_none_or(|f| f.as_os_str() == "-");
    if args.engine == Engine::Stream && reads_stdin {
        return Err(Failure::Message(
            "--engine stream reads the input once per query: give a FILE (standard input \
             can be read only once), or use --engine table"
                .to_owned(),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Message(format!("cannot read `{}`: {e}", path.display())))?;
    let label = path.display().to_string();
    let mut queries = Vec::new();
    let mut failed = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let number = queries.len() + 1;
        let at = format!("{label}:{}: ", i + 1);
        let parts = match parts_of(trimmed, args) {
            Ok(p) => p,
            Err(why) => {
                eprintln!("error: {at}{why}");
                failed = true;
                continue;
            }
        };
        match plan(args, number, i as u64 + 1, &parts, &at) {
            Ok(q) => queries.push(q),
            Err(_) => failed = true,
        }
    }
    if failed {
        return Err(Failure::Reported);
    }
    if queries.is_empty() {
        return Err(Failure::Message(format!("{label} holds no query")));
    }
    Ok(queries)
}

/// The parts of one line of a `--queries` file.
fn parts_of(line: &str, args: &Args) -> Result<Parts, String> {
    let mut parts = Parts {
        filter: line.to_owned(),
        select: args.select.clone(),
        top: args.top.clone(),
    };
    if !line.starts_with('{') {
        return Ok(parts);
    }
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
    let text = |key: &str| -> Result<Option<String>, String> {
        match object.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(serde_json::Value::Number(n)) if key == "top" => Ok(Some(n.to_string())),
            Some(other) => Err(format!("\"{key}\" must be a string, not {other}")),
        }
    };
    if let Some(unknown) = object
        .keys()
        .find(|k| !matches!(k.as_str(), "filter" | "select" | "top"))
    {
        return Err(format!(
            "unknown key \"{unknown}\" (a query has \"filter\", \"select\" and \"top\")"
        ));
    }
    parts.filter = text("filter")?.unwrap_or_default();
    if let Some(s) = text("select")? {
        parts.select = Some(s);
    }
    if let Some(t) = text("top")? {
        parts.top = Some(t);
    }
    Ok(parts)
}

/// Parses and plans one query; `at` prefixes the diagnostics' labels.
fn plan(args: &Args, number: usize, line: u64, parts: &Parts, at: &str) -> Result<Query, Failure> {
    let started = Instant::now();
    let text = QueryText {
        filter: Some(&parts.filter),
        select: parts.select.as_deref(),
        top: parts.top.as_deref(),
    };
    let query =
        tableq::planner::Query::parse(text, &args.limits.filter_options()).map_err(|e| {
            print_parse_error(e.error(), &format!("{at}{}", e.option()));
            Failure::Reported
        })?;
    let parse_time = started.elapsed();
    let plan = query.plan_with(&args.limits.planner());
    let plan_time = started.elapsed() - parse_time;
    let mut text = parts.filter.clone();
    if let Some(s) = &parts.select {
        text.push_str(&format!(" | select {s}"));
    }
    if let Some(t) = &parts.top {
        text.push_str(&format!(" | top {t}"));
    }
    Ok(Query {
        number,
        line,
        text,
        plan,
        parse_time,
        plan_time,
    })
}
