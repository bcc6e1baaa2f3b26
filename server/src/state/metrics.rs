//! [`Metrics`]: the server's Prometheus metrics (the `prometheus-client` crate, OpenMetrics
//! text), and the encoding of `GET /metrics` — the server's own metrics, then what each
//! account's store reports through [`Backend::metrics`](tableq_store::Backend::metrics)
//! (named `tableq_store_<name>` with an `account` label).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `tableq_requests_total` | counter | `operation`, `status` |
//! | `tableq_request_duration_seconds` | histogram | `operation` |
//! | `tableq_connections_open` | gauge | |
//! | `tableq_connections_accepted_total` | counter | |
//! | `tableq_connections_closed_total` | counter | `reason` |
//! | `tableq_connection_cap` | gauge | |
//! | `tableq_body_bytes_in_flight` | gauge | |
//! | `tableq_body_budget_bytes` | gauge | |
//! | `tableq_body_budget_rejections_total` | counter | |
//! | `tableq_body_timeouts_total` | counter | |
//! | `tableq_faults_injected_total` | counter | `kind` (`latency`, `error`, `batch`, `drop`) |
//! | `tableq_throttled_total` | counter | `scope` (`partition`, `account`) |
//!
//! Also the labels: the service's operations ([`Operation`], as the metrics and the request
//! log name them) and why the server closed a connection ([`CloseReason`]).
//!
//! Recording a request costs two hash lookups under read locks and a few atomic additions
//! (see `benches/README.md` for the measured cost of a point get).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::OnceLock;
use std::time::Duration;
use tableq_store::metrics::{SampleValue, StoreMetrics};

/// The Table service's operations, as the metrics and the log name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    QueryTables,
    CreateTable,
    DeleteTable,
    EntityGroupTransaction,
    QueryEntities,
    InsertEntity,
    GetEntity,
    DeleteEntity,
    UpdateEntity,
    InsertOrReplaceEntity,
    MergeEntity,
    InsertOrMergeEntity,
    GetTableServiceProperties,
    SetTableServiceProperties,
    GetTableServiceStats,
    GetTableAcl,
    SetTableAcl,
    /// A CORS preflight (`OPTIONS`).
    Preflight,
    /// Anything else: an unknown path or method, a request refused before its operation
    /// was known.
    Other,
}

impl Operation {
    /// How many operations there are.
    pub(crate) const COUNT: usize = 19;

    /// Every operation, in declaration order.
    pub(crate) const ALL: [Operation; Operation::COUNT] = [
        Operation::QueryTables,
        Operation::CreateTable,
        Operation::DeleteTable,
        Operation::EntityGroupTransaction,
        Operation::QueryEntities,
        Operation::InsertEntity,
        Operation::GetEntity,
        Operation::DeleteEntity,
        Operation::UpdateEntity,
        Operation::InsertOrReplaceEntity,
        Operation::MergeEntity,
        Operation::InsertOrMergeEntity,
        Operation::GetTableServiceProperties,
        Operation::SetTableServiceProperties,
        Operation::GetTableServiceStats,
        Operation::GetTableAcl,
        Operation::SetTableAcl,
        Operation::Preflight,
        Operation::Other,
    ];

    /// The names of every operation (what fault rules may name).
    pub(crate) fn names() -> Vec<&'static str> {
        Operation::ALL.iter().map(|o| o.name()).collect()
    }

    /// The service's name of the operation.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Operation::QueryTables => "QueryTables",
            Operation::CreateTable => "CreateTable",
            Operation::DeleteTable => "DeleteTable",
            Operation::EntityGroupTransaction => "EntityGroupTransaction",
            Operation::QueryEntities => "QueryEntities",
            Operation::InsertEntity => "InsertEntity",
            Operation::GetEntity => "GetEntity",
            Operation::DeleteEntity => "DeleteEntity",
            Operation::UpdateEntity => "UpdateEntity",
            Operation::InsertOrReplaceEntity => "InsertOrReplaceEntity",
            Operation::MergeEntity => "MergeEntity",
            Operation::InsertOrMergeEntity => "InsertOrMergeEntity",
            Operation::GetTableServiceProperties => "GetTableServiceProperties",
            Operation::SetTableServiceProperties => "SetTableServiceProperties",
            Operation::GetTableServiceStats => "GetTableServiceStats",
            Operation::GetTableAcl => "GetTableAcl",
            Operation::SetTableAcl => "SetTableAcl",
            Operation::Preflight => "Preflight",
            Operation::Other => "Other",
        }
    }
}

