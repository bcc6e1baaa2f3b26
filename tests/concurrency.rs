//! Concurrency over real HTTP: read-modify-write with `If-Match` from many clients loses no
//! update and every 412 is legitimate; concurrent entity group transactions apply whole or
//! not at all; queries that page with a small `$top` while others write see every entity
//! that existed for the whole paging exactly once, in key order.
//!
//! The servers run in-process on a free port, on the durable engine (group commit) and on
//! the in-memory one; clients are plain threads over raw HTTP (`tests/robust_support`).

use crate::robust_support;

use robust_support::{
    BatchOp, Client, InProcess, MINIMAL, Request, Rng, TempDir, batch_parts, batch_request,
    entity_target,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tableq_server::ServerConfig;
use tableq_store::{Backend, DurableBackend, MemoryBackend};

/// Reads an entity: (its JSON, its ETag).
fn read(client: &Client, table: &str, pk: &str, rk: &str) -> (Value, String) {
    let r =
        client.call(Request::new("GET", entity_target(table, pk, rk)).header("Accept", MINIMAL));
    assert_eq!(r.status, 200, "GET {pk}/{rk}: {}", r.text());
    (r.json().expect("entity JSON"), r.etag())
}

/// One attempted increment: the value read, and whether it was acknowledged.
#[derive(Debug, Clone)]
struct Attempt {
    counter: usize,
    from: i64,
    read_etag: String,
    acked_etag: Option<String>,
}

fn counters_lose_no_update(backend: Arc<dyn Backend>, label: &str) {
    const COUNTERS: usize = 3;
    const THREADS: u64 = 8;
    const ATTEMPTS: usize = 40;
    let server = InProcess::start(backend, ServerConfig::default());
    let client = server.client();
    client.create_table("counters");
    for i in 0..COUNTERS {
        let r = client.call(
            Request::new("POST", Client::target("counters"))
                .json(&json!({"PartitionKey":"c","RowKey":i.to_string(),"Count":0}).to_string()),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let (_, seed) = Rng::from_env("TABLEQ_CONCURRENCY_SEED");
    let attempts: Vec<Attempt> = (0..THREADS)
        .map(|t| {
            let client = client.clone();
            let mut rng = Rng::new(seed ^ (t + 1).wrapping_mul(0x9E37_79B9));
            std::thread::spawn(move || {
                let mut out = Vec::new();
                for _ in 0..ATTEMPTS {
                    let counter = rng.below(COUNTERS as u64) as usize;
                    let rk = counter.to_string();
                    let (entity, etag) = read(&client, "counters", "c", &rk);
                    let from = entity["Count"].as_i64().expect("Count");
                    let method = if rng.chance(50) { "PUT" } else { "MERGE" };
                    let r = client.call(
                        Request::new(method, entity_target("counters", "c", &rk))
                            .header("If-Match", etag.clone())
                            .json(&json!({"Count": from + 1}).to_string()),
                    );
                    let acked_etag = match r.status {
                        204 => Some(r.etag()),
                        412 => {
                            assert_eq!(
                                r.error_code().as_deref(),
                                Some("UpdateConditionNotSatisfied"),
                                "{}",
                                r.text()
                            );
                            None
                        }
                        other => panic!("{method} counter {rk}: {other} {}", r.text()),
                    };
                    out.push(Attempt {
                        counter,
                        from,
                        read_etag: etag,
                        acked_etag,
                    });
                }
                out
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().expect("client thread"))
        .collect();

    let mut total_acked = 0;
    let mut total_412 = 0;
    for counter in 0..COUNTERS {
        let (entity, final_etag) = read(&client, "counters", "c", &counter.to_string());
        let final_count = entity["Count"].as_i64().expect("Count");
        let mine: Vec<&Attempt> = attempts.iter().filter(|a| a.counter == counter).collect();
        let mut acked_from: Vec<i64> = mine
            .iter()
            .filter(|a| a.acked_etag.is_some())
            .map(|a| a.from)
            .collect();
        acked_from.sort_unstable();
        // Zero lost updates, none applied twice: the acknowledged increments started from
        // 0, 1, …, final − 1, once each.
        assert_eq!(
            acked_from,
            (0..final_count).collect::<Vec<_>>(),
            "{label}: counter {counter} ended at {final_count}"
        );
        // The last acknowledged write's ETag is the entity's ETag.
        let last = mine
            .iter()
            .find(|a| a.acked_etag.is_some() && a.from == final_count - 1);
        if let Some(last) = last {
            assert_eq!(
                last.acked_etag.as_deref(),
                Some(final_etag.as_str()),
                "{label}"
            );
        }
        for a in &mine {
            match &a.acked_etag {
                // A new version has a new ETag.
                Some(new) => assert_ne!(new, &a.read_etag, "{label}: ETag reused"),
                // A 412 is legitimate: the version read was replaced by someone else's
                // acknowledged write (the one that started from the same value).
                None => {
                    assert!(
                        a.from < final_count,
                        "{label}: a 412 on counter {counter} at value {} although nobody \
                         incremented from it (final {final_count})",
                        a.from
                    );
                    total_412 += 1;
                }
            }
        }
        total_acked += acked_from.len();
    }
    eprintln!(
        "{label}: {} attempts, {total_acked} acknowledged increments, {total_412} legitimate 412s",
        attempts.len()
    );
    assert_eq!(total_acked + total_412, attempts.len());
    assert!(total_acked > 0);
    server.stop();
}

#[test]
fn counters_lose_no_update_on_the_durable_engine() {
    let dir = TempDir::new("concurrency-counters");
    let backend = Arc::new(DurableBackend::open(&dir.0).expect("open"));
    counters_lose_no_update(backend, "durable");
}

#[test]
fn counters_lose_no_update_in_memory() {
    counters_lose_no_update(Arc::new(MemoryBackend::new()), "memory");
}

#[test]
fn concurrent_batches_apply_whole_or_not_at_all() {
    const COUNTERS: usize = 10;
    const THREADS: u64 = 4;
    const ATTEMPTS: usize = 15;
    let dir = TempDir::new("concurrency-batches");
    let backend = Arc::new(DurableBackend::open(&dir.0).expect("open"));
    let server = InProcess::start(backend, ServerConfig::default());
    let client = server.client();
    let origin = format!("http://{}", client.addr);
    client.create_table("batchcounters");
    for i in 0..COUNTERS {
        let r =
            client.call(Request::new("POST", Client::target("batchcounters")).json(
                &json!({"PartitionKey":"g","RowKey":format!("{i:02}"),"Count":0}).to_string(),
            ));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let results: Vec<(usize, usize)> = (0..THREADS)
        .map(|_| {
            let client = client.clone();
            let origin = origin.clone();
            std::thread::spawn(move || {
                let (mut acked, mut failed) = (0, 0);
                for _ in 0..ATTEMPTS {
                    let current = client.query_all("batchcounters", "PartitionKey eq 'g'", 1000);
                    assert_eq!(current.len(), COUNTERS);
                    let ops: Vec<BatchOp> = current
                        .iter()
                        .map(|e| BatchOp::Replace {
                            pk: "g".into(),
                            rk: e["RowKey"].as_str().expect("RowKey").into(),
                            if_match: e["odata.etag"].as_str().expect("odata.etag").into(),
                            body: json!({"Count": e["Count"].as_i64().expect("Count") + 1}),
                        })
                        .collect();
                    let r = client.call(batch_request(&origin, "batchcounters", &ops));
                    assert_eq!(r.status, 202, "{}", r.text());
                    let parts = batch_parts(&r);
                    if parts.len() == COUNTERS && parts.iter().all(|(s, _)| *s == 204) {
                        acked += 1;
                    } else {
                        assert_eq!(parts.len(), 1, "a failed batch has one part: {}", r.text());
                        assert_eq!(parts[0].0, 412, "{}", r.text());
                        failed += 1;
                    }
                }
                (acked, failed)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("batch thread"))
        .collect();
    let acked: usize = results.iter().map(|r| r.0).sum();
    let failed: usize = results.iter().map(|r| r.1).sum();
    let finals = client.query_all("batchcounters", "PartitionKey eq 'g'", 1000);
    // Every counter moved together: all equal to the acknowledged batches.
    for e in &finals {
        assert_eq!(
            e["Count"].as_i64(),
            Some(acked as i64),
            "a batch was half applied or lost: {finals:?}"
        );
    }
    // One shared Timestamp per batch: all ten entities carry the same ETag.
    let etags: std::collections::BTreeSet<&str> = finals
        .iter()
        .filter_map(|e| e["odata.etag"].as_str())
        .collect();
    if acked > 0 {
        assert_eq!(etags.len(), 1, "{etags:?}");
    }
    eprintln!("batches: {acked} acknowledged, {failed} failed with 412");
    assert!(acked > 0);
    server.stop();
}

#[test]
fn paging_while_others_write_sees_every_lasting_entity_once_in_order() {
    const STABLE: usize = 150;
    let dir = TempDir::new("concurrency-paging");
    let backend = Arc::new(DurableBackend::open(&dir.0).expect("open"));
    let server = InProcess::start(backend, ServerConfig::default());
    let client = server.client();
    client.create_table("paging");
    for i in 0..STABLE {
        let r = client.call(
            Request::new("POST", Client::target("paging")).json(
                &json!({"PartitionKey":"pg","RowKey":format!("s{i:03}"),"Kind":"stable","V":0})
                    .to_string(),
            ),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let write_count = Arc::new(AtomicUsize::new(0));
    let (_, seed) = Rng::from_env("TABLEQ_PAGING_SEED");
    let writers: Vec<_> = (0..3u64)
        .map(|w| {
            let client = client.clone();
            let stop = stop.clone();
            let write_count = write_count.clone();
            let mut rng = Rng::new(seed ^ (w + 11));
            std::thread::spawn(move || {
                let mut live: Vec<String> = Vec::new();
                let mut writes = 0usize;
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    match rng.below(3) {
                        // A transient entity between stable ones (and in other partitions).
                        0 => {
                            n += 1;
                            let pk = if rng.chance(80) { "pg" } else { "ph" };
                            let rk = format!("s{:03}w{w}n{n}", rng.below(STABLE as u64));
                            let r = client.call(
                                Request::new("POST", Client::target("paging")).json(
                                    &json!({"PartitionKey":pk,"RowKey":rk,"Kind":"transient"})
                                        .to_string(),
                                ),
                            );
                            assert_eq!(r.status, 201, "{}", r.text());
                            if pk == "pg" {
                                live.push(rk);
                            }
                        }
                        // Delete one of this writer's transient entities.
                        1 if !live.is_empty() => {
                            let at = rng.below(live.len() as u64) as usize;
                            let rk = live.swap_remove(at);
                            let r = client.call(
                                Request::new("DELETE", entity_target("paging", "pg", &rk))
                                    .header("If-Match", "*"),
                            );
                            assert_eq!(r.status, 204, "{}", r.text());
                        }
                        // Rewrite a stable entity (it exists throughout).
                        _ => {
                            let rk = format!("s{:03}", rng.below(STABLE as u64));
                            let r = client.call(
                                Request::new("PUT", entity_target("paging", "pg", &rk)).json(
                                    &json!({"Kind":"stable","V":rng.below(1000)}).to_string(),
                                ),
                            );
                            assert_eq!(r.status, 204, "{}", r.text());
                        }
                    }
                    writes += 1;
                    write_count.fetch_add(1, Ordering::Relaxed);
                }
                writes
            })
        })
        .collect();

    let readers: Vec<_> = [
        ("PartitionKey eq 'pg'", 7u32),
        ("Kind eq 'stable'", 5),
        ("", 11),
    ]
    .into_iter()
    .map(|(filter, top)| {
        let client = client.clone();
        let write_count = write_count.clone();
        std::thread::spawn(move || {
            let mut pagings = 0;
            let began = std::time::Instant::now();
            // At least 4 pagings, and on until the writers have done 300 writes (at most
            // 20 s on a slow machine).
            while pagings < 4
                || (write_count.load(Ordering::Relaxed) < 300
                    && began.elapsed() < std::time::Duration::from_secs(20))
            {
                let rows = client.query_all("paging", filter, top);
                let keys: Vec<(String, String)> = rows
                    .iter()
                    .map(|e| {
                        (
                            e["PartitionKey"].as_str().expect("PartitionKey").to_owned(),
                            e["RowKey"].as_str().expect("RowKey").to_owned(),
                        )
                    })
                    .collect();
                assert!(
                    keys.windows(2).all(|w| w[0] < w[1]),
                    "filter {filter:?}: keys not strictly increasing"
                );
                let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
                for (pk, rk) in &keys {
                    if pk == "pg" && rk.len() == 4 {
                        *seen.entry(rk.as_str()).or_insert(0) += 1;
                    }
                }
                for i in 0..STABLE {
                    let rk = format!("s{i:03}");
                    assert_eq!(
                        seen.get(rk.as_str()).copied(),
                        Some(1),
                        "filter {filter:?} $top={top}: stable entity {rk} seen {:?} times",
                        seen.get(rk.as_str())
                    );
                }
                pagings += 1;
            }
            pagings
        })
    })
    .collect();
    let pagings: usize = readers.into_iter().map(|h| h.join().expect("reader")).sum();
    stop.store(true, Ordering::Relaxed);
    let writes: usize = writers.into_iter().map(|h| h.join().expect("writer")).sum();
    eprintln!("{pagings} complete pagings while {writes} writes ran");
    assert!(writes > 0);
    server.stop();
}
