//! Snapshots of the rendered diagnostics (`Display` of `ParseError`) for invalid filters,
//! `$select` and `$top` values: one snapshot per input, the input in the snapshot's
//! description. Accept changes with `INSTA_UPDATE=always cargo test -p tableq-parser
//! --test parser_diagnostics`, then review the `.snap` files.

use tableq_parser::{FilterOptions, parse_filter, parse_select, parse_top};

/// (snapshot name, invalid filter)
const FILTERS: &[(&str, &str)] = &[
    ("uppercase_operator", "PartitionKey EQ 'a'"),
    ("uppercase_and", "A eq 1 AND B eq 2"),
    ("capitalised_not", "Not A eq 1"),
    ("boolean_vs_boolean", "TRUE eq false"),
    ("null_literal", "Name eq null"),
    ("function_call", "startswith(Name, 'Jo')"),
    ("arithmetic", "Price add 5 gt 10"),
    ("in_operator", "Color in ('red', 'blue')"),
    ("has_operator", "Flags has X'01'"),
    ("lambda", "Tags/any(t: t eq 'x')"),
    ("it_parameter", "$it eq 5"),
    ("property_path", "Address/City eq 'Oslo'"),
    ("property_vs_property", "Age gt MinAge"),
    ("literal_vs_literal", "1 eq 1"),
    ("empty_parens", "A eq 1 and ()"),
    ("unclosed_paren", "(A eq 1 or B eq 2"),
    ("unmatched_paren", "A eq 1)"),
    ("trailing_tokens", "A eq 1 B eq 2"),
    ("chained_comparison", "A lt 5 lt 10"),
    ("missing_literal", "Age ge"),
    ("missing_operand_after_and", "A eq 1 and"),
    ("missing_operand_before_or", "or A eq 1"),
    ("lone_literal", "5"),
    ("constant_then_property", "true Active"),
    ("int32_overflow", "Count eq 2147483648"),
    ("int64_overflow", "Count eq 9223372036854775808L"),
    ("double_overflow", "Ratio lt 1e400"),
    ("trailing_dot", "Ratio eq 5."),
    ("leading_dot", "Ratio eq .5"),
    ("leading_plus", "Ratio eq +5"),
    ("negative_nan", "Ratio eq -NaN"),
    ("unterminated_string", "Name eq 'O''Brien"),
    ("glued_literal_and_keyword", "Name eq 'x'and Age gt 3"),
    ("bad_datetime", "Birthday eq datetime'2008-07-10'"),
    (
        "datetime_out_of_range",
        "Birthday eq datetime'1600-01-01T00:00:00Z'",
    ),
    ("bad_guid", "Id eq guid'a455c695df985678aaaa81d3367e5a34'"),
    ("odd_binary", "Blob eq X'abc'"),
    ("lowercase_binary_prefix", "Blob eq x'0abc'"),
    ("tab_separator", "A\teq 1"),
    ("double_quotes", "Name eq \"Jo\""),
    ("c_style_operator", "Age >= 18"),
    ("unicode_in_name_position", "Größe eq 7 and €uro eq 1"),
    ("dash_in_name", "first-name eq 'Jo'"),
    ("dotted_name", "odata.etag eq 'x'"),
    ("stray_character", "A eq 1 # comment"),
    ("unknown_literal_prefix", "When eq date'2020-01-01'"),
    ("not_at_the_end", "A eq 1 not"),
    ("empty_group_after_not", "not ()"),
    ("missing_property_before_operator", "eq 5"),
    ("filter_prefix_pasted", "$filter=A eq 1"),
];

#[test]
fn filter_diagnostics() {
    assert!(FILTERS.len() >= 30);
    for (name, filter) in FILTERS {
        let rendered = match parse_filter(filter, &FilterOptions::default()) {
            Ok(f) => panic!("{filter:?} parsed as `{f}`"),
            Err(e) => e.to_string(),
        };
        insta::with_settings!({ description => *filter, omit_expression => true }, {
            insta::assert_snapshot!(format!("filter_{name}"), rendered);
        });
    }
}

#[test]
fn limit_diagnostics() {
    let chain = (0..16)
        .map(|i| format!("P{i} eq {i}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let nested = format!("{}A{}", "(".repeat(101), ")".repeat(101));
    let long_name = format!("{} eq 1", "N".repeat(256));
    let too_long = format!("A eq '{}'", "x".repeat(32 * 1024));
    for (name, filter) in [
        ("too_many_comparisons", chain),
        ("too_deep", nested),
        ("name_too_long", long_name),
        ("too_long", too_long),
    ] {
        let rendered = parse_filter(&filter, &FilterOptions::default())
            .map_or_else(|e| e.to_string(), |f| panic!("parsed as {f}"));
        insta::assert_snapshot!(format!("filter_{name}"), rendered);
    }
}

#[test]
fn select_and_top_diagnostics() {
    for (name, select) in [
        ("empty_item", "Name,,Age"),
        ("star_with_names", "*,Name"),
        ("bad_name", "Name,Ag-e"),
    ] {
        let rendered =
            parse_select(select).map_or_else(|e| e.to_string(), |s| panic!("parsed as {s}"));
        insta::with_settings!({ description => select, omit_expression => true }, {
            insta::assert_snapshot!(format!("select_{name}"), rendered);
        });
    }
    for (name, top) in [("zero", "0"), ("too_big", "1001"), ("not_a_number", "ten")] {
        let rendered = parse_top(top).map_or_else(|e| e.to_string(), |t| panic!("parsed as {t}"));
        insta::with_settings!({ description => top, omit_expression => true }, {
            insta::assert_snapshot!(format!("top_{name}"), rendered);
        });
    }
}
