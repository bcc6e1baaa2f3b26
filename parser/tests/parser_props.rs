//! Property tests: random ASTs print and re-parse to themselves; random bytes and random
//! token soups never panic, and whatever parses also round-trips.

use proptest::prelude::*;
use tableq_model::{CmpOp, DateTime, Value};
use tableq_parser::ast::{Comparison, Expr, Filter, Literal, Property};
use tableq_parser::{FilterOptions, Span, lex, parse_filter, parse_select, parse_top};

/// Words a property may not be called in these tests: keywords and the words that name
/// unsupported operators (which the parser reports as such in operator position).
const RESERVED: &[&str] = &[
    "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "true", "false", "null", "NaN", "INF",
    "add", "sub", "mul", "div", "mod", "divby", "in", "has",
];

fn property() -> impl Strategy<Value = Property> {
    prop_oneof![
        "[A-Za-z_][A-Za-z0-9_]{0,6}",
        Just("PartitionKey".to_owned()),
        Just("RowKey".to_owned()),
        Just("Timestamp".to_owned()),
        Just("Größe".to_owned()),
        Just("名前".to_owned()),
        Just("Not".to_owned()),
        Just("EQ".to_owned()),
        Just("Truex".to_owned()),
    ]
    .prop_filter("not a keyword", |n| {
        // `true`/`false` are Boolean literals in any letter case.
        !RESERVED.contains(&n.as_str())
            && !n.eq_ignore_ascii_case("true")
            && !n.eq_ignore_ascii_case("false")
    })
    .prop_map(|name| Property {
        name,
        span: Span::default(),
    })
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::String),
        "[a-z' ]{0,5}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Boolean),
        any::<i32>().prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        any::<f64>().prop_map(Value::Double),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(f64::MIN_POSITIVE),
            Just(f64::MAX),
            Just(5e-324)
        ]
        .prop_map(Value::Double),
        (DateTime::MIN.ticks()..=DateTime::MAX.ticks())
            .prop_map(|t| Value::DateTime(DateTime::from_ticks(t).unwrap_or(DateTime::MIN))),
        any::<[u8; 16]>().prop_map(|b| Value::Guid(uuid::Uuid::from_bytes(b))),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(Value::Binary),
    ]
}

fn comparison() -> impl Strategy<Value = Expr> {
    let op = proptest::sample::select(CmpOp::ALL.to_vec());
    (property(), op, value(), any::<bool>()).prop_map(|(property, op, value, literal_first)| {
        Expr::Comparison(Comparison {
            property,
            op,
            op_span: Span::default(),
            literal: Literal {
                value,
                span: Span::default(),
            },
            literal_first,
            span: Span::default(),
        })
    })
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        8 => comparison(),
        2 => property().prop_map(Expr::BoolProperty),
        1 => any::<bool>().prop_map(|b| Expr::Constant(b, Span::default())),
    ];
    leaf.prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 2..5)
                .prop_map(|xs| Expr::Or(xs, Span::default())),
            proptest::collection::vec(inner.clone(), 2..5)
                .prop_map(|xs| Expr::And(xs, Span::default())),
            inner.prop_map(|x| Expr::Not(Box::new(x), Span::default())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn printed_asts_parse_back_to_themselves(e in expr()) {
        let filter = Filter { expr: Some(e) };
        let printed = filter.to_string();
        let parsed = parse_filter(&printed, &FilterOptions::unlimited());
        prop_assert!(parsed.is_ok(), "{printed:?}: {}", parsed.as_ref().err().map(|e| e.to_string()).unwrap_or_default());
        let parsed = parsed.unwrap_or_default();
        prop_assert_eq!(&parsed, &filter, "{:?}", printed);
        // Printing is a fixpoint.
        prop_assert_eq!(parsed.to_string(), printed);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes);
        check_no_panic_and_roundtrip(&text);
    }

    #[test]
    fn random_token_soup_never_panics(parts in proptest::collection::vec(soup_part(), 0..30)) {
        let text: String = parts.concat();
        check_no_panic_and_roundtrip(&text);
    }
}

/// Fragments that reach deep into the lexer and the grammar when concatenated.
fn soup_part() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            " ",
            " ",
            "(",
            ")",
            "and",
            "or",
            "not",
            "eq",
            "lt",
            "EQ",
            "Not",
            "AND",
            "null",
            "'a'",
            "''",
            "'",
            "1",
            "-5",
            "5L",
            "1.5",
            "1e400",
            "5.",
            ".5",
            "+5",
            "NaN",
            "-INF",
            "-",
            "X'0a'",
            "X'0'",
            "guid'",
            "datetime'2008-07-10T00:00:00Z'",
            "A",
            "B",
            "Größe",
            "$it",
            "/",
            ",",
            ":",
            "add",
            "in",
            "startswith",
            "\t",
            "\"",
            "true",
            "TRUE",
            "False",
            "=",
            "any",
        ])
        .prop_map(str::to_owned),
        "[ -~]{0,3}",
    ]
}

