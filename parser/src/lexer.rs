//! The `$filter` lexer: text to `(Token, Span)` pairs, built on a `logos` state machine.
//!
//! Owns every lexical rule of the spec: only U+0020 separates tokens (tabs and newlines are
//! errors); keywords are lowercase only, except the Boolean literals `true`/`false`, which
//! are recognised in any ASCII letter case (`True`, `FALSE`); every literal form (`'it''s'`, `5`, `5L`, `1.5e3d`,
//! `NaN`, `INF`, `-INF`, `datetime'…'`, `guid'…'`, `X'…'`/`binary'…'`) is typed and checked
//! here, so the parser only ever sees valid [`Value`]s. Two words or literals must be
//! separated by a space (`'x'and` is an error); parentheses need none.
//!
//! ```
//! use tableq_parser::{lex, Span};
//! let tokens = lex("(A eq 'x')and B").unwrap();
//! assert_eq!(tokens.len(), 7);
//! assert_eq!(tokens[3].1.range(), 6..9);
//! assert!(lex("A eq 'x'and B").is_err());
//! ```
//!
//! Runs in linear time: logos never backtracks, and the callbacks scan forward only.

use crate::error::{ErrorKind, ParseError};
use crate::{Span, Token};
use logos::{Lexer, Logos};
use tableq_model::{CmpOp, DateTime, DateTimeError, Value};

/// A lexical error as logos carries it; turned into a [`ParseError`] by [`lex`]. Boxed so
/// that logos' `Result<Raw, LexError>` stays as small as a token on the hot path.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct LexError(Option<Box<LexErrorData>>);

/// The data of a [`LexError`]; absent for "no token matched" (an unexpected character).
#[derive(Debug, Clone, PartialEq)]
struct LexErrorData {
    kind: ErrorKind,
    hint: Option<String>,
    /// A narrower span relative to the token start, for errors inside a literal.
    inner: Option<(usize, usize)>,
}

impl LexError {
    fn new(kind: ErrorKind) -> LexError {
        LexError(Some(Box::new(LexErrorData {
            kind,
            hint: None,
            inner: None,
        })))
    }
    fn hint(mut self, hint: impl Into<String>) -> LexError {
        if let Some(data) = &mut self.0 {
            data.hint = Some(hint.into());
        }
        self
    }
    fn at(mut self, start: usize, end: usize) -> LexError {
        if let Some(data) = &mut self.0 {
            data.inner = Some((start, end));
        }
        self
    }
}

