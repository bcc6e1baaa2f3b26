//! [`FaultPlan`]: the armed rules and their random draws — which fault a request gets.
//!
//! Rules are tried in order. A matching rule *fires* by its trigger: `next` N counts down
//! and then never fires again; a probability below 1 takes one draw from the plan's
//! generator (ChaCha8, seeded), a probability of 1 takes none. Latencies of the rules that
//! fire add up; the first rule that fires with another effect decides the outcome, and the
//! rules after it are not tried (their counts are left alone). So with the same seed, the
//! same rules and the same sequence of requests, every run injects the same faults — the
//! sequence is the order in which requests reach the plan, which a test controls by sending
//! them one at a time.

use super::rules::{Delay, DropPoint, Effect, FaultRule, FaultRules, Trigger};
use super::target::Target;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Normal};
use std::sync::Mutex;
use std::time::Duration;
use tableq_model::ErrorCode;

/// What a request gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Run as usual.
    Proceed,
    /// Answer with this service error; the operation does not run.
    Fail(ErrorCode),
    /// A batch fails at this operation index with this error; nothing is applied.
    FailBatchAt(usize, ErrorCode),
    /// Close the connection without an answer, before or after the operation runs.
    Drop(DropPoint),
}

/// One rule that fired on a request: for the request log and the metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The rule's name.
    pub rule: String,
    /// The kind of fault: `latency`, `error`, `batch`, `drop`.
    pub kind: &'static str,
}

/// The answer for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Injection {
    /// Wait this long first.
    pub delay: Duration,
    /// Then this.
    pub outcome: Outcome,
    /// The rules that fired, in order.
    pub fired: Vec<Fired>,
}

impl Injection {
    /// Nothing injected.
    pub fn none() -> Injection {
        Injection {
            delay: Duration::ZERO,
            outcome: Outcome::Proceed,
            fired: Vec::new(),
        }
    }
}

/// Armed rules with their seeded generator (see the module docs).
#[derive(Debug)]
pub struct FaultPlan {
    seed: u64,
    rules: Vec<FaultRule>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    rng: ChaCha8Rng,
    /// What is left of each `next` N (unused for probabilities).
    left: Vec<u64>,
    /// How many times each rule fired.
    fired: Vec<u64>,
}

impl FaultPlan {
    /// Arms `rules` with their own seed, or `seed` when they give none.
    pub fn new(rules: FaultRules, seed: u64) -> FaultPlan {
        let seed = rules.seed.unwrap_or(seed);
        let left = rules
            .rules
            .iter()
            .map(|r| match r.trigger {
                Trigger::Next(n) => n,
                Trigger::Probability(_) => 0,
            })
            .collect();
        let count = rules.rules.len();
        FaultPlan {
            seed,
            rules: rules.rules,
            state: Mutex::new(State {
                rng: ChaCha8Rng::seed_from_u64(seed),
                left,
                fired: vec![0; count],
            }),
        }
    }

    /// The seed the draws come from (to repeat a run).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The armed rules.
    pub fn rules(&self) -> &[FaultRule] {
        &self.rules
    }

    /// How many times each rule has fired, in rule order.
    pub fn fired_counts(&self) -> Vec<u64> {
        self.lock().fired.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated in a way that
        // matters (counters and a generator): keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the request `target` describes gets.
    pub fn decide(&self, target: &Target<'_>) -> Injection {
        let mut injection = Injection::none();
        if self.rules.is_empty() {
            return injection;
        }
        let mut state = self.lock();
        for (i, rule) in self.rules.iter().enumerate() {
            if !rule.matcher.matches(target) {
                continue;
            }
            if matches!(rule.effect, Effect::BatchFailAt(..)) && !target.batch {
                continue;
            }
            let fires = match rule.trigger {
                Trigger::Next(_) => {
                    if state.left[i] == 0 {
                        false
                    } else {
                        state.left[i] -= 1;
                        true
                    }
                }
                Trigger::Probability(p) if p >= 1.0 => true,
                Trigger::Probability(p) => state.rng.random::<f64>() < p,
            };
            if !fires {
                continue;
            }
            state.fired[i] += 1;
            if let Some(delay) = rule.delay {
                injection.delay += sample(delay, &mut state.rng);
            }
            let (kind, outcome) = match rule.effect {
                Effect::Latency => ("latency", None),
                Effect::Error(code) => ("error", Some(Outcome::Fail(code))),
                Effect::BatchFailAt(at, code) => ("batch", Some(Outcome::FailBatchAt(at, code))),
                Effect::Drop(point) => ("drop", Some(Outcome::Drop(point))),
            };
            injection.fired.push(Fired {
                rule: rule.name.clone(),
                kind,
            });
            if let Some(outcome) = outcome {
                injection.outcome = outcome;
                break;
            }
        }
        injection
    }
}

/// One draw of a latency.
fn sample(delay: Delay, rng: &mut ChaCha8Rng) -> Duration {
    let secs = match delay {
        Delay::Fixed(d) => return d,
        Delay::Uniform(lo, hi) if lo == hi => return lo,
        Delay::Uniform(lo, hi) => rng.random_range(lo.as_secs_f64()..=hi.as_secs_f64()),
        Delay::Exponential(mean) if mean.is_zero() => 0.0,
        Delay::Exponential(mean) => Exp::new(1.0 / mean.as_secs_f64())
            .map(|d| d.sample(rng))
            .unwrap_or(0.0),
        Delay::Normal(mean, sd) => Normal::new(mean.as_secs_f64(), sd.as_secs_f64())
            .map(|d| d.sample(rng))
            .unwrap_or(mean.as_secs_f64()),
    };
    Duration::from_secs_f64(secs.clamp(0.0, 3600.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPS: &[&str] = &["InsertEntity", "QueryEntities", "EntityGroupTransaction"];

    fn plan(json: &str, seed: u64) -> FaultPlan {
        FaultPlan::new(FaultRules::from_json(json, OPS).unwrap(), seed)
    }

    fn insert(pk: &str) -> Target<'_> {
        Target {
            account: "a",
            table: Some("t"),
            operation: "InsertEntity",
            partition_key: Some(pk),
            entities: 1,
            batch: false,
        }
    }

    fn outcomes(plan: &FaultPlan, n: usize) -> Vec<Outcome> {
        (0..n).map(|_| plan.decide(&insert("p")).outcome).collect()
    }

    #[test]
    fn the_same_seed_gives_the_same_faults_and_another_seed_others() {
        let rules = r#"{"rules": [{"error": "ServerBusy", "probability": 0.3},
                                  {"latencyMs": {"uniform": [0, 50]}, "probability": 0.5}]}"#;
        let a = outcomes(&plan(rules, 42), 200);
        let b = outcomes(&plan(rules, 42), 200);
        let c = outcomes(&plan(rules, 43), 200);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let busy = a
            .iter()
            .filter(|o| **o == Outcome::Fail(ErrorCode::ServerBusy))
            .count();
        assert!((30..=90).contains(&busy), "{busy} of 200 at p = 0.3");
        let delays = |p: &FaultPlan| {
            (0..50)
                .map(|_| p.decide(&insert("p")).delay)
                .collect::<Vec<_>>()
        };
        assert_eq!(delays(&plan(rules, 7)), delays(&plan(rules, 7)));
    }

