//! The tokens of `$filter`, as produced by [`crate::lex`].
//!
//! Literals are already typed ([`Value`]); `true`/`false` (in any letter case), `NaN`, `INF`
//! and `-INF` are literals too. Keywords are lowercase only: `EQ` or `Not` lex as
//! [`Token::Ident`].
//!
//! ```
//! use tableq_parser::{lex, Token};
//! use tableq_model::{CmpOp, Value};
//! let tokens: Vec<Token> = lex("Age ge 30").unwrap().into_iter().map(|(t, _)| t).collect();
//! assert_eq!(
//!     tokens,
//!     [Token::Ident("Age"), Token::Op(CmpOp::Ge), Token::Literal(Value::Int32(30))]
//! );
//! ```

use std::fmt;
use tableq_model::{CmpOp, Value};

/// One token of a `$filter`; names borrow from the source text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Token<'s> {
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `,` (only meaningful inside unsupported constructs such as `in (...)`).
    Comma,
    /// `/` (property paths and lambdas, which are unsupported).
    Slash,
    /// `:` (lambda variables, unsupported).
    Colon,
    /// `and`
    And,
    /// `or`
    Or,
    /// `not`
    Not,
    /// `eq`, `ne`, `gt`, `ge`, `lt`, `le`.
    Op(CmpOp),
    /// A typed literal other than a string: number, boolean, `datetime'…'`, `guid'…'`,
    /// `X'…'`.
    Literal(Value),
    /// A string literal: its content as written between the quotes, `''` escapes kept
    /// (so lexing does not allocate); [`Token::value`] decodes it.
    Str(&'s str),
    /// `null` (rejected by the parser: the service has no null comparisons).
    Null,
    /// A name: a property, or a word that is not a keyword (`EQ`, `startswith`, `add`).
    Ident(&'s str),
    /// A `$`-parameter such as `$it` (rejected by the parser).
    Parameter(&'s str),
}

impl Token<'_> {
    /// A short description of the token's class, e.g. `"identifier"`, `"literal"`.
    pub fn class(&self) -> &'static str {
        match self {
            Token::LParen | Token::RParen | Token::Comma | Token::Slash | Token::Colon => {
                "punctuation"
            }
            Token::And | Token::Or | Token::Not => "keyword",
            Token::Op(_) => "operator",
            Token::Literal(_) | Token::Str(_) => "literal",
            Token::Null => "null",
            Token::Ident(_) => "identifier",
            Token::Parameter(_) => "parameter",
        }
    }
}

impl Token<'_> {
    /// The typed value of a literal token (a string with its `''` escapes decoded), or
    /// `None` for other tokens.
    pub fn value(&self) -> Option<Value> {
        match self {
            Token::Literal(v) => Some(v.clone()),
            Token::Str(s) => Some(Value::String(unescape(s))),
            _ => None,
        }
    }
}

impl fmt::Display for Token<'_> {
    /// The token in canonical source form (`and`, `eq`, `'it''s'`, `5L`, `Age`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::LParen => f.write_str("("),
            Token::RParen => f.write_str(")"),
            Token::Comma => f.write_str(","),
            Token::Slash => f.write_str("/"),
            Token::Colon => f.write_str(":"),
            Token::And => f.write_str("and"),
            Token::Or => f.write_str("or"),
            Token::Not => f.write_str("not"),
            Token::Op(op) => write!(f, "{op}"),
            Token::Literal(v) => write!(f, "{v}"),
            Token::Str(s) => write!(f, "'{s}'"),
            Token::Null => f.write_str("null"),
            Token::Ident(name) | Token::Parameter(name) => f.write_str(name),
        }
    }
}

/// The content of a string literal with its `''` escapes decoded (the body as returned by
/// the lexer, without the enclosing quotes).
pub(crate) fn unescape(body: &str) -> String {
    if body.contains('\'') {
        body.replace("''", "'")
    } else {
        body.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_tokens_decode_their_escapes() {
        assert_eq!(Token::Str("it''s").value(), Some(Value::from("it's")));
        assert_eq!(Token::Str("").value(), Some(Value::from("")));
        assert_eq!(Token::Str("it''s").to_string(), "'it''s'");
        assert_eq!(Token::Ident("A").value(), None);
    }

    #[test]
    fn display_and_class() {
        let cases: [(Token<'_>, &str, &str); 8] = [
            (Token::LParen, "(", "punctuation"),
            (Token::And, "and", "keyword"),
            (Token::Op(CmpOp::Le), "le", "operator"),
            (Token::Literal(Value::Int64(5)), "5L", "literal"),
            (Token::Str("x"), "'x'", "literal"),
            (Token::Null, "null", "null"),
            (Token::Ident("Größe"), "Größe", "identifier"),
            (Token::Parameter("$it"), "$it", "parameter"),
        ];
        for (token, text, class) in cases {
            assert_eq!((token.to_string().as_str(), token.class()), (text, class));
        }
    }
}