/// The raw logos token; borrowed words, typed literals.
#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(error = LexError)]
#[logos(skip " +")]
enum Raw<'s> {
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token(",")]
    Comma,
    #[token("/")]
    Slash,
    #[token(":")]
    Colon,
    #[token("and")]
    And,
    #[token("or")]
    Or,
    #[token("not")]
    Not,
    #[token("eq", |_| CmpOp::Eq)]
    #[token("ne", |_| CmpOp::Ne)]
    #[token("gt", |_| CmpOp::Gt)]
    #[token("ge", |_| CmpOp::Ge)]
    #[token("lt", |_| CmpOp::Lt)]
    #[token("le", |_| CmpOp::Le)]
    Op(CmpOp),
    #[token("null")]
    Null,
    // The one case-insensitive word of the grammar (ASCII letters only: no Unicode case
    // folding, so `ſ` is not an `s`).
    #[regex("[tT][rR][uU][eE]", |_| Value::Boolean(true))]
    #[regex("[fF][aA][lL][sS][eE]", |_| Value::Boolean(false))]
    #[token("NaN", |_| Value::Double(f64::NAN))]
    #[token("INF", |_| Value::Double(f64::INFINITY))]
    #[token("-INF", |_| Value::Double(f64::NEG_INFINITY))]
    #[token("-NaN", negative_nan)]
    #[regex("-?[0-9]", number)]
    #[token("datetime'", datetime)]
    #[token("guid'", guid)]
    #[token("X'", binary)]
    #[token("binary'", binary)]
    #[regex(r"-?\.[0-9]", leading_dot)]
    #[regex(r"\+[0-9]", leading_plus)]
    Literal(Value),
    #[token("'", string)]
    Str(&'s str),
    #[regex(r"[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}_]*", |lex| lex.slice())]
    Ident(&'s str),
    #[regex(r"\$[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Nd}_]*", |lex| lex.slice())]
    Parameter(&'s str),
    #[regex(r"==?|!=?|<>|<=?|>=?|&&?|\|\|?", symbol)]
    Symbol,
}

/// Numbers: the pattern matches the first digit (after an optional `-`); this scans the rest
/// of the number-like run by hand so that every malformed form gets a precise message.
fn number<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<Value, LexError> {
    let rest = lex.remainder().as_bytes();
    let mut prev = lex.slice().as_bytes().last().copied().unwrap_or(b'0');
    let mut n = 0;
    while let Some(&c) = rest.get(n) {
        let take = c.is_ascii_alphanumeric()
            || c == b'_'
            || c == b'.'
            || ((c == b'+' || c == b'-') && (prev == b'e' || prev == b'E'));
        if !take {
            break;
        }
        prev = c;
        n += 1;
    }
    lex.bump(n);
    classify_number(lex.slice())
}

/// Types a number-like run (`-12`, `12L`, `1.5e-3d`, …) or explains why it is malformed.
fn classify_number(text: &str) -> Result<Value, LexError> {
    let b = text.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    i = digits(i);
    let int_end = i;
    let invalid = |hint: &str| LexError::new(ErrorKind::InvalidNumber(text.to_owned())).hint(hint);
    match &b[int_end..] {
        [] => {
            return text.parse::<i32>().map(Value::Int32).map_err(|_| {
                let e = LexError::new(ErrorKind::Int32OutOfRange);
                if text.parse::<i64>().is_ok() {
                    e.hint(format!("write `{text}L` for an Int64"))
                } else {
                    e.hint("the value does not fit Int64 either; write it as a Double, e.g. `1e20`")
                }
            });
        }
        [b'L' | b'l'] => {
            return text[..int_end]
                .parse::<i64>()
                .map(Value::Int64)
                .map_err(|_| {
                    LexError::new(ErrorKind::Int64OutOfRange).hint(
                        "Int64 values lie between -9223372036854775808 and 9223372036854775807",
                    )
                });
        }
        _ => {}
    }
    let mut is_double = false;
    if b.get(i) == Some(&b'.') {
        let frac_start = i + 1;
        i = digits(frac_start);
        if i == frac_start {
            return Err(invalid(&format!(
                "a Double needs digits after the decimal point: write `{}0`",
                &text[..frac_start]
            )));
        }
        is_double = true;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_end = digits(j);
        if exp_end == j {
            return Err(invalid("an exponent needs digits, e.g. `1e10` or `1.5E-3`"));
        }
        i = exp_end;
        is_double = true;
    }
    let body_end = i;
    if matches!(b.get(i), Some(b'd' | b'D')) {
        i += 1;
        is_double = true;
    }
    if i != b.len() || !is_double {
        let rest = &text[i..];
        let hint = if rest.starts_with(['L', 'l']) && is_double {
            "an Int64 literal cannot have a fraction or an exponent".to_owned()
        } else if rest.starts_with('.') {
            "a number has at most one decimal point".to_owned()
        } else {
            format!(
                "a number cannot be followed directly by `{}`; separate tokens with a space",
                rest.chars().next().unwrap_or(' ')
            )
        };
        return Err(invalid(&hint));
    }
    match text[..body_end].parse::<f64>() {
        Ok(d) if d.is_finite() => Ok(Value::Double(d)),
        _ => Err(LexError::new(ErrorKind::DoubleOutOfRange)
            .hint("a Double must lie within ±1.7976931348623157e308")),
    }
}

/// `-NaN`.
fn negative_nan<'s>(_lex: &mut Lexer<'s, Raw<'s>>) -> Result<Value, LexError> {
    Err(LexError::new(ErrorKind::NegativeNaN).hint("NaN has no sign: write `NaN`"))
}

/// Extends a malformed number's token over the rest of the number (digits, letters, dots),
/// so that the error's span and the hint's suggested fix cover all of it.
fn swallow_number_tail<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> &'s str {
    let n = lex
        .remainder()
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'.')
        .count();
    lex.bump(n);
    lex.slice()
}

/// `.5`: scans the digits so the hint can show the fix.
fn leading_dot<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<Value, LexError> {
    let text = swallow_number_tail(lex);
    let fixed = match text.strip_prefix('-') {
        Some(rest) => format!("-0{rest}"),
        None => format!("0{text}"),
    };
    Err(
        LexError::new(ErrorKind::InvalidNumber(text.to_owned())).hint(format!(
            "a number needs a digit before the decimal point: write `{fixed}`"
        )),
    )
}

