//! Replays every input saved under `tests/plan_exec/regressions/` (findings and seeds of the
//! `plan_exec` fuzz target in `fuzz/`) through the same check as the fuzz target: planned,
//! paged execution must equal the naive evaluation of the filter (see
//! `tests/plan_exec/harness.rs` for the input format). Runs on stable, in CI.
//!
//! To add one: copy the fuzz artifact (raw bytes) to
//! `tests/plan_exec/regressions/<short-name>` and describe it in the README there.

use crate::plan_exec_harness as harness;

use std::fs;
use std::path::Path;

#[test]
fn saved_plan_exec_inputs_replay_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plan_exec/regressions");
    let mut names = Vec::new();
    let mut failures = Vec::new();
    for entry in fs::read_dir(&dir).expect("tests/plan_exec/regressions exists") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let bytes = fs::read(&path).expect("readable file");
        match std::panic::catch_unwind(|| harness::check(&bytes)) {
            Ok(Ok(Some(_))) => {}
            // Seeds are written to be checked: their filters must parse.
            Ok(Ok(None)) if name.starts_with("seed-") => {
                failures.push(format!("{name}: the filter does not parse"))
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => failures.push(format!("{name}: {e}")),
            Err(_) => failures.push(format!("{name}: panicked")),
        }
        names.push(name);
    }
    assert!(
        failures.is_empty(),
        "{} of {} inputs failed:\n\n{}",
        failures.len(),
        names.len(),
        failures.join("\n\n")
    );
    assert!(
        names.len() >= 5,
        "only {} inputs in {}",
        names.len(),
        dir.display()
    );
}

/// A one-line input (filter only, the fixed table) and one using every option byte and its
/// own entities.
#[test]
fn short_and_full_inputs_pass() {
    // Filter only: the fixed table (100 entities), default options; every entity matches.
    assert_eq!(harness::check(b"RowKey ge ''"), Ok(Some(100)));
    assert_eq!(
        harness::check(b"PartitionKey eq 'a' and RowKey eq 'b'"),
        Ok(Some(1))
    );
    // Every option byte set, and a table of two entities: ('a', 'a\0') with B = 'a', and
    // ('a\0', 'a') with A = 0, B = false.
    assert_eq!(
        harness::check(b"A ge 0 or B eq 'a'\n\x02\x03\x01\x07\x02\x01\x02\x08\x05\x02\x01\x09\x06"),
        Ok(Some(2))
    );
    // Text that does not parse checks nothing.
    assert_eq!(harness::check(b"A eq"), Ok(None));
}
