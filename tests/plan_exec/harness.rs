//! The planned-execution check shared by the `plan_exec` fuzz target (`fuzz/`) and its
//! stable replay test (`tests/plan_exec_regressions.rs`): arbitrary bytes become a
//! `$filter`, execution options and a table; the filter is planned and executed page by
//! page (following continuations, with the owned and the visitor paths) and the results
//! must equal the naive evaluation of the original AST over every entity.
//!
//! **Input format** (every byte string is a valid input, and saved inputs stay readable):
//! the text up to the first newline is the `$filter` (UTF-8, lossy; parsed with the
//! service's limits — inputs that do not parse check nothing). After the newline:
//!
//! * 5 option bytes (missing bytes count as 0): threads `1 + b0 % 3`; page size `b1` (0 =
//!   the default, else `1 + b1 % 7`); first-wave chunk rows `1 + b2 % 4`; flags `b3` (bit 0:
//!   every wave on the pool, bit 1: an examined-entities budget of `1 + (b3 >> 2) % 8`);
//!   `$top` `b4` (0 = none, else `1 + b4 % 6`);
//! * then 4 bytes per entity (at most 64): PartitionKey, RowKey (indexes into [`KEYS`]),
//!   property `A` and property `B` (see [`entity`]). Without entity bytes a fixed table of
//!   [`KEYS`]² entities is used, so a one-line input (just a filter) is a useful test.

use std::sync::{Arc, OnceLock};
use tableq_exec::{Executor, Key, PageOptions, Tuning};
use tableq_model::{Entity, EntityView, Value};
use tableq_parser::{FilterOptions, parse_filter, parse_top};
use tableq_store::MemorySnapshot;

/// Key strings: the least key, successors (`a`, `a\0`), a quote, and the two UTF-16 order
/// traps (U+FFFF sorts after U+10000).
pub const KEYS: &[&str] = &[
    "",
    "a",
    "a\0",
    "ab",
    "b",
    "p1",
    "p2",
    "r'1",
    "\u{FFFF}",
    "\u{10000}",
];

/// Property `A` and `B` of an entity from two bytes: several types, missing values,
/// NaN, equal and distinct numbers, so comparisons meet every rule of the spec.
pub fn entity(pk: u8, rk: u8, a: u8, b: u8) -> Entity {
    let key = |i: u8| KEYS[usize::from(i) % KEYS.len()];
    let mut e = Entity::new(key(pk), key(rk));
    let small = i32::from(a >> 3) % 5 - 1;
    let a_value = match a % 8 {
        0 => None,
        1..=4 => Some(Value::Int32(small)),
        5 => Some(Value::Int64(i64::from(small))),
        6 => Some(Value::Double(if small == 3 {
            f64::NAN
        } else {
            f64::from(small)
        })),
        _ => Some(Value::String(key(a >> 3).to_owned())),
    };
    let b_value = match b % 4 {
        0 => None,
        1 => Some(Value::String(key(b >> 2).to_owned())),
        2 => Some(Value::Boolean(b & 16 != 0)),
        _ => Some(Value::Int64(i64::from(b >> 2) - 8)),
    };
    for (name, value) in [("A", a_value), ("B", b_value)] {
        if let Some(v) = value {
            e.set(name, v);
        }
    }
    e
}

fn default_entities() -> Vec<Entity> {
    let n = KEYS.len() as u8;
    (0..n)
        .flat_map(|p| (0..n).map(move |r| entity(p, r, p * 7 + r, p + 3 * r)))
        .collect()
}

/// Shared pools (building one per input would dominate fuzzing time).
fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: [OnceLock<Option<Arc<rayon::ThreadPool>>>; 2] =
        [OnceLock::new(), OnceLock::new()];
    let slot = POOLS.get(threads.checked_sub(2)?)?;
    slot.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .ok()
            .map(Arc::new)
    })
    .clone()
}

/// The options an input asks for.
struct Options {
    threads: usize,
    page: PageOptions,
    tuning: Tuning,
    top: Option<String>,
}

fn options(bytes: &[u8]) -> Options {
    let b = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let mut page = PageOptions::default();
    if b(1) != 0 {
        page.page_size = Some(1 + usize::from(b(1)) % 7);
    }
    if b(3) & 2 != 0 {
        page.max_examined = Some(1 + u64::from(b(3) >> 2) % 8);
    }
    Options {
        threads: 1 + usize::from(b(0)) % 3,
        page,
        tuning: Tuning {
            initial_chunk_rows: 1 + usize::from(b(2)) % 4,
            max_chunk_rows: 8,
            small_wave_rows: if b(3) & 1 != 0 { 0 } else { 2048 },
        },
        top: (b(4) != 0).then(|| (1 + b(4) % 6).to_string()),
    }
}

