//! Building SQL: numbered parameters ([`SqlBuilder`]), the conditions a read sends
//! ([`Cond`]: key ranges, scan positions, pushed-down residuals) and their rendering with
//! parameters or, for `explain`, with the values written inline.
//!
//! Every value reaches PostgreSQL as a bound parameter; only identifiers the engine
//! controls (the validated schema name, fixed column names) are written into SQL text.

use super::encode::{JsonPath, encode_str};
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::ops::Bound;
use tableq_exec::Key;
use tableq_model::CmpOp;
use tableq_model::order::compare_str;
use tableq_planner::plan::{KeyInterval, KeyRange};
use tokio_postgres::types::{ToSql, Type};

/// One bound parameter.
#[derive(Debug, Clone)]
pub(crate) enum Param {
    Text(String),
    Int8(i64),
    TextArray(Vec<String>),
    JsonPath(JsonPath),
}

impl Param {
    /// The value and its declared type, for `query_typed`.
    pub(crate) fn typed(&self) -> (&(dyn ToSql + Sync), Type) {
        match self {
            Param::Text(s) => (s, Type::TEXT),
            Param::Int8(i) => (i, Type::INT8),
            Param::TextArray(a) => (a, Type::TEXT_ARRAY),
            Param::JsonPath(p) => (p, Type::JSONPATH),
        }
    }

    /// The value as an SQL literal (for `explain` only; never sent).
    fn literal(&self) -> String {
        fn quote(s: &str) -> String {
            let mut out = String::with_capacity(s.len() + 2);
            out.push('\'');
            for c in s.chars() {
                match c {
                    '\'' => out.push_str("''"),
                    c if c.is_control() => {
                        let _ = write!(out, "\\u{{{:x}}}", c as u32);
                    }
                    c => out.push(c),
                }
            }
            out.push('\'');
            out
        }
        match self {
            Param::Text(s) => quote(s),
            Param::Int8(i) => i.to_string(),
            Param::TextArray(a) => format!(
                "ARRAY[{}]",
                a.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ")
            ),
            Param::JsonPath(p) => format!("{}::jsonpath", quote(&p.0)),
        }
    }
}

/// SQL text with numbered parameters (`$1`, `$2`, …).
#[derive(Debug, Default, Clone)]
pub(crate) struct SqlBuilder {
    pub(crate) sql: String,
    pub(crate) params: Vec<Param>,
}

impl SqlBuilder {
    pub(crate) fn new() -> SqlBuilder {
        SqlBuilder::default()
    }

    /// Appends text.
    pub(crate) fn push(&mut self, s: &str) -> &mut SqlBuilder {
        self.sql.push_str(s);
        self
    }

    /// Appends a new parameter's placeholder.
    pub(crate) fn param(&mut self, p: Param) -> &mut SqlBuilder {
        self.params.push(p);
        let _ = write!(self.sql, "${}", self.params.len());
        self
    }

    /// The parameters as `query_typed` takes them.
    pub(crate) fn typed_params(&self) -> Vec<(&(dyn ToSql + Sync), Type)> {
        self.params.iter().map(Param::typed).collect()
    }

    /// The SQL with every parameter written inline (for `explain`).
    pub(crate) fn inline(&self) -> String {
        let mut out = String::with_capacity(self.sql.len() + 64);
        let bytes = self.sql.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'$' {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits > 0 {
                    let n: usize = self.sql[i + 1..i + 1 + digits].parse().unwrap_or(0);
                    if let Some(p) = n.checked_sub(1).and_then(|k| self.params.get(k)) {
                        out.push_str(&p.literal());
                        i += 1 + digits;
                        continue;
                    }
                }
            }
            let c = self.sql[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
        out
    }
}

/// A key column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyColumn {
    Pk,
    Rk,
}

impl KeyColumn {
    fn name(self) -> &'static str {
        match self {
            KeyColumn::Pk => "pk",
            KeyColumn::Rk => "rk",
        }
    }
}

