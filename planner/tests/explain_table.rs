//! Table-driven planner tests: for each filter, the expected strategies (in key order) and
//! residual, plus an insta snapshot of the whole `explain` text of every case.

use tableq_parser::{FilterOptions, parse_filter, parse_select, parse_top};
use tableq_planner::{Plan, Planner};

/// (filter, strategies in key order joined by ",", "" = reads nothing; residual).
const CASES: &[(&str, &str, &str)] = &[
    // The spec's examples.
    ("", "full", "true"),
    ("PartitionKey eq 'p' and RowKey eq 'r'", "point", "true"),
    ("PartitionKey eq 'p'", "partition", "true"),
    (
        "PartitionKey eq 'p' and RowKey ge 'a' and RowKey lt 'b'",
        "range",
        "true",
    ),
    (
        "PartitionKey ge 'a' and PartitionKey lt 'c'",
        "range",
        "true",
    ),
    (
        "(PartitionKey eq 'a' and RowKey eq '1') or (PartitionKey eq 'b' and RowKey eq '2')",
        "point,point",
        "true",
    ),
    ("PartitionKey eq 'a' and PartitionKey eq 'b'", "", "true"),
    ("Age gt 30", "full", "Age gt 30"),
    // Type mismatches on keys are constants.
    ("PartitionKey lt 5", "full", "true"),
    ("PartitionKey le 5", "full", "true"),
    ("PartitionKey ne 5", "full", "true"),
    ("PartitionKey gt 5", "", "true"),
    ("PartitionKey ge 5", "", "true"),
    ("PartitionKey eq 5", "", "true"),
    ("PartitionKey eq true", "", "true"),
    ("RowKey lt 5L", "full", "true"),
    ("RowKey gt 2.5", "", "true"),
    ("not (PartitionKey lt 5)", "", "true"),
    ("PartitionKey", "", "true"),
    ("not PartitionKey", "full", "true"),
    ("PartitionKey eq 'p' and RowKey lt 5", "partition", "true"),
    ("PartitionKey eq 'p' and RowKey gt 5", "", "true"),
    // Single-key comparisons.
    ("RowKey eq 'r'", "range", "true"),
    ("PartitionKey ne 'p'", "range,range", "true"),
    ("not (PartitionKey eq 'p')", "range,range", "true"),
    ("not (PartitionKey lt 'm')", "range", "true"),
    ("not (RowKey ge 'a')", "range", "true"),
    ("RowKey ne 'r'", "full", "RowKey ne 'r'"),
    ("PartitionKey ge ''", "full", "true"),
    ("PartitionKey lt ''", "", "true"),
    ("PartitionKey le ''", "partition", "true"),
    ("PartitionKey eq '' and RowKey eq ''", "point", "true"),
    ("'p' eq PartitionKey", "partition", "true"),
    ("'m' gt PartitionKey", "range", "true"),
    ("PartitionKey eq 'it''s'", "partition", "true"),
    (
        "PartitionKey eq '\u{FFFF}' or PartitionKey eq '\u{10000}'",
        "partition,partition",
        "true",
    ),
    // Intersections, unions, contradictions.
    (
        "PartitionKey eq 'p' or PartitionKey eq 'q'",
        "partition,partition",
        "true",
    ),
    (
        "PartitionKey eq 'q' or PartitionKey eq 'p' or PartitionKey eq 'q'",
        "partition,partition",
        "true",
    ),
    (
        "PartitionKey ge 'a' and PartitionKey le 'a'",
        "partition",
        "true",
    ),
    ("PartitionKey gt 'a' and PartitionKey lt 'a'", "", "true"),
    ("PartitionKey gt 'a' and PartitionKey le 'a'", "", "true"),
    ("PartitionKey ge 'b' and PartitionKey lt 'a'", "", "true"),
    ("PartitionKey ge 'a' or PartitionKey lt 'a'", "full", "true"),
    (
        "PartitionKey lt 'b' or PartitionKey eq 'b'",
        "range",
        "true",
    ),
    (
        "PartitionKey ge 'a' and PartitionKey le 'b' or PartitionKey ge 'b' and PartitionKey le 'c'",
        "range",
        "true",
    ),
    (
        "PartitionKey lt 'b' and PartitionKey gt 'a' or PartitionKey eq 'c'",
        "range,partition",
        "true",
    ),
    (
        "not (PartitionKey eq 'a' or PartitionKey eq 'b')",
        "range,range,range",
        "true",
    ),
    (
        "PartitionKey eq 'p' and RowKey gt 'a' and RowKey le 'a'",
        "",
        "true",
    ),
    ("RowKey eq 'a' and RowKey eq 'b'", "", "true"),
    (
        "PartitionKey eq 'p' and (RowKey eq '1' or RowKey eq '3')",
        "point,point",
        "true",
    ),
    (
        "PartitionKey eq 'p' and RowKey ne '1'",
        "range,range",
        "true",
    ),
    (
        "PartitionKey eq 'p' and not (RowKey ge '5')",
        "range",
        "true",
    ),
    (
        "PartitionKey eq 'a' and RowKey ge 'x' or PartitionKey eq 'a' and RowKey lt 'c'",
        "range,range",
        "true",
    ),
    (
        "(PartitionKey eq 'a' or PartitionKey eq 'b') and (RowKey eq '1' or RowKey eq '2')",
        "point,point,point,point",
        "true",
    ),
    (
        "PartitionKey eq 'a' and RowKey eq '1' or PartitionKey eq 'a'",
        "partition",
        "true",
    ),
    ("PartitionKey ge 'a' and RowKey eq 'r'", "range", "true"),
    // Rectangles over several partitions with gaps in RowKey: hull + whole residual.
    (
        "PartitionKey gt 'a' and (RowKey eq '1' or RowKey eq '3')",
        "range",
        "RowKey eq '1' or RowKey eq '3'",
    ),
    // Mixed key / non-key.
    (
        "PartitionKey eq 'p' and Age gt 30",
        "partition",
        "Age gt 30",
    ),
    (
        "PartitionKey eq 'p' or Age gt 30",
        "full",
        "PartitionKey eq 'p' or Age gt 30",
    ),
    (
        "PartitionKey ge 'a' or (PartitionKey eq 'b' and X eq 1)",
        "range",
        "true",
    ),
    (
        "(PartitionKey eq 'a' and Age gt 3) or PartitionKey eq 'b'",
        "partition,partition",
        "PartitionKey eq 'a' and Age gt 3 or PartitionKey eq 'b'",
    ),
    (
        "PartitionKey eq 'p' and RowKey ge 'a' and Name eq 'x' and Age ge 18 and Active",
        "range",
        "Name eq 'x' and Age ge 18 and Active eq true",
    ),
    (
        "PartitionKey eq 'p' and not (PartitionKey eq 'p' and Age lt 18)",
        "partition",
        "not Age lt 18",
    ),
    // Non-key properties: normalisation only.
    (
        "Timestamp lt datetime'2020-01-01T00:00:00Z'",
        "full",
        "Timestamp lt datetime'2020-01-01T00:00:00Z'",
    ),
    (
        "not (Timestamp ge datetime'2020-01-01T00:00:00Z')",
        "full",
        "not Timestamp ge datetime'2020-01-01T00:00:00Z'",
    ),
    ("not (Age eq 1)", "full", "not Age eq 1"),
    ("not (not (A eq 1))", "full", "A eq 1"),
    (
        "not (A eq 1 and B eq 2)",
        "full",
        "not A eq 1 or not B eq 2",
    ),
    ("Active", "full", "Active eq true"),
    ("not Active", "full", "not Active eq true"),
    ("30 lt Age", "full", "Age gt 30"),
    ("Age gt 30 and Age gt 30", "full", "Age gt 30"),
    ("A eq 1 and not (A eq 1)", "", "true"),
    ("A eq 1 or not (A eq 1)", "full", "true"),
    ("A eq 1 and (A eq 1 or B eq 2)", "full", "A eq 1"),
    (
        "(A eq 1 or B eq 2) and (B eq 2 or A eq 1)",
        "full",
        "A eq 1 or B eq 2",
    ),
    (
        "Price eq 1.5 or Price ne NaN or Price lt -INF",
        "full",
        "Price eq 1.5 or Price ne NaN or Price lt -INF",
    ),
    (
        "Id eq guid'A455C695-DF98-5678-AAAA-81D3367E5A34' and Data eq X'0AFF' and Big eq 5L",
        "full",
        "Id eq guid'a455c695-df98-5678-aaaa-81d3367e5a34' and Data eq X'0aff' and Big eq 5L",
    ),
    ("Ratio eq 2d", "full", "Ratio eq 2.0"),
    // Boolean literals are constant conditions, folded away; `false` reads nothing.
    ("true", "full", "true"),
    ("FALSE", "", "true"),
    ("not false", "full", "true"),
    ("not True", "", "true"),
    ("PartitionKey eq 'a' and True", "partition", "true"),
    ("PartitionKey eq 'a' and false", "", "true"),
    ("PartitionKey eq 'a' or false", "partition", "true"),
    ("PartitionKey eq 'a' or true", "full", "true"),
    ("Age gt 30 and true", "full", "Age gt 30"),
    ("Age gt 30 or true", "full", "true"),
    ("Age gt 30 or (false and B eq 1)", "full", "Age gt 30"),
    ("not (Age gt 30 and false)", "full", "true"),
    // …and still literals inside comparisons.
    ("Active eq True", "full", "Active eq true"),
    ("false ne Active", "full", "Active ne false"),
];