fn key_of<E: EntityView + ?Sized>(e: &E) -> Key {
    Key::new(e.partition_key(), e.row_key())
}

/// Runs one input: `Ok(Some(matches))` after a successful check, `Ok(None)` when the
/// filter does not parse (nothing to check); `Err` describes the first disagreement.
pub fn check(data: &[u8]) -> Result<Option<usize>, String> {
    let (filter_bytes, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let text = String::from_utf8_lossy(filter_bytes);
    let Ok(filter) = parse_filter(&text, &FilterOptions::default()) else {
        return Ok(None);
    };
    let opts = options(rest);
    let entities: Vec<Entity> = match rest.get(5..) {
        Some(bytes) if bytes.len() >= 4 => bytes
            .chunks_exact(4)
            .take(64)
            .map(|c| entity(c[0], c[1], c[2], c[3]))
            .collect(),
        _ => default_entities(),
    };
    let top = match &opts.top {
        Some(t) => Some(parse_top(t).map_err(|e| format!("$top {t}: {e}"))?),
        None => None,
    };
    let snapshot = MemorySnapshot::from_entities(entities).map_err(|e| format!("table: {e}"))?;
    let plan = tableq_planner::plan(&filter, None, top.as_ref());
    let context = || format!("filter: {text}\nplan:\n{plan}");

    // The oracle: the original AST on every entity, in key order.
    let mut expected = Vec::new();
    for row in snapshot.iter() {
        let naive = tableq_planner::ast_eval::matches(&filter, &row);
        if plan.matches(&row) != naive {
            return Err(format!(
                "Plan::matches disagrees with the naive evaluator on {} (naive: {naive})\n{}",
                key_of(&row),
                context()
            ));
        }
        if naive {
            expected.push(key_of(&row));
        }
    }

    let executor = Executor::new(&snapshot).with_tuning(opts.tuning);
    let executor = match pool(opts.threads) {
        Some(p) => executor.with_pool(p),
        None => executor
            .with_threads(1)
            .map_err(|e| format!("executor: {e}"))?,
    };
    let limit = [plan.top.map(|t| t as usize), opts.page.page_size]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(tableq_exec::DEFAULT_PAGE_SIZE);
    for visitor in [false, true] {
        let got = run_pages(&executor, &plan, &opts.page, limit, visitor)
            .map_err(|e| format!("{e}\n{}", context()))?;
        if got != expected {
            return Err(format!(
                "{} path: got {got:?}\nexpected {expected:?}\n{}",
                if visitor { "visitor" } else { "owned" },
                context()
            ));
        }
    }
    Ok(Some(expected.len()))
}

/// Every result key of `plan`, page after page, checking each page's invariants.
fn run_pages(
    executor: &Executor<'_, MemorySnapshot>,
    plan: &tableq_planner::Plan,
    options: &PageOptions,
    limit: usize,
    visitor: bool,
) -> Result<Vec<Key>, String> {
    let mut got: Vec<Key> = Vec::new();
    let mut continuation: Option<Key> = None;
    for _ in 0..100_000 {
        let (rows, next) = if visitor {
            let mut rows = Vec::new();
            let (next, _) = executor
                .execute_page_with(plan, continuation.as_ref(), options, |row| {
                    rows.push(key_of(row.row()))
                })
                .map_err(|e| format!("execution failed: {e}"))?;
            (rows, next)
        } else {
            let page = executor
                .execute_page(plan, continuation.as_ref(), options)
                .map_err(|e| format!("execution failed: {e}"))?;
            let rows = page.rows.iter().map(|r| r.key()).collect();
            (rows, page.continuation)
        };
        if rows.len() > limit {
            return Err(format!("a page of {} rows (limit {limit})", rows.len()));
        }
        if rows.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("page rows out of key order: {rows:?}"));
        }
        if let (Some(first), Some(from)) = (rows.first(), &continuation)
            && first < from
        {
            return Err(format!("row {first} before the continuation {from}"));
        }
        if let (Some(last), Some(next)) = (rows.last(), &next)
            && last >= next
        {
            return Err(format!("continuation {next} not after the last row {last}"));
        }
        if let (Some(prev), Some(next)) = (&continuation, &next)
            && prev >= next
        {
            return Err(format!("no progress: continuation {prev} then {next}"));
        }
        got.extend(rows);
        continuation = next;
        if continuation.is_none() {
            return Ok(got);
        }
    }
    Err("more than 100 000 pages".to_owned())
}
