//! What `bench-http` prints: one scenario's [`Figures`] (latency percentiles, request
//! rate), the Markdown table of every scenario, and the machine's state from `/proc` (the
//! server's peak and current memory, the load average).

use std::time::Duration;

/// One scenario's figures.
pub struct Figures {
    /// The scenario's name.
    pub name: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Requests measured.
    pub requests: usize,
    /// Requests per second of wall time.
    pub rate: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
    /// Rows per request (queries), for the table.
    pub rows: Option<usize>,
}

/// The figures of `latencies` measured over `wall`.
pub fn summarize(
    name: &str,
    clients: usize,
    rows: Option<usize>,
    mut latencies: Vec<Duration>,
    wall: Duration,
) -> Figures {
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Figures {
        name: name.to_owned(),
        clients,
        requests: latencies.len(),
        rate: latencies.len() as f64 / wall.as_secs_f64().max(1e-9),
        p50: at(0.50),
        p99: at(0.99),
        rows,
    }
}

/// `132 µs` / `12.3 ms`.
pub fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// The Markdown table of every scenario.
pub fn table(all: &[Figures]) -> String {
    let mut out = String::from("\n| scenario | rows | clients | requests | req/s | p50 | p99 |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for f in all {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.0} | {} | {} |\n",
            f.name,
            f.rows.map_or("–".to_owned(), |r| r.to_string()),
            f.clients,
            f.requests,
            f.rate,
            micros(f.p50),
            micros(f.p99)
        ));
    }
    out
}

/// `VmHWM` and `VmRSS` of a process (Linux).
pub fn memory(pid: u32) -> String {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return format!("unknown (no /proc/{pid}/status)");
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| "?".into())
    };
    format!(
        "peak RSS (VmHWM) {}, RSS (VmRSS) {}",
        field("VmHWM:"),
        field("VmRSS:")
    )
}

/// `/proc/loadavg`'s first three fields.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_the_table() {
        let ms = |n: u64| Duration::from_millis(n);
        let f = summarize("x", 2, Some(5), (1..=100).rev().map(ms).collect(), ms(1000));
        assert_eq!((f.requests, f.p50, f.p99), (100, ms(51), ms(100)));
        assert!((f.rate - 100.0).abs() < 1e-9);
        let empty = summarize("e", 1, None, Vec::new(), ms(1));
        assert_eq!((empty.requests, empty.p50), (0, Duration::ZERO));
        assert_eq!(micros(Duration::from_micros(132)), "132 µs");
        assert_eq!(micros(Duration::from_micros(12_345)), "12.3 ms");
        let t = table(&[f, empty]);
        assert!(
            t.contains("| x | 5 | 2 | 100 | 100 | 51.0 ms | 100.0 ms |"),
            "{t}"
        );
        assert!(t.contains("| e | – | 1 | 0 |"), "{t}");
    }
}
