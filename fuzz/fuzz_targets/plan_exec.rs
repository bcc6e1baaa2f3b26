//! Fuzz target `plan_exec`: planned, paged, parallel execution against the naive
//! evaluator. Bytes become a `$filter`, execution options (threads, page size, chunk size,
//! budget, `$top`) and a table (format: `tests/plan_exec/harness.rs`); the results of every
//! page, owned and visited, concatenated, must equal the naive evaluation of the filter's
//! AST over every entity, and pages must keep their invariants (size, key order, progress).
//! Findings are kept in `tests/plan_exec/regressions/` and replayed on stable by
//! `tests/plan_exec_regressions.rs`.
#![no_main]

#[path = "../../tests/plan_exec/harness.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = harness::check(data) {
        panic!("{problem}");
    }
});
