//! The command: the queries parsed and planned first, the input opened, each query run by
//! its engine ([`stream`](super::stream) or [`table`](super::table)), then the `--top` notes
//! and the `--stats` lines (see the module docs of `eval`).

use super::args::{Args, Engine};
use super::context::{Context, Failure, Outcome};
use super::output::Output;
use super::progress::Progress;
use super::queries::{self, Query};
use super::stream;
use super::table;
use super::warnings::{Warnings, json_string};
use crate::cli::input::{self, Input};
use std::process::ExitCode;
use std::sync::Arc;

/// Runs `tableq eval`.
pub fn run(args: Args) -> ExitCode {
    match eval(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Reported) => ExitCode::from(2),
        Err(Failure::Message(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
    }
}

fn eval(args: &Args) -> Result<(), Failure> {
    let queries = queries::parse(args)?;
    let engine = match (args.engine, &args.queries) {
        (Engine::Auto, Some(_)) => Engine::Table,
        (Engine::Auto, None) => Engine::Stream,
        (engine, _) => engine,
    };
    let threads = match args.threads {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Failure::Message(format!("cannot start {threads} threads: {e}")))?;
    let context = Context {
        threads,
        pool: Arc::new(pool),
        strict: args.strict,
    };
    let input = input::open(args.file.as_deref(), "eval").map_err(Failure::Message)?;
    let mut warnings = Warnings::new(Progress::new(input.file.as_ref().map(|f| f.1)));
    let mut out = Output::new();
    let many = args.queries.is_some();
    let result = match engine {
        Engine::Stream => {
            let mut outcomes = Vec::new();
            let mut input = Some(input);
            for query in &queries {
                let this = match input.take() {
                    Some(i) => i,
                    // Each further query reads the file again (stdin only once: refused
                    // when the queries are parsed).
                    None => reopen(args)?,
                };
                if many {
                    out.header(query)?;
                }
                let outcome = stream::run(query, this, &context, &mut warnings, &mut out)?;
                outcomes.push(outcome);
            }
            Ok(outcomes)
        }
        _ => table::run(&queries, input, &context, &mut warnings, &mut out, many),
    };
    warnings.finish();
    let outcomes = result?;
    out.flush()?;
    for (query, outcome) in queries.iter().zip(&outcomes) {
        if let Some(next) = &outcome.next {
            let which = if many {
                format!("query {}: ", query.number)
            } else {
                String::new()
            };
            eprintln!(
                "note: {which}more entities match than the {} printed (--top {}); the next is at \
                 NextPartitionKey {}, NextRowKey {}",
                outcome.matched,
                query.plan.top.unwrap_or_default(),
                json_string(&next.partition_key),
                json_string(&next.row_key),
            );
        }
    }
    if args.stats {
        for (query, outcome) in queries.iter().zip(&outcomes) {
            eprintln!(
                "{}",
                stats_line(engine, many.then_some(query), query, outcome)
            );
        }
    }
    Ok(())
}

/// Opens the input file again (the stream engine reads it once per query).
fn reopen(args: &Args) -> Result<Input, Failure> {
    input::open(args.file.as_deref(), "eval").map_err(Failure::Message)
}

/// The `--stats` object of one query.
fn stats_line(engine: Engine, numbered: Option<&Query>, query: &Query, o: &Outcome) -> String {
    let engine = if engine == Engine::Table {
        "table"
    } else {
        "stream"
    };
    let number = numbered.map_or(String::new(), |q| format!(",\"query\":{}", q.number));
    let next = match &o.next {
        Some(k) => format!(
            "{{\"PartitionKey\":{},\"RowKey\":{}}}",
            json_string(&k.partition_key),
            json_string(&k.row_key)
        ),
        None => "null".to_owned(),
    };
    format!(
        "{{\"engine\":\"{engine}\"{number},\"loaded\":{},\"ranges\":{},\"examined\":{},\
         \"matched\":{},\"next\":{next},\"load_ms\":{:.3},\"parse_us\":{:.3},\"plan_us\":{:.3},\
         \"exec_us\":{:.3}}}",
        o.loaded,
        o.ranges,
        o.examined,
        o.matched,
        o.load.as_secs_f64() * 1e3,
        query.parse_time.as_secs_f64() * 1e6,
        query.plan_time.as_secs_f64() * 1e6,
        o.exec.as_secs_f64() * 1e6,
    )
}
