//! [`FaultRules`]: the fault rules as written (JSON) and checked — what a rule matches,
//! what it does, and how often.
//!
//! ```json
//! {
//!   "seed": 7,
//!   "rules": [
//!     { "name": "hot partition busy", "table": "orders", "partitionKeyPrefix": "hot",
//!       "operation": ["InsertEntity", "UpsertEntity"], "error": "ServerBusy", "probability": 0.3 },
//!     { "operation": "EntityGroupTransaction", "batchFailAt": 2, "error": "InternalError", "next": 1 },
//!     { "table": "slow", "latencyMs": { "uniform": [50, 250] } },
//!     { "operation": "InsertEntity", "drop": "afterWrite", "next": 1 }
//!   ]
//! }
//! ```
//!
//! A rule matches a request when every field it names matches (`account`, `table`,
//! `operation` — one name or a list — and `partitionKeyPrefix`); a rule naming none matches
//! every request. Its effect is one of `error` (one of [`INJECTABLE_ERRORS`]), `batchFailAt`
//! (a batch fails at that operation index, with `error` or `InternalError`), `drop`
//! (`beforeWrite`: the connection closes and nothing is applied; `afterWrite`: the write is
//! applied and the connection closes without an answer — the case that makes a retry
//! non-idempotent), optionally preceded by `latencyMs` (a number, or `{"uniform": [lo, hi]}`,
//! `{"exponential": mean}`, `{"normal": [mean, stddev]}`); or `latencyMs` alone. It fires
//! with `probability` (default 1) or for the `next` N matching requests, then never again.

use serde::Deserialize;
use std::time::Duration;
use tableq_model::ErrorCode;

/// The service errors a rule may inject.
pub const INJECTABLE_ERRORS: &[ErrorCode] = &[
    ErrorCode::ServerBusy,
    ErrorCode::InternalError,
    ErrorCode::OperationTimedOut,
    ErrorCode::UpdateConditionNotSatisfied,
    ErrorCode::EntityAlreadyExists,
];

/// A rule set that failed its checks: what is wrong and in which rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultRuleError {
    /// Not JSON of the rules' shape (an unknown field, a wrong type).
    #[error("fault rules: {0}")]
    Json(String),
    /// A rule that parses but makes no sense.
    #[error("fault rule {index} ({name}): {problem}")]
    Rule {
        /// Its position in `rules` (0-based).
        index: usize,
        /// Its `name`, or `rule {index}`.
        name: String,
        /// What is wrong, and what would be right.
        problem: String,
    },
}

/// What a rule matches (every named field must match).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Matcher {
    /// The account's name, exactly.
    pub account: Option<String>,
    /// The table's name, case-insensitively (as the service treats table names).
    pub table: Option<String>,
    /// Operation names (any of them).
    pub operations: Vec<String>,
    /// A prefix of the PartitionKey; a request without a single PartitionKey never matches.
    pub partition_key_prefix: Option<String>,
}

/// How long an added latency is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delay {
    /// Always this long.
    Fixed(Duration),
    /// Uniform between the two (inclusive).
    Uniform(Duration, Duration),
    /// Exponentially distributed with this mean.
    Exponential(Duration),
    /// Normally distributed (mean, standard deviation), never below zero.
    Normal(Duration, Duration),
}

/// When a dropped connection closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropPoint {
    /// Before the operation runs: nothing is applied.
    BeforeWrite,
    /// After the operation ran (and its write is durable): only the answer is lost.
    AfterWrite,
}

/// What a rule does to a request it fires on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Effect {
    /// Answer with this service error instead of running the operation.
    Error(ErrorCode),
    /// A batch fails at this operation index with this error (nothing is applied, as for
    /// any failed batch); requests other than batches are not affected.
    BatchFailAt(usize, ErrorCode),
    /// Close the connection without an answer.
    Drop(DropPoint),
    /// Only wait (see `Fault::delay` for waiting before another effect).
    Latency,
}

/// How often a rule fires on the requests it matches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// Each matching request independently, with this probability (0 < p ≤ 1).
    Probability(f64),
    /// The next N matching requests, then never again.
    Next(u64),
}

