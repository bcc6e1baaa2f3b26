//! Resource paths: every form, every decision of the `resource` module and every error,
//! with spans. Helpers: `parses_to(text, canonical)` (parses, prints as `canonical`, which
//! parses back to an equal resource) and `error(text)`.

use tableq_parser::resource::{KeyValue, TableName};
use tableq_parser::{ErrorKind, ParseError, Resource, parse_resource};

fn parse(text: &str) -> Resource {
    parse_resource(text).unwrap_or_else(|e| panic!("{text:?}:\n{e}"))
}

fn error(text: &str) -> ParseError {
    match parse_resource(text) {
        Ok(r) => panic!("{text:?}: expected an error, got `{r}` ({r:?})"),
        Err(e) => e,
    }
}

/// `text` parses, prints as `canonical`, and `canonical` parses to the same resource.
fn parses_to(text: &str, canonical: &str) -> Resource {
    let r = parse(text);
    assert_eq!(r.to_string(), canonical, "printing {text:?}");
    assert_eq!(parse(canonical), r, "re-parsing {canonical:?}");
    r
}

fn entity(table: &str, pk: &str, rk: &str) -> Resource {
    Resource::Entity {
        table: TableName::new(table),
        partition_key: KeyValue::new(pk),
        row_key: KeyValue::new(rk),
    }
}

#[test]
fn table_collection() {
    for text in ["Tables", "Tables()", "tables", "TABLES()", "tAbLeS"] {
        let r = parses_to(text, "Tables");
        assert!(matches!(r, Resource::Tables { span } if span.range() == (0..text.len())));
    }
}

#[test]
fn one_table() {
    for (text, name) in [
        ("Tables('people')", "people"),
        ("Tables(TableName='people')", "people"),
        ("tables('people')", "people"),
        ("Tables('it''s')", "it's"),
        ("Tables('')", ""),
        ("Tables('bad name-ü')", "bad name-ü"),
    ] {
        let r = parse(text);
        let Resource::Table { table } = &r else {
            panic!("{text}: {r:?}")
        };
        assert_eq!(table.name, name, "{text}");
        assert_eq!(parse(&r.to_string()), r);
    }
    let Resource::Table { table } = parse("Tables('people')") else {
        unreachable!()
    };
    assert_eq!(table.span.range(), 7..15);
    let Resource::Table { table } = parse("Tables(TableName='people')") else {
        unreachable!()
    };
    assert_eq!(table.span.range(), 17..25);
    parses_to("Tables(TableName='x''y')", "Tables('x''y')");
}

#[test]
fn entities_of_a_table() {
    for text in ["people", "people()"] {
        let r = parses_to(text, "people()");
        let Resource::Entities { table } = &r else {
            panic!("{text}: {r:?}")
        };
        assert_eq!((table.name.as_str(), table.span.range()), ("people", 0..6));
    }
    // Invalid table names are returned as written: validity is the model's decision.
    for name in [
        "my-table", "a", "1abc", "Größe", "a b", "x$y", "a=b", "a,b", "a/b",
    ] {
        let r = parse(name);
        assert_eq!(r.table().map(|t| t.name.as_str()), Some(name), "{name}");
        assert!(matches!(r, Resource::Entities { .. }));
    }
}

#[test]
fn one_entity() {
    let r = parses_to(
        "people(PartitionKey='p1',RowKey='r1')",
        "people(PartitionKey='p1',RowKey='r1')",
    );
    assert_eq!(r, entity("people", "p1", "r1"));
    let Resource::Entity {
        table,
        partition_key,
        row_key,
    } = &r
    else {
        unreachable!()
    };
    assert_eq!(table.span.range(), 0..6);
    assert_eq!(partition_key.span.range(), 20..24);
    assert_eq!(row_key.span.range(), 32..36);
}

#[test]
fn keys_in_either_order() {
    let r = parses_to(
        "t(RowKey='r',PartitionKey='p')",
        "t(PartitionKey='p',RowKey='r')",
    );
    assert_eq!(r, entity("t", "p", "r"));
    let Resource::Entity {
        partition_key,
        row_key,
        ..
    } = &r
    else {
        unreachable!()
    };
    assert_eq!(
        (row_key.span.range(), partition_key.span.range()),
        (9..12, 26..29)
    );
}

#[test]
fn key_literals() {
    for (key, value) in [
        ("''", ""),
        ("''''", "'"),
        ("'it''s'", "it's"),
        ("'a''''b'", "a''b"),
        ("'日本 語'", "日本 語"),
        ("'😀'", "😀"),
        ("'a,b)c(d=e'", "a,b)c(d=e"),
        ("'PartitionKey=''x'''", "PartitionKey='x'"),
        ("'\t\n'", "\t\n"),
        ("'%27'", "%27"),
    ] {
        let text = format!("t(PartitionKey={key},RowKey={key})");
        assert_eq!(parse(&text), entity("t", value, value), "{text}");
        assert_eq!(parse(&parse(&text).to_string()), parse(&text));
    }
}

#[test]
fn batch() {
    let r = parses_to("$batch", "$batch");
    assert!(matches!(r, Resource::Batch { span } if span.range() == (0..6)));
}

