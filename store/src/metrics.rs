//! [`StoreMetrics`]: what an engine reports about itself for monitoring — the emulator
//! serves it on `GET /metrics` as `tableq_store_<name>{account="…"}` (Prometheus).
//!
//! An engine builds one on demand in [`Backend::metrics`](crate::Backend::metrics): gauges
//! (a size, connections open now), counters (totals since the engine opened) and
//! histograms (durations). Reporting must be cheap and must not block: it reads counters
//! the engine keeps anyway.
//!
//! ```
//! use tableq_store::metrics::{SampleValue, StoreMetrics};
//! let mut m = StoreMetrics::new();
//! m.gauge("pool_connections_open", "Connections open to the database", 3.0)
//!     .counter("pool_timeouts_total", "Checkouts that found no free connection in time", 0);
//! assert_eq!(m.samples()[0].value, SampleValue::Gauge(3.0));
//! assert_eq!(m.samples().len(), 2);
//! ```

/// A set of measurements (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreMetrics {
    samples: Vec<StoreSample>,
}

/// One measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSample {
    /// The name without the `tableq_store_` prefix: ASCII letters, digits and `_` (a
    /// counter's ends with `_total`).
    pub name: &'static str,
    /// One sentence saying what it measures.
    pub help: &'static str,
    /// The value.
    pub value: SampleValue,
}

/// The value of a [`StoreSample`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SampleValue {
    /// A value that goes up and down.
    Gauge(f64),
    /// A total that only grows while the engine is open.
    Counter(u64),
    /// A distribution: `(upper bound, observations in this bucket)` per bucket in
    /// increasing order of bound (counts per bucket, not cumulative; the last bound
    /// `f64::INFINITY`), the sum of every observation and their number.
    Histogram {
        /// The buckets.
        buckets: Vec<(f64, u64)>,
        /// The sum of the observations.
        sum: f64,
        /// The number of observations.
        count: u64,
    },
}

impl StoreMetrics {
    /// No measurements.
    pub fn new() -> StoreMetrics {
        StoreMetrics::default()
    }

    /// Adds a gauge.
    pub fn gauge(&mut self, name: &'static str, help: &'static str, value: f64) -> &mut Self {
        self.push(name, help, SampleValue::Gauge(value))
    }

    /// Adds a counter (its name ends with `_total`).
    pub fn counter(&mut self, name: &'static str, help: &'static str, value: u64) -> &mut Self {
        self.push(name, help, SampleValue::Counter(value))
    }

    /// Adds a histogram (see [`SampleValue::Histogram`]).
    pub fn histogram(
        &mut self,
        name: &'static str,
        help: &'static str,
        buckets: Vec<(f64, u64)>,
        sum: f64,
        count: u64,
    ) -> &mut Self {
        self.push(
            name,
            help,
            SampleValue::Histogram {
                buckets,
                sum,
                count,
            },
        )
    }

    fn push(&mut self, name: &'static str, help: &'static str, value: SampleValue) -> &mut Self {
        self.samples.push(StoreSample { name, help, value });
        self
    }

    /// Every measurement, in the order added.
    pub fn samples(&self) -> &[StoreSample] {
        &self.samples
    }
}
