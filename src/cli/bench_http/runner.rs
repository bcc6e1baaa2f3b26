//! Running one scenario: `C` concurrent clients on one client thread, each on its own
//! keep-alive connection (`tableq_client::conn::Connection`), sending requests built and
//! signed by the client crate for a fixed time after a short warm-up, checking every
//! answer; and the full scan, which follows continuations through the client's pool.

use super::report::{Figures, micros, summarize};
use std::time::{Duration, Instant};
use tableq_client::conn::Connection;
use tableq_client::{Query, TableClient, TableServiceClient};

/// Runs futures concurrently on this thread and returns their outputs in order (a tiny
/// `join_all`: every future is polled on each wake-up, fine for a few dozen).
pub async fn join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<_> = futures.map(|f| Some(Box::pin(f))).collect();
    let mut results: Vec<Option<F::Output>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all_done = true;
        for (slot, result) in pending.iter_mut().zip(results.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *result = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => all_done = false,
                }
            }
        }
        if all_done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    results.into_iter().flatten().collect()
}

/// Runs `make`'s requests with `clients` concurrent clients for `duration` (after a
/// warm-up), checking every answer (and, for the first answer of the first client, that it
/// holds `rows` rows).
pub async fn scenario(
    service: &TableServiceClient,
    name: &str,
    clients: usize,
    duration: Duration,
    rows: Option<usize>,
    make: impl Fn(u64) -> reqwest::RequestBuilder,
) -> Result<Figures, String> {
    let counter = std::cell::Cell::new(0u64);
    let authority = service.authority();
    let run = |until: Instant, check_rows: bool| {
        let make = &make;
        let counter = &counter;
        let authority = &authority;
        let tasks = (0..clients).map(move |c| async move {
            let mut latencies = Vec::new();
            let mut checked = !check_rows || c > 0;
            let mut connection = Connection::open(authority)
                .await
                .map_err(|e| format!("{name}: {e}"))?;
            while Instant::now() < until {
                let i = counter.get();
                counter.set(i + 1);
                let request = make(i);
                let started = Instant::now();
                let request = service
                    .prepare(request)
                    .map_err(|e| format!("{name}: {e}"))?;
                let (status, body) = connection
                    .send(request)
                    .await
                    .map_err(|e| format!("{name}: {e}"))?;
                latencies.push(started.elapsed());
                if !status.is_success() {
                    return Err(format!(
                        "{name}: the server answered {status}: {}",
                        String::from_utf8_lossy(&body)
                    ));
                }
                if body.starts_with(b"--batchresponse") && failed_operation(&body) {
                    return Err(format!(
                        "{name}: a batch operation failed: {}",
                        String::from_utf8_lossy(&body)
                    ));
                }
                if !checked {
                    checked = true;
                    if let Some(want) = rows {
                        let got = count_rows(&body);
                        if got != Some(want) {
                            return Err(format!("{name}: {got:?} rows, expected {want}"));
                        }
                    }
                }
            }
            Ok::<_, String>(latencies)
        });
        join_all(tasks)
    };
    let warm = Instant::now() + duration.min(Duration::from_millis(500));
    for r in run(warm, true).await {
        r?;
    }
    let started = Instant::now();
    let mut latencies = Vec::new();
    for r in run(started + duration, false).await {
        latencies.extend(r?);
    }
    let wall = started.elapsed();
    let figures = summarize(name, clients, rows, latencies, wall);
    eprintln!(
        "{name}, {clients} clients: {:.0} req/s, p50 {}",
        figures.rate,
        micros(figures.p50)
    );
    Ok(figures)
}

/// A whole query (every page, following continuations), repeatedly, one client, for at
/// least `duration`. Rows are counted from the raw answers, not decoded, so that the
/// client's own work stays small next to the server's.
pub async fn full_scan(
    table: &TableClient,
    name: &str,
    filter: &str,
    duration: Duration,
) -> Result<Figures, String> {
    let service = table.service();
    let query = Query::filter(filter);
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut rows = 0;
    while latencies.is_empty() || started.elapsed() < duration {
        let one = Instant::now();
        let mut next = None;
        rows = 0;
        loop {
            let response = service
                .send_ok(table.query_request(&query, next.as_ref()))
                .await
                .map_err(|e| format!("{name}: {e}"))?;
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
            };
            next = header("x-ms-continuation-nextpartitionkey").map(|pk| {
                tableq_client::Continuation {
                    next_partition_key: pk,
                    next_row_key: header("x-ms-continuation-nextrowkey"),
                }
            });
            let body = response.bytes().await.map_err(|e| format!("{name}: {e}"))?;
            rows += count_rows(&body).unwrap_or(0);
            if next.is_none() {
                break;
            }
        }
        latencies.push(one.elapsed());
    }
    let wall = started.elapsed();
    Ok(summarize(name, 1, Some(rows), latencies, wall))
}

/// Whether a `$batch` reply holds an operation's error status.
fn failed_operation(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.contains("HTTP/1.1 4") || text.contains("HTTP/1.1 5")
}

/// Rows in a query answer's `value` (1 for a single entity).
fn count_rows(body: &[u8]) -> Option<usize> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    match json.get("value") {
        Some(serde_json::Value::Array(rows)) => Some(rows.len()),
        // A single entity (point get).
        _ => json.get("RowKey").map(|_| 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_counted_and_checked() {
        assert_eq!(count_rows(br#"{"value":[{},{}]}"#), Some(2));
        assert_eq!(count_rows(br#"{"RowKey":"r"}"#), Some(1));
        assert_eq!(count_rows(b"not json"), None);
        assert!(failed_operation(b"--b\r\nHTTP/1.1 409 Conflict"));
        assert!(!failed_operation(b"--b\r\nHTTP/1.1 204 No Content"));
    }
}
