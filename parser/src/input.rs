//! The token slice as `nom` input ([`Tokens`]), the parser's error type before it meets
//! the source text ([`SyntaxError`]), and the "expected" sets used in diagnostics.

use crate::error::{ErrorKind, ParseError, Unsupported};
use crate::{Span, Token};
use nom::{IResult, Input, Needed};
use std::iter::Enumerate;
use std::slice::Iter;

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
    pub(crate) fn new(all: &'a [(Token<'a>, Span)], eof: usize) -> Tokens<'a> {
        Tokens {
            all,
            start: 0,
            end: all.len(),
            eof,
        }
    }

    pub(crate) fn slice(&self) -> &'a [(Token<'a>, Span)] {
        &self.all[self.start..self.end]
    }

    pub(crate) fn peek(&self) -> Option<&'a (Token<'a>, Span)> {
        self.slice().first()
    }

    pub(crate) fn peek2(&self) -> Option<&'a (Token<'a>, Span)> {
        self.slice().get(1)
    }

    pub(crate) fn prev(&self) -> Option<&'a (Token<'a>, Span)> {
        self.start.checked_sub(1).and_then(|i| self.all.get(i))
    }

    pub(crate) fn advance(&self, n: usize) -> Tokens<'a> {
        Tokens {
            start: (self.start + n).min(self.end),
            ..*self
        }
    }

    /// An empty span at the end of the last consumed token.
    pub(crate) fn consumed_end(&self) -> Span {
        self.prev()
            .map_or(Span::new(0, 0), |(_, s)| Span::new(s.end, s.end))
    }

    /// The span of the next token, or an empty span at the end of the input.
    pub(crate) fn here(&self) -> Span {
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
    pub(crate) fn new(kind: ErrorKind, span: Span) -> SyntaxError {
        SyntaxError {
            kind,
            span,
            expected: &[],
            hint: None,
        }
    }
    pub(crate) fn expected(mut self, expected: &'static [&'static str]) -> SyntaxError {
        self.expected = expected;
        self
    }
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> SyntaxError {
        self.hint = Some(hint.into());
        self
    }
    pub(crate) fn hint_opt(mut self, hint: Option<String>) -> SyntaxError {
        self.hint = hint;
        self
    }
    pub(crate) fn into_parse_error(self, source: &str) -> ParseError {
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
    pub(crate) fn fail<T>(self) -> PResult<'static, T> {
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

pub(crate) type PResult<'a, T> = IResult<Tokens<'a>, T, SyntaxError>;

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

pub(crate) const EXPECT_OPERAND: &[&str] = &["a comparison", "a property", "`(`", "`not`"];
pub(crate) const EXPECT_OP: &[&str] = &["`eq`", "`ne`", "`gt`", "`ge`", "`lt`", "`le`"];
pub(crate) const EXPECT_LITERAL: &[&str] = &["a literal"];
pub(crate) const EXPECT_PROPERTY: &[&str] = &["a property"];
pub(crate) const EXPECT_AFTER_TOP: &[&str] = &["`and`", "`or`", "the end of the filter"];
pub(crate) const EXPECT_AFTER_GROUP: &[&str] = &["`and`", "`or`", "`)`"];
