//! Parse errors: what went wrong, where (a byte span into the source text), what was
//! expected there, and an optional hint — rendered with a caret line by plain `Display`.
//!
//! ```
//! use tableq_parser::{parse_filter, FilterOptions};
//! let err = parse_filter("PartitionKey EQ 'a'", &FilterOptions::default()).unwrap_err();
//! assert_eq!(err.offset(), 13);
//! assert_eq!(err.column(), 14);
//! assert_eq!(
//!     err.to_string(),
//!     "error: unknown operator `EQ`\n  \
//!        |\n\
//!      1 | PartitionKey EQ 'a'\n  \
//!        |              ^^ keywords are lowercase: did you mean `eq`?\n"
//! );
//! ```
//!
//! The rendering needs no dependency; the `tableq` binary renders the same data in colour.

use crate::Span;
use std::fmt;

/// Longest source line shown in a rendered diagnostic before it is cut around the span.
const MAX_SHOWN_LINE: usize = 100;

/// What kind of error a [`ParseError`] is. Its `Display` is the headline of the diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    // ---- lexical -------------------------------------------------------------------------
    /// A character that starts no token (`#`, a tab, a newline, …).
    #[error("unexpected character `{}`", shown_char(*.0))]
    UnexpectedChar(char),
    /// A string or prefixed literal without its closing quote; names the literal kind
    /// (`string`, `datetime`, `guid`, `binary`).
    #[error("unterminated {0} literal")]
    Unterminated(&'static str),
    /// A malformed number such as `5.`, `.5`, `+5` or `12abc`.
    #[error("invalid number `{0}`")]
    InvalidNumber(String),
    /// An integer without `L` that does not fit Int32.
    #[error("Int32 literal out of range (append L for Int64)")]
    Int32OutOfRange,
    /// An integer with `L` that does not fit Int64.
    #[error("Int64 literal out of range")]
    Int64OutOfRange,
    /// A Double literal whose magnitude overflows (`1e400`).
    #[error("Double literal out of range")]
    DoubleOutOfRange,
    /// `-NaN` (NaN has no sign).
    #[error("`-NaN` is not a valid Double literal")]
    NegativeNaN,
    /// A `datetime'…'` literal that is not of the required form.
    #[error("invalid DateTime literal")]
    InvalidDateTime,
    /// A `datetime'…'` literal outside 1601-01-01 … 9999-12-31.
    #[error("DateTime literal out of range")]
    DateTimeOutOfRange,
    /// A `guid'…'` literal that is not in the dashed 8-4-4-4-12 hex form.
    #[error("invalid guid literal")]
    InvalidGuid,
    /// An `X'…'`/`binary'…'` literal with a non-hex digit or an odd number of digits.
    #[error("invalid binary literal")]
    InvalidBinary,
    /// A quote directly after a word that is not a literal prefix (`x'0a'`, `date'…'`).
    #[error("unknown literal prefix `{0}`")]
    UnknownLiteralPrefix(String),
    /// Two words or literals written without a space between them (`'x'and`).
    #[error("missing space between `{0}` and `{1}`")]
    MissingSpace(String, String),
    /// A date written bare (`2024-01-01`) instead of as `datetime'…'`.
    #[error("`{0}` is a date written without `datetime'…'`")]
    BareDateTime(String),

    // ---- syntax --------------------------------------------------------------------------
    /// An operator that is not one of `eq ne gt ge lt le` (`EQ`, `==`, `<`).
    #[error("unknown operator `{0}`")]
    UnknownOperator(String),
    /// A keyword written in the wrong case where only the keyword makes sense (`Not`, `AND`).
    #[error("unknown keyword `{0}`")]
    UnknownKeyword(String),
    /// A construct of OData that the Table service does not support.
    #[error("{0}")]
    Unsupported(Unsupported),
    /// Both sides of a comparison are properties.
    #[error("comparisons must be between a property and a constant")]
    PropertyVsProperty,
    /// Both sides of a comparison are literals.
    #[error("comparisons must be between a property and a constant")]
    LiteralVsLiteral,
    /// `()`.
    #[error("empty parentheses")]
    EmptyParens,
    /// A `(` that is never closed.
    #[error("unclosed `(`")]
    UnclosedParen,
    /// A `)` without a matching `(`.
    #[error("unmatched `)`")]
    UnmatchedParen,
    /// An operator or connective without its operand; says where (`after `and``).
    #[error("missing operand {0}")]
    MissingOperand(String),
    /// A literal not followed by a comparison operator (`5` alone).
    #[error("missing comparison operator after `{0}`")]
    MissingOperator(String),
    /// `A eq 1 eq 2`.
    #[error("comparisons cannot be chained")]
    ChainedComparison,
    /// A token that cannot appear where it was found.
    #[error("unexpected `{0}`")]
    UnexpectedToken(String),
    /// Input continues after a complete expression (`A eq 1 B eq 2`).
    #[error("unexpected `{0}` after a complete expression")]
    TrailingInput(String),
    /// The input ended where more was required.
    #[error("unexpected end of input")]
    UnexpectedEnd,
    /// More nested `(` / `not` than the nesting limit.
    #[error(
        "the filter nests too deeply: at most {limit} levels of parentheses and `not` are allowed"
    )]
    TooDeep {
        /// The configured limit.
        limit: usize,
    },
    /// More comparisons (bare boolean properties included) than the comparison limit.
    #[error("the filter has {count} comparisons; at most {limit} are allowed")]
    TooManyComparisons {
        /// How many the filter has.
        count: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The filter text is longer than the length limit.
    #[error("the filter is {len} bytes long; at most {limit} are allowed")]
    TooLong {
        /// The length in UTF-8 bytes.
        len: usize,
        /// The configured limit.
        limit: usize,
    },
    /// A property name that breaks the data model's name rules (too long, reserved, …).
    #[error("invalid property name `{0}`")]
    InvalidPropertyName(String),

    // ---- query options ---------------------------------------------------------------------
    /// A `$`-query option other than `$filter`, `$select`, `$top` (`$orderby`, `$skip`, …).
    #[error("the query option `{0}` is not supported")]
    UnsupportedOption(String),

    // ---- $select / $top ------------------------------------------------------------------
    /// An empty item in `$select` (`A,,B`, a trailing comma, an empty `$select`).
    #[error("empty item in $select")]
    EmptySelectItem,
    /// `*` together with other items.
    #[error("`*` must appear alone in $select")]
    StarNotAlone,
    /// More than 255 names in `$select`.
    #[error("$select lists {count} properties; at most {limit} are allowed")]
    TooManySelected {
        /// How many names were listed.
        count: usize,
        /// The limit (255).
        limit: usize,
    },
    /// `$top` is not a plain decimal integer.
    #[error("invalid $top `{0}`")]
    InvalidTop(String),
    /// `$top` is an integer outside 1 ..= 1000.
    #[error("$top must be between 1 and 1000, got `{0}`")]
    TopOutOfRange(String),

    // ---- resource paths ------------------------------------------------------------------
    /// A `$`-resource other than `$batch` (`$metadata`, `$Batch`, …).
    #[error("unknown resource `{0}`")]
    UnknownResource(String),
    /// Text after a complete resource path: `t()x`, `t(PartitionKey='a',RowKey='b')/x`.
    #[error("unexpected `{0}` after the end of the resource path")]
    TrailingPath(String),
    /// A resource path without a table name: empty, or starting with `(`.
    #[error("missing table name")]
    MissingTableName,
    /// A key name other than `PartitionKey` and `RowKey` (`Partitionkey`, `Id`, …).
    #[error("unknown key `{0}`")]
    UnknownKey(String),
    /// The same key twice: `t(PartitionKey='a',PartitionKey='b')`.
    #[error("`{0}` is given twice")]
    DuplicateKey(&'static str),
    /// A key predicate without one of the keys: `t(PartitionKey='a')`.
    #[error("missing `{0}`")]
    MissingKey(&'static str),
    /// A key value without its name: `t('a')`, `t('a','b')`.
    #[error("entity keys must be named")]
    UnnamedKey,
    /// A key (or a table name in `Tables(…)`) that is not a string literal:
    /// `t(PartitionKey=1,RowKey='b')`.
    #[error("{key} must be a string literal, not {found}")]
    KeyNotString {
        /// `PartitionKey`, `RowKey` or `TableName`.
        key: &'static str,
        /// What was written instead, e.g. ``the Edm.Int32 literal `1` ``.
        found: String,
    },
}

/// OData constructs that parse in OData but are not supported by the Table service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unsupported {
    /// The `null` literal.
    #[error("`null` is not supported: the Table service cannot compare with null")]
    Null,
    /// A function call such as `startswith(...)`.
    #[error("functions are not supported: `{0}(...)`")]
    Function(String),
    /// An arithmetic operator: `add`, `sub`, `mul`, `div`, `mod`.
    #[error("arithmetic operators are not supported: `{0}`")]
    Arithmetic(String),
    /// The `in` operator.
    #[error("the `in` operator is not supported")]
    In,
    /// The `has` operator.
    #[error("the `has` operator is not supported")]
    Has,
    /// A lambda operator: `any` or `all`.
    #[error("lambda operators are not supported: `{0}`")]
    Lambda(String),
    /// `$it` or another `$`-parameter.
    #[error("`{0}` is not supported")]
    Parameter(String),
    /// A property path with `/`.
    #[error("property paths with `/` are not supported")]
    Path,
}

/// A lexical or syntax error in `$filter`, `$select` or `$top` text, or in a resource path.
///
/// Carries the [`ErrorKind`], the byte [`Span`] of the offending text, the set of things
/// that would have been accepted there, an optional hint, and the source text itself, so
/// that `Display` can render a self-contained diagnostic:
///
/// ```text
/// error: unknown operator `EQ`
///   |
/// 1 | PartitionKey EQ 'a'
///   |              ^^ keywords are lowercase: did you mean `eq`?
/// ```
///
/// The label under the carets is the hint, or else "expected …" built from
/// [`expected`](ParseError::expected).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    inner: Box<Inner>,
}

