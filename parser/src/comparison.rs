//! The leaves of the `$filter` grammar: a comparison (property-first or literal-first), a
//! bare boolean property or a Boolean literal as a condition, and the specific errors for everything that looks like one but is
//! not (unsupported OData constructs, wrongly-cased keywords, missing operands).
//!
//! Each function looks at most three tokens ahead and either returns the node or fails;
//! nothing here backtracks or recurses.

use crate::ast::{Comparison, Expr, Literal, Property};
use crate::error::{ErrorKind, Unsupported};
use crate::input::{
    EXPECT_LITERAL, EXPECT_OP, EXPECT_OPERAND, EXPECT_PROPERTY, PResult, SyntaxError, Tokens,
};
use crate::{Span, Token, names};
use tableq_model::{CmpOp, Value};

/// The lowercase keyword a wrongly-cased word stands for, if any (`EQ` → `eq`).
pub(crate) fn keyword_for(word: &str) -> Option<&'static str> {
    // `true`/`false` are absent: the lexer reads them in any letter case, so a wrongly-cased
    // one never reaches the parser as a name.
    const KEYWORDS: [&str; 12] = [
        "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "null", "NaN", "INF",
    ];
    KEYWORDS
        .into_iter()
        .find(|k| k.eq_ignore_ascii_case(word) && *k != word)
}

fn keyword_hint(word: &str) -> Option<String> {
    keyword_for(word).map(|k| {
        if k == "NaN" || k == "INF" {
            format!("Double constants are case-sensitive: did you mean `{k}`?")
        } else if k == "null" {
            // Suggesting `null` would only lead to the next error.
            "comparisons with null are not supported by the Table service".to_owned()
        } else {
            format!("keywords are lowercase: did you mean `{k}`?")
        }
    })
}

