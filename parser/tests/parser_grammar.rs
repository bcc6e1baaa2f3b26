//! One test per grammar rule, written with two helpers: `roundtrip(text)` (the text is
//! already canonical: it parses and prints back unchanged, and the printed form re-parses
//! to an equal AST) and `parses_to(text, canonical)`.

use tableq_model::{CmpOp, Value};
use tableq_parser::ast::{Expr, Filter};
use tableq_parser::{ErrorKind, FilterOptions, ParseError, Unsupported, parse_filter};

fn parse(text: &str) -> Filter {
    parse_filter(text, &FilterOptions::default()).unwrap_or_else(|e| panic!("{text:?}:\n{e}"))
}

fn error(text: &str) -> ParseError {
    match parse_filter(text, &FilterOptions::default()) {
        Ok(f) => panic!("{text:?}: expected an error, got `{f}`"),
        Err(e) => e,
    }
}

/// `text` parses, prints as `canonical`, and `canonical` parses to the same AST.
fn parses_to(text: &str, canonical: &str) {
    let ast = parse(text);
    let printed = ast.to_string();
    assert_eq!(printed, canonical, "printing {text:?}");
    assert_eq!(parse(&printed), ast, "re-parsing {printed:?}");
}

/// `text` is canonical.
fn roundtrip(text: &str) {
    parses_to(text, text);
}

fn expr(text: &str) -> Expr {
    parse(text)
        .expr
        .unwrap_or_else(|| panic!("{text:?}: no expression"))
}

#[test]
fn empty_filter_means_no_filter() {
    for text in ["", " ", "     "] {
        assert_eq!(parse(text), Filter { expr: None });
        assert_eq!(parse(text).to_string(), "");
    }
}

#[test]
fn comparisons_with_every_operator() {
    for op in ["eq", "ne", "gt", "ge", "lt", "le"] {
        roundtrip(&format!("Age {op} 30"));
        roundtrip(&format!("30 {op} Age"));
    }
}

#[test]
fn comparison_structure_and_spans() {
    let Expr::Comparison(c) = expr("PartitionKey eq 'a'") else {
        panic!("not a comparison")
    };
    assert_eq!(c.property.name, "PartitionKey");
    assert_eq!(c.op, CmpOp::Eq);
    assert_eq!(c.literal.value, Value::from("a"));
    assert!(!c.literal_first);
    assert_eq!(c.span.range(), 0..19);
    assert_eq!(c.op_span.range(), 13..15);
    assert_eq!(c.property.span.range(), 0..12);
    assert_eq!(c.literal.span.range(), 16..19);
}

#[test]
fn literal_first_comparisons_keep_their_order() {
    let Expr::Comparison(c) = expr("30 lt Age") else {
        panic!("not a comparison")
    };
    assert!(c.literal_first);
    assert_eq!(c.op, CmpOp::Lt);
    assert_eq!(c.normalized_op(), CmpOp::Gt);
    roundtrip("30 lt Age");
    roundtrip("'a' eq PartitionKey");
}