/// The data of a [`ParseError`], boxed so that `Result<_, ParseError>` stays small.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    kind: ErrorKind,
    span: Span,
    expected: Vec<&'static str>,
    hint: Option<String>,
    source: String,
}

impl std::error::Error for ParseError {}

impl ParseError {
    /// An error of `kind` at `span` in `source`.
    pub fn new(kind: ErrorKind, span: Span, source: impl Into<String>) -> ParseError {
        ParseError {
            inner: Box::new(Inner {
                kind,
                span,
                expected: Vec::new(),
                hint: None,
                source: source.into(),
            }),
        }
    }

    /// Adds what would have been accepted at the span (e.g. `` "`eq`" ``, `"a literal"`).
    pub fn with_expected(mut self, expected: &[&'static str]) -> ParseError {
        self.inner.expected = expected.to_vec();
        self
    }

    /// Adds a hint shown under the carets.
    pub fn with_hint(mut self, hint: impl Into<String>) -> ParseError {
        self.inner.hint = Some(hint.into());
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// The headline, e.g. ``unknown operator `EQ` ``.
    pub fn message(&self) -> String {
        self.inner.kind.to_string()
    }

    /// The byte span of the offending text (may be empty at the end of the input).
    pub fn span(&self) -> Span {
        self.inner.span
    }

    /// What would have been accepted at the span; empty when not meaningful.
    pub fn expected(&self) -> &[&'static str] {
        &self.inner.expected
    }

    /// A hint on how to fix the input.
    pub fn hint(&self) -> Option<&str> {
        self.inner.hint.as_deref()
    }

    /// The text that was parsed.
    pub fn source_text(&self) -> &str {
        &self.inner.source
    }

    /// The byte offset of the error (the start of the span).
    pub fn offset(&self) -> usize {
        self.inner.span.start
    }

    /// The 1-based line of the error (filters are normally one line).
    pub fn line(&self) -> usize {
        let start = self.clamped_start();
        self.inner.source.as_bytes()[..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// The 1-based column of the error, counted in characters from the start of its line.
    pub fn column(&self) -> usize {
        let start = self.clamped_start();
        let line_start = self.inner.source[..start].rfind('\n').map_or(0, |i| i + 1);
        self.inner.source[line_start..start].chars().count() + 1
    }

    /// The text shown under the carets: the hint, else "expected …", else nothing.
    pub fn label(&self) -> Option<String> {
        if let Some(hint) = &self.inner.hint {
            Some(hint.clone())
        } else if self.inner.expected.is_empty() {
            None
        } else {
            Some(format!("expected {}", expected_list(&self.inner.expected)))
        }
    }

    /// A one-line summary with position, for logs and HTTP error messages:
    /// ``unknown operator `EQ` at byte 13 (column 14): keywords are lowercase: did you mean `eq`?``.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} at byte {} (column {})",
            self.inner.kind,
            self.offset(),
            self.column()
        );
        if let Some(label) = self.label() {
            s.push_str(": ");
            s.push_str(&label);
        }
        s
    }

    /// The span start, moved back onto a character boundary inside the source.
    fn clamped_start(&self) -> usize {
        let mut start = self.inner.span.start.min(self.inner.source.len());
        while !self.inner.source.is_char_boundary(start) {
            start -= 1;
        }
        start
    }

    /// The span end, clamped like the start and never before it.
    fn clamped_end(&self) -> usize {
        let start = self.clamped_start();
        let mut end = self.inner.span.end.clamp(start, self.inner.source.len());
        while !self.inner.source.is_char_boundary(end) {
            end += 1;
        }
        end
    }

    /// The source line holding the error, cut to at most [`MAX_SHOWN_LINE`] characters
    /// around the span, with control characters made visible: `(shown line, caret column
    /// in characters, caret width in characters)`.
    pub(crate) fn excerpt(&self) -> (String, usize, usize) {
        let start = self.clamped_start();
        let end = self.clamped_end();
        let line_start = self.inner.source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.inner.source[start..]
            .find('\n')
            .map_or(self.inner.source.len(), |i| start + i);
        let line = &self.inner.source[line_start..line_end];
        let col = self.inner.source[line_start..start].chars().count();
        // Carets cover the span on this line; an empty span (end of input) gets one caret.
        let width = self.inner.source[start..end.min(line_end)]
            .chars()
            .count()
            .max(1);
        let chars: Vec<char> = line.chars().collect();
        let (from, to, prefix) = if chars.len() <= MAX_SHOWN_LINE {
            (0, chars.len(), false)
        } else {
            let from = col.saturating_sub(MAX_SHOWN_LINE / 3);
            (from, (from + MAX_SHOWN_LINE).min(chars.len()), from > 0)
        };
        let mut shown = String::new();
        if prefix {
            shown.push('…');
        }
        shown.extend(chars[from..to].iter().map(|&c| visible(c)));
        if to < chars.len() {
            shown.push('…');
        }
        let caret_col = col - from + usize::from(prefix);
        let width = width.min((to + 1).saturating_sub(col).max(1));
        (shown, caret_col, width)
    }
}

/// A character for a headline: control characters escaped (`\t`), others as they are.
fn shown_char(c: char) -> String {
    if c.is_control() {
        c.escape_debug().to_string()
    } else {
        c.to_string()
    }
}

/// Control characters shown as their Unicode "control picture" so that columns line up.
fn visible(c: char) -> char {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('?'),
        '\u{7f}' => '\u{2421}',
        c => c,
    }
}

/// `a`, `a or b`, `a, b or c`.
pub(crate) fn expected_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, caret_col, width) = self.excerpt();
        let number = self.line().to_string();
        let pad = " ".repeat(number.len());
        writeln!(f, "error: {}", self.inner.kind)?;
        writeln!(f, "{pad} |")?;
        writeln!(f, "{number} | {line}")?;
        write!(f, "{pad} | {}{}", " ".repeat(caret_col), "^".repeat(width))?;
        if let Some(label) = self.label() {
            write!(f, " {label}")?;
        }
        writeln!(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_caret_under_span() {
        let e = ParseError::new(
            ErrorKind::UnknownOperator("EQ".into()),
            Span::new(13, 15),
            "PartitionKey EQ 'a'",
        )
        .with_hint("keywords are lowercase: did you mean `eq`?");
        assert_eq!(
            e.to_string(),
            "error: unknown operator `EQ`\n  |\n1 | PartitionKey EQ 'a'\n  |              ^^ keywords are lowercase: did you mean `eq`?\n"
        );
        assert_eq!((e.offset(), e.line(), e.column()), (13, 1, 14));
    }

    #[test]
    fn summary_is_one_line_with_position() {
        let e = ParseError::new(
            ErrorKind::UnknownOperator("EQ".into()),
            Span::new(13, 15),
            "PartitionKey EQ 'a'",
        )
        .with_hint("keywords are lowercase: did you mean `eq`?");
        assert_eq!(
            e.summary(),
            "unknown operator `EQ` at byte 13 (column 14): keywords are lowercase: did you mean `eq`?"
        );
        let e = ParseError::new(ErrorKind::UnexpectedEnd, Span::new(4, 4), "A eq")
            .with_expected(&["a literal"]);
        assert_eq!(
            e.summary(),
            "unexpected end of input at byte 4 (column 5): expected a literal"
        );
    }

    #[test]
    fn end_of_input_and_expected() {
        let e = ParseError::new(ErrorKind::UnexpectedEnd, Span::new(4, 4), "A eq")
            .with_expected(&["a literal", "a property"]);
        assert_eq!(
            e.to_string(),
            "error: unexpected end of input\n  |\n1 | A eq\n  |     ^ expected a literal or a property\n"
        );
    }

    #[test]
    fn control_characters_and_bad_offsets_do_not_panic() {
        let e = ParseError::new(ErrorKind::UnexpectedChar('\t'), Span::new(1, 2), "A\teq 1");
        assert!(e.to_string().contains("A␉eq 1"));
        // Spans inside a multi-byte character or past the end are clamped.
        let e = ParseError::new(ErrorKind::UnexpectedEnd, Span::new(2, 99), "é");
        let _ = e.to_string();
        assert_eq!(e.column(), 2);
    }

    #[test]
    fn long_lines_are_cut_around_the_span() {
        let src = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let e = ParseError::new(ErrorKind::UnexpectedChar('X'), Span::new(500, 501), src);
        let text = e.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].chars().count() < 120);
        let caret_line = lines[3];
        let shown = lines[2];
        let caret_at = caret_line.chars().position(|c| c == '^').unwrap();
        assert_eq!(shown.chars().nth(caret_at), Some('X'));
    }
}