/// One checked rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// A label for logs and metrics (`rule N` when the file gives none).
    pub name: String,
    /// What it matches.
    pub matcher: Matcher,
    /// A latency added before the effect.
    pub delay: Option<Delay>,
    /// What it does.
    pub effect: Effect,
    /// How often.
    pub trigger: Trigger,
}

/// A checked rule set with its seed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultRules {
    /// The seed of the random draws, when the rules fix one.
    pub seed: Option<u64>,
    /// The rules, in the order they are tried.
    pub rules: Vec<FaultRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    seed: Option<u64>,
    #[serde(default)]
    rules: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRule {
    name: Option<String>,
    account: Option<String>,
    table: Option<String>,
    operation: Option<OneOrMany>,
    partition_key_prefix: Option<String>,
    error: Option<String>,
    batch_fail_at: Option<usize>,
    drop: Option<String>,
    latency_ms: Option<RawDelay>,
    probability: Option<f64>,
    next: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawDelay {
    Fixed(f64),
    Shaped(RawShape),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
enum RawShape {
    #[serde(rename = "uniform")]
    Uniform([f64; 2]),
    #[serde(rename = "exponential")]
    Exponential(f64),
    #[serde(rename = "normal")]
    Normal([f64; 2]),
}

impl FaultRules {
    /// Parses and checks a rule set (see the module docs for the format). Operation names
    /// are checked against `operations`, the names the server's request log uses.
    pub fn from_json(text: &str, operations: &[&str]) -> Result<FaultRules, FaultRuleError> {
        let raw: RawRules =
            serde_json::from_str(text).map_err(|e| FaultRuleError::Json(e.to_string()))?;
        let rules = raw
            .rules
            .into_iter()
            .enumerate()
            .map(|(index, rule)| check(index, rule, operations))
            .collect::<Result<_, _>>()?;
        Ok(FaultRules {
            seed: raw.seed,
            rules,
        })
    }
}

fn check(index: usize, raw: RawRule, operations: &[&str]) -> Result<FaultRule, FaultRuleError> {
    let name = raw.name.clone().unwrap_or_else(|| format!("rule {index}"));
    let fail = |problem: String| FaultRuleError::Rule {
        index,
        name: name.clone(),
        problem,
    };
    let names = match raw.operation {
        None => Vec::new(),
        Some(OneOrMany::One(one)) => vec![one],
        Some(OneOrMany::Many(many)) => many,
    };
    for op in &names {
        if !operations.contains(&op.as_str()) {
            return Err(fail(format!(
                "unknown operation `{op}`; the operations are: {}",
                operations.join(", ")
            )));
        }
    }
    let error = raw
        .error
        .as_deref()
        .map(|code| {
            ErrorCode::from_name(code)
                .filter(|c| INJECTABLE_ERRORS.contains(c))
                .ok_or_else(|| {
                    fail(format!(
                        "`error` must be one of {}, not `{code}`",
                        INJECTABLE_ERRORS
                            .iter()
                            .map(|c| c.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .transpose()?;
    let drop = raw
        .drop
        .as_deref()
        .map(|when| match when {
            "beforeWrite" => Ok(DropPoint::BeforeWrite),
            "afterWrite" => Ok(DropPoint::AfterWrite),
            other => Err(fail(format!(
                "`drop` is `beforeWrite` or `afterWrite`, not `{other}`"
            ))),
        })
        .transpose()?;
    let effect = match (error, raw.batch_fail_at, drop) {
        (error, Some(at), None) => {
            Effect::BatchFailAt(at, error.unwrap_or(ErrorCode::InternalError))
        }
        (Some(code), None, None) => Effect::Error(code),
        (None, None, Some(point)) => Effect::Drop(point),
        (None, None, None) if raw.latency_ms.is_some() => Effect::Latency,
        (None, None, None) => {
            return Err(fail(
                "no effect: give `error`, `batchFailAt`, `drop` or `latencyMs`".into(),
            ));
        }
        _ => {
            return Err(fail(
                "one effect per rule: `error`, `batchFailAt` (with an optional `error`) or `drop`, each with an optional `latencyMs`".into(),
            ));
        }
    };
    if matches!(effect, Effect::BatchFailAt(at, _) if at >= 100) {
        return Err(fail(
            "`batchFailAt` is an operation index, 0 to 99 (a batch holds at most 100)".into(),
        ));
    }
    let delay = raw
        .latency_ms
        .map(|d| delay(d).map_err(&fail))
        .transpose()?;
    let trigger = match (raw.probability, raw.next) {
        (Some(_), Some(_)) => {
            return Err(fail("give `probability` or `next`, not both".into()));
        }
        (Some(p), None) if p > 0.0 && p <= 1.0 => Trigger::Probability(p),
        (Some(p), None) => {
            return Err(fail(format!(
                "`probability` is above 0 and at most 1, not {p}"
            )));
        }
        (None, Some(0)) => return Err(fail("`next` is at least 1".into())),
        (None, Some(n)) => Trigger::Next(n),
        (None, None) => Trigger::Probability(1.0),
    };
    Ok(FaultRule {
        name,
        matcher: Matcher {
            account: raw.account,
            table: raw.table,
            operations: names,
            partition_key_prefix: raw.partition_key_prefix,
        },
        delay,
        effect,
        trigger,
    })
}

/// Milliseconds as a duration: finite, not negative, at most an hour.
fn millis(ms: f64, what: &str) -> Result<Duration, String> {
    if ms.is_finite() && (0.0..=3_600_000.0).contains(&ms) {
        Ok(Duration::from_secs_f64(ms / 1000.0))
    } else {
        Err(format!(
            "`latencyMs` {what} must be between 0 and 3600000 ms, not {ms}"
        ))
    }
}

fn delay(raw: RawDelay) -> Result<Delay, String> {
    Ok(match raw {
        RawDelay::Fixed(ms) => Delay::Fixed(millis(ms, "")?),
        RawDelay::Shaped(RawShape::Uniform([lo, hi])) => {
            if lo > hi {
                return Err(format!(
                    "`latencyMs.uniform` is [low, high] with low ≤ high, not [{lo}, {hi}]"
                ));
            }
            Delay::Uniform(millis(lo, "low")?, millis(hi, "high")?)
        }
        RawDelay::Shaped(RawShape::Exponential(mean)) => Delay::Exponential(millis(mean, "mean")?),
        RawDelay::Shaped(RawShape::Normal([mean, sd])) => {
            Delay::Normal(millis(mean, "mean")?, millis(sd, "standard deviation")?)
        }
    })
}

impl Matcher {
    /// Whether the request `target` describes is one this rule applies to.
    pub fn matches(&self, target: &super::Target<'_>) -> bool {
        self.account.as_deref().is_none_or(|a| a == target.account)
            && self.table.as_deref().is_none_or(|t| {
                target
                    .table
                    .is_some_and(|have| have.eq_ignore_ascii_case(t))
            })
            && (self.operations.is_empty() || self.operations.iter().any(|o| o == target.operation))
            && self
                .partition_key_prefix
                .as_deref()
                .is_none_or(|p| target.partition_key.is_some_and(|pk| pk.starts_with(p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::faults::Target;

    const OPS: &[&str] = &["InsertEntity", "QueryEntities", "EntityGroupTransaction"];

    fn one(rule: &str) -> Result<FaultRule, FaultRuleError> {
        FaultRules::from_json(&format!("{{\"rules\": [{rule}]}}"), OPS).map(|r| r.rules[0].clone())
    }

    fn problem(rule: &str) -> String {
        one(rule).unwrap_err().to_string()
    }

    #[test]
    fn every_effect_and_trigger_parses() {
        let r = one(r#"{"table": "t", "error": "ServerBusy", "probability": 0.5}"#).unwrap();
        assert_eq!(r.effect, Effect::Error(ErrorCode::ServerBusy));
        assert_eq!(r.trigger, Trigger::Probability(0.5));
        assert_eq!(r.name, "rule 0");
        let r = one(r#"{"batchFailAt": 3, "next": 2}"#).unwrap();
        assert_eq!(r.effect, Effect::BatchFailAt(3, ErrorCode::InternalError));
        assert_eq!(r.trigger, Trigger::Next(2));
        let r = one(r#"{"drop": "afterWrite", "latencyMs": 5}"#).unwrap();
        assert_eq!(r.effect, Effect::Drop(DropPoint::AfterWrite));
        assert_eq!(r.delay, Some(Delay::Fixed(Duration::from_millis(5))));
        let r = one(r#"{"latencyMs": {"uniform": [1, 3]}}"#).unwrap();
        assert_eq!(r.effect, Effect::Latency);
        assert_eq!(
            r.delay,
            Some(Delay::Uniform(
                Duration::from_millis(1),
                Duration::from_millis(3)
            ))
        );
        assert!(matches!(
            one(r#"{"latencyMs": {"exponential": 10}}"#).unwrap().delay,
            Some(Delay::Exponential(_))
        ));
        assert!(matches!(
            one(r#"{"latencyMs": {"normal": [10, 2]}}"#).unwrap().delay,
            Some(Delay::Normal(_, _))
        ));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        assert!(problem(r#"{"error": "Teapot"}"#).contains("must be one of ServerBusy"));
        assert!(
            problem(r#"{"operation": "Insert", "error": "ServerBusy"}"#)
                .contains("unknown operation `Insert`")
        );
        assert!(problem(r#"{"table": "t"}"#).contains("no effect"));
        assert!(
            problem(r#"{"error": "ServerBusy", "drop": "beforeWrite"}"#)
                .contains("one effect per rule")
        );
        assert!(problem(r#"{"drop": "later"}"#).contains("`beforeWrite` or `afterWrite`"));
        assert!(problem(r#"{"error": "ServerBusy", "probability": 1.5}"#).contains("at most 1"));
        assert!(problem(r#"{"error": "ServerBusy", "probability": 0}"#).contains("above 0"));
        assert!(problem(r#"{"error": "ServerBusy", "next": 0}"#).contains("at least 1"));
        assert!(
            problem(r#"{"error": "ServerBusy", "next": 1, "probability": 0.5}"#)
                .contains("not both")
        );
        assert!(problem(r#"{"latencyMs": -1}"#).contains("between 0 and 3600000"));
        assert!(problem(r#"{"latencyMs": {"uniform": [5, 1]}}"#).contains("low ≤ high"));
        assert!(problem(r#"{"batchFailAt": 100}"#).contains("0 to 99"));
        assert!(matches!(
            FaultRules::from_json(r#"{"rules": [{"eror": "ServerBusy"}]}"#, OPS),
            Err(FaultRuleError::Json(m)) if m.contains("unknown field `eror`")
        ));
        assert!(problem(r#"{"name": "hot", "table": "t"}"#).starts_with("fault rule 0 (hot)"));
    }

    #[test]
    fn matchers_need_every_named_field() {
        let r = one(
            r#"{"account": "a", "table": "Orders", "operation": ["InsertEntity"], "partitionKeyPrefix": "hot", "error": "ServerBusy"}"#,
        )
        .unwrap();
        let target = Target {
            account: "a",
            table: Some("orders"),
            operation: "InsertEntity",
            partition_key: Some("hot-1"),
            entities: 1,
            batch: false,
        };
        assert!(r.matcher.matches(&target));
        assert!(!r.matcher.matches(&Target {
            account: "b",
            ..target
        }));
        assert!(!r.matcher.matches(&Target {
            table: None,
            ..target
        }));
        assert!(!r.matcher.matches(&Target {
            operation: "QueryEntities",
            ..target
        }));
        assert!(!r.matcher.matches(&Target {
            partition_key: Some("cold"),
            ..target
        }));
        assert!(!r.matcher.matches(&Target {
            partition_key: None,
            ..target
        }));
        assert!(
            one(r#"{"error": "ServerBusy"}"#)
                .unwrap()
                .matcher
                .matches(&Target {
                    table: None,
                    partition_key: None,
                    ..target
                })
        );
    }
}
