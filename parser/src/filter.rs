//! The `$filter` grammar: a `nom` parser over the token slice produced by [`crate::lex`].
//!
//! ```text
//! filter     := or_expr
//! or_expr    := and_expr ( "or" and_expr )*
//! and_expr   := unary ( "and" unary )*
//! unary      := "not" unary | primary
//! primary    := "(" or_expr ")" | comparison | bool_prop
//! comparison := operand cmp_op operand   -- one property, one literal
//! ```
//!
//! Every decision is made on the next token (LL(1)), and every error is a `nom` *failure*
//! (never a backtrack), so parsing is linear in the number of tokens. The parser does not
//! recurse at all: open groups and their half-built `and`/`or` chains live on an explicit
//! stack, and each `(` and `not` counts one nesting level against
//! [`FilterOptions::max_depth`]. Comparisons and bare properties are parsed by small `nom`
//! functions over [`Tokens`], the `nom::Input` view of the token slice.
//!
//! ```
//! use tableq_parser::{parse_filter, FilterOptions};
//! let f = parse_filter("not Age eq 0 and (A or 30 lt Age)", &FilterOptions::default()).unwrap();
//! assert_eq!(f.to_string(), "not Age eq 0 and (A or 30 lt Age)");
//! ```

use crate::ast::{Comparison, Expr, Filter, Literal, Property};
use crate::error::{ErrorKind, ParseError, Unsupported};
use crate::{FilterOptions, Span, Token, lex, names};
use nom::{IResult, Input, Needed, Parser};
use std::iter::Enumerate;
use std::slice::Iter;
use tableq_model::CmpOp;

/// The token slice as `nom` input: a `Copy` window `start..end` into all tokens, so a
/// parser can also look at the token *before* its input (for "missing operand after `and`").
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tokens<'a> {
    all: &'a [(Token<'a>, Span)],
    start: usize,
    end: usize,
    /// Byte length of the source: the span of "end of input".
    eof: usize,
}

impl<'a> Tokens<'a> {
    fn new(all: &'a [(Token<'a>, Span)], eof: usize) -> Tokens<'a> {
        Tokens {
            all,
            start: 0,
            end: all.len(),
            eof,
        }
    }

    fn slice(&self) -> &'a [(Token<'a>, Span)] {
        &self.all[self.start..self.end]
    }

    fn peek(&self) -> Option<&'a (Token<'a>, Span)> {
        self.slice().first()
    }

    fn peek2(&self) -> Option<&'a (Token<'a>, Span)> {
        self.slice().get(1)
    }

    fn prev(&self) -> Option<&'a (Token<'a>, Span)> {
        self.start.checked_sub(1).and_then(|i| self.all.get(i))
    }

    fn advance(&self, n: usize) -> Tokens<'a> {
        Tokens {
            start: (self.start + n).min(self.end),
            ..*self
        }
    }

    /// An empty span at the end of the last consumed token.
    fn consumed_end(&self) -> Span {
        self.prev()
            .map_or(Span::new(0, 0), |(_, s)| Span::new(s.end, s.end))
    }

    /// The span of the next token, or an empty span at the end of the input.
    fn here(&self) -> Span {
        self.peek()
            .map_or(Span::new(self.eof, self.eof), |(_, s)| *s)
    }
}

impl<'a> Input for Tokens<'a> {
    type Item = &'a (Token<'a>, Span);
    type Iter = Iter<'a, (Token<'a>, Span)>;
    type IterIndices = Enumerate<Iter<'a, (Token<'a>, Span)>>;

    fn input_len(&self) -> usize {
        self.end - self.start
    }
    fn take(&self, index: usize) -> Self {
        Tokens {
            end: (self.start + index).min(self.end),
            ..*self
        }
    }
    fn take_from(&self, index: usize) -> Self {
        self.advance(index)
    }
    fn take_split(&self, index: usize) -> (Self, Self) {
        (self.take_from(index), self.take(index))
    }
    fn position<P>(&self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool,
    {
        self.slice().iter().position(predicate)
    }
    fn iter_elements(&self) -> Self::Iter {
        self.slice().iter()
    }
    fn iter_indices(&self) -> Self::IterIndices {
        self.slice().iter().enumerate()
    }
    fn slice_index(&self, count: usize) -> Result<usize, Needed> {
        if self.input_len() >= count {
            Ok(count)
        } else {
            Err(Needed::new(count - self.input_len()))
        }
    }
}

