//! Crash safety: `tableq serve --data DIR` killed with SIGKILL at random moments, again and
//! again, under a write load, and restarted on the same directory each time.
//!
//! The load (client threads over raw HTTP, each request on its own connection):
//! * inserters — single inserts of fresh keys;
//! * a replacer — read-modify-write of its own "register" entities with `If-Match`
//!   (version numbers 0, 1, 2, …);
//! * a batcher — 10-entity entity group transactions, each into its own partition with a
//!   shared batch id.
//!
//! A request that could not connect was certainly not applied (it is retried); one that
//! connected but got no complete reply has an unknown outcome. Afterwards:
//! * every acknowledged insert is present with its acknowledged ETag;
//! * no acknowledged (or observed) register version is rolled back: each register holds its
//!   last acknowledged version with that ETag, or a later version whose write had an
//!   unknown outcome; while running, a 412 or 404 on a register whose current version the
//!   replacer knew is a rollback too;
//! * no batch is half applied, acknowledged or not (0 or 10 of its entities), and every
//!   acknowledged batch is present with its ETag;
//! * nothing is present that was never written;
//! * every restart succeeds without `--accept-log-loss` (a torn tail is no lost write), and
//!   after the last, clean stop `tableq check` finds every block (checksums, rows) and the
//!   write-ahead log intact.
//!
//! Every other server checkpoints every 50 ms (`--checkpoint-interval`), so that kills land
//! in the steps of checkpoints beside the writer — their flush, their durable commit, the
//! copy of the log's tail and its rename (`store/src/durable/writer/checkpoint.rs`) — as
//! well as in long logs replayed whole.
//!
//! The kill moments come from a seeded generator; the seed is printed (`TABLEQ_CRASH_SEED`
//! replays a run). Servers are stopped by pid.

use crate::robust_support;

