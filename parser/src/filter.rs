//! The `$filter` grammar: a `nom` parser over the token slice produced by [`crate::lex`].
//!
//! ```text
//! filter     := or_expr
//! or_expr    := and_expr ( "or" and_expr )*
//! and_expr   := unary ( "and" unary )*
//! unary      := "not" unary | primary
//! primary    := "(" or_expr ")" | comparison | bool_prop | bool_lit
//! comparison := operand cmp_op operand   -- one property, one literal
//! bool_lit   := "true" | "false"         -- any letter case; a constant condition
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

use crate::ast::{Expr, Filter};
use crate::comparison::{primary, unexpected_after};
use crate::error::{ErrorKind, ParseError};
use crate::input::{
    EXPECT_AFTER_GROUP, EXPECT_AFTER_TOP, EXPECT_OPERAND, PResult, SyntaxError, Tokens,
};
use crate::limits::{FilterOptions, MAX_DEPTH_CAP};
use crate::{Span, Token, lex};
use nom::{Input, Parser};

/// Initial capacity of an `and`/`or` chain's operand vector.
const CHAIN_CAPACITY: usize = 6;

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
            // Room for a typical chain without a reallocation (6 × 128 bytes stays in
            // the allocator's small size classes).
            self.ands.reserve(CHAIN_CAPACITY);
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
            self.ors.reserve(CHAIN_CAPACITY);
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

/// Builds an n-ary node when the chain has more than one operand.
fn chain(mut operands: Vec<Expr>, span: Span, node: fn(Vec<Expr>, Span) -> Expr) -> Expr {
    if operands.len() == 1
        && let Some(only) = operands.pop()
    {
        return only;
    }
    node(operands, span)
}

/// Parses a `$filter` expression.
///
/// An empty or all-space text is "no filter" (`Filter { expr: None }`). Errors carry the
/// span of the offending text, what was expected and often a hint; see [`ErrorKind`] for
/// everything that is rejected.
///
/// ```
/// use tableq_parser::{parse_filter, FilterOptions, ast::Expr};
/// let f = parse_filter("30 lt Age", &FilterOptions::default()).unwrap();
/// let Some(Expr::Comparison(c)) = &f.expr else { panic!() };
/// assert_eq!((c.property.name.as_str(), c.normalized_op().as_str()), ("Age", "gt"));
/// assert_eq!(parse_filter("   ", &FilterOptions::default()).unwrap().expr, None);
/// ```
pub fn parse_filter(text: &str, options: &FilterOptions) -> Result<Filter, ParseError> {
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
        max_depth: options.max_depth.min(MAX_DEPTH_CAP),
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
    if let Some(limit) = options.max_comparisons
        && count_comparisons(&expr) > limit
    {
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
    Ok(Filter { expr: Some(expr) })
}

/// The number of comparisons and bare boolean properties (recursion bounded by the
/// nesting limit, like the tree itself). A Boolean literal counts as no comparison.
fn count_comparisons(expr: &Expr) -> usize {
    match expr {
        Expr::Or(xs, _) | Expr::And(xs, _) => xs.iter().map(count_comparisons).sum(),
        Expr::Not(x, _) => count_comparisons(x),
        Expr::Comparison(_) | Expr::BoolProperty(_) => 1,
        Expr::Constant(..) => 0,
    }
}

/// The spans of all comparisons and bare boolean properties, in source order
/// (an explicit stack: no recursion). Boolean literals are not comparisons.
pub(crate) fn comparison_spans(expr: &Expr) -> Vec<Span> {
    let mut out = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Or(xs, _) | Expr::And(xs, _) => stack.extend(xs.iter().rev()),
            Expr::Not(x, _) => stack.push(x),
            Expr::Comparison(c) => out.push(c.span),
            Expr::BoolProperty(p) => out.push(p.span),
            Expr::Constant(..) => {}
        }
    }
    out
}
