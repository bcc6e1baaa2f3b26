//! Property tests of resource paths: any resource prints canonical text that parses back to
//! itself, with spans that point at the printed literals; random strings and random soups
//! of the grammar's pieces never panic, and whatever parses also round-trips; hostile
//! inputs (huge literals, deep parentheses, quote runs) finish with a result on a small
//! stack.

use proptest::prelude::*;
use tableq_parser::resource::{KeyValue, TableName};
use tableq_parser::{ParseError, Resource, parse_resource};

/// Key values and names in `Tables('…')`: any Unicode, quotes and the syntax's own
/// characters in abundance.
fn key_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "['(),= a-zA-Z]{0,8}",
        "\\PC{0,12}",
        Just(String::new()),
        Just("'".to_owned()),
        Just("''".to_owned()),
    ]
}

/// Bare table names as `parse_resource` can return them: not empty, no `(`, `)` or `'`,
/// not starting with `$`, and not `Tables` in any case (that is the table collection).
fn bare_table_name() -> impl Strategy<Value = String> {
    prop_oneof!["[A-Za-z][A-Za-z0-9]{2,20}", "[^()'$][^()']{0,12}",]
        .prop_filter("not the table collection", |n| {
            !n.eq_ignore_ascii_case("Tables")
        })
}

fn resource() -> impl Strategy<Value = Resource> {
    prop_oneof![
        Just(Resource::Tables {
            span: Default::default()
        }),
        Just(Resource::Batch {
            span: Default::default()
        }),
        key_text().prop_map(|n| Resource::Table {
            table: TableName::new(n)
        }),
        bare_table_name().prop_map(|n| Resource::Entities {
            table: TableName::new(n)
        }),
        (bare_table_name(), key_text(), key_text()).prop_map(|(t, pk, rk)| Resource::Entity {
            table: TableName::new(t),
            partition_key: KeyValue::new(pk),
            row_key: KeyValue::new(rk),
        }),
    ]
}

/// The printed literal at `span` decodes to `value`.
fn literal_at(text: &str, span: tableq_parser::Span, value: &str) -> bool {
    text.get(span.range())
        .and_then(|lit| lit.strip_prefix('\''))
        .and_then(|lit| lit.strip_suffix('\''))
        .is_some_and(|body| body.replace("''", "'") == value)
}

/// Whatever `text` gives: a resource that round-trips, or an error inside the text that
/// renders.
fn check(text: &str) -> Result<(), TestCaseError> {
    match parse_resource(text) {
        Ok(r) => {
            let printed = r.to_string();
            prop_assert_eq!(
                parse_resource(&printed),
                Ok(r),
                "{:?} → {:?}",
                text,
                printed
            );
        }
        Err(e) => check_error(text, &e)?,
    }
    Ok(())
}

fn check_error(text: &str, e: &ParseError) -> Result<(), TestCaseError> {
    prop_assert!(e.span().start <= e.span().end && e.span().end <= text.len());
    prop_assert!(text.is_char_boundary(e.span().start) && text.is_char_boundary(e.span().end));
    prop_assert!(e.to_string().starts_with("error: "));
    let _ = e.summary();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn canonical_form_round_trips(r in resource()) {
        let printed = r.to_string();
        let back = parse_resource(&printed);
        prop_assert_eq!(back.as_ref(), Ok(&r), "{:?}", printed);
        // Spans point at the printed parts.
        match back.unwrap_or(r) {
            Resource::Table { table } => {
                prop_assert!(literal_at(&printed, table.span, &table.name));
            }
            Resource::Entities { table } => {
                prop_assert_eq!(&printed[table.span.range()], table.name.as_str());
            }
            Resource::Entity { table, partition_key, row_key } => {
                prop_assert_eq!(&printed[table.span.range()], table.name.as_str());
                prop_assert!(literal_at(&printed, partition_key.span, &partition_key.value));
                prop_assert!(literal_at(&printed, row_key.span, &row_key.value));
            }
            Resource::Tables { span } | Resource::Batch { span } => {
                prop_assert_eq!(span.range(), 0..printed.len());
            }
        }
    }

    #[test]
    fn keys_in_either_order_are_the_same_entity(
        t in bare_table_name(), pk in key_text(), rk in key_text()
    ) {
        let q = |s: &str| format!("'{}'", s.replace('\'', "''"));
        let a = parse_resource(&format!("{t}(PartitionKey={},RowKey={})", q(&pk), q(&rk)));
        let b = parse_resource(&format!("{t}(RowKey={},PartitionKey={})", q(&rk), q(&pk)));
        prop_assert!(a.is_ok());
        prop_assert_eq!(a, b);
    }

    #[test]
    fn random_strings_never_panic(text in any::<String>()) {
        check(&text)?;
    }

    #[test]
    fn grammar_soups_never_panic(
        pieces in proptest::collection::vec(
            prop_oneof![
                Just("Tables"), Just("tables"), Just("t"), Just("$batch"), Just("$"),
                Just("("), Just(")"), Just("'"), Just("''"), Just("="), Just(","),
                Just("PartitionKey"), Just("RowKey"), Just("TableName"), Just(" "),
                Just("1"), Just("5L"), Just("x"), Just("é"), Just("\u{0}"),
                Just("guid'"), Just("datetime'"), Just("X'"), Just("-"), Just("."),
            ],
            0..24,
        )
    ) {
        check(&pieces.concat())?;
    }
}

/// Runs `f` on a thread with a deliberately small stack (256 KiB).
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow");
}

#[test]
fn hostile_inputs_finish_on_a_small_stack() {
    on_small_stack(|| {
        let big = "x''".repeat(300_000);
        let text = format!("t(PartitionKey='{big}',RowKey='')");
        let Ok(Resource::Entity { partition_key, .. }) = parse_resource(&text) else {
            panic!("a long key parses")
        };
        assert_eq!(partition_key.value.len(), 600_000);
        for text in [
            "(".repeat(100_000),
            format!("t{}", "(".repeat(100_000)),
            format!("t{}", ")".repeat(100_000)),
            "'".repeat(100_001),
            format!("t(PartitionKey={}", "'".repeat(100_001)),
            format!("t(PartitionKey='a'{}", ",".repeat(100_000)),
            format!("t(PartitionKey={}", "1".repeat(100_000)),
            format!("t(PartitionKey={}", "x".repeat(100_000)),
            format!("Tables({})", "'".repeat(100_001)),
            format!("$batch{}", "(".repeat(100_000)),
            format!("t(){}", "é".repeat(100_000)),
        ] {
            let e = parse_resource(&text).unwrap_err();
            let rendered = e.to_string();
            // Long lines are cut around the span.
            assert!(
                rendered.lines().all(|l| l.chars().count() < 200),
                "{rendered}"
            );
        }
    });
}