#[test]
fn every_literal_type() {
    roundtrip("S eq 'it''s'");
    roundtrip("S eq ''");
    roundtrip("B eq true");
    roundtrip("B ne false");
    roundtrip("I eq -5");
    roundtrip("I eq 2147483647");
    roundtrip("L eq 5L");
    roundtrip("L eq -9223372036854775808L");
    roundtrip("D eq 1.5");
    roundtrip("D eq NaN");
    roundtrip("D eq INF");
    roundtrip("D eq -INF");
    roundtrip("D eq 1e300");
    roundtrip("T eq datetime'2008-07-10T00:00:00Z'");
    roundtrip("G eq guid'a455c695-df98-5678-aaaa-81d3367e5a34'");
    roundtrip("X eq X'0aff'");
    parses_to("L eq 5l", "L eq 5L");
    parses_to("D eq 2.0d", "D eq 2.0");
    parses_to("D eq 2D", "D eq 2.0");
    parses_to("D eq 1e+20", "D eq 1e20");
    parses_to("D eq 1.5E-3", "D eq 0.0015");
    parses_to("D eq -0.25", "D eq -0.25");
    parses_to(
        "T eq datetime'2008-07-10T02:00:00.5000+02:00'",
        "T eq datetime'2008-07-10T00:00:00.5Z'",
    );
    parses_to(
        "T eq datetime'2008-07-10T00:00:00'",
        "T eq datetime'2008-07-10T00:00:00Z'",
    );
    parses_to(
        "G eq guid'A455C695-DF98-5678-AAAA-81D3367E5A34'",
        "G eq guid'a455c695-df98-5678-aaaa-81d3367e5a34'",
    );
    parses_to("X eq binary'0AFF'", "X eq X'0aff'");
    parses_to("I eq 007", "I eq 7");
}

#[test]
fn bare_boolean_properties() {
    assert!(matches!(expr("Active"), Expr::BoolProperty(p) if p.name == "Active"));
    roundtrip("Active");
    roundtrip("not Active");
    roundtrip("Active and Age gt 3");
    // Wrongly-cased keywords are identifiers: a lone `Not` is a property named Not.
    roundtrip("Not");
}

#[test]
fn boolean_literals_are_conditions() {
    assert!(matches!(expr("true"), Expr::Constant(true, s) if s.range() == (0..4)));
    assert!(matches!(expr("FALSE"), Expr::Constant(false, _)));
    roundtrip("true");
    roundtrip("false");
    roundtrip("not false");
    roundtrip("PartitionKey eq 'a' and true");
    roundtrip("(A or false) and not (true or B eq 1)");
    // Any letter case; printed lowercase.
    parses_to("True", "true");
    parses_to("not FALSE", "not false");
    parses_to(
        "PartitionKey eq 'a' and True",
        "PartitionKey eq 'a' and true",
    );
    parses_to("(tRuE)", "true");
    // Still a literal inside comparisons, on either side.
    parses_to("Active eq True", "Active eq true");
    parses_to("false ne Active", "false ne Active");
    let Expr::Comparison(c) = expr("FALSE ne Active") else {
        panic!("expected a comparison")
    };
    assert_eq!(
        (c.literal.value, c.literal_first),
        (Value::Boolean(false), true)
    );
    // A constant counts as no comparison.
    let many = vec!["A eq 1"; 15].join(" and ");
    parse(&format!("{many} and true and not false"));
    // Errors around constants.
    assert_eq!(error("true eq false").kind(), &ErrorKind::LiteralVsLiteral);
    assert!(matches!(
        error("true Active").kind(),
        ErrorKind::TrailingInput(_)
    ));
    assert_eq!(
        error("true and").kind(),
        &ErrorKind::MissingOperand("after `and`".into())
    );
    assert_eq!(
        error("true EQ A").hint(),
        Some("keywords are lowercase: did you mean `eq`?")
    );
    assert_eq!(
        error("true in (A)").kind(),
        &ErrorKind::Unsupported(Unsupported::In)
    );
}

#[test]
fn and_binds_tighter_than_or() {
    let e = expr("A eq 1 or B eq 2 and C eq 3");
    let Expr::Or(xs, _) = &e else { panic!("{e:?}") };
    assert_eq!(xs.len(), 2);
    assert!(matches!(&xs[1], Expr::And(ys, _) if ys.len() == 2));
    roundtrip("A eq 1 or B eq 2 and C eq 3");
    roundtrip("(A eq 1 or B eq 2) and C eq 3");
}

#[test]
fn chains_are_n_ary_and_left_to_right() {
    let Expr::Or(xs, _) = expr("A or B or C or D") else {
        panic!()
    };
    assert_eq!(xs.len(), 4);
    let Expr::And(xs, _) = expr("A and B and C") else {
        panic!()
    };
    assert_eq!(xs.len(), 3);
    roundtrip("A or B or C or D");
}

