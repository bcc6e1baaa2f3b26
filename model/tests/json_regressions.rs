//! Replays every payload saved under `tests/regressions/` (fuzz findings of the
//! `decode_entity` target and hand-written hostile inputs) through the fuzz target's own
//! oracle, and runs that oracle on generated payloads on stable: decoding never panics,
//! errors are typed 400s with short messages, and whatever decodes is valid and survives
//! encode → decode at every metadata level.
//!
//! To add one: copy the fuzz artifact (raw bytes) to `model/tests/regressions/<name>`.

#[path = "support/decode_oracle.rs"]
mod decode_oracle;

use proptest::prelude::*;
use std::fs;
use std::path::Path;

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
        let result = std::panic::catch_unwind(|| decode_oracle::check(&bytes));
        assert!(result.is_ok(), "regression input {name} failed the oracle");
        count += 1;
    }
    assert!(count > 0, "no regression inputs found in {}", dir.display());
}

/// One JSON member: a key (system, custom, annotation, metadata, escaped or odd) and a value.
fn member() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("PartitionKey"),
        Just("RowKey"),
        Just("Timestamp"),
        Just("Timestamp@odata.type"),
        Just("A"),
        Just("A@odata.type"),
        Just("B"),
        Just("B@odata.type"),
        Just("\\u0041"),
        Just("odata.etag"),
        Just("odata.metadata"),
        Just("a@b"),
        Just(""),
        Just("Größe"),
        Just("\\ud800"),
    ];
    let value = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("-0".to_owned()),
        Just("2147483648".to_owned()),
        Just("1e308".to_owned()),
        Just("1e309".to_owned()),
        Just("-1.5e-3".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just("[]".to_owned()),
        Just("{\"x\":[1,{}]}".to_owned()),
        Just(r#""Edm.Int64""#.to_owned()),
        Just(r#""Edm.Int32""#.to_owned()),
        Just(r#""Edm.Double""#.to_owned()),
        Just(r#""Edm.DateTime""#.to_owned()),
        Just(r#""Edm.Guid""#.to_owned()),
        Just(r#""Edm.Binary""#.to_owned()),
        Just(r#""Edm.Boolean""#.to_owned()),
        Just(r#""Edm.String""#.to_owned()),
        Just(r#""9223372036854775807""#.to_owned()),
        Just(r#""-9223372036854775809""#.to_owned()),
        Just(r#""NaN""#.to_owned()),
        Just(r#""-Infinity""#.to_owned()),
        Just(r#""TRUE""#.to_owned()),
        Just(r#""2008-07-10T00:00:00.1234567+14:00""#.to_owned()),
        Just(r#""1601-01-01T00:00:00Z""#.to_owned()),
        Just(r#""9999-12-31T23:59:59.9999999Z""#.to_owned()),
        Just(r#""A455C695-DF98-5678-AAAA-81D3367E5A34""#.to_owned()),
        Just(r#""AAEC/w==""#.to_owned()),
        Just(r#""AAEC/w""#.to_owned()),
        Just(r#""\ud83d\ude00""#.to_owned()),
        Just(r#""\udc00""#.to_owned()),
        "\"[ -~]{0,6}\"",
        "-?[0-9]{1,25}(\\.[0-9]{0,5})?([eE][+-]?[0-9]{1,4})?",
    ];
    (key, value).prop_map(|(k, v)| format!("\"{k}\":{v}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn oracle_holds_on_generated_payloads(
        members in proptest::collection::vec(member(), 0..10),
        keys_first in any::<bool>(),
    ) {
        let mut all = members;
        if keys_first {
            all.insert(0, r#""PartitionKey":"p","RowKey":"r""#.to_owned());
        }
        let text = format!("{{{}}}", all.join(","));
        decode_oracle::check(text.as_bytes());
    }

    #[test]
    fn oracle_holds_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        decode_oracle::check(&bytes);
    }
}