fn check_no_panic_and_roundtrip(text: &str) {
    let _ = lex(text);
    let _ = parse_select(text);
    let _ = parse_top(text);
    match parse_filter(text, &FilterOptions::unlimited()) {
        Ok(f) => {
            let printed = f.to_string();
            let again = parse_filter(&printed, &FilterOptions::unlimited());
            assert_eq!(
                again.as_ref().ok(),
                Some(&f),
                "{text:?} printed as {printed:?}"
            );
        }
        Err(e) => {
            // Rendering must not panic either, and the span lies inside the text.
            let _ = e.to_string();
            let _ = e.summary();
            assert!(
                e.span().start <= text.len() && e.span().end <= text.len(),
                "{text:?}: {e:?}"
            );
        }
    }
}

/// Every comparison, bare property and constant of a parsed filter, in source order.
fn leaves(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Or(xs, _) | Expr::And(xs, _) => xs.iter().for_each(|x| leaves(x, out)),
        Expr::Not(x, _) => leaves(x, out),
        leaf => out.push(leaf.clone()),
    }
}

/// Every node's span, with the node.
fn nodes(e: &Expr, out: &mut Vec<Expr>) {
    out.push(e.clone());
    match e {
        Expr::Or(xs, _) | Expr::And(xs, _) => xs.iter().for_each(|x| nodes(x, out)),
        Expr::Not(x, _) => nodes(x, out),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Spans point at the text they were parsed from: a comparison's span re-parses to the
    /// same comparison, the property, operator and literal spans hold exactly those tokens,
    /// and every node's span re-parses to the same node (groups may need their parentheses).
    #[test]
    fn spans_cover_their_nodes(e in expr()) {
        let text = Filter { expr: Some(e) }.to_string();
        let parsed = parse_filter(&text, &FilterOptions::unlimited()).unwrap_or_default();
        let Some(root) = &parsed.expr else { return Err(TestCaseError::fail("no expression")) };
        prop_assert_eq!(root.span().range(), 0..text.len());
        let mut ls = Vec::new();
        leaves(root, &mut ls);
        for leaf in &ls {
            match leaf {
                Expr::Comparison(c) => {
                    prop_assert_eq!(&text[c.property.span.range()], c.property.name.as_str());
                    prop_assert_eq!(&text[c.op_span.range()], c.op.as_str());
                    let lit = lex(&text[c.literal.span.range()]).unwrap_or_default();
                    prop_assert_eq!(lit.len(), 1);
                    prop_assert_eq!(lit[0].0.value(), Some(c.literal.value.clone()));
                }
                Expr::BoolProperty(p) => prop_assert_eq!(&text[p.span.range()], p.name.as_str()),
                Expr::Constant(b, s) => prop_assert_eq!(&text[s.range()], b.to_string()),
                _ => {}
            }
        }
        let mut all = Vec::new();
        nodes(root, &mut all);
        for node in &all {
            let piece = &text[node.span().range()];
            let again = parse_filter(piece, &FilterOptions::unlimited())
                .or_else(|_| parse_filter(&format!("({piece})"), &FilterOptions::unlimited()));
            prop_assert_eq!(again.ok().and_then(|f| f.expr), Some(node.clone()), "{:?}", piece);
        }
    }

    /// `$select` lists print and re-parse to themselves.
    #[test]
    fn select_lists_round_trip(names in proptest::collection::vec(property(), 1..20)) {
        let text = names.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(" , ");
        let parsed = parse_select(&text);
        prop_assert!(parsed.is_ok(), "{:?}", text);
        let parsed = parsed.unwrap_or(tableq_parser::ast::Select::All(Span::default()));
        prop_assert_eq!(parse_select(&parsed.to_string()).ok(), Some(parsed.clone()));
        match parsed {
            tableq_parser::ast::Select::Properties(ps) => {
                prop_assert_eq!(ps.len(), names.len());
                for p in &ps {
                    prop_assert_eq!(&text[p.span.range()], p.name.as_str());
                }
            }
            tableq_parser::ast::Select::All(_) => prop_assert!(false, "not a list"),
        }
    }
}
