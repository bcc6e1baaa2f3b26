//! Replays every input saved under `tests/regressions/` (crashes and slow inputs found by
//! the `fuzz/` targets or by proptest) through all entry points: none may panic, whatever
//! parses must print and re-parse to an equal AST (or resource), and errors must render.
//!
//! To add one: copy the fuzz artifact (raw bytes) to `parser/tests/regressions/<name>`.

use std::fs;
use std::path::Path;
use tableq_parser::{FilterOptions, lex, parse_filter, parse_resource, parse_select, parse_top};

fn replay(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let _ = lex(&text);
    let _ = parse_select(&text).map_err(|e| e.to_string());
    let _ = parse_top(&text).map_err(|e| e.to_string());
    match parse_resource(&text) {
        Ok(r) => {
            let printed = r.to_string();
            assert_eq!(parse_resource(&printed).ok(), Some(r), "{printed:?}");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
    for options in [FilterOptions::default(), FilterOptions::unlimited()] {
        match parse_filter(&text, &options) {
            Ok(f) => {
                let printed = f.to_string();
                assert_eq!(
                    parse_filter(&printed, &options).ok(),
                    Some(f),
                    "{printed:?}"
                );
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

#[test]
fn saved_inputs_replay_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut count = 0;
    for entry in fs::read_dir(&dir).expect("tests/regressions exists") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let bytes = fs::read(&path).expect("readable file");
        let name = path.display().to_string();
        let result = std::panic::catch_unwind(|| replay(&bytes));
        assert!(result.is_ok(), "regression input {name} panicked");
        count += 1;
    }
    assert!(count > 0, "no regression inputs found in {}", dir.display());
}
