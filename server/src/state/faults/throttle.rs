//! [`Throttle`]: the Table service's scalability targets as token buckets.
//!
//! The service answers 503 `ServerBusy` when one partition takes more than about 2 000
//! entities per second, or an account more than about 20 000 (Azure's published
//! scalability targets for tables). Here every partition (account, table, PartitionKey —
//! the table's name compared case-insensitively) and every account has a bucket that
//! refills continuously at its limit and holds one second of it. A request costs its
//! entity count ([`Target::entities`]) and is admitted when both buckets it draws on hold
//! that much (or are full, for a batch larger than a partition's whole second); otherwise
//! it is refused whole and takes nothing, as the service refuses a request it sheds. A
//! request without a single PartitionKey (a query across partitions, a table operation)
//! draws on its account's bucket only.
//!
//! Buckets of partitions not seen for a while are forgotten (a full bucket is the same as
//! none), so the map stays small however many partitions a test touches.

use super::target::Target;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The limits, in entities per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Per partition (the service's target: 2 000).
    pub partition: u32,
    /// Per account (the service's target: 20 000).
    pub account: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            partition: 2_000,
            account: 20_000,
        }
    }
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// The partition's.
    Partition,
    /// The account's.
    Account,
}

impl Busy {
    /// The service's message for it (the first line of the error's message).
    pub fn message(self) -> &'static str {
        match self {
            Busy::Partition => "The server is busy.",
            Busy::Account => "Operations per second is over the account limit.",
        }
    }
}

/// Buckets kept before the full ones are forgotten.
const KEEP: usize = 65_536;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Tokens at `now`, refilled at `rate` per second up to `rate`.
    fn level(&self, rate: f64, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * rate).min(rate)
    }
}

/// Token buckets per partition and per account (see the module docs).
#[derive(Debug)]
pub struct Throttle {
    limits: Limits,
    buckets: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    partitions: HashMap<(String, String, String), Bucket>,
    accounts: HashMap<String, Bucket>,
}

