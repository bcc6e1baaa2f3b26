//! Fuzz target `request`: arbitrary bytes as one HTTP request (an optional credentials byte:
//! `!` unsigned, `~` a wrong key, else signed with the development key; then `METHOD TARGET`,
//! header lines, an empty line, the body) through the server's whole router in-process
//! (`tableq_server::router` + `tower::ServiceExt::oneshot`) on a fresh in-memory store.
//! The oracle (shared with the stable tests in `tests/hostile_input.rs`): a reply within
//! 10 s, never a 5xx, every error an `odata.error` whose code equals `x-ms-error-code`, and
//! the store unchanged after an error, an unsigned or wrongly signed request never succeeding.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/robust_support/request_oracle.rs"]
mod request_oracle;

fuzz_target!(|data: &[u8]| {
    request_oracle::check(data);
});