#[test]
fn explicit_grouping_is_kept() {
    // Parentheses are not nodes, but a parenthesised chain stays one operand.
    let Expr::And(xs, _) = expr("(A and B) and C") else {
        panic!()
    };
    assert_eq!(xs.len(), 2);
    roundtrip("(A and B) and C");
    roundtrip("A or (B or C)");
    parses_to("((A))", "A");
    parses_to("(A eq 1)", "A eq 1");
    parses_to("(A or B) or C", "(A or B) or C");
    parses_to("(A and B) or C", "A and B or C");
    parses_to("A and (B and C)", "A and (B and C)");
}

#[test]
fn not_applies_to_the_following_comparison_or_group() {
    let Expr::And(xs, _) = expr("not Age eq 0 and B") else {
        panic!()
    };
    assert!(matches!(&xs[0], Expr::Not(inner, _) if matches!(**inner, Expr::Comparison(_))));
    roundtrip("not Age eq 0");
    roundtrip("not Age eq 0 and B");
    roundtrip("not (A or B)");
    roundtrip("not (A and B)");
    roundtrip("not not A");
    roundtrip("A or not B");
    parses_to("not(A)", "not A");
    parses_to("not (Age eq 0)", "not Age eq 0");
}

#[test]
fn parentheses_need_no_spaces() {
    parses_to("(A eq 1)and(B eq 2)", "A eq 1 and B eq 2");
    parses_to("not(A eq 1)or(B)", "not A eq 1 or B");
    parses_to("  A eq 1  ", "A eq 1");
}

#[test]
fn unicode_property_names() {
    roundtrip("Größe eq 7");
    roundtrip("名前 eq '値'");
    roundtrip("_private eq 1");
}

#[test]
fn expression_spans() {
    let e = expr("(A or B) and not (C)");
    assert_eq!(e.span().range(), 0..20);
    let Expr::And(xs, _) = &e else { panic!() };
    assert_eq!(xs[0].span().range(), 1..7);
    assert_eq!(xs[1].span().range(), 13..20);
}

#[test]
fn uppercase_keywords_suggest_lowercase() {
    let e = error("PartitionKey EQ 'a'");
    assert_eq!(e.kind(), &ErrorKind::UnknownOperator("EQ".into()));
    assert_eq!(e.span().range(), 13..15);
    assert_eq!(e.hint(), Some("keywords are lowercase: did you mean `eq`?"));
    assert_eq!(
        e.to_string(),
        "error: unknown operator `EQ`\n  |\n1 | PartitionKey EQ 'a'\n  |              ^^ keywords are lowercase: did you mean `eq`?\n"
    );
    assert_eq!(
        error("A eq 1 AND B eq 2").hint(),
        Some("keywords are lowercase: did you mean `and`?")
    );
    assert_eq!(
        error("A eq 1 Or B eq 2").hint(),
        Some("keywords are lowercase: did you mean `or`?")
    );
    assert_eq!(
        error("Not A eq 1").hint(),
        Some("keywords are lowercase: did you mean `not`?")
    );
    assert_eq!(
        error("NOT (A eq 1)").hint(),
        Some("keywords are lowercase: did you mean `not`?")
    );
    assert_eq!(
        error("5 Gt A").hint(),
        Some("keywords are lowercase: did you mean `gt`?")
    );
    assert_eq!(
        error("A eq nan").hint(),
        Some("Double constants are case-sensitive: did you mean `NaN`?")
    );
    // `null` in another case: suggesting `null` would only lead to the next error.
    assert_eq!(
        error("A eq NULL").hint(),
        Some("comparisons with null are not supported by the Table service")
    );
}

