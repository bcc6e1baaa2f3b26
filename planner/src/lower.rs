//! Lowering: the parser's spanned [`Filter`] to a normalised [`Predicate`].
//!
//! One function per AST node kind. A literal-first comparison (`30 lt Age`) becomes
//! `Age gt 30` (by [`CmpOp::swap`](tableq_model::CmpOp::swap)), a bare boolean property
//! `Active` becomes `Active eq true`, an empty filter and the literal `true` become
//! [`Predicate::TRUE`], the literal `false` [`Predicate::FALSE`], and `and`/`or`/`not` go
//! through the normalising constructors (flatten, fold the constants, dedupe, De Morgan):
//! `x and true` is `x`, `x or true` is `true`, `not false` is `true`. Nothing else is rewritten here: semantic rewrites are the named rules of
//! [`crate::rules`].
//!
//! Recursion depth is the AST's nesting depth, which the parser bounds (100 levels).
//!
//! ```
//! use tableq_parser::ast::{Comparison, Expr, Filter, Literal, Property};
//! use tableq_parser::Span;
//! use tableq_model::{CmpOp, Value};
//!
//! let cmp = Comparison {
//!     property: Property { name: "Age".into(), span: Span::default() },
//!     op: CmpOp::Lt,
//!     op_span: Span::default(),
//!     literal: Literal { value: Value::Int32(30), span: Span::default() },
//!     literal_first: true, // `30 lt Age`
//!     span: Span::default(),
//! };
//! let filter = Filter { expr: Some(Expr::Comparison(cmp)) };
//! assert_eq!(tableq_planner::lower::lower(&filter).to_string(), "Age gt 30");
//! ```

use crate::predicate::Predicate;
use tableq_model::{CmpOp, Value};
use tableq_parser::ast::{Comparison, Expr, Filter, Property};

/// Lowers a whole filter; "no filter" is [`Predicate::TRUE`].
pub fn lower(filter: &Filter) -> Predicate {
    filter.expr.as_ref().map_or(Predicate::TRUE, lower_expr)
}

/// Lowers one expression.
pub fn lower_expr(expr: &Expr) -> Predicate {
    match expr {
        Expr::Or(operands, _) => Predicate::or(operands.iter().map(lower_expr)),
        Expr::And(operands, _) => Predicate::and(operands.iter().map(lower_expr)),
        Expr::Not(operand, _) => Predicate::negate(lower_expr(operand)),
        Expr::Comparison(c) => lower_comparison(c),
        Expr::BoolProperty(p) => lower_bool_property(p),
        Expr::Constant(b, _) => Predicate::constant(*b),
    }
}

/// `Prop op literal`, or `literal op Prop` with the operator swapped.
pub fn lower_comparison(c: &Comparison) -> Predicate {
    Predicate::compare(
        c.property.name.clone(),
        c.normalized_op(),
        c.literal.value.clone(),
    )
}

/// A bare property `Active` means `Active eq true`.
pub fn lower_bool_property(p: &Property) -> Predicate {
    Predicate::compare(p.name.clone(), CmpOp::Eq, Value::Boolean(true))
}