/// A syntax error before it is attached to the source text.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    kind: ErrorKind,
    span: Span,
    expected: &'static [&'static str],
    hint: Option<String>,
}

impl SyntaxError {
    fn new(kind: ErrorKind, span: Span) -> SyntaxError {
        SyntaxError {
            kind,
            span,
            expected: &[],
            hint: None,
        }
    }
    fn expected(mut self, expected: &'static [&'static str]) -> SyntaxError {
        self.expected = expected;
        self
    }
    fn hint(mut self, hint: impl Into<String>) -> SyntaxError {
        self.hint = Some(hint.into());
        self
    }
    fn hint_opt(mut self, hint: Option<String>) -> SyntaxError {
        self.hint = hint;
        self
    }
    fn into_parse_error(self, source: &str) -> ParseError {
        let expected = if self.expected.is_empty() {
            default_expected(&self.kind)
        } else {
            self.expected
        };
        let e = ParseError::new(self.kind, self.span, source).with_expected(expected);
        match self.hint {
            Some(h) => e.with_hint(h),
            None => e,
        }
    }
    fn fail<T>(self) -> PResult<'static, T> {
        Err(nom::Err::Failure(self))
    }
}

impl<'a> nom::error::ParseError<Tokens<'a>> for SyntaxError {
    fn from_error_kind(input: Tokens<'a>, _kind: nom::error::ErrorKind) -> Self {
        match input.peek() {
            Some((t, s)) => SyntaxError::new(ErrorKind::UnexpectedToken(t.to_string()), *s),
            None => SyntaxError::new(ErrorKind::UnexpectedEnd, input.here()),
        }
    }
    fn append(_input: Tokens<'a>, _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

type PResult<'a, T> = IResult<Tokens<'a>, T, SyntaxError>;

/// What would have been accepted where an error of `kind` was found, when the error site
/// did not say.
fn default_expected(kind: &ErrorKind) -> &'static [&'static str] {
    match kind {
        ErrorKind::Unsupported(Unsupported::Null) => EXPECT_LITERAL,
        ErrorKind::Unsupported(
            Unsupported::Function(_)
            | Unsupported::Path
            | Unsupported::Lambda(_)
            | Unsupported::Parameter(_),
        ) => EXPECT_PROPERTY,
        ErrorKind::Unsupported(_) | ErrorKind::UnknownOperator(_) => EXPECT_OP,
        ErrorKind::PropertyVsProperty => EXPECT_LITERAL,
        ErrorKind::LiteralVsLiteral => EXPECT_PROPERTY,
        ErrorKind::ChainedComparison => EXPECT_AFTER_TOP,
        _ => &[],
    }
}

const EXPECT_OPERAND: &[&str] = &["a comparison", "a property", "`(`", "`not`"];
const EXPECT_OP: &[&str] = &["`eq`", "`ne`", "`gt`", "`ge`", "`lt`", "`le`"];
const EXPECT_LITERAL: &[&str] = &["a literal"];
const EXPECT_PROPERTY: &[&str] = &["a property"];
const EXPECT_AFTER_TOP: &[&str] = &["`and`", "`or`", "the end of the filter"];
const EXPECT_AFTER_GROUP: &[&str] = &["`and`", "`or`", "`)`"];

/// The lowercase keyword a wrongly-cased word stands for, if any (`EQ` → `eq`).
pub(crate) fn keyword_for(word: &str) -> Option<&'static str> {
    const KEYWORDS: [&str; 14] = [
        "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "true", "false", "null", "NaN",
        "INF",
    ];
    KEYWORDS
        .into_iter()
        .find(|k| k.eq_ignore_ascii_case(word) && *k != word)
}

