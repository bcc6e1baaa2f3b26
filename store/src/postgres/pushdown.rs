//! Residual pushdown: which comparisons of a plan's residual PostgreSQL decides, and how.
//!
//! A comparison is pushed down only when SQL decides it **exactly** with the spec's
//! semantics ([`tableq_model::compare()`]): missing property → false for every operator;
//! numeric widening (Int32 literal vs Int32/Int64/Double, Int64 vs Int64/Double, integers
//! converted to the nearest Double against Doubles); any other type pair → the property
//! counts as less than the literal; NaN → only `ne` holds; strings in UTF-16 order.
//!
//! * `PartitionKey`/`RowKey` comparisons become `pk|rk <op> $n` on the key columns (the
//!   order-preserving encoding makes `COLLATE "C"` order the spec's order); `Timestamp`
//!   comparisons become `ts <op> $ticks`; other literal types fold to `TRUE`/`FALSE` (a
//!   type mismatch).
//! * A custom property `A op L` becomes one `jsonpath` predicate over the stored
//!   `{"A": [tag, value]}` (`props @@ $n`, tags in [`super::encode`]), a disjunction of
//!   - `$."A"[0] <= 3 && $."A"[1] op L'` for the tags the literal compares with by value
//!     (a tag range: Int32 literal 1–3, Int64 2–3, Double 3, else the literal's own tag;
//!     `L'` = the literal in that tag's form: the encoded string, the integer, the shortest
//!     decimal of the Double it converts to, ticks, Guid or hex text — an Int64 beyond
//!     2⁵³ compares with Int64 and Double properties in two terms);
//!   - `$."A"[0] == 4 && ($."A"[1] == "NaN" || …)` listing the special Doubles (NaN, ±∞,
//!     −0) for which the comparison holds (decided here, by `compare`);
//!   - for `ne`/`lt`/`le`, `$."A"[0] < lo || $."A"[0] > hi`: a present property of another
//!     type (the mismatch rule).
//!
//!   A missing property makes every path empty, so every term is false. Every term
//!   compares values of one JSON type, so the predicate is never *unknown* and `NOT` (for
//!   `not`) negates it exactly. jsonpath compares numbers as exact decimals (the shortest
//!   decimals of two Doubles order like the Doubles) and strings by code point.
//!
//! Because every comparison has such a form, every residual is pushed down exactly today
//! ([`Exactness::Exact`]); the executor then evaluates nothing more. The classification is
//! kept per conjunct (as DataFusion's `TableProviderFilterPushDown`) so that `explain` says
//! what SQL decides, and so that a comparison without an exact form would stay with the
//! executor ([`Exactness::Unsupported`]) rather than be approximated.
//!
//! ```
//! use tableq_model::{CmpOp, Value};
//! use tableq_planner::predicate::Predicate;
//! use tableq_store::postgres::pushdown::{pushdown, Exactness};
//! let p = pushdown(&Predicate::compare("Age", CmpOp::Gt, Value::Int32(30)));
//! assert_eq!(p.conjuncts[0].1, Exactness::Exact);
//! assert!(p.remaining.is_true());
//! ```

use super::encode::{DOUBLE_SPECIALS, double_decimal, encode_str, push_json_string, tag};
use super::sql::{Cond, KeyColumn};
use tableq_model::{CmpOp, SystemProperty, Value, ValueRef, compare};
use tableq_planner::predicate::{Comparison, Predicate, PredicateKind};

/// How much of a residual conjunct the SQL decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exactness {
    /// SQL returns exactly the matching rows; the executor does not evaluate it again.
    Exact,
    /// SQL returns a superset; the executor evaluates the conjunct on the fetched rows.
    Inexact,
    /// Not pushed down: the executor evaluates it.
    Unsupported,
}

impl Exactness {
    /// `exact`, `inexact`, `not pushed down`.
    pub fn as_str(self) -> &'static str {
        match self {
            Exactness::Exact => "exact",
            Exactness::Inexact => "inexact",
            Exactness::Unsupported => "not pushed down",
        }
    }
}

