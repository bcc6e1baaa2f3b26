//! Direct evaluation of a filter's AST on one entity, with no planning.
//!
//! [`matches()`] evaluates the **original AST** of a filter on one entity, with no lowering,
//! no normalisation, no rewrite rules and no key ranges: `or`/`and`/`not` are plain boolean
//! logic and every comparison goes straight to [`tableq_model::compare`] (a literal-first
//! comparison with its operator swapped, a bare property as `eq true`, a Boolean literal as
//! itself).
//!
//! Two users rely on it:
//!
//! * **Query Tables** in the server filters the table list with it: a table is a row whose
//!   only property is `TableName`, so there are no keys to plan;
//! * **the tests**: it is the reference every planned execution (the planner, the executor,
//!   the stores, the command line, the HTTP server) must agree with, on every filter and
//!   every entity set — which it can be because it shares nothing with the planner but
//!   [`tableq_model::compare`].
//!
//! ```
//! use tableq_model::Entity;
//! use tableq_parser::ast::Filter;
//! // No filter matches every entity.
//! assert!(tableq_planner::ast_eval::matches(&Filter::default(), &Entity::new("p", "r")));
//! ```

use tableq_model::{CmpOp, EntityView, ValueRef, compare};
use tableq_parser::ast::{Expr, Filter};

/// Whether `entity` satisfies `filter` ("no filter" matches everything).
pub fn matches<E: EntityView + ?Sized>(filter: &Filter, entity: &E) -> bool {
    filter.expr.as_ref().is_none_or(|e| eval(e, entity))
}

/// Evaluates one expression on one entity.
pub fn eval<E: EntityView + ?Sized>(expr: &Expr, entity: &E) -> bool {
    match expr {
        Expr::Or(operands, _) => operands.iter().any(|e| eval(e, entity)),
        Expr::And(operands, _) => operands.iter().all(|e| eval(e, entity)),
        Expr::Not(operand, _) => !eval(operand, entity),
        Expr::Comparison(c) => compare(
            entity.get(&c.property.name),
            c.normalized_op(),
            c.literal.value.as_ref(),
        ),
        Expr::BoolProperty(p) => compare(entity.get(&p.name), CmpOp::Eq, ValueRef::Boolean(true)),
        Expr::Constant(b, _) => *b,
    }
}
