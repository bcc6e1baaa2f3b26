//! [`Faults`]: a running server's throttle and armed fault plan — what the routing layer
//! asks once per request, and what the administrative endpoint
//! (`…?restype=tableq&comp=faults`) replaces, reads and clears at run time.

use super::plan::FaultPlan;
use super::rules::{FaultRuleError, FaultRules};
use super::throttle::{Limits, Throttle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::state::metrics::Operation;

/// Parses and checks a rule set against the operation names the request log uses (what
/// `--faults FILE` and the administrative endpoint accept).
pub fn check_rules(json: &str) -> Result<FaultRules, FaultRuleError> {
    FaultRules::from_json(json, &Operation::names())
}

/// A server's throttle (when the scalability targets are emulated) and its fault plan.
#[derive(Debug)]
pub struct Faults {
    throttle: Option<Throttle>,
    /// The seed of a rule set that names none (`--fault-seed`, else drawn at start).
    seed: u64,
    armed: RwLock<Armed>,
    /// Whether any rule is armed (read on every request without a lock).
    any: AtomicBool,
}

/// The armed plan and the JSON it was written as.
#[derive(Debug)]
struct Armed {
    plan: Arc<FaultPlan>,
    json: Option<String>,
}

/// What `GET …?restype=tableq&comp=faults` reports.
#[derive(Debug, Clone)]
pub struct FaultsReport {
    /// The rules as last set (JSON), or `None` when no rules are armed.
    pub rules: Option<String>,
    /// The seed the plan draws from.
    pub seed: u64,
    /// Each rule's name and how many times it fired.
    pub fired: Vec<(String, u64)>,
    /// The throttle's limits, when throttling is on.
    pub throttle: Option<Limits>,
}

impl Default for Faults {
    /// No throttle, no rules.
    fn default() -> Faults {
        Faults {
            throttle: None,
            seed: 0,
            armed: RwLock::new(Armed {
                plan: Arc::new(FaultPlan::new(FaultRules::default(), 0)),
                json: None,
            }),
            any: AtomicBool::new(false),
        }
    }
}

impl Faults {
    /// A throttle with `limits` (if any) and the rules `json` (if any) drawn from `seed`.
    pub fn new(
        limits: Option<Limits>,
        json: Option<&str>,
        seed: u64,
    ) -> Result<Faults, FaultRuleError> {
        let faults = Faults {
            throttle: limits.map(Throttle::new),
            seed,
            ..Faults::default()
        };
        if let Some(json) = json {
            faults.set(json)?;
        }
        Ok(faults)
    }

    /// The throttle, when the scalability targets are emulated.
    pub fn throttle(&self) -> Option<&Throttle> {
        self.throttle.as_ref()
    }

    /// The armed plan, or `None` when no rule is armed.
    pub fn plan(&self) -> Option<Arc<FaultPlan>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        Some(self.read().plan.clone())
    }

    /// Replaces the rules by `json` (checked first; a bad rule set changes nothing). The
    /// plan starts afresh from its seed.
    pub fn set(&self, json: &str) -> Result<(), FaultRuleError> {
        let rules = check_rules(json)?;
        let any = !rules.rules.is_empty();
        let mut armed = self.armed.write().unwrap_or_else(PoisonError::into_inner);
        *armed = Armed {
            plan: Arc::new(FaultPlan::new(rules, self.seed)),
            json: Some(json.to_owned()),
        };
        self.any.store(any, Ordering::Release);
        Ok(())
    }

    /// Removes every rule.
    pub fn clear(&self) {
        let mut armed = self.armed.write().unwrap_or_else(PoisonError::into_inner);
        *armed = Armed {
            plan: Arc::new(FaultPlan::new(FaultRules::default(), self.seed)),
            json: None,
        };
        self.any.store(false, Ordering::Release);
    }

    /// The rules, seed and fired counts.
    pub fn report(&self) -> FaultsReport {
        let armed = self.read();
        let counts = armed.plan.fired_counts();
        FaultsReport {
            rules: armed.json.clone(),
            seed: armed.plan.seed(),
            fired: armed
                .plan
                .rules()
                .iter()
                .zip(counts)
                .map(|(r, n)| (r.name.clone(), n))
                .collect(),
            throttle: self.throttle.as_ref().map(Throttle::limits),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Armed> {
        self.armed.read().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_set_reported_and_cleared() {
        let faults = Faults::new(None, None, 7).unwrap();
        assert!(faults.plan().is_none());
        let bad = faults.set(r#"{"rules":[{"operation":"Nope","error":"ServerBusy"}]}"#);
        assert!(bad.is_err());
        assert!(faults.plan().is_none());
        let json = r#"{"rules":[{"name":"busy","operation":"InsertEntity","error":"ServerBusy","next":2}]}"#;
        faults.set(json).unwrap();
        assert!(faults.plan().is_some());
        let report = faults.report();
        assert_eq!(report.rules.as_deref(), Some(json));
        assert_eq!(report.seed, 7);
        assert_eq!(report.fired, vec![("busy".to_owned(), 0)]);
        faults.clear();
        assert!(faults.plan().is_none());
        assert!(faults.report().rules.is_none());
    }
}