/// The pushdown of one residual.
#[derive(Debug, Clone)]
pub struct Pushdown {
    /// What the SQL filters on (`TRUE` when nothing is pushed down).
    pub(crate) cond: Cond,
    /// What the executor must still evaluate on fetched rows (`True` when the pushdown is
    /// exact).
    pub remaining: Predicate,
    /// Each conjunct of the residual (canonical text) and how it is pushed down.
    pub conjuncts: Vec<(String, Exactness)>,
}

impl Pushdown {
    /// Whether SQL decides the whole residual.
    pub fn is_exact(&self) -> bool {
        self.remaining.is_true()
    }
}

/// Splits `residual` into what SQL decides and what remains (see the module docs).
pub fn pushdown(residual: &Predicate) -> Pushdown {
    let conjuncts = conjuncts(residual);
    let mut pushed = Vec::new();
    let mut remaining = Vec::new();
    let mut report = Vec::new();
    for c in conjuncts {
        match translate(c) {
            Some(cond) => {
                pushed.push(cond);
                report.push((c.to_string(), Exactness::Exact));
            }
            None => {
                remaining.push(c.clone());
                report.push((c.to_string(), Exactness::Unsupported));
            }
        }
    }
    Pushdown {
        cond: Cond::and(pushed),
        remaining: Predicate::and(remaining),
        conjuncts: report,
    }
}

/// No pushdown: SQL reads the key ranges, the executor evaluates all of `residual`.
pub fn nothing(residual: &Predicate) -> Pushdown {
    Pushdown {
        cond: Cond::True,
        remaining: residual.clone(),
        conjuncts: conjuncts(residual)
            .into_iter()
            .map(|c| (c.to_string(), Exactness::Unsupported))
            .collect(),
    }
}

/// The top-level conjuncts of a residual (none for `true`).
fn conjuncts(residual: &Predicate) -> Vec<&Predicate> {
    match residual.kind() {
        PredicateKind::True => Vec::new(),
        PredicateKind::And(ps) => ps.iter().collect(),
        _ => vec![residual],
    }
}

/// The exact SQL form of `p`, if it has one.
fn translate(p: &Predicate) -> Option<Cond> {
    Some(match p.kind() {
        PredicateKind::True => Cond::True,
        PredicateKind::False => Cond::False,
        PredicateKind::Compare(c) => comparison(c),
        PredicateKind::Not(c) => Cond::not(comparison(c)),
        PredicateKind::And(ps) => Cond::and(ps.iter().map(translate).collect::<Option<_>>()?),
        PredicateKind::Or(ps) => Cond::or(ps.iter().map(translate).collect::<Option<_>>()?),
    })
}

/// The constant of a type mismatch: the property counts as less than the literal.
fn mismatch(op: CmpOp) -> Cond {
    if matches!(op, CmpOp::Ne | CmpOp::Lt | CmpOp::Le) {
        Cond::True
    } else {
        Cond::False
    }
}

fn comparison(c: &Comparison) -> Cond {
    match SystemProperty::from_name(&c.property) {
        Some(SystemProperty::PartitionKey) => key(KeyColumn::Pk, c.op, &c.value),
        Some(SystemProperty::RowKey) => key(KeyColumn::Rk, c.op, &c.value),
        // Every stored entity has a Timestamp.
        Some(SystemProperty::Timestamp) => match &c.value {
            Value::DateTime(t) => Cond::Ts(c.op, t.ticks()),
            _ => mismatch(c.op),
        },
        None => match property_path(&c.property, c.op, &c.value) {
            Some(path) => Cond::Path(path),
            None => Cond::False,
        },
    }
}

fn key(col: KeyColumn, op: CmpOp, literal: &Value) -> Cond {
    match literal {
        Value::String(s) => Cond::Key(col, op, encode_str(s).into_owned()),
        _ => mismatch(op),
    }
}

