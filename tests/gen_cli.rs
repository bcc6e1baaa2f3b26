//! Golden tests of `tableq gen`: determinism, counts, key format, property types, exit
//! codes, and the round trip through `tableq eval`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use tableq::model::json::{DecodeOptions, decode_entity};
use tableq::model::{EdmType, EntityView, Value, order::compare_str};

fn tableq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(args)
        .output()
        .expect("run tableq")
}

fn gen_ok(args: &[&str]) -> String {
    let mut all = vec!["gen"];
    all.extend_from_slice(args);
    let out = tableq(&all);
    assert!(
        out.status.success(),
        "gen {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = gen_ok(&["--entities", "500", "--partitions", "7", "--seed", "11"]);
    let b = gen_ok(&["--entities", "500", "--partitions", "7", "--seed", "11"]);
    let c = gen_ok(&["--entities", "500", "--partitions", "7", "--seed", "12"]);
    assert_eq!(a, b);
    assert_ne!(a, c);
    // Same keys whatever the seed; only values differ.
    let keys = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                format!("{}/{}", v["PartitionKey"], v["RowKey"])
            })
            .collect()
    };
    assert_eq!(keys(&a), keys(&c));
}

#[test]
fn golden_output_is_stable() {
    // Pins the generator's value stream: a change here changes every benchmark data set.
    insta::assert_snapshot!(gen_ok(&[
        "--entities",
        "3",
        "--partitions",
        "2",
        "--seed",
        "42"
    ]));
}

#[test]
fn counts_and_even_spread() {
    let text = gen_ok(&["--entities", "1052", "--partitions", "7", "--seed", "1"]);
    let mut per_partition: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        per_partition
            .entry(v["PartitionKey"].as_str().unwrap().to_owned())
            .or_default()
            .push(v["RowKey"].as_str().unwrap().to_owned());
    }
    assert_eq!(text.lines().count(), 1052);
    let names: Vec<&str> = per_partition.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["p000", "p001", "p002", "p003", "p004", "p005", "p006"]
    );
    // 1052 = 7 × 150 + 2: the first two partitions hold one more.
    let sizes: Vec<usize> = per_partition.values().map(Vec::len).collect();
    assert_eq!(sizes, [151, 151, 150, 150, 150, 150, 150]);
    for rows in per_partition.values() {
        for (i, rk) in rows.iter().enumerate() {
            assert_eq!(*rk, format!("r{i:08}"));
        }
    }
}

#[test]
fn key_format_defaults_and_widths() {
    // Default: 100 partitions, p000 … p099.
    let text = gen_ok(&["--entities", "250"]);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(first["PartitionKey"], "p000");
    assert_eq!(first["RowKey"], "r00000000");
    assert_eq!(last["PartitionKey"], "p099");
    assert_eq!(last["RowKey"], "r00000001");
    // Wider than 3 digits: the width of P − 1.
    let text = gen_ok(&["--entities", "3", "--partitions", "1500"]);
    let pks: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["PartitionKey"].to_string())
        .collect();
    assert_eq!(pks, ["\"p0000\"", "\"p0001\"", "\"p0002\""]);
}

#[test]
fn every_line_is_a_valid_entity_with_the_documented_properties_in_key_order() {
    let text = gen_ok(&["--entities", "400", "--partitions", "3", "--seed", "9"]);
    let mut previous: Option<(String, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let e = decode_entity(line, &DecodeOptions::STORED)
            .unwrap_or_else(|err| panic!("line {}: {err:?}", i + 1));
        let ty = |n: &str| e.get(n).map(|v| v.edm_type());
        assert_eq!(ty("Age"), Some(EdmType::Int32));
        assert_eq!(ty("Big"), Some(EdmType::Int64));
        assert_eq!(ty("Score"), Some(EdmType::Double));
        assert_eq!(ty("Active"), Some(EdmType::Boolean));
        assert_eq!(ty("Name"), Some(EdmType::String));
        assert_eq!(ty("City"), Some(EdmType::String));
        assert_eq!(ty("Born"), Some(EdmType::DateTime));
        assert_eq!(ty("Id"), Some(EdmType::Guid));
        assert_eq!(ty("Blob"), Some(EdmType::Binary));
        assert!(matches!(e.custom("Age"), Some(Value::Int32(0..=99))));
        assert!(matches!(e.custom("Blob"), Some(Value::Binary(b)) if b.len() <= 16));
        assert!(EntityView::timestamp(&e).is_none());
        let key = (e.partition_key().to_owned(), e.row_key().to_owned());
        if let Some(p) = &previous {
            let ord = compare_str(&p.0, &key.0).then_with(|| compare_str(&p.1, &key.1));
            assert!(ord.is_lt(), "{p:?} then {key:?}");
        }
        previous = Some(key);
    }
}

#[test]
fn timestamps_on_request() {
    let text = gen_ok(&["--entities", "2", "--timestamps"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains(r#""Timestamp":"2026-01-01T00:00:00Z""#),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(r#""Timestamp":"2026-01-01T00:00:00.001Z""#),
        "{}",
        lines[1]
    );
}

#[test]
fn zero_entities_prints_nothing() {
    assert_eq!(gen_ok(&["--entities", "0"]), "");
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["gen"][..],
        &["gen", "--entities", "-1"],
        &["gen", "--entities", "x"],
        &["gen", "--entities", "5", "--partitions", "0"],
        &["gen", "--entities", "5", "--seed", "nope"],
    ] {
        let out = tableq(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn eval_without_filter_reprints_gen_output_byte_for_byte() {
    let text = gen_ok(&["--entities", "2345", "--partitions", "13", "--seed", "5"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["eval", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tableq eval");
    let mut stdin = child.stdin.take().unwrap();
    let input = text.clone();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
}