impl Throttle {
    /// Buckets with these limits (each at least 1 per second).
    pub fn new(limits: Limits) -> Throttle {
        Throttle {
            limits: Limits {
                partition: limits.partition.max(1),
                account: limits.account.max(1),
            },
            buckets: Mutex::new(Buckets::default()),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Admits the request `target` describes at `now`, or says which limit refuses it.
    pub fn admit(&self, target: &Target<'_>, now: Instant) -> Result<(), Busy> {
        let cost = f64::from(target.entities.max(1));
        let partition_rate = f64::from(self.limits.partition);
        let account_rate = f64::from(self.limits.account);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = |rate: f64| Bucket {
            tokens: rate,
            at: now,
        };
        let account = buckets
            .accounts
            .get(target.account)
            .copied()
            .unwrap_or(fresh(account_rate));
        let account_level = account.level(account_rate, now);
        if account_level < cost.min(account_rate) {
            return Err(Busy::Account);
        }
        let partition_key = target.partition_key.map(|pk| {
            (
                target.account.to_owned(),
                target.table.unwrap_or("").to_ascii_lowercase(),
                pk.to_owned(),
            )
        });
        if let Some(key) = &partition_key {
            let bucket = buckets
                .partitions
                .get(key)
                .copied()
                .unwrap_or(fresh(partition_rate));
            let level = bucket.level(partition_rate, now);
            if level < cost.min(partition_rate) {
                return Err(Busy::Partition);
            }
            if buckets.partitions.len() >= KEEP && !buckets.partitions.contains_key(key) {
                let rate = partition_rate;
                buckets.partitions.retain(|_, b| b.level(rate, now) < rate);
            }
            buckets.partitions.insert(
                key.clone(),
                Bucket {
                    tokens: level - cost,
                    at: now,
                },
            );
        }
        if buckets.accounts.len() >= KEEP && !buckets.accounts.contains_key(target.account) {
            buckets
                .accounts
                .retain(|_, b| b.level(account_rate, now) < account_rate);
        }
        buckets.accounts.insert(
            target.account.to_owned(),
            Bucket {
                tokens: account_level - cost,
                at: now,
            },
        );
        Ok(())
    }

    /// How long until a partition's bucket holds `entities` again (for a `Retry-After`
    /// hint); zero when it already does.
    pub fn wait_hint(&self, entities: u32) -> Duration {
        Duration::from_secs_f64(f64::from(entities.max(1)) / f64::from(self.limits.partition))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on<'a>(account: &'a str, pk: Option<&'a str>, entities: u32) -> Target<'a> {
        Target {
            account,
            table: Some("T"),
            operation: "InsertEntity",
            partition_key: pk,
            entities,
            batch: entities > 1,
        }
    }

    /// Offers `per_second` requests a second, evenly, for `seconds`: how many pass.
    fn offer(
        t: &Throttle,
        target: Target<'_>,
        per_second: u32,
        seconds: u32,
        start: Instant,
    ) -> u32 {
        let step = Duration::from_secs(1) / per_second;
        (0..per_second * seconds)
            .filter(|i| t.admit(&target, start + step * *i).is_ok())
            .count() as u32
    }

    #[test]
    fn below_the_partition_limit_nothing_is_refused() {
        let t = Throttle::new(Limits {
            partition: 100,
            account: 10_000,
        });
        let start = Instant::now();
        assert_eq!(offer(&t, on("a", Some("p"), 1), 95, 10, start), 950);
    }

    #[test]
    fn above_the_partition_limit_the_partition_gets_its_rate_and_no_more() {
        let t = Throttle::new(Limits {
            partition: 100,
            account: 10_000,
        });
        let start = Instant::now();
        let passed = offer(&t, on("a", Some("p"), 1), 400, 10, start);
        // 10 s at 100/s plus the one-second burst it starts with.
        assert!((1_090..=1_110).contains(&passed), "{passed} passed");
        // Another partition of the same table is not affected.
        assert!(
            t.admit(&on("a", Some("q"), 1), start + Duration::from_secs(10))
                .is_ok()
        );
        let at = start + Duration::from_secs(10);
        let again = (0..10)
            .filter(|_| t.admit(&on("a", Some("p"), 1), at).is_ok())
            .count();
        assert!(
            again <= 1,
            "{again} of 10 passed at once on a drained partition"
        );
        assert_eq!(t.admit(&on("a", Some("p"), 1), at), Err(Busy::Partition));
    }

    #[test]
    fn the_account_limit_spans_partitions() {
        let t = Throttle::new(Limits {
            partition: 1_000,
            account: 50,
        });
        let now = Instant::now();
        let passed = (0..200)
            .filter(|i| t.admit(&on("a", Some(&format!("p{i}")), 1), now).is_ok())
            .count();
        assert_eq!(passed, 50);
        assert_eq!(t.admit(&on("a", None, 1), now), Err(Busy::Account));
        assert!(
            t.admit(&on("b", None, 1), now).is_ok(),
            "another account has its own"
        );
        assert!(
            t.admit(&on("a", None, 1), now + Duration::from_millis(40))
                .is_ok()
        );
    }

    #[test]
    fn a_batch_costs_its_entities_and_a_refused_request_costs_nothing() {
        let t = Throttle::new(Limits {
            partition: 100,
            account: 10_000,
        });
        let now = Instant::now();
        assert!(t.admit(&on("a", Some("p"), 60), now).is_ok());
        assert_eq!(t.admit(&on("a", Some("p"), 60), now), Err(Busy::Partition));
        // The refused 60 took nothing: 40 are still there.
        assert!(t.admit(&on("a", Some("p"), 40), now).is_ok());
        // A batch larger than a whole second passes on a full bucket, then waits it off.
        let later = now + Duration::from_secs(5);
        assert!(t.admit(&on("a", Some("p"), 150), later).is_ok());
        assert_eq!(
            t.admit(&on("a", Some("p"), 1), later + Duration::from_millis(400)),
            Err(Busy::Partition)
        );
        assert!(
            t.admit(&on("a", Some("p"), 1), later + Duration::from_millis(600))
                .is_ok()
        );
    }

    #[test]
    fn table_names_compare_case_insensitively_and_old_buckets_are_forgotten() {
        let t = Throttle::new(Limits {
            partition: 1,
            account: 1_000_000,
        });
        let now = Instant::now();
        assert!(t.admit(&on("a", Some("p"), 1), now).is_ok());
        let lower = Target {
            table: Some("t"),
            ..on("a", Some("p"), 1)
        };
        assert_eq!(t.admit(&lower, now), Err(Busy::Partition));
        for i in 0..(KEEP + 10) {
            let pk = i.to_string();
            let _ = t.admit(&on("a", Some(&pk), 1), now + Duration::from_secs(10));
        }
        let kept = t.buckets.lock().unwrap().partitions.len();
        assert!(kept <= KEEP + 10, "{kept} buckets kept");
    }
}