fn jsonpath_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

/// The jsonpath predicate of `name op literal` (see the module docs); `None` when nothing
/// can match.
pub(crate) fn property_path(name: &str, op: CmpOp, literal: &Value) -> Option<String> {
    let mut base = String::from("$.");
    push_json_string(&mut base, name);
    let t = format!("{base}[0]");
    let v = format!("{base}[1]");
    let jop = jsonpath_op(op);
    // `tag in lo..=hi` (tags start at 1).
    let tags = |lo: u8, hi: u8| -> String {
        match (lo, hi) {
            (lo, hi) if lo == hi => format!("{t} == {lo}"),
            (tag::INT32, hi) => format!("{t} <= {hi}"),
            (lo, hi) => format!("{t} >= {lo} && {t} <= {hi}"),
        }
    };
    let mut terms: Vec<String> = Vec::new();
    let mut by_value =
        |lo: u8, hi: u8, lit: &str| terms.push(format!("{} && {v} {jop} {lit}", tags(lo, hi)));
    // The tag range the literal compares with by value.
    let (lo, hi) = match literal {
        Value::String(s) => {
            by_value(tag::STRING, tag::STRING, &json_string(&encode_str(s)));
            (tag::STRING, tag::STRING)
        }
        // An Int32 is exactly a Double, and the shortest decimal of that Double is the
        // integer: one comparison covers Int32, Int64 and Double properties.
        Value::Int32(n) => {
            by_value(tag::INT32, tag::DOUBLE, &n.to_string());
            (tag::INT32, tag::DOUBLE_SPECIAL)
        }
        Value::Int64(n) => {
            let as_double = double_decimal(*n as f64);
            if as_double == n.to_string() {
                by_value(tag::INT64, tag::DOUBLE, &as_double);
            } else {
                by_value(tag::INT64, tag::INT64, &n.to_string());
                by_value(tag::DOUBLE, tag::DOUBLE, &as_double);
            }
            (tag::INT64, tag::DOUBLE_SPECIAL)
        }
        Value::Double(x) => {
            if x.is_finite() {
                by_value(tag::DOUBLE, tag::DOUBLE, &double_decimal(*x));
            } else if compare(Some(ValueRef::Double(1.0)), op, literal.as_ref()) {
                // Every finite Double compares alike with NaN or ±∞.
                terms.push(format!("{t} == {}", tag::DOUBLE));
            }
            (tag::DOUBLE, tag::DOUBLE_SPECIAL)
        }
        Value::Boolean(b) => {
            by_value(tag::BOOLEAN, tag::BOOLEAN, &b.to_string());
            (tag::BOOLEAN, tag::BOOLEAN)
        }
        Value::DateTime(d) => {
            by_value(tag::DATETIME, tag::DATETIME, &d.ticks().to_string());
            (tag::DATETIME, tag::DATETIME)
        }
        Value::Guid(g) => {
            by_value(
                tag::GUID,
                tag::GUID,
                &json_string(&g.hyphenated().to_string()),
            );
            (tag::GUID, tag::GUID)
        }
        Value::Binary(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            by_value(tag::BINARY, tag::BINARY, &json_string(&hex));
            (tag::BINARY, tag::BINARY)
        }
    };
    if hi == tag::DOUBLE_SPECIAL {
        // NaN, ±∞ and −0 against the literal, decided here.
        let specials: Vec<String> = DOUBLE_SPECIALS
            .iter()
            .filter(|(x, _)| compare(Some(ValueRef::Double(*x)), op, literal.as_ref()))
            .map(|(_, n)| format!("{v} == \"{n}\""))
            .collect();
        if !specials.is_empty() {
            terms.push(format!(
                "{t} == {} && ({})",
                tag::DOUBLE_SPECIAL,
                specials.join(" || ")
            ));
        }
    }
    if matches!(op, CmpOp::Ne | CmpOp::Lt | CmpOp::Le) {
        // A present property of another type counts as less than the literal.
        let mut other = Vec::new();
        if lo > tag::INT32 {
            other.push(format!("{t} < {lo}"));
        }
        if hi < tag::BINARY {
            other.push(format!("{t} > {hi}"));
        }
        if !other.is_empty() {
            terms.push(other.join(" || "));
        }
    }
    match terms.len() {
        0 => None,
        1 => Some(terms.swap_remove(0)),
        _ => Some(
            terms
                .iter()
                .map(|t| format!("({t})"))
                .collect::<Vec<_>>()
                .join(" || "),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let path = |name: &str, op, v: &Value| property_path(name, op, v).unwrap_or_default();
        assert_eq!(
            path("A", CmpOp::Eq, &Value::from("x")),
            r#"$."A"[0] == 5 && $."A"[1] == "x""#
        );
        assert_eq!(
            path("A", CmpOp::Lt, &Value::Boolean(true)),
            r#"($."A"[0] == 6 && $."A"[1] < true) || ($."A"[0] < 6 || $."A"[0] > 6)"#
        );
        assert_eq!(
            path("N", CmpOp::Lt, &Value::Int32(100)),
            r#"($."N"[0] <= 3 && $."N"[1] < 100) || ($."N"[0] == 4 && ($."N"[1] == "-Infinity" || $."N"[1] == "-0")) || ($."N"[0] > 4)"#
        );
        for n in [i32::MIN, -1, 0, 7, i32::MAX] {
            assert_eq!(double_decimal(f64::from(n)), n.to_string());
        }
        assert_eq!(
            property_path("D", CmpOp::Eq, &Value::Double(f64::NAN)),
            None
        );
        let nan = pushdown(&Predicate::negate(Predicate::compare(
            "D",
            CmpOp::Gt,
            Value::Double(f64::NAN),
        )));
        assert_eq!(nan.cond, Cond::True);
        let ne_nan = path("D", CmpOp::Ne, &Value::Double(f64::NAN));
        assert!(ne_nan.contains(r#"$."D"[0] == 3"#), "{ne_nan}");
        let gt = path("D", CmpOp::Gt, &Value::Int64(i64::MAX));
        assert!(gt.contains(r#"$."D"[1] > 9223372036854776000"#), "{gt}");
        assert!(gt.contains(r#"$."D"[1] == "Infinity""#), "{gt}");
        assert!(path("we\"ird", CmpOp::Eq, &Value::Int32(1)).contains(r#"$."we\"ird"[0]"#));
    }

    #[test]
    fn keys_and_timestamps() {
        let p = pushdown(&Predicate::compare(
            "PartitionKey",
            CmpOp::Lt,
            Value::Int32(5),
        ));
        assert_eq!(p.cond, Cond::True);
        let p = pushdown(&Predicate::compare(
            "RowKey",
            CmpOp::Ge,
            Value::from("\u{10000}"),
        ));
        assert_eq!(
            p.cond,
            Cond::Key(KeyColumn::Rk, CmpOp::Ge, "\u{E000}\u{E000}".into())
        );
        let p = pushdown(&Predicate::compare(
            "Timestamp",
            CmpOp::Gt,
            Value::from("x"),
        ));
        assert_eq!(p.cond, Cond::False);
        assert!(p.is_exact());
    }

    #[test]
    fn paths_merge_into_one_operator() {
        let a = Predicate::compare("A", CmpOp::Eq, Value::Int32(1));
        let b = Predicate::compare("B", CmpOp::Eq, Value::Int32(2));
        let p = pushdown(&Predicate::or([a.clone(), Predicate::negate(b.clone())]));
        assert!(matches!(p.cond, Cond::Path(_)), "{:?}", p.cond);
        let k = Predicate::compare("PartitionKey", CmpOp::Eq, Value::from("p"));
        let p = pushdown(&Predicate::or([a, k]));
        assert!(matches!(p.cond, Cond::Or(ref v) if v.len() == 2));
    }
}