#[test]
fn unsupported_constructs_are_named() {
    let unsupported = |text: &str| match error(text).kind().clone() {
        ErrorKind::Unsupported(u) => u,
        k => panic!("{text}: {k:?}"),
    };
    assert_eq!(unsupported("A eq null"), Unsupported::Null);
    assert_eq!(unsupported("null eq A"), Unsupported::Null);
    assert_eq!(
        unsupported("startswith(Name, 'a')"),
        Unsupported::Function("startswith".into())
    );
    assert_eq!(
        unsupported("A eq 1 and length(Name) gt 3"),
        Unsupported::Function("length".into())
    );
    for op in ["add", "sub", "mul", "div", "mod"] {
        assert_eq!(
            unsupported(&format!("A {op} 1 eq 2")),
            Unsupported::Arithmetic(op.into())
        );
        assert_eq!(
            unsupported(&format!("A eq 1 {op} 2")),
            Unsupported::Arithmetic(op.into())
        );
    }
    assert_eq!(unsupported("A in ('a', 'b')"), Unsupported::In);
    assert_eq!(unsupported("A has X'01'"), Unsupported::Has);
    assert_eq!(
        unsupported("Tags/any(t: t eq 'a')"),
        Unsupported::Lambda("any".into())
    );
    assert_eq!(
        unsupported("Tags/all(t: t eq 'a')"),
        Unsupported::Lambda("all".into())
    );
    assert_eq!(
        unsupported("$it eq 1"),
        Unsupported::Parameter("$it".into())
    );
    assert_eq!(unsupported("Address/City eq 'x'"), Unsupported::Path);
    let e = error("startswith(Name, 'a')");
    assert_eq!(
        e.message(),
        "functions are not supported: `startswith(...)`"
    );
}

#[test]
fn comparisons_need_one_property_and_one_literal() {
    let e = error("A eq B");
    assert_eq!(e.kind(), &ErrorKind::PropertyVsProperty);
    assert_eq!(
        e.message(),
        "comparisons must be between a property and a constant"
    );
    assert_eq!(e.span().range(), 0..6);
    let e = error("1 eq 1");
    assert_eq!(e.kind(), &ErrorKind::LiteralVsLiteral);
    assert_eq!(
        e.message(),
        "comparisons must be between a property and a constant"
    );
    assert_eq!(error("'a' eq 'b'").kind(), &ErrorKind::LiteralVsLiteral);
}

#[test]
fn structural_errors() {
    assert_eq!(error("()").kind(), &ErrorKind::EmptyParens);
    assert_eq!(error("A eq 1 and ()").kind(), &ErrorKind::EmptyParens);
    assert_eq!(error("(A eq 1").kind(), &ErrorKind::UnclosedParen);
    assert_eq!(error("(A eq 1").span().range(), 0..1);
    assert_eq!(error("A eq 1)").kind(), &ErrorKind::UnmatchedParen);
    assert_eq!(
        error("A eq 1 B eq 2").kind(),
        &ErrorKind::TrailingInput("B".into())
    );
    assert_eq!(error("A eq 1 eq 2").kind(), &ErrorKind::ChainedComparison);
    assert_eq!(
        error("A eq").kind(),
        &ErrorKind::MissingOperand("after `eq`".into())
    );
    assert_eq!(error("A eq").span().range(), 4..4);
    assert_eq!(
        error("eq 1").kind(),
        &ErrorKind::MissingOperand("before `eq`".into())
    );
    assert_eq!(
        error("A eq 1 and").kind(),
        &ErrorKind::MissingOperand("after `and`".into())
    );
    assert_eq!(
        error("and A eq 1").kind(),
        &ErrorKind::MissingOperand("before `and`".into())
    );
    assert_eq!(
        error("A eq 1 or or B").kind(),
        &ErrorKind::MissingOperand("after `or`".into())
    );
    assert_eq!(
        error("not").kind(),
        &ErrorKind::MissingOperand("after `not`".into())
    );
    assert_eq!(error("(").kind(), &ErrorKind::UnexpectedEnd);
    assert_eq!(error(")").kind(), &ErrorKind::UnexpectedToken(")".into()));
    assert_eq!(error("5").kind(), &ErrorKind::MissingOperator("5".into()));
    assert_eq!(
        error("A eq (1)").kind(),
        &ErrorKind::MissingOperand("after `eq`".into())
    );
    assert_eq!(error("A,B").kind(), &ErrorKind::TrailingInput(",".into()));
    assert_eq!(
        error("(A) eq 1").kind(),
        &ErrorKind::UnexpectedToken("eq".into())
    );
    assert_eq!(
        error("(A eq 1) (B eq 2)").kind(),
        &ErrorKind::TrailingInput("(".into())
    );
    assert_eq!(error("((A eq 1)").kind(), &ErrorKind::UnclosedParen);
    assert_eq!(error("((A eq 1)").span().range(), 0..1);
    assert_eq!(
        error("not not").kind(),
        &ErrorKind::MissingOperand("after `not`".into())
    );
    assert_eq!(
        error("A eq(1)").kind(),
        &ErrorKind::MissingOperand("after `eq`".into())
    );
    assert!(matches!(
        error("A ne-5").kind(),
        ErrorKind::MissingSpace(..)
    ));
}

