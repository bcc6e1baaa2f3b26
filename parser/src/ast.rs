//! The spanned abstract syntax tree of `$filter`, `$select` and `$top`.
//!
//! The AST is a faithful copy of the syntax: a literal-first comparison (`30 lt Age`) stays
//! literal-first, a bare boolean property stays bare, a Boolean literal used as a condition
//! (`$filter=true`, `A and false`) is an [`Expr::Constant`]. Parentheses are not nodes: `and`/`or`
//! are n-ary ([`Expr::And`]/[`Expr::Or`] hold the operands of one chain), so nesting depth is
//! bounded by the parser's nesting limit and a 32 KiB chain of `or` is a flat vector, never a
//! deep tree. `Display` prints canonical OData with the fewest parentheses that keep the
//! structure, so `parse(print(ast)) == ast`. Equality ignores spans (see [`Span`]).

use crate::Span;
use tableq_model::{CmpOp, Value};

/// A parsed `$filter`. An empty or all-space filter has no expression and matches every
/// entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Filter {
    /// The expression, or `None` for "no filter".
    pub expr: Option<Expr>,
}

/// A boolean expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// `a or b or c` — two or more operands, left to right.
    Or(Vec<Expr>, Span),
    /// `a and b and c` — two or more operands, left to right.
    And(Vec<Expr>, Span),
    /// `not x`.
    Not(Box<Expr>, Span),
    /// `Prop op literal` or `literal op Prop`.
    Comparison(Comparison),
    /// A bare property, meaning `Prop eq true`.
    BoolProperty(Property),
    /// A Boolean literal as a whole condition (`true`, `FALSE`): matches every entity or
    /// none. Written in any letter case; printed lowercase.
    Constant(bool, Span),
}

/// A comparison between one property and one literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Comparison {
    /// The property operand.
    pub property: Property,
    /// The operator as written.
    pub op: CmpOp,
    /// The span of the operator keyword.
    pub op_span: Span,
    /// The literal operand.
    pub literal: Literal,
    /// `true` when written literal-first (`30 lt Age`); the meaning is then
    /// `property op.swap() literal`.
    pub literal_first: bool,
    /// The whole comparison.
    pub span: Span,
}

/// A property name as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Property {
    /// The name.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// A typed literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Literal {
    /// The value.
    pub value: Value,
    /// Where it was written.
    pub span: Span,
}

/// A parsed `$select`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Select {
    /// `*`: all properties.
    All(Span),
    /// The listed properties in the order written (duplicates kept as written).
    Properties(Vec<Property>),
}

/// A parsed `$top`: 1 ..= 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Top {
    /// The page size.
    pub value: u32,
    /// Where it was written.
    pub span: Span,
}

impl Expr {
    /// The span of the whole expression.
    pub fn span(&self) -> Span {
        match self {
            Expr::Or(_, s) | Expr::And(_, s) | Expr::Not(_, s) | Expr::Constant(_, s) => *s,
            Expr::Comparison(c) => c.span,
            Expr::BoolProperty(p) => p.span,
        }
    }
}

impl Comparison {
    /// The operator with the property on the left: `30 lt Age` gives `gt`.
    pub fn normalized_op(&self) -> CmpOp {
        if self.literal_first {
            self.op.swap()
        } else {
            self.op
        }
    }
}
