//! Canonical OData printing of the AST (`Display`) and the indented tree form (`{:#}`).
//!
//! `Display` prints the fewest parentheses that keep the structure: `and` binds tighter than
//! `or`, `not` applies to the following comparison or group, so an `or` inside an `and`, any
//! chain under `not`, and a chain nested directly in a chain of the same kind (written with
//! parentheses, e.g. `(A and B) and C`) are parenthesised. Operands keep their written order
//! (a literal-first comparison stays literal-first) and literals print in canonical form
//! (`5L`, `1.5`, `'it''s'`, `datetime'…Z'`, lowercase `guid'…'`, `X'0aff'`, and `true` /
//! `false` for a Boolean literal in any letter case). Hence
//! `parse(print(ast)) == ast` for every well-formed AST (chains hold at least two operands).
//!
//! ```
//! use tableq_parser::{parse_filter, FilterOptions};
//! let f = parse_filter("( A  eq 1 )or(not(B) and 2.50 ge C)", &FilterOptions::default()).unwrap();
//! assert_eq!(f.to_string(), "A eq 1 or not B and 2.5 ge C");
//! assert_eq!(
//!     format!("{f:#}"),
//!     "or 0..35\n  comparison 2..9: A eq 1 (Edm.Int32)\n  and 14..34\n    not 14..20\n      \
//!      property 18..19: B\n    comparison 25..34: 2.5 ge C (Edm.Double)\n"
//! );
//! ```

use crate::ast::{Comparison, Expr, Filter, Literal, Property, Select, Top};
use std::fmt;

/// Where an expression is printed, which decides whether it needs parentheses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    Top,
    InOr,
    InAnd,
    InNot,
}

fn needs_parens(e: &Expr, pos: Position) -> bool {
    match e {
        Expr::Or(xs, _) if xs.len() >= 2 => pos != Position::Top,
        Expr::And(xs, _) if xs.len() >= 2 => matches!(pos, Position::InAnd | Position::InNot),
        _ => false,
    }
}

fn write_expr(f: &mut fmt::Formatter<'_>, e: &Expr, pos: Position) -> fmt::Result {
    // Degenerate chains (one operand) print as their operand; see the module docs.
    if let Expr::Or(xs, _) | Expr::And(xs, _) = e
        && let [only] = xs.as_slice()
    {
        return write_expr(f, only, pos);
    }
    let parens = needs_parens(e, pos);
    if parens {
        f.write_str("(")?;
    }
    match e {
        Expr::Or(xs, _) => write_chain(f, xs, " or ", Position::InOr)?,
        Expr::And(xs, _) => write_chain(f, xs, " and ", Position::InAnd)?,
        Expr::Not(x, _) => {
            f.write_str("not ")?;
            write_expr(f, x, Position::InNot)?;
        }
        Expr::Comparison(c) => write!(f, "{c}")?,
        Expr::BoolProperty(p) => write!(f, "{p}")?,
        Expr::Constant(b, _) => write!(f, "{b}")?,
    }
    if parens {
        f.write_str(")")?;
    }
    Ok(())
}

fn write_chain(f: &mut fmt::Formatter<'_>, xs: &[Expr], sep: &str, pos: Position) -> fmt::Result {
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write_expr(f, x, pos)?;
    }
    Ok(())
}

/// The indented tree, one node per line, without recursion.
fn write_tree(f: &mut fmt::Formatter<'_>, root: &Expr) -> fmt::Result {
    let mut stack = vec![(root, 0usize)];
    while let Some((e, depth)) = stack.pop() {
        let indent = "  ".repeat(depth);
        let span = e.span();
        match e {
            Expr::Or(xs, _) | Expr::And(xs, _) => {
                let name = if matches!(e, Expr::Or(..)) {
                    "or"
                } else {
                    "and"
                };
                writeln!(f, "{indent}{name} {span:?}")?;
                stack.extend(xs.iter().rev().map(|x| (x, depth + 1)));
            }
            Expr::Not(x, _) => {
                writeln!(f, "{indent}not {span:?}")?;
                stack.push((x, depth + 1));
            }
            Expr::Comparison(c) => writeln!(
                f,
                "{indent}comparison {span:?}: {c} ({})",
                c.literal.value.edm_type()
            )?,
            Expr::BoolProperty(p) => writeln!(f, "{indent}property {span:?}: {p}")?,
            Expr::Constant(b, _) => writeln!(f, "{indent}constant {span:?}: {b}")?,
        }
    }
    Ok(())
}

impl fmt::Display for Expr {
    /// Canonical OData; with `{:#}`, the indented tree with spans.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            write_tree(f, self)
        } else {
            write_expr(f, self, Position::Top)
        }
    }
}

impl fmt::Display for Filter {
    /// Canonical OData (empty for "no filter"); with `{:#}`, the indented tree.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.expr {
            Some(e) => e.fmt(f),
            None if f.alternate() => writeln!(f, "(no filter: every entity matches)"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.literal_first {
            write!(f, "{} {} {}", self.literal, self.op, self.property)
        } else {
            write!(f, "{} {} {}", self.property, self.op, self.literal)
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl fmt::Display for Select {
    /// `*` or the names joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Select::All(_) => f.write_str("*"),
            Select::Properties(ps) => {
                for (i, p) in ps.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(&p.name)?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Top {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.value)
    }
}