#[test]
fn lexical_errors_surface_with_positions() {
    let e = error("A eq 2147483648");
    assert_eq!(
        e.message(),
        "Int32 literal out of range (append L for Int64)"
    );
    assert_eq!((e.offset(), e.column()), (5, 6));
    assert_eq!(
        error("A eq 'x'and B").kind(),
        &ErrorKind::MissingSpace("'x'".into(), "and".into())
    );
    assert!(matches!(
        error("A\teq 1").kind(),
        ErrorKind::UnexpectedChar('\t')
    ));
}

#[test]
fn nesting_limit() {
    let nest = |n: usize| format!("{}A{}", "(".repeat(n), ")".repeat(n));
    parses_to(&nest(100), "A");
    let e = error(&nest(101));
    assert_eq!(e.kind(), &ErrorKind::TooDeep { limit: 100 });
    assert_eq!(e.span().range(), 100..101);
    let nots = |n: usize| format!("{}A", "not ".repeat(n));
    assert!(parse_filter(&nots(100), &FilterOptions::default()).is_ok());
    assert_eq!(error(&nots(101)).kind(), &ErrorKind::TooDeep { limit: 100 });
    // `(` and `not` both count.
    let mixed = format!("{}A{}", "not (".repeat(50), ")".repeat(50));
    assert!(parse_filter(&mixed, &FilterOptions::default()).is_ok());
    let mixed = format!("not {}A{}", "not (".repeat(50), ")".repeat(50));
    assert_eq!(error(&mixed).kind(), &ErrorKind::TooDeep { limit: 100 });
    let opts = FilterOptions {
        max_depth: 3,
        ..FilterOptions::default()
    };
    assert!(parse_filter("(((A)))", &opts).is_ok());
    assert!(parse_filter("((((A))))", &opts).is_err());
}