    #[test]
    fn a_seed_in_the_rules_wins_over_the_default() {
        let rules = r#"{"seed": 5, "rules": [{"error": "ServerBusy", "probability": 0.5}]}"#;
        assert_eq!(plan(rules, 1).seed(), 5);
        assert_eq!(
            outcomes(&plan(rules, 1), 100),
            outcomes(&plan(rules, 2), 100)
        );
    }

    #[test]
    fn next_n_fires_exactly_n_times() {
        let p = plan(r#"{"rules": [{"error": "InternalError", "next": 3}]}"#, 0);
        let got = outcomes(&p, 10);
        assert_eq!(
            got.iter()
                .filter(|o| **o == Outcome::Fail(ErrorCode::InternalError))
                .count(),
            3
        );
        assert_eq!(
            got[..3].to_vec(),
            vec![Outcome::Fail(ErrorCode::InternalError); 3]
        );
        assert_eq!(p.fired_counts(), vec![3]);
    }

    #[test]
    fn latencies_add_up_and_the_first_outcome_wins() {
        let p = plan(
            r#"{"rules": [{"latencyMs": 10}, {"latencyMs": 5, "drop": "afterWrite", "next": 1},
                          {"error": "ServerBusy", "next": 1}]}"#,
            0,
        );
        let first = p.decide(&insert("p"));
        assert_eq!(first.delay, Duration::from_millis(15));
        assert_eq!(first.outcome, Outcome::Drop(DropPoint::AfterWrite));
        assert_eq!(
            first.fired.iter().map(|f| f.kind).collect::<Vec<_>>(),
            ["latency", "drop"]
        );
        // The error rule was not tried the first time: its one shot is still there.
        let second = p.decide(&insert("p"));
        assert_eq!(second.outcome, Outcome::Fail(ErrorCode::ServerBusy));
        assert_eq!(p.decide(&insert("p")).outcome, Outcome::Proceed);
    }

    #[test]
    fn batch_failures_touch_batches_only_and_matchers_are_respected() {
        let p = plan(
            r#"{"rules": [{"batchFailAt": 2, "error": "ServerBusy"},
                          {"partitionKeyPrefix": "hot", "error": "OperationTimedOut"}]}"#,
            0,
        );
        assert_eq!(p.decide(&insert("cold")).outcome, Outcome::Proceed);
        assert_eq!(
            p.decide(&insert("hot1")).outcome,
            Outcome::Fail(ErrorCode::OperationTimedOut)
        );
        let batch = Target {
            operation: "EntityGroupTransaction",
            batch: true,
            entities: 5,
            ..insert("cold")
        };
        assert_eq!(
            p.decide(&batch).outcome,
            Outcome::FailBatchAt(2, ErrorCode::ServerBusy)
        );
    }

    #[test]
    fn latency_shapes_stay_in_range() {
        let p = plan(r#"{"rules": [{"latencyMs": {"uniform": [10, 20]}}]}"#, 3);
        for _ in 0..100 {
            let d = p.decide(&insert("p")).delay;
            assert!(
                d >= Duration::from_millis(10) && d <= Duration::from_millis(20),
                "{d:?}"
            );
        }
        let p = plan(r#"{"rules": [{"latencyMs": {"normal": [1, 50]}}]}"#, 3);
        let mean = plan(r#"{"rules": [{"latencyMs": {"exponential": 20}}]}"#, 3);
        let total: Duration = (0..2000).map(|_| mean.decide(&insert("p")).delay).sum();
        let avg = total.as_secs_f64() / 2000.0 * 1000.0;
        assert!(
            (15.0..25.0).contains(&avg),
            "exponential mean {avg} ms for 20 ms"
        );
        for _ in 0..100 {
            // Never negative, even when the normal draw is.
            let _ = p.decide(&insert("p")).delay;
        }
    }
}