/// Why a connection was closed by the server (a label of the closed-connections metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// Not closed by the server.
    None = 0,
    /// A request header took longer than `header_timeout`.
    HeaderTimeout = 1,
    /// A keep-alive connection stayed idle longer than `idle_timeout`.
    IdleTimeout = 2,
    /// The client took no byte of a response for `body_timeout`.
    WriteTimeout = 3,
    /// Closed to make room for a new connection at the cap.
    Evicted = 4,
    /// Still open when the shutdown grace period ended.
    Shutdown = 5,
}

impl CloseReason {
    /// The reason stored as `v` (`CloseReason as u8`).
    pub(crate) fn from_u8(v: u8) -> CloseReason {
        match v {
            1 => CloseReason::HeaderTimeout,
            2 => CloseReason::IdleTimeout,
            3 => CloseReason::WriteTimeout,
            4 => CloseReason::Evicted,
            5 => CloseReason::Shutdown,
            _ => CloseReason::None,
        }
    }

    /// The metric label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            CloseReason::None => "client_or_done",
            CloseReason::HeaderTimeout => "header_timeout",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::WriteTimeout => "write_timeout",
            CloseReason::Evicted => "evicted",
            CloseReason::Shutdown => "shutdown",
        }
    }
}

/// The upper bounds of the request-duration buckets, in seconds (100 µs … 30 s).
const DURATION_BUCKETS: [f64; 17] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// The content type of `GET /metrics`.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    operation: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScopeLabels {
    scope: &'static str,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The statuses whose counters are kept at hand per operation (any other goes through the
/// family's lookup).
const USUAL_STATUSES: [u16; 18] = [
    200, 201, 202, 204, 304, 400, 403, 404, 405, 408, 409, 412, 413, 415, 416, 500, 501, 503,
];

/// One operation's series, looked up in the families once and kept: recording a request is
/// then a few atomic operations, not two hashed lookups under locks.
#[derive(Default)]
struct Handles {
    duration: OnceLock<Histogram>,
    statuses: [OnceLock<Counter>; USUAL_STATUSES.len()],
}