#[test]
fn comparison_limit() {
    let chain = |n: usize| {
        (0..n)
            .map(|i| format!("P{i} eq {i}"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    assert!(parse_filter(&chain(15), &FilterOptions::default()).is_ok());
    let e = error(&chain(16));
    assert_eq!(
        e.kind(),
        &ErrorKind::TooManyComparisons {
            count: 16,
            limit: 15
        }
    );
    assert_eq!(
        e.message(),
        "the filter has 16 comparisons; at most 15 are allowed"
    );
    assert!(parse_filter(&chain(16), &FilterOptions::unlimited()).is_ok());
    // A bare boolean property counts as one.
    let bools = (0..16)
        .map(|i| format!("B{i}"))
        .collect::<Vec<_>>()
        .join(" and ");
    assert_eq!(
        error(&bools).kind(),
        &ErrorKind::TooManyComparisons {
            count: 16,
            limit: 15
        }
    );
}

#[test]
fn length_limit() {
    let ok = format!("A eq '{}'", "x".repeat(32768 - 7));
    assert_eq!(ok.len(), 32768);
    assert!(parse_filter(&ok, &FilterOptions::default()).is_ok());
    let too_long = format!("A eq '{}'", "x".repeat(32768 - 6));
    let e = error(&too_long);
    assert_eq!(
        e.kind(),
        &ErrorKind::TooLong {
            len: 32769,
            limit: 32768
        }
    );
}

#[test]
fn property_names_follow_the_data_model() {
    assert!(
        parse_filter(
            &format!("{} eq 1", "a".repeat(255)),
            &FilterOptions::default()
        )
        .is_ok()
    );
    assert!(matches!(
        error(&format!("{} eq 1", "a".repeat(256))).kind(),
        ErrorKind::InvalidPropertyName(_)
    ));
    roundtrip("Timestamp ge datetime'2020-01-01T00:00:00Z'");
    roundtrip("RowKey lt 'x'");
}

/// The advice a newcomer got wrong (issue 29): a mistyped operator is named as one, a bare
/// date points at `datetime'…'`, and a well-formed date that does not exist says why.
#[test]
fn near_misses_get_the_advice_they_need() {
    let e = error("Total gtt 5");
    assert_eq!(e.kind(), &ErrorKind::UnknownOperator("gtt".into()));
    assert_eq!(e.hint(), Some("did you mean `gt`?"));
    assert_eq!(error("Total qe 5").hint(), Some("did you mean `eq`?"));
    assert_eq!(
        error("Total gx 5").hint(),
        Some("did you mean `gt` or `ge`?")
    );
    // After a complete comparison, `and`/`or` are what is due.
    let e = error("A eq 1 adn B eq 2");
    assert_eq!(e.kind(), &ErrorKind::UnknownKeyword("adn".into()));
    assert_eq!(e.hint(), Some("did you mean `and`?"));
    // A word nowhere near keeps the general advice.
    assert_eq!(
        error("Total banana 5").hint(),
        Some("join conditions with `and` or `or`")
    );
    let e = error("Created gt 2024-01-01");
    assert_eq!(e.kind(), &ErrorKind::BareDateTime("2024-01-01".into()));
    assert_eq!(
        e.hint(),
        Some("write a date as a DateTime literal: datetime'2024-01-01T00:00:00Z'")
    );
    assert_eq!(e.span().range(), 11..21);
    let e = error("Created gt 2024-01-01T10:00:00Z and A eq 1");
    assert_eq!(
        e.hint(),
        Some("write a date as a DateTime literal: datetime'2024-01-01T10:00:00Z'")
    );
    let month = error("Created gt datetime'2024-13-01T00:00:00Z'");
    assert_eq!(month.kind(), &ErrorKind::InvalidDateTime);
    assert!(
        month.hint().unwrap().starts_with("month 13 does not exist"),
        "{month}"
    );
    let feb = error("Created gt datetime'2024-02-30T00:00:00Z'");
    assert_eq!(
        feb.hint(),
        Some("February 2024 has no day 30: it has 29 days")
    );
    assert_eq!(
        error("Created gt datetime'2023-02-29T00:00:00Z'").hint(),
        Some("February 2023 has no day 29: it has 28 days")
    );
    assert_eq!(
        error("Created gt datetime'2024-01-01T24:00:00Z'").hint(),
        Some("hour 24 does not exist: hours are 00 to 23")
    );
    // A malformed one keeps the form to follow.
    assert!(
        error("Created gt datetime'2024-1-01T00:00:00Z'")
            .hint()
            .unwrap()
            .starts_with("expected YYYY-MM-DDTHH:MM:SS")
    );
}
