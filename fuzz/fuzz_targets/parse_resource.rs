//! Fuzz target `parse_resource`: arbitrary bytes as a (percent-decoded) resource path
//! segment through `tableq_parser::parse_resource`. Nothing may panic; whatever parses
//! prints canonical text that parses back to an equal resource; every error renders and
//! carries a span inside the input, on character boundaries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tableq_parser::parse_resource;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_resource(&text) {
        Ok(resource) => {
            let printed = resource.to_string();
            let again = parse_resource(&printed);
            assert_eq!(again.as_ref().ok(), Some(&resource), "{printed:?}");
        }
        Err(e) => {
            let span = e.span();
            assert!(span.start <= span.end && span.end <= text.len());
            assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
            let _ = e.to_string();
            let _ = e.summary();
        }
    }
});
