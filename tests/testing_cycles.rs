//! 1 000 `tableq::testing::TestServer`s started and dropped in a row: no thread and no port
//! is left behind, and the median start-to-ready time (from `TestServer::start` to the
//! first answered request) is printed — the figure for the docs, not asserted.
//!
//! Alone in its test binary: the thread count of the process is part of the check.

mod testing_support;

use std::net::TcpListener;
use std::time::{Duration, Instant};
use tableq::testing::TestServer;
use testing_support::{request, threads};

const CYCLES: usize = 1_000;

#[test]
fn a_thousand_servers_in_a_row_leave_no_thread_or_port_behind() {
    // One cycle first: whatever the process sets up once (the harness's threads) is there.
    drop(TestServer::start().unwrap());
    let before = threads();
    let mut ready = Vec::with_capacity(CYCLES);
    for cycle in 0..CYCLES {
        let started = Instant::now();
        let server = TestServer::start().unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        let (status, body) = request(server.addr(), "GET", "/health", "", None)
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        ready.push(started.elapsed());
        assert_eq!(status, 200, "cycle {cycle}: {body}");
        let addr = server.addr();
        drop(server);
        let rebound = TcpListener::bind(addr);
        assert!(
            rebound.is_ok(),
            "cycle {cycle}: port {} still taken after drop: {rebound:?}",
            addr.port()
        );
        // `join` returns once the thread's code has finished, which the kernel reports a
        // moment before it takes the thread out of /proc (the thread-id futex is woken
        // early in its exit): a thread that is gone within a second is not left behind.
        let waited = Instant::now();
        let mut now = threads();
        while now > before && waited.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(1));
            now = threads();
        }
        assert!(
            now <= before,
            "cycle {cycle}: {now} threads after drop, {before} before the cycles: {:?}",
            testing_support::thread_names()
        );
    }
    ready.sort();
    let median = ready[CYCLES / 2];
    let p99 = ready[CYCLES * 99 / 100];
    eprintln!(
        "testing_cycles: {CYCLES} start/stop cycles; start-to-ready median {:.2} ms, p99 {:.2} \
         ms, max {:.2} ms; threads {before} before and after",
        ms(median),
        ms(p99),
        ms(ready[CYCLES - 1])
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