/// A condition of a read, before its parameters are numbered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    True,
    False,
    /// `pk|rk <op> encoded key`.
    Key(KeyColumn, CmpOp, String),
    /// `ts <op> ticks`.
    Ts(CmpOp, i64),
    /// `props @@ jsonpath`: a predicate over the stored properties that is never unknown.
    Path(String),
    /// `rk = ANY(encoded keys)`.
    RkAny(Vec<String>),
    /// `(pk, rk) <op> (a, b)` for a position in key order (`op` is `Ge`, `Gt` or `Lt`).
    Position(CmpOp, Key),
    Not(Box<Cond>),
    And(Vec<Cond>),
    Or(Vec<Cond>),
}

pub(crate) fn sql_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::Ne => "<>",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
    }
}

impl Cond {
    /// `a AND b …`, folding constants and merging jsonpath operands into one `@@`.
    pub(crate) fn and(parts: Vec<Cond>) -> Cond {
        Cond::junction(parts, true)
    }

    /// `a OR b …`, like [`Cond::and`].
    pub(crate) fn or(parts: Vec<Cond>) -> Cond {
        Cond::junction(parts, false)
    }

    /// `NOT c` (c is two-valued: every condition built here is never NULL/unknown).
    pub(crate) fn not(c: Cond) -> Cond {
        match c {
            Cond::True => Cond::False,
            Cond::False => Cond::True,
            Cond::Not(inner) => *inner,
            Cond::Path(p) => Cond::Path(format!("!({p})")),
            c => Cond::Not(Box::new(c)),
        }
    }

    fn junction(parts: Vec<Cond>, is_and: bool) -> Cond {
        let (absorbing, neutral) = if is_and {
            (Cond::False, Cond::True)
        } else {
            (Cond::True, Cond::False)
        };
        let mut flat = Vec::with_capacity(parts.len());
        let mut paths: Vec<String> = Vec::new();
        for p in parts {
            match p {
                p if p == neutral => {}
                p if p == absorbing => return absorbing,
                Cond::And(ps) if is_and => flat.extend(ps),
                Cond::Or(ps) if !is_and => flat.extend(ps),
                Cond::Path(p) => paths.push(p),
                p => flat.push(p),
            }
        }
        match paths.len() {
            0 => {}
            1 => flat.push(Cond::Path(paths.swap_remove(0))),
            _ => {
                let sep = if is_and { " && " } else { " || " };
                let joined = paths
                    .iter()
                    .map(|p| format!("({p})"))
                    .collect::<Vec<_>>()
                    .join(sep);
                flat.push(Cond::Path(joined));
            }
        }
        match flat.len() {
            0 => neutral,
            1 => flat.pop().unwrap_or(neutral),
            _ if is_and => Cond::And(flat),
            _ => Cond::Or(flat),
        }
    }