/// `+5`.
fn leading_plus<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<Value, LexError> {
    let text = swallow_number_tail(lex);
    Err(
        LexError::new(ErrorKind::InvalidNumber(text.to_owned())).hint(format!(
            "a number cannot start with `+`: write `{}`",
            &text[1..]
        )),
    )
}

/// The hint of an unterminated string literal (shared with the resource-path parser).
pub(crate) const UNTERMINATED_STRING_HINT: &str =
    "close the string with `'`; a quote inside a string is written `''`";

/// The body of an OData string literal whose opening quote is already consumed: the text up
/// to the closing quote, `''` escapes kept (decode with [`crate::token::unescape`]), or
/// `None` when the literal is never closed. Linear in the length of `rest`.
pub(crate) fn string_body(rest: &str) -> Option<&str> {
    let bytes = rest.as_bytes();
    let mut i = 0;
    loop {
        let q = i + rest[i..].find('\'')?;
        if bytes.get(q + 1) == Some(&b'\'') {
            i = q + 2;
        } else {
            return Some(&rest[..q]);
        }
    }
}

/// `'…'` with `''` for a quote inside: the content as written (escapes kept), decoded
/// only when the parser builds the literal.
fn string<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<&'s str, LexError> {
    let rest = lex.remainder();
    match string_body(rest) {
        Some(body) => {
            lex.bump(body.len() + 1);
            Ok(body)
        }
        None => {
            lex.bump(rest.len());
            Err(LexError::new(ErrorKind::Unterminated("string")).hint(UNTERMINATED_STRING_HINT))
        }
    }
}

/// Consumes the body of a prefixed literal up to its closing quote; returns the body and
/// its offset from the token start.
fn quoted_body<'s>(
    lex: &mut Lexer<'s, Raw<'s>>,
    what: &'static str,
) -> Result<(&'s str, usize), LexError> {
    let rest = lex.remainder();
    let offset = lex.slice().len();
    match rest.find('\'') {
        Some(q) => {
            lex.bump(q + 1);
            Ok((&rest[..q], offset))
        }
        None => {
            lex.bump(rest.len());
            Err(LexError::new(ErrorKind::Unterminated(what)).hint("close the literal with `'`"))
        }
    }
}

/// `datetime'2008-07-10T00:00:00Z'`.
fn datetime<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<Value, LexError> {
    let (body, offset) = quoted_body(lex, "datetime")?;
    DateTime::parse(body).map(Value::DateTime).map_err(|e| {
        let at = (offset, offset + body.len());
        match e {
            DateTimeError::OutOfRange(_) => LexError::new(ErrorKind::DateTimeOutOfRange)
                .hint("allowed are 1601-01-01T00:00:00Z … 9999-12-31T23:59:59.9999999Z")
                .at(at.0, at.1),
            _ => LexError::new(ErrorKind::InvalidDateTime)
                .hint(no_such_instant(body).unwrap_or_else(|| {
                    "expected YYYY-MM-DDTHH:MM:SS[.fffffff][Z|±hh:mm], e.g. \
                     `2008-07-10T00:00:00Z`"
                        .to_owned()
                }))
                .at(at.0, at.1),
        }
    })
}

/// Why a DateTime body of the right shape (`YYYY-MM-DDTHH:MM:SS…`) names no instant (month
/// 13, 30 February, hour 24, …), if that is why it was refused.
fn no_such_instant(body: &str) -> Option<String> {
    let b = body.as_bytes();
    let shaped = b.len() >= 19
        && b.iter().take(19).enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        });
    if !shaped {
        return None;
    }
    let field = |from: usize, to: usize| body[from..to].parse::<u32>().ok();
    let (year, month, day) = (field(0, 4)?, field(5, 7)?, field(8, 10)?);
    let (hour, minute, second) = (field(11, 13)?, field(14, 16)?, field(17, 19)?);
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    if !(1..=12).contains(&month) {
        return Some(format!(
            "month {month:02} does not exist: months are 01 to 12 (the form is \
             YYYY-MM-DDTHH:MM:SS)"
        ));
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let name = MONTHS[month as usize - 1];
    if day == 0 || day > days {
        return Some(format!(
            "{name} {year} has no day {day:02}: it has {days} days"
        ));
    }
    if hour > 23 {
        return Some(format!("hour {hour:02} does not exist: hours are 00 to 23"));
    }
    if minute > 59 {
        return Some(format!(
            "minute {minute:02} does not exist: minutes are 00 to 59"
        ));
    }
    if second > 59 {
        return Some(format!(
            "second {second:02} does not exist: seconds are 00 to 59"
        ));
    }
    None
}

