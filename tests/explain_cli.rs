//! Golden tests of `tableq explain` and `tableq debug plan`: run the built binary.

use std::process::{Command, Output};

fn tableq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(args)
        .output()
        .expect("run tableq")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["explain", "--json"];
    all.extend_from_slice(args);
    let o = tableq(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

#[test]
fn text_plan() {
    let o = tableq(&[
        "explain",
        "--filter",
        "(PartitionKey eq 'b' and RowKey eq '2') or (PartitionKey eq 'a' and RowKey eq '1') or (PartitionKey eq 'c' and Age gt 30)",
        "--select",
        "Name, Age,Name",
        "--top",
        "10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("explain_text", stdout(&o));
}

#[test]
fn verbose_plan_lists_steps() {
    let o = tableq(&[
        "explain",
        "--verbose",
        "--filter",
        "not (PartitionKey ne 'p') and RowKey lt 5 and not (Age eq 1)",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("negate_key_comparison"), "{text}");
    assert!(text.contains("key_type_mismatch"), "{text}");
    insta::assert_snapshot!("explain_verbose", text);
}

#[test]
fn verbose_json_adds_steps() {
    let j = json(&[
        "--verbose",
        "--filter",
        "not (RowKey lt 'm') and PartitionKey ge ''",
    ]);
    let steps = j["steps"].as_array().expect("steps");
    let rules: Vec<&str> = steps.iter().filter_map(|s| s["rule"].as_str()).collect();
    assert!(rules.contains(&"negate_key_comparison"), "{rules:?}");
    assert!(rules.contains(&"key_lower_bound"), "{rules:?}");
    assert_eq!(j["residual"], "true");
    assert_eq!(
        j["ranges"][0]["row_key"]["lower"],
        serde_json::json!({"value": "m", "inclusive": true})
    );
    // Without --verbose the object has exactly the four documented keys.
    let plain = json(&["--filter", "A eq 1"]);
    let mut keys: Vec<&String> = plain.as_object().expect("object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["ranges", "residual", "select", "top"]);
}

#[test]
fn debug_plan_is_explain() {
    let args = [
        "--filter",
        "PartitionKey ge 'a' and PartitionKey lt 'c' and X eq 1",
        "--json",
    ];
    let a = tableq(&[&["explain"][..], &args].concat());
    let b = tableq(&[&["debug", "plan"][..], &args].concat());
    assert!(a.status.success() && b.status.success());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn json_shapes() {
    let point = json(&["--filter", "PartitionKey eq 'p' and RowKey eq 'r'"]);
    assert_eq!(
        point,
        serde_json::json!({
            "ranges": [{
                "strategy": "point",
                "partition_key": {"lower": {"value": "p", "inclusive": true}, "upper": {"value": "p", "inclusive": true}},
                "row_key": {"lower": {"value": "r", "inclusive": true}, "upper": {"value": "r", "inclusive": true}},
            }],
            "residual": "true",
            "select": null,
            "top": null,
        })
    );
    let range = json(&[
        "--filter",
        "PartitionKey eq 'p' and RowKey gt 'a' and Age lt 3",
        "--select",
        "*",
        "--top",
        "7",
    ]);
    assert_eq!(range["ranges"][0]["strategy"], "range");
    assert_eq!(
        range["ranges"][0]["row_key"]["lower"],
        serde_json::json!({"value": "a", "inclusive": false})
    );
    assert_eq!(
        range["ranges"][0]["row_key"]["upper"],
        serde_json::Value::Null
    );
    assert_eq!(range["residual"], "Age lt 3");
    assert_eq!(range["select"], serde_json::Value::Null);
    assert_eq!(range["top"], 7);
    let none = json(&["--filter", "PartitionKey gt 5"]);
    assert_eq!(none["ranges"], serde_json::json!([]));
    let all = json(&["--filter", "PartitionKey lt 5", "--select", "B,A,B"]);
    assert_eq!(all["ranges"][0]["strategy"], "full");
    assert_eq!(all["residual"], "true");
    assert_eq!(all["select"], serde_json::json!(["B", "A"]));
    let partitions = json(&["--filter", "PartitionKey eq 'q' or PartitionKey eq 'p'"]);
    let pks: Vec<&str> = partitions["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["partition_key"]["lower"]["value"].as_str().unwrap())
        .collect();
    assert_eq!(pks, ["p", "q"]);
}

#[test]
fn invalid_queries_exit_2_with_a_diagnostic() {
    let o = tableq(&["explain", "--filter", "PartitionKey EQ 'a'"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert!(
        err.contains("^^") && err.contains("did you mean `eq`?"),
        "{err}"
    );
    for args in [
        &["explain", "--top", "0"][..],
        &["explain", "--select", "A,,B"],
        &["debug", "plan", "--filter", "A eq null"],
    ] {
        let o = tableq(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains('^'), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn comparison_limit_options() {
    let filter: Vec<String> = (0..16)
        .map(|i| format!("PartitionKey eq 'p{i:02}'"))
        .collect();
    let filter = filter.join(" or ");
    assert_eq!(
        tableq(&["explain", "--filter", &filter]).status.code(),
        Some(2)
    );
    let o = tableq(&["explain", "--json", "--no-limits", "--filter", &filter]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["ranges"].as_array().map(Vec::len), Some(16));
    assert!(
        tableq(&["explain", "--max-comparisons", "16", "--filter", &filter])
            .status
            .success()
    );
    assert_eq!(
        tableq(&[
            "explain",
            "--max-comparisons",
            "2",
            "--filter",
            "A eq 1 and B eq 2 and C eq 3"
        ])
        .status
        .code(),
        Some(2)
    );
    // A cap on ranges coarsens the plan and keeps the precision in the residual.
    let capped = json(&["--no-limits", "--max-ranges", "4", "--filter", &filter]);
    assert_eq!(capped["ranges"].as_array().map(Vec::len), Some(1));
    assert_ne!(capped["residual"], "true");
}

#[test]
fn boolean_literals_fold_into_the_plan() {
    let mut text = String::new();
    for filter in [
        "true",
        "FALSE",
        "not false",
        "PartitionKey eq 'a' and True",
        "Age gt 30 and true",
        "Age gt 30 or TRUE",
        "PartitionKey eq 'a' and false",
    ] {
        let o = tableq(&["explain", "--filter", filter]);
        assert!(o.status.success(), "{filter}: {}", stderr(&o));
        text.push_str(&format!(
            "$ tableq explain --filter \"{filter}\"\n{}\n",
            stdout(&o)
        ));
    }
    // `false` reads nothing, `true` everything with no residual.
    assert_eq!(
        json(&["--filter", "false"])["ranges"],
        serde_json::json!([])
    );
    let all = json(&["--filter", "True"]);
    assert_eq!(all["ranges"][0]["strategy"], "full");
    assert_eq!(all["residual"], "true");
    insta::assert_snapshot!("explain_boolean_literals", text);
}

/// `--json` prints the object indented, one member per line (as `docs/commands.md` shows
/// it), and it still parses as one JSON object.
#[test]
fn json_is_printed_indented() {
    let o = tableq(&[
        "explain",
        "--json",
        "--filter",
        "PartitionKey eq 'p'",
        "--top",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("{\n  \"ranges\": [\n    {\n"), "{text}");
    assert!(text.ends_with("\n  \"top\": 3\n}\n"), "{text}");
    let parsed: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
    assert_eq!(parsed["ranges"][0]["strategy"], "partition");
}
