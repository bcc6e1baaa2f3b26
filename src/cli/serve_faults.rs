//! `tableq serve --throttle…` and `--faults FILE`: the Table service's scalability targets
//! emulated, and fault rules armed at start (both off by default; see the server's
//! `tableq_server::faults`).
//!
//! * `--throttle` enforces the service's targets — 2 000 entities per second per partition,
//!   20 000 per account — with token buckets: beyond them a request gets 503 `ServerBusy`,
//!   and a request that runs past its `timeout` query parameter 500 `OperationTimedOut`.
//!   `--throttle-partition N` and `--throttle-account N` change a limit (and imply
//!   `--throttle`).
//! * `--faults FILE` arms the JSON rules of FILE (a bad file stops the start with the rule
//!   and its problem, exit 2); `--fault-seed N` seeds their draws (default: one drawn at
//!   start, printed in the banner, so a run can be repeated). The rules can be replaced at
//!   run time with `PUT /{account}/?restype=tableq&comp=faults`.

use std::path::PathBuf;
use tableq_server::config::Limits;

/// The throttling and fault flags of `tableq serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FaultArgs {
    /// Emulate the Table service's scalability targets: beyond 2 000 entities/s in a
    /// partition or 20 000 in the account a request gets 503 ServerBusy; past its
    /// `timeout` parameter, 500 OperationTimedOut.
    #[arg(long)]
    pub throttle: bool,
    /// The entities per second of one partition under --throttle (implies it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub throttle_partition: Option<u32>,
    /// The entities per second of the account under --throttle (implies it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub throttle_account: Option<u32>,
    /// Inject faults by the JSON rules of FILE (errors, latency, a batch failing at an
    /// index, dropped connections); replaceable at run time through
    /// PUT /{account}/?restype=tableq&comp=faults.
    #[arg(long, value_name = "FILE")]
    pub faults: Option<PathBuf>,
    /// The seed of the faults' random draws [default: drawn at start, printed in the
    /// banner].
    #[arg(long, value_name = "N")]
    pub fault_seed: Option<u64>,
}

/// What the flags ask for: the throttle's limits, the rules' JSON, the seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Faults {
    /// The limits, when throttling is on.
    pub throttle: Option<Limits>,
    /// The rules' JSON, checked.
    pub rules: Option<String>,
    /// The seed (given or drawn).
    pub seed: u64,
}

impl FaultArgs {
    /// Reads and checks the rules file; the error names the file and the problem.
    pub fn resolve(&self) -> Result<Faults, String> {
        let throttle =
            (self.throttle || self.throttle_partition.is_some() || self.throttle_account.is_some())
                .then(|| {
                    let defaults = Limits::default();
                    Limits {
                        partition: self.throttle_partition.unwrap_or(defaults.partition),
                        account: self.throttle_account.unwrap_or(defaults.account),
                    }
                });
        let rules = match &self.faults {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("--faults {}: {e}", path.display()))?;
                tableq_server::faults::check_rules(&text)
                    .map_err(|e| format!("--faults {}: {e}", path.display()))?;
                Some(text)
            }
        };
        let seed = self
            .fault_seed
            .unwrap_or_else(|| uuid::Uuid::new_v4().as_u64_pair().0);
        Ok(Faults {
            throttle,
            rules,
            seed,
        })
    }
}

/// The banner's lines about throttling and faults (empty when no flag of theirs was given:
/// the banner of a plain start stays as it was; the seed is then in
/// `GET /{account}/?restype=tableq&comp=faults`).
pub fn banner_lines(args: &FaultArgs, faults: &Faults) -> String {
    let mut line = String::new();
    if faults.throttle.is_none() && faults.rules.is_none() && args.fault_seed.is_none() {
        return line;
    }
    if let Some(l) = faults.throttle {
        line.push_str(&format!(
            "throttle: {} entities/s per partition, {} per account (503 ServerBusy beyond)\n",
            l.partition, l.account
        ));
    }
    line.push_str(&format!(
        "faults: {}; seed {} (repeat a run with --fault-seed {})\n",
        if faults.rules.is_some() {
            "rules armed"
        } else {
            "no rules (PUT /{account}/?restype=tableq&comp=faults arms some)"
        },
        faults.seed,
        faults.seed
    ));
    line
}