fn plan(filter: &str) -> Plan {
    let f = parse_filter(filter, &FilterOptions::unlimited())
        .unwrap_or_else(|e| panic!("{filter}: {e}"));
    Planner::new().plan(&f, None, None)
}

#[test]
fn strategies_and_residuals() {
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    let mut snapshot = String::new();
    for (filter, strategies, residual) in CASES {
        let p = plan(filter);
        let got: Vec<&str> = p
            .ranges
            .ranges()
            .iter()
            .map(|r| r.strategy().as_str())
            .collect();
        assert_eq!(got.join(","), *strategies, "strategies of {filter:?}\n{p}");
        assert_eq!(
            p.residual.to_string(),
            *residual,
            "residual of {filter:?}\n{p}"
        );
        assert!(
            p.ranges.ranges().windows(2).all(|w| w[0].precedes(&w[1])),
            "{filter}: ranges out of order"
        );
        // The residual is canonical OData: it parses back to itself.
        if !p.residual.is_true() {
            let again =
                parse_filter(residual, &FilterOptions::unlimited()).expect("residual parses");
            assert_eq!(again.to_string(), *residual);
        }
        snapshot.push_str(&format!("$filter={filter}\n{p}\n\n"));
    }
    insta::assert_snapshot!("explain_table", snapshot);
}

