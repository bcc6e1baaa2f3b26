//! Snapshots of the rendered diagnostics (`Display` of `ParseError`) for invalid resource
//! paths: one snapshot per input, the input in the snapshot's description. Accept changes
//! with `INSTA_UPDATE=always cargo test -p tableq-parser --test resource_diagnostics`, then
//! review the `.snap` files.

use tableq_parser::parse_resource;

/// (snapshot name, invalid resource path segment)
const PATHS: &[(&str, &str)] = &[
    ("empty", ""),
    ("no_table_name", "(PartitionKey='a',RowKey='b')"),
    ("missing_row_key", "people(PartitionKey='a')"),
    ("missing_partition_key", "people(RowKey='b')"),
    ("duplicate_key", "people(PartitionKey='a',PartitionKey='b')"),
    ("lowercase_key_name", "people(partitionKey='a',RowKey='b')"),
    ("unknown_key_name", "people(Id='a')"),
    ("unnamed_key", "people('a')"),
    (
        "three_keys",
        "people(PartitionKey='a',RowKey='b',Extra='c')",
    ),
    ("integer_key", "people(PartitionKey=1,RowKey='b')"),
    ("unquoted_key", "people(PartitionKey='a',RowKey=bob)"),
    (
        "guid_key",
        "people(PartitionKey=guid'a455c695-df98-5678-aaaa-81d3367e5a34',RowKey='b')",
    ),
    ("empty_key_value", "people(PartitionKey=,RowKey='b')"),
    ("space_after_comma", "people(PartitionKey='a', RowKey='b')"),
    (
        "space_before_equals",
        "people(PartitionKey ='a',RowKey='b')",
    ),
    ("unterminated_key", "people(PartitionKey='a,RowKey='b')"),
    ("undoubled_quote", "people(PartitionKey='it's',RowKey='b')"),
    ("unclosed_paren", "people(PartitionKey='a',RowKey='b'"),
    ("unmatched_paren", "people)"),
    (
        "trailing_input",
        "people(PartitionKey='a',RowKey='b')/extra",
    ),
    ("trailing_parens", "people()()"),
    ("quote_in_table_name", "PartitionKey='a',RowKey='b'"),
    ("tables_with_two_names", "Tables('a','b')"),
    (
        "tables_with_entity_keys",
        "Tables(PartitionKey='a',RowKey='b')",
    ),
    ("tables_unquoted", "Tables(people)"),
    ("unknown_dollar_resource", "$metadata"),
    ("uppercase_batch", "$Batch"),
    ("batch_with_parens", "$batch()"),
    (
        "control_character_in_key",
        "people(PartitionKey=\u{1}x,RowKey='b')",
    ),
];

#[test]
fn resource_diagnostics() {
    assert!(PATHS.len() >= 25);
    for (name, path) in PATHS {
        let rendered = match parse_resource(path) {
            Ok(r) => panic!("{path:?} parsed as `{r}`"),
            Err(e) => e.to_string(),
        };
        insta::with_settings!({ description => *path, omit_expression => true }, {
            insta::assert_snapshot!(format!("resource_{name}"), rendered);
        });
    }
}