/// `guid'a455c695-df98-5678-aaaa-81d3367e5a34'`: the dashed form only.
fn guid<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<Value, LexError> {
    let (body, offset) = quoted_body(lex, "guid")?;
    let b = body.as_bytes();
    let shape_ok = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                *c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    let parsed = if shape_ok {
        uuid::Uuid::try_parse(body).ok()
    } else {
        None
    };
    parsed.map(Value::Guid).ok_or_else(|| {
        LexError::new(ErrorKind::InvalidGuid)
            .hint(
                "expected 32 hex digits as 8-4-4-4-12, e.g. `a455c695-df98-5678-aaaa-81d3367e5a34`",
            )
            .at(offset, offset + body.len())
    })
}

/// `X'0aff'` / `binary'0AFF'`.
fn binary<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<Value, LexError> {
    let (body, offset) = quoted_body(lex, "binary")?;
    if let Some((i, c)) = body.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(LexError::new(ErrorKind::InvalidBinary)
            .hint("binary literals hold hex digits only (0-9, a-f, A-F)")
            .at(offset + i, offset + i + c.len_utf8()));
    }
    if body.len() % 2 != 0 {
        return Err(LexError::new(ErrorKind::InvalidBinary)
            .hint("binary literals need an even number of hex digits (two per byte)")
            .at(offset, offset + body.len()));
    }
    let bytes = body
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| (hex(pair[0]) << 4) | hex(pair[1]))
        .collect();
    Ok(Value::Binary(bytes))
}

/// The value of one (already checked) hex digit.
fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c.wrapping_sub(b'A').wrapping_add(10) & 0x0f,
    }
}

/// `==`, `<`, `&&`, …: operators of other languages, each with the OData spelling.
fn symbol<'s>(lex: &mut Lexer<'s, Raw<'s>>) -> Result<(), LexError> {
    let sym = lex.slice();
    let odata = match sym {
        "=" | "==" => "eq",
        "!=" | "<>" => "ne",
        "<" => "lt",
        "<=" => "le",
        ">" => "gt",
        ">=" => "ge",
        "&" | "&&" => "and",
        "|" | "||" => "or",
        _ => "not",
    };
    Err(
        LexError::new(ErrorKind::UnknownOperator(sym.to_owned())).hint(format!(
            "OData operators are words: did you mean `{odata}`?"
        )),
    )
}