#[test]
fn spaces_are_errors_outside_quotes() {
    for (text, at) in [
        ("t(PartitionKey ='a',RowKey='b')", 14),
        ("t(PartitionKey= 'a',RowKey='b')", 15),
        ("t(PartitionKey='a', RowKey='b')", 19),
        ("t(PartitionKey='a' ,RowKey='b')", 18),
        ("t( PartitionKey='a',RowKey='b')", 2),
        ("Tables( 'a')", 7),
    ] {
        let e = error(text);
        assert_eq!(e.kind(), &ErrorKind::UnexpectedChar(' '), "{text}");
        assert_eq!(e.span().range(), at..at + 1, "{text}");
        assert_eq!(
            e.hint(),
            Some("spaces are not allowed in a resource path outside quoted keys"),
            "{text}"
        );
    }
}

#[test]
fn key_errors() {
    let e = error("t(PartitionKey='a')");
    assert_eq!(e.kind(), &ErrorKind::MissingKey("RowKey"));
    assert_eq!(e.span().range(), 18..19);
    let e = error("t(RowKey='a')");
    assert_eq!(e.kind(), &ErrorKind::MissingKey("PartitionKey"));

    let e = error("t(PartitionKey='a',PartitionKey='b')");
    assert_eq!(e.kind(), &ErrorKind::DuplicateKey("PartitionKey"));
    assert_eq!(e.span().range(), 19..35);
    assert_eq!(e.hint(), Some("`PartitionKey` was first given at column 3"));
    assert_eq!(
        error("t(RowKey='a',RowKey='a')").kind(),
        &ErrorKind::DuplicateKey("RowKey")
    );

    let e = error("t(Partitionkey='a',RowKey='b')");
    assert_eq!(e.kind(), &ErrorKind::UnknownKey("Partitionkey".into()));
    assert_eq!(e.span().range(), 2..14);
    assert_eq!(
        e.hint(),
        Some("key names are case-sensitive: did you mean `PartitionKey`?")
    );
    let e = error("t(Id='a')");
    assert_eq!(e.kind(), &ErrorKind::UnknownKey("Id".into()));
    assert_eq!(
        e.hint(),
        Some("an entity is addressed by both keys: t(PartitionKey='…',RowKey='…')")
    );

    for text in ["t('a')", "t('a','b')", "t('it''s')"] {
        let e = error(text);
        assert_eq!(e.kind(), &ErrorKind::UnnamedKey, "{text}");
        assert_eq!(e.span().start, 2);
    }
    assert_eq!(error("t('a','b')").span().range(), 2..5);
    assert_eq!(error("t('abc").kind(), &ErrorKind::UnnamedKey);

    let e = error("t(PartitionKey='a',RowKey='b',Extra='c')");
    assert_eq!(e.kind(), &ErrorKind::UnexpectedChar(','));
    assert_eq!(e.span().range(), 29..30);
    assert_eq!(
        e.hint(),
        Some("an entity is addressed by exactly two keys, PartitionKey and RowKey")
    );
    assert_eq!(
        error("t(PartitionKey='a',)").kind(),
        &ErrorKind::UnexpectedChar(')')
    );
    assert_eq!(
        error("t(PartitionKey)").kind(),
        &ErrorKind::UnexpectedChar(')')
    );
    assert_eq!(error("t(,)").kind(), &ErrorKind::UnexpectedChar(','));
}

#[test]
fn non_string_keys() {
    for (text, found, hint) in [
        (
            "t(PartitionKey=1,RowKey='b')",
            "the Edm.Int32 literal `1`",
            Some("key values are quoted: PartitionKey='1'"),
        ),
        (
            "t(PartitionKey='a',RowKey=5L)",
            "the Edm.Int64 literal `5L`",
            Some("key values are quoted: RowKey='5L'"),
        ),
        (
            "t(PartitionKey=abc,RowKey='b')",
            "the word `abc`",
            Some("key values are quoted: PartitionKey='abc'"),
        ),
        (
            "t(PartitionKey=true,RowKey='b')",
            "the Edm.Boolean literal `true`",
            None,
        ),
        (
            "t(PartitionKey=guid'a455c695-df98-5678-aaaa-81d3367e5a34',RowKey='b')",
            "the Edm.Guid literal `guid'a455c695-df98-5678-aaaa-81d3367e5a34'`",
            Some("key values are quoted strings: PartitionKey='…'"),
        ),
        (
            "t(PartitionKey=datetime'2020-01-01T00:00:00Z',RowKey='b')",
            "the Edm.DateTime literal `datetime'2020-01-01T00:00:00Z'`",
            None,
        ),
        ("t(PartitionKey=1.5.2,RowKey='b')", "`1.5.2`", None),
        ("t(PartitionKey=\"a\",RowKey='b')", "`\"a\"`", None),
        ("Tables(7)", "the Edm.Int32 literal `7`", None),
        ("Tables(TableName=people)", "the word `people`", None),
    ] {
        let e = error(text);
        let ErrorKind::KeyNotString { found: f, .. } = e.kind() else {
            panic!("{text}: {e}")
        };
        assert_eq!(f, found, "{text}");
        if let Some(hint) = hint {
            assert_eq!(e.hint(), Some(hint), "{text}");
        }
    }
    let e = error("t(PartitionKey=1,RowKey='b')");
    assert_eq!(e.span().range(), 15..16);
    assert_eq!(
        e.message(),
        "PartitionKey must be a string literal, not the Edm.Int32 literal `1`"
    );
    let e = error("t(PartitionKey=,RowKey='b')");
    assert_eq!(e.kind(), &ErrorKind::UnexpectedChar(','));
    assert_eq!(
        e.hint(),
        Some("PartitionKey needs a value: PartitionKey='…'")
    );
    assert_eq!(error("t(PartitionKey=").kind(), &ErrorKind::UnexpectedEnd);
}