fn keyword_hint(word: &str) -> Option<String> {
    keyword_for(word).map(|k| {
        if k == "NaN" || k == "INF" {
            format!("Double constants are case-sensitive: did you mean `{k}`?")
        } else {
            format!("keywords are lowercase: did you mean `{k}`?")
        }
    })
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

/// One open group while parsing: the whole filter, or one `( … )`. The chains being built
/// live here instead of on the call stack, so nesting costs heap, not stack.
struct Frame {
    /// The `(` of a group; `None` for the whole filter.
    open: Option<Span>,
    /// Where the operand being parsed starts (its first `not`, `(` or word).
    operand_start: Span,
    and_start: Span,
    or_start: Span,
    /// Finished operands of the current `and` chain.
    ands: Vec<Expr>,
    /// Finished `and` chains of the `or` chain.
    ors: Vec<Expr>,
    /// `not`s read before the operand being parsed, innermost last.
    nots: Vec<Span>,
}

impl Frame {
    fn new(open: Option<Span>, start: Span) -> Frame {
        Frame {
            open,
            operand_start: start,
            and_start: start,
            or_start: start,
            ands: Vec::new(),
            ors: Vec::new(),
            nots: Vec::new(),
        }
    }

    /// `operand and …`
    fn push_and(&mut self, operand: Expr, next_start: Span) {
        if self.ands.is_empty() {
            self.and_start = self.operand_start;
        }
        self.ands.push(operand);
        self.operand_start = next_start;
    }

    /// Ends the `and` chain with its last operand.
    fn end_and(&mut self, operand: Expr, end: Span) -> Expr {
        if self.ands.is_empty() {
            self.and_start = self.operand_start;
        }
        self.ands.push(operand);
        chain(
            std::mem::take(&mut self.ands),
            self.and_start.to(end),
            Expr::And,
        )
    }

    /// `operand or …`
    fn push_or(&mut self, operand: Expr, end: Span, next_start: Span) {
        let and = self.end_and(operand, end);
        if self.ors.is_empty() {
            self.or_start = self.and_start;
        }
        self.ors.push(and);
        self.operand_start = next_start;
    }

    /// Ends the group with its last operand.
    fn finish(&mut self, operand: Expr, end: Span) -> Expr {
        let and = self.end_and(operand, end);
        if self.ors.is_empty() {
            self.or_start = self.and_start;
        }
        self.ors.push(and);
        chain(
            std::mem::take(&mut self.ors),
            self.or_start.to(end),
            Expr::Or,
        )
    }
}

struct Grammar {
    max_depth: usize,
}

impl Grammar {
    /// The whole filter. Operator precedence is handled with an explicit stack of
    /// [`Frame`]s (one per open parenthesis), so this never recurses: `(` and `not` only
    /// count nesting levels against the limit.
    fn filter<'a>(&self, mut i: Tokens<'a>) -> PResult<'a, Expr> {
        // The whole filter's frame, then one per open `(` (no allocation without parens).
        let mut top = Frame::new(None, i.here());
        let mut groups: Vec<Frame> = Vec::new();
        let mut depth = 0usize;
        loop {
            // Expecting an operand: any `not`s and `(`s, then a comparison or property.
            match i.peek() {
                Some((Token::Not, s)) => {
                    depth = self.enter(depth, *s)?;
                    current(&mut top, &mut groups).nots.push(*s);
                    i = i.advance(1);
                    continue;
                }
                Some((Token::LParen, open)) => {
                    depth = self.enter(depth, *open)?;
                    if let Some((Token::RParen, close)) = i.peek2() {
                        return SyntaxError::new(ErrorKind::EmptyParens, open.to(*close))
                            .expected(EXPECT_OPERAND)
                            .hint("put a comparison inside the parentheses, or remove them")
                            .fail();
                    }
                    i = i.advance(1);
                    groups.push(Frame::new(Some(*open), i.here()));
                    continue;
                }
                _ => {}
            }
            let (rest, mut operand) = primary(i)?;
            i = rest;
            // After an operand: apply pending `not`s, close groups, continue a chain.
            loop {
                let frame = current(&mut top, &mut groups);
                while let Some(not_span) = frame.nots.pop() {
                    operand = Expr::Not(Box::new(operand), not_span.to(i.consumed_end()));
                    depth = depth.saturating_sub(1);
                }
                match i.peek() {
                    Some((Token::And, _)) => {
                        i = i.advance(1);
                        frame.push_and(operand, i.here());
                        break;
                    }
                    Some((Token::Or, _)) => {
                        let end = i.consumed_end();
                        i = i.advance(1);
                        frame.push_or(operand, end, i.here());
                        break;
                    }
                    Some((Token::RParen, _)) if frame.open.is_some() => {
                        operand = frame.finish(operand, i.consumed_end());
                        groups.pop();
                        depth = depth.saturating_sub(1);
                        i = i.advance(1);
                    }
                    None => match frame.open {
                        None => {
                            let end = i.consumed_end();
                            return Ok((i, frame.finish(operand, end)));
                        }
                        Some(open) => {
                            return SyntaxError::new(ErrorKind::UnclosedParen, open)
                                .expected(&["`)`"])
                                .hint("this `(` is never closed")
                                .fail();
                        }
                    },
                    Some(_) => {
                        let expected = if frame.open.is_some() {
                            EXPECT_AFTER_GROUP
                        } else {
                            EXPECT_AFTER_TOP
                        };
                        return unexpected_after(i, expected).fail();
                    }
                }
            }
        }
    }

    /// One more nesting level, or the depth error at `span`.
    fn enter(&self, depth: usize, span: Span) -> Result<usize, nom::Err<SyntaxError>> {
        if depth >= self.max_depth {
            Err(nom::Err::Failure(
                SyntaxError::new(
                    ErrorKind::TooDeep {
                        limit: self.max_depth,
                    },
                    span,
                )
                .hint("simplify the filter: remove redundant parentheses or double `not`"),
            ))
        } else {
            Ok(depth + 1)
        }
    }
}