/// Splits `text` into tokens with byte spans.
///
/// Returns the first lexical error: an unexpected character (tabs and newlines included),
/// an unterminated or malformed literal, an out-of-range number, or two words/literals
/// without a space between them.
pub fn lex(text: &str) -> Result<Vec<(Token<'_>, Span)>, ParseError> {
    // Tokens are mostly separated by spaces; parentheses need none.
    let estimate = text
        .bytes()
        .filter(|&b| matches!(b, b' ' | b'(' | b')'))
        .count()
        + 1;
    let mut tokens: Vec<(Token<'_>, Span)> = Vec::with_capacity(estimate);
    let mut lexer = Raw::lexer(text);
    while let Some(result) = lexer.next() {
        let span = Span::from(lexer.span());
        let token = match result {
            Ok(raw) => convert(raw),
            Err(e) => {
                let err = lex_error(text, span, e);
                if let Some((Token::Parameter("$filter"), _)) = tokens.last() {
                    return Err(err.with_hint("pass only the expression, without `$filter=`"));
                }
                return Err(err);
            }
        };
        if let Some((prev, prev_span)) = tokens.last()
            && prev_span.end == span.start
            && is_word(prev)
            && is_word(&token)
        {
            return Err(glued(text, prev, *prev_span, &token, span));
        }
        tokens.push((token, span));
    }
    Ok(tokens)
}

fn convert(raw: Raw<'_>) -> Token<'_> {
    match raw {
        Raw::LParen => Token::LParen,
        Raw::RParen => Token::RParen,
        Raw::Comma => Token::Comma,
        Raw::Slash => Token::Slash,
        Raw::Colon => Token::Colon,
        Raw::And => Token::And,
        Raw::Or => Token::Or,
        Raw::Not => Token::Not,
        Raw::Op(op) => Token::Op(op),
        Raw::Null => Token::Null,
        Raw::Literal(v) => Token::Literal(v),
        Raw::Str(s) => Token::Str(s),
        Raw::Ident(s) => Token::Ident(s),
        Raw::Parameter(s) => Token::Parameter(s),
        // `symbol` always fails, so this variant is never produced; map it to something
        // harmless rather than panicking.
        Raw::Symbol => Token::Comma,
    }
}

/// Words and literals need a space between them; punctuation does not.
fn is_word(t: &Token<'_>) -> bool {
    !matches!(
        t,
        Token::LParen | Token::RParen | Token::Comma | Token::Slash | Token::Colon
    )
}

/// The error for two words written together, e.g. `'x'and` or `x'0a'`.
fn glued(
    text: &str,
    prev: &Token<'_>,
    prev_span: Span,
    next: &Token<'_>,
    span: Span,
) -> ParseError {
    let a = &text[prev_span.range()];
    let b = &text[span.range()];
    if let (Token::Ident(word), true) = (prev, b.starts_with('\'')) {
        let known = ["datetime", "guid", "binary", "X"];
        let hint = match known.iter().find(|k| k.eq_ignore_ascii_case(word)) {
            Some(k) => format!("literal prefixes are case-sensitive: did you mean `{k}'…'`?"),
            None => {
                "known prefixes are `datetime'…'`, `guid'…'`, `binary'…'` and `X'…'`".to_owned()
            }
        };
        return ParseError::new(
            ErrorKind::UnknownLiteralPrefix(word.to_string()),
            prev_span,
            text,
        )
        .with_hint(hint);
    }
    let _ = next;
    if let Some(date) = bare_date(&text[prev_span.start..]) {
        let end = prev_span.start + date.len();
        let hint = if date.len() == 10 {
            format!("write a date as a DateTime literal: datetime'{date}T00:00:00Z'")
        } else {
            let zone = if date.ends_with('Z') { "" } else { "Z" };
            format!("write a date as a DateTime literal: datetime'{date}{zone}'")
        };
        return ParseError::new(
            ErrorKind::BareDateTime(date.to_owned()),
            Span::new(prev_span.start, end),
            text,
        )
        .with_hint(hint);
    }
    ParseError::new(
        ErrorKind::MissingSpace(a.to_owned(), b.to_owned()),
        prev_span.to(span),
        text,
    )
    .with_hint("separate words and literals with a space")
}

/// The date (`YYYY-MM-DD`, optionally with `THH:MM[:SS[.f…]][Z]`) `text` begins with, if it
/// begins with one written without the `datetime'…'` around it.
fn bare_date(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    let digits = |from: usize, to: usize| {
        b.get(from..to)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    if !(digits(0, 4)
        && b.get(4) == Some(&b'-')
        && digits(5, 7)
        && b.get(7) == Some(&b'-')
        && digits(8, 10))
    {
        return None;
    }
    let rest = &text[10..];
    let time = rest
        .strip_prefix('T')
        .map(|t| {
            1 + t
                .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.' || c == 'Z'))
                .unwrap_or(t.len())
        })
        .unwrap_or(0);
    Some(&text[..10 + time])
}

fn lex_error(text: &str, span: Span, e: LexError) -> ParseError {
    match e.0 {
        Some(data) => {
            let span = match data.inner {
                Some((s, t)) => Span::new(span.start + s, span.start + t),
                None => span,
            };
            let err = ParseError::new(data.kind, span, text);
            match data.hint {
                Some(h) => err.with_hint(h),
                None => err,
            }
        }
        None => {
            let c = text[span.start.min(text.len())..]
                .chars()
                .next()
                .unwrap_or(' ');
            let span = Span::new(span.start, span.start + c.len_utf8());
            let err = ParseError::new(ErrorKind::UnexpectedChar(c), span, text);
            let hint = match c {
                '\t' | '\n' | '\r' | '\u{a0}' | '\u{2000}'..='\u{200b}' | '\u{3000}' => {
                    Some("only spaces (U+0020) separate tokens".to_owned())
                }
                '"' => Some("strings are quoted with single quotes: 'text'".to_owned()),
                '-' | '.' | '@'
                    if text[..span.start].ends_with(|p: char| p.is_alphanumeric() || p == '_') =>
                {
                    Some(format!(
                        "`{c}` cannot appear in a property name: names use letters, digits and `_`"
                    ))
                }
                '-' => Some("a negative number is written without a space: `-5`".to_owned()),
                '$' => {
                    Some("`$` starts a parameter such as `$it`, which is not supported".to_owned())
                }
                c if !c.is_ascii() => Some(format!(
                    "U+{:04X} cannot appear outside a string literal",
                    u32::from(c)
                )),
                c if c.is_ascii_control() => {
                    Some("control characters cannot appear outside a string literal".to_owned())
                }
                _ => Some("this character cannot appear outside a string literal".to_owned()),
            };
            match hint {
                Some(h) => err.with_hint(h),
                None => err,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::EdmType;

    fn one(text: &str) -> Token<'_> {
        let tokens = lex(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(tokens.len(), 1, "{text}: {tokens:?}");
        assert_eq!(tokens[0].1.range(), 0..text.len(), "{text}");
        tokens
            .into_iter()
            .next()
            .map(|(t, _)| t)
            .unwrap_or(Token::Comma)
    }

    fn lit(text: &str) -> Value {
        let t = one(text);
        t.value()
            .unwrap_or_else(|| panic!("{text}: not a literal: {t:?}"))
    }

    fn err(text: &str) -> ParseError {
        match lex(text) {
            Ok(t) => panic!("{text}: expected an error, got {t:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn punctuation_and_keywords() {
        let toks: Vec<Token> = lex("( ) , / : and or not eq ne gt ge lt le null")
            .unwrap()
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(
            toks,
            [
                Token::LParen,
                Token::RParen,
                Token::Comma,
                Token::Slash,
                Token::Colon,
                Token::And,
                Token::Or,
                Token::Not,
                Token::Op(CmpOp::Eq),
                Token::Op(CmpOp::Ne),
                Token::Op(CmpOp::Gt),
                Token::Op(CmpOp::Ge),
                Token::Op(CmpOp::Lt),
                Token::Op(CmpOp::Le),
                Token::Null,
            ]
        );
    }

    #[test]
    fn keywords_are_lowercase_only() {
        for w in [
            "EQ", "Eq", "AND", "Not", "NULL", "nan", "inf", "eqx", "andy", "Truex", "falsey",
            "TRUE_", "tru", "fals", "\u{17f}", "falſe",
        ] {
            assert_eq!(one(w), Token::Ident(w), "{w}");
        }
    }

    #[test]
    fn boolean_literals_in_any_letter_case() {
        for (w, b) in [
            ("true", true),
            ("True", true),
            ("TRUE", true),
            ("tRuE", true),
            ("false", false),
            ("False", false),
            ("FALSE", false),
            ("fAlSe", false),
        ] {
            assert_eq!(one(w), Token::Literal(Value::Boolean(b)), "{w}");
        }
        // Canonical form is lowercase.
        assert_eq!(one("TRUE").to_string(), "true");
        // Still a word: glued to a literal it is an error, and a longer name is a name.
        assert!(matches!(err("'x'True").kind(), ErrorKind::MissingSpace(..)));
        assert_eq!(one("andTRUE"), Token::Ident("andTRUE"));
    }

    #[test]
    fn identifiers() {
        for w in ["A", "_x", "Größe", "名前", "a1_2", "Ⅻx", "PartitionKey"] {
            assert_eq!(one(w), Token::Ident(w), "{w}");
        }
        assert_eq!(one("$it"), Token::Parameter("$it"));
        // A combining mark is not part of a name.
        assert!(matches!(
            err("e\u{301}").kind(),
            ErrorKind::UnexpectedChar('\u{301}')
        ));
        assert!(matches!(err("1abc").kind(), ErrorKind::InvalidNumber(_)));
    }

    #[test]
    fn strings() {
        assert_eq!(lit("'text'"), Value::from("text"));
        assert_eq!(lit("''"), Value::from(""));
        assert_eq!(lit("''''"), Value::from("'"));
        assert_eq!(lit("'it''s'"), Value::from("it's"));
        assert_eq!(lit("'a''''b'"), Value::from("a''b"));
        assert_eq!(lit("'日本 語\t'"), Value::from("日本 語\t"));
        assert_eq!(lit("'and or'"), Value::from("and or"));
        for bad in ["'abc", "'", "'it''", "'a''"] {
            let e = err(bad);
            assert_eq!(e.kind(), &ErrorKind::Unterminated("string"), "{bad}");
            assert_eq!(e.span().range(), 0..bad.len());
        }
    }

    #[test]
    fn integers() {
        assert_eq!(lit("123"), Value::Int32(123));
        assert_eq!(lit("-5"), Value::Int32(-5));
        assert_eq!(lit("0"), Value::Int32(0));
        assert_eq!(lit("007"), Value::Int32(7));
        assert_eq!(lit("2147483647"), Value::Int32(i32::MAX));
        assert_eq!(lit("-2147483648"), Value::Int32(i32::MIN));
        assert_eq!(lit("123L"), Value::Int64(123));
        assert_eq!(lit("123l"), Value::Int64(123));
        assert_eq!(lit("-5L"), Value::Int64(-5));
        assert_eq!(lit("2147483648L"), Value::Int64(2_147_483_648));
        assert_eq!(lit("9223372036854775807L"), Value::Int64(i64::MAX));
        assert_eq!(lit("-9223372036854775808L"), Value::Int64(i64::MIN));
        let e = err("2147483648");
        assert_eq!(e.kind(), &ErrorKind::Int32OutOfRange);
        assert_eq!(
            e.message(),
            "Int32 literal out of range (append L for Int64)"
        );
        assert_eq!(err("-2147483649").kind(), &ErrorKind::Int32OutOfRange);
        assert_eq!(
            err("99999999999999999999").kind(),
            &ErrorKind::Int32OutOfRange
        );
        assert_eq!(
            err("9223372036854775808L").kind(),
            &ErrorKind::Int64OutOfRange
        );
    }

    #[test]
    fn doubles() {
        let cases: [(&str, f64); 14] = [
            ("1.5", 1.5),
            ("-0.25", -0.25),
            ("1e10", 1e10),
            ("1e+20", 1e20),
            ("1.5E-3", 1.5e-3),
            ("2.0d", 2.0),
            ("2d", 2.0),
            ("2D", 2.0),
            ("-2d", -2.0),
            ("1e5d", 1e5),
            ("0.1", 0.1),
            ("1.7976931348623157e308", f64::MAX),
            ("1e-400", 0.0),
            ("INF", f64::INFINITY),
        ];
        for (text, d) in cases {
            assert_eq!(lit(text), Value::Double(d), "{text}");
        }
        assert_eq!(lit("-INF"), Value::Double(f64::NEG_INFINITY));
        assert!(matches!(lit("NaN"), Value::Double(d) if d.is_nan()));
        assert!(matches!(lit("-0.0"), Value::Double(d) if d == 0.0 && d.is_sign_negative()));
        for bad in [
            "5.", ".5", "+5", "1.2.3", "1e", "1e+", "1.5L", "5.d", "1x", "1_000", "-.5",
        ] {
            assert!(
                matches!(err(bad).kind(), ErrorKind::InvalidNumber(_)),
                "{bad}"
            );
        }
        assert_eq!(err("-NaN").kind(), &ErrorKind::NegativeNaN);
        assert_eq!(err("1e400").kind(), &ErrorKind::DoubleOutOfRange);
        assert_eq!(err("-1e400d").kind(), &ErrorKind::DoubleOutOfRange);
        assert_eq!(
            err("5.").hint(),
            Some("a Double needs digits after the decimal point: write `5.0`")
        );
        assert_eq!(
            err(".5").hint(),
            Some("a number needs a digit before the decimal point: write `0.5`")
        );
        assert_eq!(
            err("+5").hint(),
            Some("a number cannot start with `+`: write `5`")
        );
    }

    #[test]
    fn datetimes() {
        let v = lit("datetime'2008-07-10T00:00:00Z'");
        assert_eq!(v.edm_type(), EdmType::DateTime);
        assert_eq!(v.to_string(), "datetime'2008-07-10T00:00:00Z'");
        assert_eq!(lit("datetime'2008-07-10T00:00:00'"), v);
        assert_eq!(lit("datetime'2008-07-10T02:00:00+02:00'"), v);
        assert_eq!(lit("datetime'2008-07-10T00:00:00.0000000Z'"), v);
        let e = err("datetime'2008-07-10'");
        assert_eq!(e.kind(), &ErrorKind::InvalidDateTime);
        assert_eq!(e.span().range(), 9..19);
        assert_eq!(
            err("datetime'1600-01-01T00:00:00Z'").kind(),
            &ErrorKind::DateTimeOutOfRange
        );
        assert_eq!(
            err("datetime'2008").kind(),
            &ErrorKind::Unterminated("datetime")
        );
        // The prefix is case-sensitive.
        assert!(
            matches!(err("DateTime'2008-07-10T00:00:00Z'").kind(), ErrorKind::UnknownLiteralPrefix(p) if p == "DateTime")
        );
    }

    #[test]
    fn guids() {
        let v = lit("guid'A455C695-DF98-5678-AAAA-81D3367E5A34'");
        assert_eq!(v.to_string(), "guid'a455c695-df98-5678-aaaa-81d3367e5a34'");
        assert_eq!(lit("guid'a455c695-df98-5678-aaaa-81d3367e5a34'"), v);
        for bad in [
            "guid'a455c695df985678aaaa81d3367e5a34'",
            "guid'{a455c695-df98-5678-aaaa-81d3367e5a34}'",
            "guid'a455c695-df98-5678-aaaa-81d3367e5a3'",
            "guid'g455c695-df98-5678-aaaa-81d3367e5a34'",
            "guid''",
        ] {
            assert_eq!(err(bad).kind(), &ErrorKind::InvalidGuid, "{bad}");
        }
        assert!(matches!(
            err("GUID'a455c695-df98-5678-aaaa-81d3367e5a34'").kind(),
            ErrorKind::UnknownLiteralPrefix(_)
        ));
    }

    #[test]
    fn binaries() {
        assert_eq!(lit("X'0aff'"), Value::Binary(vec![0x0a, 0xff]));
        assert_eq!(lit("binary'0AFF'"), Value::Binary(vec![0x0a, 0xff]));
        assert_eq!(lit("X''"), Value::Binary(vec![]));
        let e = err("X'0af'");
        assert_eq!(e.kind(), &ErrorKind::InvalidBinary);
        assert_eq!(e.span().range(), 2..5);
        let e = err("X'0g'");
        assert_eq!(e.span().range(), 3..4);
        let e = err("x'0a'");
        assert_eq!(
            e.hint(),
            Some("literal prefixes are case-sensitive: did you mean `X'…'`?")
        );
    }

    #[test]
    fn whitespace_is_spaces_only() {
        assert_eq!(lex("  A   eq  1  ").unwrap().len(), 3);
        for bad in ["A\teq 1", "A eq\n1", "A\u{a0}eq 1"] {
            assert!(
                matches!(err(bad).kind(), ErrorKind::UnexpectedChar(_)),
                "{bad:?}"
            );
        }
        assert_eq!(err("A\teq 1").span().range(), 1..2);
    }

    #[test]
    fn glued_words_are_errors_but_parentheses_need_no_space() {
        assert_eq!(lex("(A eq 1)and(B eq 2)").unwrap().len(), 11);
        assert_eq!(lex("f(x)").unwrap().len(), 4);
        for bad in [
            "A eq 'x'and B",
            "A eq'x'",
            "A eq 1 and'x'",
            "A eq -INFx",
            "A eq truex'00'",
            "'a''b'c",
        ] {
            let e = err(bad);
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::MissingSpace(..) | ErrorKind::UnknownLiteralPrefix(_)
                ),
                "{bad}: {e}"
            );
        }
        let e = err("A eq 'x'and B");
        assert_eq!(e.message(), "missing space between `'x'` and `and`");
        assert_eq!(e.span().range(), 5..11);
    }

    #[test]
    fn foreign_operators_get_hints() {
        let e = err("A == 1");
        assert_eq!(e.kind(), &ErrorKind::UnknownOperator("==".into()));
        assert_eq!(
            e.hint(),
            Some("OData operators are words: did you mean `eq`?")
        );
        assert_eq!(
            err("A >= 1").hint(),
            Some("OData operators are words: did you mean `ge`?")
        );
        assert_eq!(
            err("A eq 1 && B").hint(),
            Some("OData operators are words: did you mean `and`?")
        );
        assert!(matches!(
            err("A eq \"x\"").kind(),
            ErrorKind::UnexpectedChar('"')
        ));
        assert!(matches!(
            err("A eq 1 #").kind(),
            ErrorKind::UnexpectedChar('#')
        ));
        assert!(matches!(
            err("A eq - 1").kind(),
            ErrorKind::UnexpectedChar('-')
        ));
    }

    #[test]
    fn tokens_stay_small() {
        // The token vector is the parser's main allocation; keep its elements compact.
        assert!(std::mem::size_of::<(Token<'_>, Span)>() <= 48);
        assert!(std::mem::size_of::<Result<Raw<'_>, LexError>>() <= 40);
    }

    #[test]
    fn spans_are_byte_offsets() {
        let t = lex("Größe eq 'ä'").unwrap();
        assert_eq!(t[0].1.range(), 0..7);
        assert_eq!(t[1].1.range(), 8..10);
        assert_eq!(t[2].1.range(), 11..15);
    }
}