/// The server's metrics (see the module docs).
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<OperationLabels, Histogram, fn() -> Histogram>,
    handles: [Handles; Operation::COUNT],
    /// Open connections.
    pub connections_open: Gauge,
    /// Connections accepted since start.
    pub connections_accepted: Counter,
    closed: Family<ReasonLabels, Counter>,
    /// The connection cap in force.
    pub connection_cap: Gauge,
    /// Request-body bytes reserved in the budget now.
    pub body_in_flight: Gauge,
    /// The body budget.
    pub body_budget: Gauge,
    /// Requests refused because the body budget stayed full.
    pub body_rejections: Counter,
    /// Requests whose body stopped arriving, or was not complete by the request's deadline.
    pub body_timeouts: Counter,
    faults: Family<KindLabels, Counter>,
    throttled: Family<ScopeLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("tableq");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests answered, by operation and HTTP status",
            requests.clone(),
        );
        let durations =
            Family::<OperationLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
        registry.register(
            "request_duration_seconds",
            "Time from the request's header to its response, by operation",
            durations.clone(),
        );
        let connections_open = Gauge::default();
        registry.register(
            "connections_open",
            "Client connections open now",
            connections_open.clone(),
        );
        let connections_accepted = Counter::default();
        registry.register(
            "connections_accepted",
            "Client connections accepted",
            connections_accepted.clone(),
        );
        let closed = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "connections_closed",
            "Client connections closed, by who closed them and why (client_or_done: the client \
             closed it, or the server after a response that ends it)",
            closed.clone(),
        );
        let connection_cap = Gauge::default();
        registry.register(
            "connection_cap",
            "The most client connections open at once",
            connection_cap.clone(),
        );
        let body_in_flight = Gauge::default();
        registry.register(
            "body_bytes_in_flight",
            "Request-body bytes reserved in the in-flight body budget now",
            body_in_flight.clone(),
        );
        let body_budget = Gauge::default();
        registry.register(
            "body_budget_bytes",
            "The in-flight request-body budget",
            body_budget.clone(),
        );
        let body_rejections = Counter::default();
        registry.register(
            "body_budget_rejections",
            "Requests answered 503 ServerBusy because the body budget stayed full",
            body_rejections.clone(),
        );
        let body_timeouts = Counter::default();
        registry.register(
            "body_timeouts",
            "Requests answered 408 because their body stopped arriving or was not complete by \
             the request timeout",
            body_timeouts.clone(),
        );
        let faults = Family::<KindLabels, Counter>::default();
        registry.register(
            "faults_injected",
            "Faults injected by the fault rules, by kind (latency, error, batch, drop)",
            faults.clone(),
        );
        let throttled = Family::<ScopeLabels, Counter>::default();
        registry.register(
            "throttled",
            "Requests answered 503 ServerBusy by the throttling emulation, by the limit that \
             refused them (partition, account)",
            throttled.clone(),
        );
        Metrics {
            registry,
            requests,
            durations,
            handles: Default::default(),
            connections_open,
            connections_accepted,
            closed,
            connection_cap,
            body_in_flight,
            body_budget,
            body_rejections,
            body_timeouts,
            faults,
            throttled,
        }
    }

    /// Records a fault injected on a request (`kind`: `latency`, `error`, `batch`, `drop`).
    pub(crate) fn fault(&self, kind: &'static str) {
        self.faults.get_or_create(&KindLabels { kind }).inc();
    }

    /// Records a request the throttling emulation refused (`scope`: `partition`,
    /// `account`).
    pub(crate) fn throttled(&self, scope: &'static str) {
        self.throttled.get_or_create(&ScopeLabels { scope }).inc();
    }

    /// Records one answered request.
    pub(crate) fn request(&self, operation: Operation, status: u16, took: Duration) {
        let name = operation.name();
        let handles = &self.handles[operation as usize];
        let labels = || RequestLabels {
            operation: name,
            status,
        };
        match USUAL_STATUSES.iter().position(|s| *s == status) {
            Some(i) => {
                handles.statuses[i]
                    .get_or_init(|| self.requests.get_or_create_owned(&labels()))
                    .inc();
            }
            None => {
                self.requests.get_or_create(&labels()).inc();
            }
        }
        handles
            .duration
            .get_or_init(|| {
                self.durations
                    .get_or_create_owned(&OperationLabels { operation: name })
            })
            .observe(took.as_secs_f64());
    }

    /// Records a closed connection.
    pub(crate) fn closed(&self, reason: CloseReason) {
        self.closed
            .get_or_create(&ReasonLabels {
                reason: reason.label(),
            })
            .inc();
    }

    /// The text of `GET /metrics`: the server's metrics, then each store's
    /// (`stores`: account name and what its store reported).
    pub(crate) fn encode(
        &self,
        stores: Vec<(String, StoreMetrics)>,
    ) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode_registry(&mut out, &self.registry)?;
        let mut store_registry = Registry::with_prefix("tableq_store");
        store_registry.register_collector(Box::new(StoreCollector { stores }));
        prometheus_client::encoding::text::encode_registry(&mut out, &store_registry)?;
        prometheus_client::encoding::text::encode_eof(&mut out)?;
        Ok(out)
    }
}

/// What the stores reported at one scrape, encoded as metric families with an `account`
/// label (one family per name, in the order of first appearance).
#[derive(Debug)]
struct StoreCollector {
    stores: Vec<(String, StoreMetrics)>,
}