/// The innermost open frame.
fn current<'f>(top: &'f mut Frame, groups: &'f mut [Frame]) -> &'f mut Frame {
    match groups.last_mut() {
        Some(frame) => frame,
        None => top,
    }
}

/// A comparison or a bare boolean property (after any `not`s and `(`s).
fn primary(i: Tokens<'_>) -> PResult<'_, Expr> {
    let Some((tok, span)) = i.peek() else {
        return missing_operand(i);
    };
    match tok {
        Token::Ident(name) => ident_led(i, name, *span),
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

/// Builds an n-ary node when the chain has more than one operand.
fn chain(mut operands: Vec<Expr>, span: Span, node: fn(Vec<Expr>, Span) -> Expr) -> Expr {
    if operands.len() == 1 {
        if let Some(only) = operands.pop() {
            return only;
        }
    }
    node(operands, span)
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
            if let Some((Token::Ident(w), s)) = i.slice().get(2) {
                if *w == "any" || *w == "all" {
                    return SyntaxError::new(
                        ErrorKind::Unsupported(Unsupported::Lambda(w.to_string())),
                        *s,
                    )
                    .fail();
                }
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
            if let Some((tok, lit_span)) = rest.peek() {
                if let Some(value) = tok.value() {
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
    match names::check(name) {
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
            keyword_hint(w).or_else(|| {
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
            missing_operator(&value.to_string(), *lit_span, i.advance(1))
        }
        _ => missing_operator(&value.to_string(), *lit_span, i.advance(1)),
    }
}

fn missing_operator<T>(lit_text: &str, lit_span: Span, after: Tokens<'_>) -> PResult<'static, T> {
    let e = SyntaxError::new(
        ErrorKind::MissingOperator(lit_text.to_owned()),
        after.here(),
    )
    .expected(EXPECT_OP);
    let e = if matches!(lit_text, "true" | "false") {
        e.hint("a constant alone is not a condition: compare a property, e.g. `Active eq true`")
    } else {
        let _ = lit_span;
        e
    };
    e.fail()
}

/// The error for a token that follows a complete expression but cannot continue it.
fn unexpected_after(i: Tokens<'_>, expected: &'static [&'static str]) -> SyntaxError {
    let Some((t, s)) = i.peek() else {
        return SyntaxError::new(ErrorKind::UnexpectedEnd, i.here()).expected(expected);
    };
    match t {
        Token::RParen => SyntaxError::new(ErrorKind::UnmatchedParen, *s)
            .expected(expected)
            .hint("this `)` has no matching `(`"),
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
                _ => SyntaxError::new(ErrorKind::TrailingInput(t.to_string()), *s)
                    .expected(expected)
                    .hint("join conditions with `and` or `or`"),
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

/// Parses a `$filter`; see [`crate::parse_filter`].
pub(crate) fn parse(text: &str, options: &FilterOptions) -> Result<Filter, ParseError> {
    if text.len() > options.max_len {
        let mut start = options.max_len;
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        return Err(ParseError::new(
            ErrorKind::TooLong {
                len: text.len(),
                limit: options.max_len,
            },
            Span::new(start, text.len()),
            text,
        )
        .with_hint("the text from here on is over the limit"));
    }
    if text.bytes().all(|b| b == b' ') {
        return Ok(Filter { expr: None });
    }
    let tokens = lex(text)?;
    let grammar = Grammar {
        max_depth: options.max_depth.min(crate::MAX_DEPTH_CAP),
    };
    let input = Tokens::new(&tokens, text.len());
    let expr = match (|i| grammar.filter(i)).parse_complete(input) {
        Ok((rest, expr)) => {
            if rest.input_len() > 0 {
                return Err(unexpected_after(rest, EXPECT_AFTER_TOP).into_parse_error(text));
            }
            expr
        }
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => return Err(e.into_parse_error(text)),
        Err(nom::Err::Incomplete(_)) => {
            return Err(ParseError::new(
                ErrorKind::UnexpectedEnd,
                Span::new(text.len(), text.len()),
                text,
            ));
        }
    };
    if let Some(limit) = options.max_comparisons {
        if count_comparisons(&expr) > limit {
            let spans = comparison_spans(&expr);
            let span = spans.get(limit).copied().unwrap_or_default();
            return Err(ParseError::new(
                ErrorKind::TooManyComparisons {
                    count: spans.len(),
                    limit,
                },
                span,
                text,
            )
            .with_hint(format!("comparison {} is over the limit", limit + 1)));
        }
    }
    Ok(Filter { expr: Some(expr) })
}

/// The number of comparisons and bare boolean properties (recursion bounded by the
/// nesting limit, like the tree itself).
fn count_comparisons(expr: &Expr) -> usize {
    match expr {
        Expr::Or(xs, _) | Expr::And(xs, _) => xs.iter().map(count_comparisons).sum(),
        Expr::Not(x, _) => count_comparisons(x),
        Expr::Comparison(_) | Expr::BoolProperty(_) => 1,
    }
}

/// The spans of all comparisons and bare boolean properties, in source order
/// (an explicit stack: no recursion).
pub(crate) fn comparison_spans(expr: &Expr) -> Vec<Span> {
    let mut out = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Or(xs, _) | Expr::And(xs, _) => stack.extend(xs.iter().rev()),
            Expr::Not(x, _) => stack.push(x),
            Expr::Comparison(c) => out.push(c.span),
            Expr::BoolProperty(p) => out.push(p.span),
        }
    }
    out
}