/// A hint for a word one edit away from what may come next — a comparison operator after a
/// property (`gtt`, `qe`, `nee`), `and`/`or` after a comparison (`adn`, `ro`) — naming it.
fn near_operator(word: &str, after_property: bool) -> Option<String> {
    const COMPARISONS: [&str; 6] = ["eq", "ne", "gt", "ge", "lt", "le"];
    const JOINS: [&str; 2] = ["and", "or"];
    if word.len() > 4 {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let candidates: &[&str] = if after_property { &COMPARISONS } else { &JOINS };
    let near: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|op| strsim::damerau_levenshtein(&lower, op) == 1)
        .collect();
    // Two letters swapped (`qe`) is the likeliest slip: name that alone.
    let sorted = |w: &str| {
        let mut c: Vec<char> = w.chars().collect();
        c.sort_unstable();
        c
    };
    let swapped: Vec<&str> = near
        .iter()
        .copied()
        .filter(|op| sorted(op) == sorted(&lower))
        .collect();
    let near = if swapped.is_empty() { near } else { swapped };
    match near.as_slice() {
        [] => None,
        [one] => Some(format!("did you mean `{one}`?")),
        more => Some(format!(
            "did you mean {}?",
            more.iter()
                .map(|op| format!("`{op}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

/// Describes an unsupported word in operator position (`add`, `in`, `has`), if it is one.
fn unsupported_operator(word: &str) -> Option<Unsupported> {
    match word {
        "add" | "sub" | "mul" | "div" | "mod" | "divby" => {
            Some(Unsupported::Arithmetic(word.to_owned()))
        }
        "in" => Some(Unsupported::In),
        "has" => Some(Unsupported::Has),
        _ => None,
    }
}

/// A comparison, a bare boolean property or a Boolean constant (after any `not`s and `(`s).
pub(crate) fn primary(i: Tokens<'_>) -> PResult<'_, Expr> {
    let Some((tok, span)) = i.peek() else {
        return missing_operand(i);
    };
    match tok {
        Token::Ident(name) => ident_led(i, name, *span),
        Token::Literal(Value::Boolean(b)) if is_constant_condition(i) => {
            Ok((i.advance(1), Expr::Constant(*b, *span)))
        }
        Token::Literal(_) | Token::Str(_) => literal_led(i),
        Token::Null => SyntaxError::new(ErrorKind::Unsupported(Unsupported::Null), *span).fail(),
        Token::Parameter(name) => parameter(name, *span).fail(),
        Token::And | Token::Or | Token::RParen => missing_operand(i),
        Token::Op(op) => {
            SyntaxError::new(ErrorKind::MissingOperand(format!("before `{op}`")), *span)
                .expected(EXPECT_PROPERTY)
                .fail()
        }
        _ => SyntaxError::new(ErrorKind::UnexpectedToken(tok.to_string()), *span)
            .expected(EXPECT_OPERAND)
            .fail(),
    }
}

/// Whether the Boolean literal at the start of `i` is a whole condition (`true`,
/// `A and false`) rather than the first operand of a comparison (`true eq Active`): it is
/// one unless an operator follows — a comparison operator, or a word that the literal-first
/// comparison reports more precisely (a wrongly-cased `EQ`, an unsupported `in`). Anything
/// else after it is then reported by the caller as input that cannot follow a condition.
fn is_constant_condition(i: Tokens<'_>) -> bool {
    match i.peek2() {
        Some((Token::Op(_), _)) => false,
        Some((Token::Ident(w), _)) => {
            unsupported_operator(w).is_none()
                && keyword_for(w).is_none_or(|k| CmpOp::from_keyword(k).is_none())
        }
        _ => true,
    }
}

/// The error for a missing operand at the current position.
fn missing_operand<T>(i: Tokens<'_>) -> PResult<'static, T> {
    let here = i.here();
    let kind = match (i.prev(), i.peek()) {
        (Some((prev @ (Token::And | Token::Or | Token::Not), _)), _) => {
            ErrorKind::MissingOperand(format!("after `{prev}`"))
        }
        (Some((Token::LParen, _)), None) | (None, None) => ErrorKind::UnexpectedEnd,
        (_, Some((next @ (Token::And | Token::Or), _))) => {
            ErrorKind::MissingOperand(format!("before `{next}`"))
        }
        (_, Some((t, _))) => ErrorKind::UnexpectedToken(t.to_string()),
        (_, None) => ErrorKind::UnexpectedEnd,
    };
    SyntaxError::new(kind, here).expected(EXPECT_OPERAND).fail()
}

fn parameter(name: &str, span: Span) -> SyntaxError {
    let e = SyntaxError::new(
        ErrorKind::Unsupported(Unsupported::Parameter(name.to_owned())),
        span,
    );
    if name == "$filter" {
        e.hint("pass only the expression, without `$filter=`")
    } else {
        e
    }
}

/// A comparison or bool property that starts with a name.
fn ident_led<'a>(i: Tokens<'a>, name: &'a str, name_span: Span) -> PResult<'a, Expr> {
    let next = i.peek2();
    match next.map(|(t, s)| (t, *s)) {
        Some((Token::LParen, paren)) => {
            if let Some(hint) = keyword_hint(name) {
                return SyntaxError::new(ErrorKind::UnknownKeyword(name.to_owned()), name_span)
                    .hint(hint)
                    .fail();
            }
            SyntaxError::new(
                ErrorKind::Unsupported(Unsupported::Function(name.to_owned())),
                name_span.to(paren),
            )
            .fail()
        }
        Some((Token::Slash, slash)) => {
            if let Some((Token::Ident(w), s)) = i.slice().get(2)
                && (*w == "any" || *w == "all")
            {
                return SyntaxError::new(
                    ErrorKind::Unsupported(Unsupported::Lambda(w.to_string())),
                    *s,
                )
                .fail();
            }
            SyntaxError::new(
                ErrorKind::Unsupported(Unsupported::Path),
                name_span.to(slash),
            )
            .fail()
        }
        Some((Token::Op(op), op_span)) => {
            let property = property(name, name_span)?;
            let rest = i.advance(2);
            if let Some((tok, lit_span)) = rest.peek()
                && let Some(value) = tok.value()
            {
                return Ok((
                    rest.advance(1),
                    Expr::Comparison(Comparison {
                        span: name_span.to(*lit_span),
                        property,
                        op: *op,
                        op_span,
                        literal: Literal {
                            value,
                            span: *lit_span,
                        },
                        literal_first: false,
                    }),
                ));
            }
            match rest.peek() {
                Some((t, s)) => bad_second_operand(t, name_span.to(*s), *s, op),
                None => SyntaxError::new(
                    ErrorKind::MissingOperand(format!("after `{op}`")),
                    rest.here(),
                )
                .expected(EXPECT_LITERAL)
                .fail(),
            }
        }
        Some((Token::Ident(w), s)) => {
            if let Some(u) = unsupported_operator(w) {
                return SyntaxError::new(ErrorKind::Unsupported(u), s).fail();
            }
            if let Some(k) = keyword_for(w).filter(|k| CmpOp::from_keyword(k).is_some()) {
                return SyntaxError::new(ErrorKind::UnknownOperator(w.to_string()), s)
                    .expected(EXPECT_OP)
                    .hint(format!("keywords are lowercase: did you mean `{k}`?"))
                    .fail();
            }
            if keyword_for(name) == Some("not") {
                return SyntaxError::new(ErrorKind::UnknownKeyword(name.to_owned()), name_span)
                    .hint("keywords are lowercase: did you mean `not`?")
                    .fail();
            }
            bool_property(i, name, name_span)
        }
        Some((Token::Literal(_) | Token::Str(_) | Token::Not | Token::Null, _))
            if keyword_for(name) == Some("not") =>
        {
            SyntaxError::new(ErrorKind::UnknownKeyword(name.to_owned()), name_span)
                .hint("keywords are lowercase: did you mean `not`?")
                .fail()
        }
        _ => bool_property(i, name, name_span),
    }
}

fn bool_property<'a>(i: Tokens<'a>, name: &str, span: Span) -> PResult<'a, Expr> {
    let p = property(name, span)?;
    Ok((i.advance(1), Expr::BoolProperty(p)))
}

/// A property node, after checking the name against the data model's rules.
fn property(name: &str, span: Span) -> Result<Property, nom::Err<SyntaxError>> {
    // The lexer only produces identifiers of the property-name syntax, so a name of at most
    // 255 bytes (hence at most 255 UTF-16 code units) needs no further check.
    let checked = if name.len() <= names::MAX_LEN {
        Ok(())
    } else {
        names::check(name)
    };
    match checked {
        Ok(()) => Ok(Property {
            name: name.to_owned(),
            span,
        }),
        Err(why) => Err(nom::Err::Failure(
            SyntaxError::new(ErrorKind::InvalidPropertyName(names::excerpt(name)), span).hint(why),
        )),
    }
}

/// The operand after `op` was not a literal (property-first) or not a property
/// (literal-first).
fn bad_second_operand<T>(t: &Token<'_>, whole: Span, at: Span, op: &CmpOp) -> PResult<'static, T> {
    let e = match t {
        Token::Ident(w) => SyntaxError::new(ErrorKind::PropertyVsProperty, whole).hint_opt(
            // `Null`, `nan`: a literal keyword in the wrong case.
            keyword_for(w)
                .filter(|k| matches!(*k, "null" | "NaN" | "INF"))
                .and_then(|_| keyword_hint(w))
                .or_else(|| {
                    Some(format!(
                        "`{w}` is a property name here; compare it with a literal"
                    ))
                }),
        ),
        Token::Literal(_) | Token::Str(_) => SyntaxError::new(ErrorKind::LiteralVsLiteral, whole)
            .hint("one side of a comparison must be a property name"),
        Token::Null => SyntaxError::new(ErrorKind::Unsupported(Unsupported::Null), at),
        Token::Parameter(p) => parameter(p, at),
        t => SyntaxError::new(ErrorKind::MissingOperand(format!("after `{op}`")), at)
            .hint(format!("found `{t}`")),
    };
    e.fail()
}

/// A literal-first comparison: `30 lt Age`.
fn literal_led(i: Tokens<'_>) -> PResult<'_, Expr> {
    let Some((value, lit_span)) = i.peek().and_then(|(t, s)| Some((t.value()?, s))) else {
        return missing_operand(i);
    };
    match i.peek2() {
        Some((Token::Op(op), op_span)) => {
            let rest = i.advance(2);
            match rest.peek() {
                Some((Token::Ident(name), name_span)) => {
                    // A wrongly-cased keyword here (`1 eq TRUE`) is a valid property name.
                    if let Some((Token::LParen | Token::Slash, _)) = rest.peek2() {
                        // `1 eq f(x)` / `1 eq A/B`: report the unsupported construct.
                        return ident_led(rest, name, *name_span);
                    }
                    let property = property(name, *name_span)?;
                    Ok((
                        rest.advance(1),
                        Expr::Comparison(Comparison {
                            span: lit_span.to(*name_span),
                            property,
                            op: *op,
                            op_span: *op_span,
                            literal: Literal {
                                value,
                                span: *lit_span,
                            },
                            literal_first: true,
                        }),
                    ))
                }
                Some((Token::Literal(_) | Token::Str(_), s)) => {
                    SyntaxError::new(ErrorKind::LiteralVsLiteral, lit_span.to(*s))
                        .hint("one side of a comparison must be a property name")
                        .fail()
                }
                Some((t, s)) => {
                    if let Token::Null | Token::Parameter(_) = t {
                        return bad_second_operand(t, *s, *s, op);
                    }
                    SyntaxError::new(ErrorKind::MissingOperand(format!("after `{op}`")), *s)
                        .expected(EXPECT_PROPERTY)
                        .fail()
                }
                None => SyntaxError::new(
                    ErrorKind::MissingOperand(format!("after `{op}`")),
                    rest.here(),
                )
                .expected(EXPECT_PROPERTY)
                .fail(),
            }
        }
        Some((Token::Ident(w), s)) => {
            if let Some(u) = unsupported_operator(w) {
                return SyntaxError::new(ErrorKind::Unsupported(u), *s).fail();
            }
            if let Some(k) = keyword_for(w).filter(|k| CmpOp::from_keyword(k).is_some()) {
                return SyntaxError::new(ErrorKind::UnknownOperator(w.to_string()), *s)
                    .expected(EXPECT_OP)
                    .hint(format!("keywords are lowercase: did you mean `{k}`?"))
                    .fail();
            }
            missing_operator(&value.to_string(), i.advance(1))
        }
        _ => missing_operator(&value.to_string(), i.advance(1)),
    }
}

fn missing_operator<T>(lit_text: &str, after: Tokens<'_>) -> PResult<'static, T> {
    SyntaxError::new(
        ErrorKind::MissingOperator(lit_text.to_owned()),
        after.here(),
    )
    .expected(EXPECT_OP)
    .fail()
}

/// The error for a token that follows a complete expression but cannot continue it.
pub(crate) fn unexpected_after(i: Tokens<'_>, expected: &'static [&'static str]) -> SyntaxError {
    let Some((t, s)) = i.peek() else {
        return SyntaxError::new(ErrorKind::UnexpectedEnd, i.here()).expected(expected);
    };
    match t {
        Token::RParen => SyntaxError::new(ErrorKind::UnmatchedParen, *s)
            .expected(expected)
            .hint("this `)` has no matching `(`"),
        Token::Op(op) if matches!(i.prev(), Some((Token::RParen, _))) => {
            SyntaxError::new(ErrorKind::UnexpectedToken(op.to_string()), *s)
                .expected(expected)
                .hint("only a property can be compared: remove the parentheses around it")
        }
        Token::Op(_) => SyntaxError::new(ErrorKind::ChainedComparison, *s)
            .hint("join comparisons with `and` or `or`"),
        Token::Ident(w) => {
            if let Some(u) = unsupported_operator(w) {
                return SyntaxError::new(ErrorKind::Unsupported(u), *s);
            }
            match keyword_for(w) {
                Some(k @ ("and" | "or" | "not")) => {
                    SyntaxError::new(ErrorKind::UnknownKeyword(w.to_string()), *s)
                        .expected(expected)
                        .hint(format!("keywords are lowercase: did you mean `{k}`?"))
                }
                Some(k) if CmpOp::from_keyword(k).is_some() => {
                    SyntaxError::new(ErrorKind::UnknownOperator(w.to_string()), *s)
                        .hint(format!("keywords are lowercase: did you mean `{k}`?"))
                }
                // After a bare property a comparison operator is due; after a complete
                // comparison, `and`/`or`.
                _ => {
                    let after_property = matches!(i.prev(), Some((Token::Ident(_), _)));
                    match near_operator(w, after_property) {
                        Some(hint) if after_property => {
                            SyntaxError::new(ErrorKind::UnknownOperator(w.to_string()), *s)
                                .expected(&["eq", "ne", "gt", "ge", "lt", "le"])
                                .hint(hint)
                        }
                        Some(hint) => {
                            SyntaxError::new(ErrorKind::UnknownKeyword(w.to_string()), *s)
                                .expected(expected)
                                .hint(hint)
                        }
                        None => SyntaxError::new(ErrorKind::TrailingInput(t.to_string()), *s)
                            .expected(expected)
                            .hint("join conditions with `and` or `or`"),
                    }
                }
            }
        }
        Token::Null => SyntaxError::new(ErrorKind::Unsupported(Unsupported::Null), *s),
        Token::Parameter(p) => parameter(p, *s),
        Token::Not => SyntaxError::new(ErrorKind::TrailingInput(t.to_string()), *s)
            .expected(expected)
            .hint("`not` goes before a condition: did you mean `and not`?"),
        Token::LParen => SyntaxError::new(ErrorKind::TrailingInput(t.to_string()), *s)
            .expected(expected)
            .hint("join conditions with `and` or `or`"),
        _ => SyntaxError::new(ErrorKind::TrailingInput(t.to_string()), *s).expected(expected),
    }
}
