//! Fuzz target `parse_filter`: arbitrary bytes through every entry point of
//! `tableq-parser`. Nothing may panic or overflow the stack; whatever parses must print
//! canonical text that parses back to an equal AST (the AST round-trip property); every
//! error must render and carry a span inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tableq_parser::{FilterOptions, lex, parse_filter, parse_select, parse_top};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = lex(&text);
    let _ = parse_select(&text).map_err(|e| e.to_string());
    let _ = parse_top(&text).map_err(|e| e.to_string());
    for options in [FilterOptions::default(), FilterOptions::unlimited()] {
        match parse_filter(&text, &options) {
            Ok(filter) => {
                let printed = filter.to_string();
                let again = parse_filter(&printed, &options);
                assert_eq!(again.as_ref().ok(), Some(&filter), "{printed:?}");
                let _ = format!("{filter:#}");
            }
            Err(e) => {
                assert!(e.span().start <= text.len() && e.span().end <= text.len());
                let _ = e.to_string();
                let _ = e.summary();
            }
        }
    }
});
