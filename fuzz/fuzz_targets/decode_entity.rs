//! Fuzz target `decode_entity`: arbitrary bytes as a JSON entity payload — the server's main
//! untrusted input — through `tableq_model::json::decode_entity` with both Timestamp modes.
//! The oracle (shared with the stable replay test `model/tests/json_regressions.rs`): no
//! panic; errors are typed 400s with short messages; whatever decodes is valid and
//! round-trips through the encoder at every metadata level.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../model/tests/support/decode_oracle.rs"]
mod decode_oracle;

fuzz_target!(|data: &[u8]| {
    decode_oracle::check(data);
});