#[test]
fn table_key_errors() {
    let e = error("Tables(PartitionKey='a',RowKey='b')");
    assert_eq!(e.kind(), &ErrorKind::UnknownKey("PartitionKey".into()));
    assert_eq!(
        e.hint(),
        Some("`Tables(…)` addresses one table: write Tables('name')")
    );
    let e = error("Tables('a','b')");
    assert_eq!(e.kind(), &ErrorKind::UnexpectedChar(','));
    assert_eq!(e.hint(), Some("`Tables(…)` takes one table name"));
    assert_eq!(error("Tables('a'").kind(), &ErrorKind::UnclosedParen);
    assert_eq!(
        error("Tables('a").kind(),
        &ErrorKind::Unterminated("string")
    );
    assert_eq!(
        error("Tables('a')x").kind(),
        &ErrorKind::TrailingPath("x".into())
    );
}

#[test]
fn structure_errors() {
    let e = error("");
    assert_eq!(e.kind(), &ErrorKind::MissingTableName);
    assert_eq!(e.span().range(), 0..0);
    let e = error("(PartitionKey='a',RowKey='b')");
    assert_eq!(e.kind(), &ErrorKind::MissingTableName);
    assert_eq!(e.span().range(), 0..1);

    let e = error("t(PartitionKey='a',RowKey='b'");
    assert_eq!(e.kind(), &ErrorKind::UnclosedParen);
    assert_eq!(e.span().range(), 1..2);
    assert_eq!(error("t(").kind(), &ErrorKind::UnexpectedEnd);
    let e = error("t(PartitionKey='a");
    assert_eq!(e.kind(), &ErrorKind::Unterminated("string"));
    assert_eq!(e.span().range(), 15..17);
    let e = error("t)");
    assert_eq!(e.kind(), &ErrorKind::UnmatchedParen);
    assert_eq!(e.span().range(), 1..2);
    let e = error("t(PartitionKey='a',RowKey='b'))");
    assert_eq!(e.kind(), &ErrorKind::TrailingPath(")".into()));
    assert_eq!(e.span().range(), 30..31);
    assert_eq!(error("t()()").kind(), &ErrorKind::TrailingPath("()".into()));
    assert_eq!(error("t()x").kind(), &ErrorKind::TrailingPath("x".into()));
    assert_eq!(
        error("t(PartitionKey='a',RowKey='b')/x").kind(),
        &ErrorKind::TrailingPath("/x".into())
    );

    // A quote inside a key that is not doubled ends the literal early.
    let e = error("t(PartitionKey='it's',RowKey='b')");
    assert_eq!(e.kind(), &ErrorKind::UnexpectedChar('s'));
    assert_eq!(
        e.hint(),
        Some("a quote inside a key is written `''`, e.g. 'it''s'")
    );

    let e = error("PartitionKey='a',RowKey='b'");
    assert_eq!(e.kind(), &ErrorKind::UnexpectedChar('\''));
    assert_eq!(e.span().range(), 13..14);
    assert_eq!(error("it's").kind(), &ErrorKind::UnexpectedChar('\''));
}

#[test]
fn dollar_resources() {
    let e = error("$metadata");
    assert_eq!(e.kind(), &ErrorKind::UnknownResource("$metadata".into()));
    assert_eq!(e.span().range(), 0..9);
    let e = error("$Batch");
    assert_eq!(
        e.hint(),
        Some("resource names are case-sensitive: did you mean `$batch`?")
    );
    let e = error("$batch()");
    assert_eq!(e.kind(), &ErrorKind::TrailingPath("()".into()));
    assert_eq!(e.hint(), Some("`$batch` takes no parentheses"));
    assert!(matches!(
        error("$batchx").kind(),
        ErrorKind::UnknownResource(_)
    ));
    assert!(matches!(error("$").kind(), ErrorKind::UnknownResource(_)));
}

#[test]
fn errors_render_and_summarise() {
    let e = error("t(PartitionKey='a',RowKey=5)");
    assert_eq!(
        e.summary(),
        "RowKey must be a string literal, not the Edm.Int32 literal `5` at byte 26 (column 27): \
         key values are quoted: RowKey='5'"
    );
    assert!(
        e.to_string()
            .starts_with("error: RowKey must be a string literal")
    );
}