use robust_support::{
    BatchOp, Client, Outcome, Reply, Request, Rng, ServeProcess, TempDir, batch_parts,
    batch_request, entity_target,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many times the server is killed.
const KILLS: usize = 25;
/// Batch size.
const BATCH: usize = 10;
/// Registers per replacer.
const REGISTERS: usize = 4;

/// The shared state of the run: the current port (0 while down) and the stop flag.
struct Run {
    port: AtomicU16,
    stop: AtomicBool,
    sent: AtomicUsize,
    problems: Mutex<Vec<String>>,
}

impl Run {
    fn problem(&self, p: String) {
        eprintln!("PROBLEM: {p}");
        self.problems.lock().expect("problems").push(p);
    }

    /// Sends a request until it reaches a server (a refused connection is certainly not
    /// applied, so it is retried); `None` when the run stops first.
    fn send(&self, build: &dyn Fn() -> Request) -> Option<Outcome> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            let port = self.port.load(Ordering::SeqCst);
            if port == 0 {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            let mut client = Client::new(port);
            client.timeout = Duration::from_secs(10);
            match client.send(build()) {
                Outcome::NotSent(_) => std::thread::sleep(Duration::from_millis(5)),
                other => {
                    self.sent.fetch_add(1, Ordering::Relaxed);
                    return Some(other);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Inserts

#[derive(Default)]
struct InsertLedger {
    acked: BTreeMap<String, String>,
    unknown: BTreeSet<String>,
}

fn inserter(run: &Run, t: usize) -> InsertLedger {
    let mut ledger = InsertLedger::default();
    for n in 0.. {
        let rk = format!("t{t}-{n:06}");
        let body = json!({"PartitionKey":"ins","RowKey":rk,"N":n}).to_string();
        let Some(outcome) = run.send(&|| Request::new("POST", Client::target("load")).json(&body))
        else {
            break;
        };
        match outcome {
            Outcome::Reply(r) if r.status == 201 => {
                ledger.acked.insert(rk, r.etag());
            }
            Outcome::Reply(r) => run.problem(format!("insert {rk}: {} {}", r.status, r.text())),
            _ => {
                ledger.unknown.insert(rk);
            }
        }
    }
    ledger
}

// ---------------------------------------------------------------------------------------
// Registers

#[derive(Debug, Clone)]
enum Event {
    /// A write of this version was acknowledged with this ETag.
    Acked(i64, String),
    /// A read returned this version and ETag (committed state).
    Observed(i64, String),
    /// A write of this version had an unknown outcome.
    Unknown(i64),
}

fn parse_register(r: &Reply) -> Option<(i64, String)> {
    Some((r.json()?["V"].as_i64()?, r.header("etag")?.to_owned()))
}

fn replacer(run: &Run, t: usize, seed: u64) -> BTreeMap<String, Vec<Event>> {
    let mut rng = Rng::new(seed);
    let keys: Vec<String> = (0..REGISTERS).map(|k| format!("t{t}-{k}")).collect();
    let mut history: BTreeMap<String, Vec<Event>> =
        keys.iter().map(|k| (k.clone(), Vec::new())).collect();
    // What the replacer knows of each register: Some((version, etag)) or None (re-read).
    let mut known: BTreeMap<String, Option<(i64, String)>> =
        keys.iter().map(|k| (k.clone(), None)).collect();
    let last_confirmed = |events: &[Event]| {
        events.iter().rev().find_map(|e| match e {
            Event::Acked(v, _) | Event::Observed(v, _) => Some(*v),
            Event::Unknown(_) => None,
        })
    };
    loop {
        let key = rng.pick(&keys).clone();
        let target = entity_target("load", "reg", &key);
        let state = known[&key].clone();
        let events = history.get_mut(&key).expect("history");
        match state {
            None => {
                let Some(outcome) = run.send(&|| {
                    Request::new("GET", target.clone()).header("Accept", robust_support::MINIMAL)
                }) else {
                    break;
                };
                match outcome {
                    Outcome::Reply(r) if r.status == 200 => {
                        let Some((v, etag)) = parse_register(&r) else {
                            run.problem(format!("register {key}: bad reply {}", r.text()));
                            continue;
                        };
                        if let Some(before) = last_confirmed(events)
                            && v < before
                        {
                            run.problem(format!(
                                "register {key}: read version {v} after version {before} was \
                                 confirmed (rolled back)"
                            ));
                        }
                        events.push(Event::Observed(v, etag.clone()));
                        known.insert(key, Some((v, etag)));
                    }
                    Outcome::Reply(r) if r.status == 404 => {
                        if let Some(before) = last_confirmed(events) {
                            run.problem(format!(
                                "register {key}: missing after version {before} was confirmed"
                            ));
                        }
                        // Create it: version 0, insert-or-replace.
                        let body = json!({"V":0}).to_string();
                        let Some(outcome) =
                            run.send(&|| Request::new("PUT", target.clone()).json(&body))
                        else {
                            break;
                        };
                        match outcome {
                            Outcome::Reply(r) if r.status == 204 => {
                                let etag = r.etag();
                                events.push(Event::Acked(0, etag.clone()));
                                known.insert(key, Some((0, etag)));
                            }
                            Outcome::Reply(r) => run.problem(format!(
                                "create register {key}: {} {}",
                                r.status,
                                r.text()
                            )),
                            _ => events.push(Event::Unknown(0)),
                        }
                    }
                    Outcome::Reply(r) => {
                        run.problem(format!("read register {key}: {} {}", r.status, r.text()))
                    }
                    _ => {}
                }
            }
            Some((v, etag)) => {
                let body = json!({"V": v + 1}).to_string();
                let Some(outcome) = run.send(&|| {
                    Request::new("PUT", target.clone())
                        .header("If-Match", etag.clone())
                        .json(&body)
                }) else {
                    break;
                };
                match outcome {
                    Outcome::Reply(r) if r.status == 204 => {
                        let new = r.etag();
                        events.push(Event::Acked(v + 1, new.clone()));
                        known.insert(key, Some((v + 1, new)));
                    }
                    Outcome::Reply(r) if r.status == 412 || r.status == 404 => {
                        run.problem(format!(
                            "register {key}: {} on a replace of version {v} with its current \
                             ETag {etag} (the confirmed version was rolled back or changed): {}",
                            r.status,
                            r.text()
                        ));
                        known.insert(key, None);
                    }
                    Outcome::Reply(r) => {
                        run.problem(format!("replace register {key}: {} {}", r.status, r.text()));
                        known.insert(key, None);
                    }
                    _ => {
                        events.push(Event::Unknown(v + 1));
                        known.insert(key, None);
                    }
                }
            }
        }
    }
    history
}

// ---------------------------------------------------------------------------------------
// Batches

#[derive(Default)]
struct BatchLedger {
    /// Partition → the shared ETag of its acknowledged batch.
    acked: BTreeMap<String, String>,
    unknown: BTreeSet<String>,
}

fn batcher(run: &Run, t: usize) -> BatchLedger {
    let mut ledger = BatchLedger::default();
    for n in 0.. {
        let pk = format!("b{t}-{n:05}");
        let ops: Vec<BatchOp> = (0..BATCH)
            .map(|i| {
                BatchOp::Insert(json!({
                    "PartitionKey": pk, "RowKey": format!("{i:02}"), "BatchId": pk, "I": i
                }))
            })
            .collect();
        let port_origin = |port: u16| format!("http://127.0.0.1:{port}");
        let Some(outcome) = run
            .send(&|| batch_request(&port_origin(run.port.load(Ordering::SeqCst)), "load", &ops))
        else {
            break;
        };
        match outcome {
            Outcome::Reply(r) if r.status == 202 => {
                let parts = batch_parts(&r);
                let etags: BTreeSet<Option<String>> =
                    parts.iter().map(|(_, e)| e.clone()).collect();
                if parts.len() != BATCH
                    || parts.iter().any(|(s, _)| !(200..300).contains(s))
                    || etags.len() != 1
                {
                    run.problem(format!("batch {pk}: unexpected reply {}", r.text()));
                    continue;
                }
                match etags.into_iter().next().flatten() {
                    Some(etag) => {
                        ledger.acked.insert(pk, etag);
                    }
                    None => run.problem(format!("batch {pk}: no ETags in {}", r.text())),
                }
            }
            Outcome::Reply(r) => run.problem(format!("batch {pk}: {} {}", r.status, r.text())),
            _ => {
                ledger.unknown.insert(pk);
            }
        }
    }
    ledger
}

// ---------------------------------------------------------------------------------------

#[test]
fn acknowledged_writes_survive_repeated_sigkill() {
    let started = Instant::now();
    let dir = TempDir::new("crash");
    let (mut rng, seed) = Rng::from_env("TABLEQ_CRASH_SEED");
    let run = Arc::new(Run {
        port: AtomicU16::new(0),
        stop: AtomicBool::new(false),
        sent: AtomicUsize::new(0),
        problems: Mutex::new(Vec::new()),
    });

    // First start: the table.
    let server = ServeProcess::start(&["--data", dir.path()]);
    let client = Client::new(server.port);
    client.create_table("load");
    run.port.store(server.port, Ordering::SeqCst);

    let inserters: Vec<_> = (0..2)
        .map(|t| {
            let run = run.clone();
            std::thread::spawn(move || inserter(&run, t))
        })
        .collect();
    let replacer_seed = seed ^ 0x5EED;
    let replacer_thread = {
        let run = run.clone();
        std::thread::spawn(move || replacer(&run, 0, replacer_seed))
    };
    let batcher_thread = {
        let run = run.clone();
        std::thread::spawn(move || batcher(&run, 0))
    };

    // Kill at random moments, restart on the same directory.
    let mut server = Some(server);
    let mut restart_times = Vec::new();
    let mut tail_copies = 0;
    for kill in 0..KILLS {
        std::thread::sleep(Duration::from_millis(rng.range(150, 1500)));
        let before = run.sent.load(Ordering::Relaxed);
        let stderr = server.take().expect("a running server").kill9();
        run.port.store(0, Ordering::SeqCst);
        assert!(!stderr.contains("panicked"), "kill {kill}: {stderr}");
        // Its start found a copy of the log's tail that a killed checkpoint left.
        tail_copies += stderr.matches("unfinished log copy").count();
        let restart = Instant::now();
        let next = if kill % 2 == 0 {
            ServeProcess::start(&["--data", dir.path(), "--checkpoint-interval", "50ms"])
        } else {
            ServeProcess::start(&["--data", dir.path()])
        };
        restart_times.push(restart.elapsed());
        run.port.store(next.port, Ordering::SeqCst);
        server = Some(next);
        if kill == 0 {
            eprintln!("kill 0 after {before} requests");
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    run.stop.store(true, Ordering::SeqCst);
    let inserts: Vec<InsertLedger> = inserters
        .into_iter()
        .map(|h| h.join().expect("inserter"))
        .collect();
    let registers = replacer_thread.join().expect("replacer");
    let batch_ledger = batcher_thread.join().expect("batcher");
    let server = server.take().expect("the last server");
    let client = Client::new(server.port);

    // --- Verification on the last server.
    let mut problems = std::mem::take(&mut *run.problems.lock().expect("problems"));
    let rows = client.query_all("load", "", 1000);
    let mut present: BTreeMap<(String, String), serde_json::Value> = BTreeMap::new();
    for row in rows {
        let pk = row["PartitionKey"].as_str().unwrap_or_default().to_owned();
        let rk = row["RowKey"].as_str().unwrap_or_default().to_owned();
        present.insert((pk, rk), row);
    }
    let etag_of = |pk: &str, rk: &str| {
        present
            .get(&(pk.to_owned(), rk.to_owned()))
            .and_then(|e| e["odata.etag"].as_str())
            .map(str::to_owned)
    };

    // Inserts.
    let mut acked_inserts = 0;
    let mut attempted_inserts: BTreeSet<String> = BTreeSet::new();
    for ledger in &inserts {
        for (rk, etag) in &ledger.acked {
            acked_inserts += 1;
            attempted_inserts.insert(rk.clone());
            match etag_of("ins", rk) {
                Some(e) if &e == etag => {}
                Some(e) => problems.push(format!("insert {rk}: ETag {e}, acknowledged {etag}")),
                None => problems.push(format!("acknowledged insert {rk} is lost")),
            }
        }
        attempted_inserts.extend(ledger.unknown.iter().cloned());
    }
    let unknown_inserts: usize = inserts.iter().map(|l| l.unknown.len()).sum();

    // Registers.
    let mut acked_replaces = 0;
    for (key, events) in &registers {
        acked_replaces += events
            .iter()
            .filter(|e| matches!(e, Event::Acked(..)))
            .count();
        let last = events.iter().rposition(|e| !matches!(e, Event::Unknown(_)));
        let final_state = present
            .get(&("reg".to_owned(), key.clone()))
            .map(|e| (e["V"].as_i64(), e["odata.etag"].as_str().map(str::to_owned)));
        match (last.map(|i| &events[i]), final_state) {
            (None, None) => {}
            (None, Some((None, _))) => {
                problems.push(format!("register {key} has no version V"));
            }
            (None, Some((Some(v), _))) => {
                if !events
                    .iter()
                    .any(|e| matches!(e, Event::Unknown(u) if *u == v))
                {
                    problems.push(format!("register {key} holds version {v} never written"));
                }
            }
            (Some(Event::Acked(v, etag) | Event::Observed(v, etag)), Some((Some(fv), fe))) => {
                let later_unknown = events[last.unwrap_or(0)..]
                    .iter()
                    .any(|e| matches!(e, Event::Unknown(u) if *u == fv));
                if fv == *v {
                    if fe.as_deref() != Some(etag.as_str()) {
                        problems.push(format!(
                            "register {key}: version {v} with ETag {fe:?}, confirmed {etag}"
                        ));
                    }
                } else if !(fv > *v && later_unknown) {
                    problems.push(format!(
                        "register {key}: holds version {fv}, but version {v} was the last \
                         confirmed (and no later write had an unknown outcome)"
                    ));
                }
            }
            (Some(e), state) => {
                problems.push(format!("register {key}: confirmed {e:?}, now {state:?}"))
            }
        }
    }

    // Batches: all or nothing, acknowledged or not.
    let mut acked_batches = 0;
    let mut attempted_batches: BTreeSet<String> = BTreeSet::new();
    let ledger = &batch_ledger;
    attempted_batches.extend(ledger.acked.keys().cloned());
    attempted_batches.extend(ledger.unknown.iter().cloned());
    for pk in &attempted_batches {
        let rows: Vec<&serde_json::Value> = present
            .range((pk.clone(), String::new())..)
            .take_while(|((p, _), _)| p == pk)
            .map(|(_, v)| v)
            .collect();
        if !rows.is_empty() && rows.len() != BATCH {
            problems.push(format!(
                "batch {pk} is half applied: {} of {BATCH} entities",
                rows.len()
            ));
        }
        if let Some(etag) = ledger.acked.get(pk) {
            acked_batches += 1;
            if rows.len() != BATCH {
                problems.push(format!("acknowledged batch {pk} is lost"));
            }
            for row in &rows {
                if row["odata.etag"].as_str() != Some(etag.as_str())
                    || row["BatchId"].as_str() != Some(pk.as_str())
                {
                    problems.push(format!("batch {pk}: {row} (acknowledged ETag {etag})"));
                }
            }
        }
    }

    // Nothing present that was never written.
    for (pk, rk) in present.keys() {
        let known = match pk.as_str() {
            "ins" => attempted_inserts.contains(rk),
            "reg" => registers.contains_key(rk),
            p => attempted_batches.contains(p),
        };
        if !known {
            problems.push(format!("entity {pk}/{rk} was never written"));
        }
    }

    let (code, stderr) = server.terminate();
    let mut slowest = restart_times.clone();
    slowest.sort();
    eprintln!(
        "seed {seed}: {KILLS} kills in {:.1?} ({} requests sent); verified {acked_inserts} \
         acknowledged inserts ({unknown_inserts} unknown), {acked_replaces} acknowledged \
         replaces on {} registers, {acked_batches} acknowledged batches of {BATCH} ({} \
         attempted); restart time median {:?}, max {:?}; {tail_copies} starts removed a \
         checkpoint's unfinished copy of the log",
        started.elapsed(),
        run.sent.load(Ordering::Relaxed),
        registers.len(),
        attempted_batches.len(),
        slowest.get(slowest.len() / 2),
        slowest.last(),
    );
    assert!(
        problems.is_empty(),
        "seed {seed} (TABLEQ_CRASH_SEED={seed} replays the kill schedule):\n{}",
        problems.join("\n")
    );
    assert_eq!(code, Some(0), "the last server stops cleanly: {stderr}");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["check", "--data", dir.path()])
        .output()
        .expect("run tableq check");
    assert_eq!(
        check.status.code(),
        Some(0),
        "tableq check after {KILLS} kills: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        acked_inserts > 0 && acked_replaces > 0,
        "the load made progress"
    );
    assert!(acked_batches > 0, "the batch load made progress");
}