/// A valid metric name: ASCII letters, digits and `_`, not starting with a digit.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Collector for StoreCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut names: Vec<(&'static str, &'static str, Kind)> = Vec::new();
        for (_, report) in &self.stores {
            for s in report.samples() {
                if valid_name(s.name) && !names.iter().any(|(n, _, _)| *n == s.name) {
                    names.push((s.name, s.help, Kind::of(&s.value)));
                }
            }
        }
        for (name, help, kind) in names {
            // A counter's name is given without `_total` (the encoder appends it).
            let bare = match kind {
                Kind::Counter => name.strip_suffix("_total").unwrap_or(name),
                _ => name,
            };
            let mut family = encoder.encode_descriptor(bare, help, None, kind.metric_type())?;
            for (account, report) in &self.stores {
                for s in report.samples().iter().filter(|s| s.name == name) {
                    if Kind::of(&s.value) != kind {
                        continue;
                    }
                    let labels = [("account", account.as_str())];
                    let mut m = family.encode_family(&labels)?;
                    match &s.value {
                        SampleValue::Gauge(v) => m.encode_gauge(v)?,
                        SampleValue::Counter(v) => m
                            .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
                                v, None,
                            )?,
                        SampleValue::Histogram {
                            buckets,
                            sum,
                            count,
                        } => m.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                            *sum, *count, buckets, None,
                        )?,
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }
}

/// The type of a store sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gauge,
    Counter,
    Histogram,
}

impl Kind {
    fn of(v: &SampleValue) -> Kind {
        match v {
            SampleValue::Counter(_) => Kind::Counter,
            SampleValue::Histogram { .. } => Kind::Histogram,
            _ => Kind::Gauge,
        }
    }

    fn metric_type(self) -> MetricType {
        match self {
            Kind::Gauge => MetricType::Gauge,
            Kind::Counter => MetricType::Counter,
            Kind::Histogram => MetricType::Histogram,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_every_family_and_ends_with_eof() {
        let m = Metrics::new();
        m.request(Operation::GetEntity, 200, Duration::from_micros(150));
        m.request(Operation::GetEntity, 404, Duration::from_millis(2));
        m.request(Operation::GetEntity, 418, Duration::from_millis(2));
        m.closed(CloseReason::HeaderTimeout);
        m.connections_open.set(3);
        let mut store = StoreMetrics::new();
        store
            .gauge("pool_connections_open", "Open connections", 2.0)
            .counter("pool_timeouts_total", "Checkouts that timed out", 5)
            .histogram(
                "commit_seconds",
                "Commit time",
                vec![(0.001, 3), (f64::INFINITY, 1)],
                0.01,
                4,
            );
        let text = m.encode(vec![("devstoreaccount1".into(), store)]).unwrap();
        for needle in [
            "# TYPE tableq_requests counter",
            "tableq_requests_total{operation=\"GetEntity\",status=\"200\"} 1",
            "tableq_requests_total{operation=\"GetEntity\",status=\"404\"} 1",
            "tableq_request_duration_seconds_bucket{le=\"0.00025\",operation=\"GetEntity\"} 1",
            "tableq_requests_total{operation=\"GetEntity\",status=\"418\"} 1",
            "tableq_request_duration_seconds_count{operation=\"GetEntity\"} 3",
            "tableq_connections_closed_total{reason=\"header_timeout\"} 1",
            "tableq_connections_open 3",
            "tableq_store_pool_connections_open{account=\"devstoreaccount1\"} 2",
            "tableq_store_pool_timeouts_total{account=\"devstoreaccount1\"} 5",
            "tableq_store_commit_seconds_bucket{le=\"0.001\",account=\"devstoreaccount1\"} 3",
            "tableq_store_commit_seconds_count{account=\"devstoreaccount1\"} 4",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert_eq!(text.matches("# EOF").count(), 1, "{text}");
    }

    #[test]
    fn metric_names_are_checked() {
        assert!(valid_name("pool_size"));
        assert!(!valid_name("9x"));
        assert!(!valid_name("a-b"));
        assert!(!valid_name(""));
    }
}