#[test]
fn projection_and_top() {
    let f = parse_filter("PartitionKey eq 'p'", &FilterOptions::default()).unwrap();
    let select = parse_select("Name, Age,Name , PartitionKey").unwrap();
    let top = parse_top("10").unwrap();
    let p = Planner::new().plan(&f, Some(&select), Some(&top));
    assert_eq!(
        p.select,
        Some(vec!["Name".into(), "Age".into(), "PartitionKey".into()])
    );
    assert_eq!(p.top, Some(10));
    let all = parse_select("*").unwrap();
    assert_eq!(Planner::new().plan(&f, Some(&all), None).select, None);
    insta::assert_snapshot!("explain_select_top", p.to_string());
    insta::assert_snapshot!("explain_json", p.to_json().to_string());
}

#[test]
fn or_of_fifteen_points_and_the_range_cap() {
    let filter: Vec<String> = (0..15)
        .map(|i| format!("(PartitionKey eq 'p{i:02}' and RowKey eq 'r')"))
        .collect();
    let filter = filter.join(" or ");
    let p = plan(&filter);
    assert_eq!(p.ranges.len(), 15);
    assert!(p.is_exact());
    let f = parse_filter(&filter, &FilterOptions::unlimited()).unwrap();
    let capped = Planner::new().max_ranges(8).plan(&f, None, None);
    assert_eq!(capped.ranges.len(), 1);
    assert_eq!(capped.ranges.ranges()[0].strategy().as_str(), "range");
    assert!(!capped.is_exact());
}

#[test]
fn verbose_explain_lists_rule_steps() {
    let f = parse_filter(
        "not (PartitionKey eq 'a') and PartitionKey lt 5 and (A eq 1 or not (A eq 1))",
        &FilterOptions::default(),
    )
    .unwrap();
    let x = Planner::new().verbose(true).explain(&f, None, None);
    let rules: Vec<&str> = x.steps.iter().map(|s| s.rule).collect();
    assert!(rules.contains(&"negate_key_comparison"), "{rules:?}");
    assert!(rules.contains(&"key_type_mismatch"), "{rules:?}");
    assert!(rules.contains(&"complementary_operands"), "{rules:?}");
    insta::assert_snapshot!("explain_verbose", x.to_string());
}
