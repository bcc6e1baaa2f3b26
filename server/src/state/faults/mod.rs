//! Failures on purpose: the Table service's scalability targets (throttling) and injected
//! faults, for the test suites people run against tableq (issue 30).
//!
//! This module owns the *decisions* only — which request is throttled, which fault a
//! request gets — as plain data; it knows nothing of HTTP, the router or the store. The
//! routing layer asks it once per request with a [`Target`] (account, table, operation,
//! PartitionKey, entity count) and carries out the answer:
//!
//! * [`Throttle`]: token buckets per partition (account, table, PartitionKey) and per
//!   account, refilled continuously at the configured entities per second with one second
//!   of burst; a request that finds either bucket short is refused whole with the service's
//!   503 `ServerBusy` ([`Busy`] says which limit), and consumes nothing.
//! * [`FaultPlan`]: an ordered list of [`FaultRule`]s (match → effect, with a probability or
//!   "the next N"), drawn from one seeded random generator so that the same seed and the
//!   same sequence of requests give the same faults. The answer is an [`Injection`]: a delay
//!   to add and an [`Outcome`] — proceed, fail with a service error, fail a batch at an
//!   index, or drop the connection before or after the write.
//!
//! [`Faults`] holds a running server's throttle and armed plan, which the administrative
//! endpoint replaces at run time.
//!
//! Rules are JSON (`--faults FILE` at start, `PUT …?restype=tableq&comp=faults` at run
//! time); see [`FaultRules::from_json`] for the format.

mod live;
mod plan;
mod rules;
mod target;
mod throttle;

pub use live::{Faults, FaultsReport, check_rules};
pub use plan::{FaultPlan, Fired, Injection, Outcome};
pub use rules::{
    Delay, DropPoint, Effect, FaultRule, FaultRuleError, FaultRules, Matcher, Trigger,
};
pub use target::Target;
pub use throttle::{Busy, Limits, Throttle};