    /// Appends the condition (parenthesised) with numbered parameters.
    pub(crate) fn render(&self, b: &mut SqlBuilder) {
        match self {
            Cond::True => {
                b.push("TRUE");
            }
            Cond::False => {
                b.push("FALSE");
            }
            Cond::Key(col, op, key) => {
                b.push(col.name())
                    .push(" ")
                    .push(sql_op(*op))
                    .push(" ")
                    .param(Param::Text(key.clone()));
            }
            Cond::Ts(op, ticks) => {
                b.push("ts ")
                    .push(sql_op(*op))
                    .push(" ")
                    .param(Param::Int8(*ticks));
            }
            Cond::Path(p) => {
                b.push("props @@ ")
                    .param(Param::JsonPath(JsonPath(p.clone())));
            }
            Cond::RkAny(keys) => {
                b.push("rk = ANY(")
                    .param(Param::TextArray(keys.clone()))
                    .push(")");
            }
            Cond::Position(op, key) => {
                // The row comparison is an index condition on one server; postgres_fdw does
                // not ship it, so the equivalent column form follows for the shards.
                let pk = encode_str(&key.partition_key).into_owned();
                let rk = encode_str(&key.row_key).into_owned();
                let (pk_op, strict) = match op {
                    CmpOp::Ge => (">=", ">"),
                    CmpOp::Gt => (">=", ">"),
                    _ => ("<=", "<"),
                };
                b.push("(pk, rk) ")
                    .push(sql_op(*op))
                    .push(" (")
                    .param(Param::Text(pk.clone()))
                    .push(", ")
                    .param(Param::Text(rk.clone()))
                    .push(") AND pk ")
                    .push(pk_op)
                    .push(" ")
                    .param(Param::Text(pk.clone()))
                    .push(" AND (pk ")
                    .push(strict)
                    .push(" ")
                    .param(Param::Text(pk))
                    .push(" OR rk ")
                    .push(sql_op(*op))
                    .push(" ")
                    .param(Param::Text(rk))
                    .push(")");
            }
            Cond::Not(c) => {
                b.push("NOT (");
                c.render(b);
                b.push(")");
            }
            Cond::And(cs) | Cond::Or(cs) => {
                let sep = if matches!(self, Cond::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                for (i, c) in cs.iter().enumerate() {
                    if i > 0 {
                        b.push(sep);
                    }
                    b.push("(");
                    c.render(b);
                    b.push(")");
                }
            }
        }
    }
}

/// The conditions of a key interval on one column.
fn interval(col: KeyColumn, iv: &KeyInterval) -> Vec<Cond> {
    if let Some(k) = iv.as_point() {
        return vec![Cond::Key(col, CmpOp::Eq, encode_str(k).into_owned())];
    }
    let mut out = Vec::new();
    match &iv.lower {
        Bound::Included(k) => out.push(Cond::Key(col, CmpOp::Ge, encode_str(k).into_owned())),
        Bound::Excluded(k) => out.push(Cond::Key(col, CmpOp::Gt, encode_str(k).into_owned())),
        Bound::Unbounded => {}
    }
    match &iv.upper {
        Bound::Included(k) => out.push(Cond::Key(col, CmpOp::Le, encode_str(k).into_owned())),
        Bound::Excluded(k) => out.push(Cond::Key(col, CmpOp::Lt, encode_str(k).into_owned())),
        Bound::Unbounded => {}
    }
    out
}

/// The condition selecting the keys of `range` at or after `from` (inclusive), after
/// `after` (exclusive) and before `until` (exclusive); `Cond::False` when that is empty.
pub(crate) fn scan_cond(
    range: &KeyRange,
    from: Option<&Key>,
    after: Option<&Key>,
    until: Option<&Key>,
) -> Cond {
    let mut parts = interval(KeyColumn::Pk, &range.partition_key);
    parts.extend(interval(KeyColumn::Rk, &range.row_key));
    let start = match (from, after) {
        (_, Some(a)) => Some((CmpOp::Gt, a)),
        (Some(f), None) => Some((CmpOp::Ge, f)),
        (None, None) => None,
    };
    let point = range.partition_key.as_point();
    for (op, key) in start.into_iter().chain(until.map(|u| (CmpOp::Lt, u))) {
        match point {
            // One partition: the position is a RowKey bound (or decides everything).
            Some(p) => match compare_str(&key.partition_key, p) {
                Ordering::Equal => parts.push(Cond::Key(
                    KeyColumn::Rk,
                    op,
                    encode_str(&key.row_key).into_owned(),
                )),
                Ordering::Less if op == CmpOp::Lt => return Cond::False,
                Ordering::Greater if op != CmpOp::Lt => return Cond::False,
                _ => {}
            },
            None => parts.push(Cond::Position(op, key.clone())),
        }
    }
    Cond::and(parts)
}

/// The condition selecting exactly these (PartitionKey, RowKey) pairs: per PartitionKey,
/// `pk = $p AND rk = ANY($rks)`, OR-ed.
pub(crate) fn points_cond(points: &[(String, String)]) -> Cond {
    let mut by_pk: Vec<(&str, Vec<String>)> = Vec::new();
    for (pk, rk) in points {
        match by_pk.iter_mut().find(|(p, _)| p == pk) {
            Some((_, rks)) => rks.push(encode_str(rk).into_owned()),
            None => by_pk.push((pk, vec![encode_str(rk).into_owned()])),
        }
    }
    Cond::or(
        by_pk
            .into_iter()
            .map(|(pk, mut rks)| {
                let pk = Cond::Key(KeyColumn::Pk, CmpOp::Eq, encode_str(pk).into_owned());
                let rk = match rks.len() {
                    1 => Cond::Key(KeyColumn::Rk, CmpOp::Eq, rks.swap_remove(0)),
                    _ => Cond::RkAny(rks),
                };
                Cond::And(vec![pk, rk])
            })
            .collect(),
    )
}
