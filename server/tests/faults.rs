//! The service's scalability targets emulated and injected faults, end to end over HTTP
//! (issue 30): `ServerBusy` at the configured rate per partition and per account (and not
//! below it), each fault kind (error, a batch failing at an index, latency, a connection
//! dropped before or after the write), the same seed giving the same faults, the
//! administrative endpoints (`restype=tableq`: fault rules, an account's reset), the
//! `timeout` parameter, and the counters in `/metrics`.

use crate::server_support;

use serde_json::{Value, json};
use server_support::{ACCOUNT, MINIMAL, Reply, TestServer, dev_signer, entity_path, sign};
use std::time::{Duration, Instant};
use tableq_client::sign::{AccountKey, SasBuilder};
use tableq_server::ServerConfig;
use tableq_server::config::Limits;

const FAULTS: &str = "?restype=tableq&comp=faults";
const RESET: &str = "?restype=tableq&comp=reset";

fn throttled(partition: u32, account: u32) -> ServerConfig {
    ServerConfig {
        throttle: Some(Limits { partition, account }),
        ..ServerConfig::default()
    }
}

fn with_faults(rules: &Value, seed: u64) -> ServerConfig {
    ServerConfig {
        faults: Some(rules.to_string()),
        fault_seed: Some(seed),
        ..ServerConfig::default()
    }
}

/// Insert Or Replace of `t(pk, rk)` (the PartitionKey is in the path).
async fn upsert(s: &TestServer, table: &str, pk: &str, rk: &str) -> Reply {
    s.send(
        "PUT",
        &entity_path(table, pk, rk),
        &[("Content-Type", "application/json"), ("Accept", MINIMAL)],
        Some(&json!({"PartitionKey": pk, "RowKey": rk, "n": 1}).to_string()),
    )
    .await
}

async fn put_faults(s: &TestServer, rules: &Value) -> Reply {
    s.send(
        "PUT",
        FAULTS,
        &[("Content-Type", "application/json")],
        Some(&rules.to_string()),
    )
    .await
}

/// A request signed with the development key, sent on a connection of its own; `Err` when
/// the connection closed without an answer.
async fn try_send(
    s: &TestServer,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<u16, reqwest::Error> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut request = client
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            s.url(path),
        )
        .header("Content-Type", "application/json")
        .header("Accept", MINIMAL);
    if let Some(b) = body {
        request = request.body(b.to_owned());
    }
    let mut request = request.build().unwrap();
    sign(&mut request, &dev_signer());
    let response = client.execute(request).await?;
    let status = response.status().as_u16();
    response.bytes().await?;
    Ok(status)
}

#[tokio::test]
async fn throttling_refuses_a_hot_partition_at_its_limit_and_not_below_it() {
    let s = TestServer::start_with(throttled(20, 100_000)).await;
    s.create_table("hot").await;

    // 15 a second for 2 s: under the limit, nothing refused.
    let started = Instant::now();
    for i in 0..30u32 {
        let r = upsert(&s, "hot", "p", &i.to_string()).await;
        assert_eq!(r.status, 204, "paced request {i}: {}", r.body);
        let next = started + Duration::from_millis(1000 * u64::from(i + 1) / 15);
        tokio::time::sleep_until(next.into()).await;
    }

    // As fast as possible for 1.5 s: the bucket's burst (20) and 20 a second.
    let started = Instant::now();
    let (mut admitted, mut refused) = (0u32, 0u32);
    let mut busy: Option<Reply> = None;
    let mut i = 0u32;
    while started.elapsed() < Duration::from_millis(1500) {
        let r = upsert(&s, "hot", "p", &format!("fast{i}")).await;
        i += 1;
        match r.status {
            204 => admitted += 1,
            503 => {
                refused += 1;
                busy.get_or_insert(r);
            }
            other => panic!("status {other}: {}", r.body),
        }
    }
    let took = started.elapsed().as_secs_f64();
    let expected = 20.0 + 20.0 * took;
    assert!(
        (f64::from(admitted) - expected).abs() <= 4.0,
        "admitted {admitted} in {took:.2}s, expected ≈ {expected:.0} (refused {refused})"
    );
    assert!(refused > 0, "nothing refused in {i} requests");

    // The service's error: status, code in header and body, sentence, request id.
    let busy = busy.unwrap();
    let message = busy.expect_error(503, "ServerBusy");
    assert_eq!(
        message.lines().next(),
        Some("The server is busy."),
        "{message}"
    );
    assert!(message.contains("RequestId:"), "{message}");
    assert!(busy.header("x-ms-request-id").is_some());

    // Another partition is not throttled.
    let r = upsert(&s, "hot", "cold", "1").await;
    assert_eq!(r.status, 204, "{}", r.body);
}

#[tokio::test]
async fn a_query_confined_to_one_partition_counts_against_it() {
    let s = TestServer::start_with(throttled(2, 100_000)).await;
    s.create_table("qry").await;
    let one = "qry()?$filter=PartitionKey%20eq%20'q'%20and%20RowKey%20gt%20'a'";
    assert_eq!(s.get(one).await.status, 200);
    assert_eq!(s.get(one).await.status, 200);
    s.get(one).await.expect_error(503, "ServerBusy");
    // Over several partitions: the account's limit only.
    for _ in 0..3 {
        assert_eq!(s.get("qry()").await.status, 200);
    }
}

#[tokio::test]
async fn throttling_refuses_an_account_over_its_limit() {
    let s = TestServer::start_with(throttled(1000, 5)).await;
    s.create_table("acct").await;
    let mut statuses = Vec::new();
    for i in 0..8 {
        statuses.push(upsert(&s, "acct", &format!("p{i}"), "1").await);
    }
    // The table's creation took one token.
    assert!(
        statuses[..4].iter().all(|r| r.status == 204),
        "{statuses:?}"
    );
    let last = statuses.last().unwrap();
    let message = last.expect_error(503, "ServerBusy");
    assert_eq!(
        message.lines().next(),
        Some("Operations per second is over the account limit.")
    );
}

#[tokio::test]
async fn an_injected_error_answers_with_the_service_error_then_stops() {
    let rules = json!({"rules": [
        {"name": "boom", "operation": "InsertEntity", "error": "InternalError", "next": 1}
    ]});
    let s = TestServer::start_with(with_faults(&rules, 1)).await;
    s.create_table("tbl").await;
    let entity = json!({"PartitionKey": "p", "RowKey": "1"}).to_string();
    let r = s.post_json("tbl", &entity).await;
    let message = r.expect_error(500, "InternalError");
    assert!(
        message.starts_with("The server encountered an internal error."),
        "{message}"
    );
    assert_eq!(s.post_json("tbl", &entity).await.status, 201);
    let report = s.get(FAULTS).await.json();
    assert_eq!(report["fired"], json!([{"rule": "boom", "count": 1}]));
    assert_eq!(report["seed"], json!(1));
}

#[tokio::test]
async fn a_batch_fails_at_the_chosen_index_and_applies_nothing() {
    let rules = json!({"rules": [
        {"operation": "EntityGroupTransaction", "batchFailAt": 1, "error": "InternalError", "next": 1}
    ]});
    let s = TestServer::start_with(with_faults(&rules, 1)).await;
    s.create_table("bat").await;
    let (batch, cs) = ("batch_1", "changeset_1");
    let mut body = format!("--{batch}\r\nContent-Type: multipart/mixed; boundary={cs}\r\n\r\n");
    for rk in 0..3 {
        body += &format!(
            "--{cs}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
             POST {}/{ACCOUNT}/bat HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\n\r\n\
             {{\"PartitionKey\":\"p\",\"RowKey\":\"{rk}\"}}\r\n",
            s.origin
        );
    }
    body += &format!("--{cs}--\r\n--{batch}--\r\n");
    let content_type = format!("multipart/mixed; boundary={batch}");
    let headers = [
        ("Content-Type", content_type.as_str()),
        ("Accept", "application/json"),
        ("DataServiceVersion", "3.0"),
    ];
    let send = || s.send("POST", "$batch", &headers, Some(&body));
    let r = send().await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body.contains("HTTP/1.1 500"), "{}", r.body);
    assert!(r.body.contains("\"code\":\"InternalError\""), "{}", r.body);
    assert!(r.body.contains("\"value\":\"1:"), "the index: {}", r.body);
    assert_eq!(r.body.matches("HTTP/1.1 ").count(), 1, "{}", r.body);
    let stored = s.get("bat()").await.json();
    assert_eq!(stored["value"], json!([]), "nothing applied");
    // The rule spent, the same batch applies.
    let r = send().await;
    assert_eq!(r.body.matches("HTTP/1.1 201").count(), 3, "{}", r.body);
}

#[tokio::test]
async fn added_latency_delays_the_answer() {
    let rules = json!({"rules": [{"table": "slow", "latencyMs": 150}]});
    let s = TestServer::start_with(with_faults(&rules, 1)).await;
    s.create_table("slow").await;
    s.create_table("fast").await;
    let started = Instant::now();
    let r = upsert(&s, "slow", "p", "1").await;
    assert_eq!(r.status, 204);
    assert!(started.elapsed() >= Duration::from_millis(150));
    let started = Instant::now();
    assert_eq!(upsert(&s, "fast", "p", "1").await.status, 204);
    assert!(started.elapsed() < Duration::from_millis(150));
}

#[tokio::test]
async fn a_drop_before_the_write_closes_the_connection_and_applies_nothing() {
    let rules = json!({"rules": [
        {"operation": "InsertOrReplaceEntity", "drop": "beforeWrite", "next": 1}
    ]});
    let s = TestServer::start_with(with_faults(&rules, 1)).await;
    s.create_table("drp").await;
    let body = json!({"PartitionKey": "p", "RowKey": "1"}).to_string();
    let sent = try_send(&s, "PUT", &entity_path("drp", "p", "1"), Some(&body)).await;
    assert!(sent.is_err(), "answered: {sent:?}");
    assert_eq!(s.get(&entity_path("drp", "p", "1")).await.status, 404);
}

#[tokio::test]
async fn a_drop_after_the_write_closes_the_connection_with_the_write_applied() {
    let rules = json!({"rules": [
        {"name": "lost reply", "operation": "InsertEntity", "drop": "afterWrite", "next": 1}
    ]});
    let s = TestServer::start_with(with_faults(&rules, 1)).await;
    s.create_table("drp").await;
    let body = json!({"PartitionKey": "p", "RowKey": "1"}).to_string();
    let sent = try_send(&s, "POST", "drp", Some(&body)).await;
    assert!(sent.is_err(), "answered: {sent:?}");
    assert_eq!(s.get(&entity_path("drp", "p", "1")).await.status, 200);
    // The retry a client then makes is not idempotent.
    s.post_json("drp", &body)
        .await
        .expect_error(409, "EntityAlreadyExists");
}

/// The statuses of 50 point reads under a rule that fails half of them at random.
async fn outcomes(seed: u64) -> Vec<u16> {
    let rules = json!({"rules": [
        {"operation": "GetEntity", "error": "ServerBusy", "probability": 0.5}
    ]});
    let s = TestServer::start_with(with_faults(&rules, seed)).await;
    s.create_table("rnd").await;
    assert_eq!(upsert(&s, "rnd", "p", "1").await.status, 204);
    let mut statuses = Vec::new();
    for _ in 0..50 {
        statuses.push(s.get(&entity_path("rnd", "p", "1")).await.status);
    }
    statuses
}

#[tokio::test]
async fn the_same_seed_gives_the_same_faults() {
    let first = outcomes(42).await;
    assert!(first.contains(&503) && first.contains(&200), "{first:?}");
    assert_eq!(outcomes(42).await, first);
    assert_ne!(outcomes(43).await, first);
}

#[tokio::test]
async fn fault_rules_are_set_read_and_cleared_at_run_time() {
    let s = TestServer::start_with(ServerConfig {
        fault_seed: Some(9),
        ..ServerConfig::default()
    })
    .await;
    s.create_table("tbl").await;

    let r = s.get(FAULTS).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["rules"], Value::Null);

    // A bad rule set: 400 naming the rule and its problem, nothing armed.
    let r = put_faults(
        &s,
        &json!({"rules": [{"name": "typo", "operation": "InsertEnity", "error": "ServerBusy"}]}),
    )
    .await;
    let message = r.expect_error(400, "InvalidInput");
    assert!(
        message.contains("typo") && message.contains("InsertEnity"),
        "{message}"
    );
    let r = s
        .send(
            "PUT",
            FAULTS,
            &[("Content-Type", "application/json")],
            Some("{"),
        )
        .await;
    r.expect_error(400, "InvalidInput");

    let rules = json!({"rules": [{"name": "busy", "operation": "InsertEntity", "error": "ServerBusy", "next": 1}]});
    assert_eq!(put_faults(&s, &rules).await.status, 204);
    let entity = json!({"PartitionKey": "p", "RowKey": "1"}).to_string();
    s.post_json("tbl", &entity)
        .await
        .expect_error(503, "ServerBusy");
    let report = s.get(FAULTS).await.json();
    assert_eq!(report["rules"], rules);
    assert_eq!(report["seed"], json!(9));
    assert_eq!(report["fired"], json!([{"rule": "busy", "count": 1}]));

    // Cleared: nothing fires any more.
    assert_eq!(put_faults(&s, &rules).await.status, 204);
    assert_eq!(s.send("DELETE", FAULTS, &[], None).await.status, 204);
    assert_eq!(s.post_json("tbl", &entity).await.status, 201);
    assert_eq!(s.get(FAULTS).await.json()["rules"], Value::Null);

    // A SAS token, even one allowing everything, is refused.
    let sas = SasBuilder::account("sco")
        .permissions("rwdlacu")
        .window_from_now(Some(-60), 3600)
        .sign(&AccountKey::development());
    for method in ["GET", "PUT", "DELETE"] {
        let r = s
            .send_unsigned(method, &format!("{FAULTS}&{sas}"), &[], Some("{}"))
            .await;
        r.expect_error(403, "AuthorizationPermissionMismatch");
    }
    let r = s
        .send_unsigned("POST", &format!("{RESET}&{sas}"), &[], None)
        .await;
    r.expect_error(403, "AuthorizationPermissionMismatch");
}

#[tokio::test]
async fn a_reset_removes_tables_and_service_properties() {
    let s = TestServer::start().await;
    s.create_table("one").await;
    s.create_table("two").await;
    upsert(&s, "one", "p", "1").await;
    let cors = "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Cors>\
        <CorsRule><AllowedOrigins>http://example.com</AllowedOrigins><AllowedMethods>GET</AllowedMethods>\
        <MaxAgeInSeconds>60</MaxAgeInSeconds><ExposedHeaders>*</ExposedHeaders><AllowedHeaders>*</AllowedHeaders>\
        </CorsRule></Cors></StorageServiceProperties>";
    let r = s
        .send(
            "PUT",
            "?restype=service&comp=properties",
            &[("Content-Type", "application/xml")],
            Some(cors),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);

    let acl = "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier>\
        <Id>policy1</Id><AccessPolicy><Expiry>2099-01-01T00:00:00Z</Expiry><Permission>r</Permission>\
        </AccessPolicy></SignedIdentifier></SignedIdentifiers>";
    let r = s
        .send(
            "PUT",
            "one?comp=acl",
            &[("Content-Type", "application/xml")],
            Some(acl),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);

    let r = s.send("POST", RESET, &[], None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(s.get("Tables").await.json()["value"], json!([]));
    let properties = s
        .send("GET", "?restype=service&comp=properties", &[], None)
        .await;
    assert!(!properties.body.contains("CorsRule"), "{}", properties.body);
    // The account works as new: no entity, no stored access policy.
    s.create_table("one").await;
    assert_eq!(s.get(&entity_path("one", "p", "1")).await.status, 404);
    let acl = s.send("GET", "one?comp=acl", &[], None).await;
    assert_eq!(acl.status, 200, "{}", acl.body);
    assert!(!acl.body.contains("policy1"), "{}", acl.body);
}

#[tokio::test]
async fn the_timeout_parameter_bounds_a_request_under_throttling() {
    let rules = json!({"rules": [{"table": "slow", "latencyMs": 1500}]});
    let s = TestServer::start_with(ServerConfig {
        throttle: Some(Limits::default()),
        ..with_faults(&rules, 1)
    })
    .await;
    s.create_table("slow").await;
    let r = s.get("slow()?timeout=1").await;
    let message = r.expect_error(500, "OperationTimedOut");
    assert!(
        message.starts_with("The operation could not be completed within the permitted time."),
        "{message}"
    );
}

#[tokio::test]
async fn injected_faults_and_throttling_are_counted_in_metrics() {
    let rules = json!({"rules": [
        {"operation": "InsertEntity", "error": "InternalError", "next": 2},
        {"table": "slow", "latencyMs": 1, "next": 1}
    ]});
    let s = TestServer::start_with(ServerConfig {
        throttle: Some(Limits {
            partition: 1,
            account: 100_000,
        }),
        ..with_faults(&rules, 1)
    })
    .await;
    s.create_table("tbl").await;
    s.create_table("slow").await;
    for pk in ["p1", "p2"] {
        let entity = json!({"PartitionKey": pk, "RowKey": "1"}).to_string();
        s.post_json("tbl", &entity)
            .await
            .expect_error(500, "InternalError");
    }
    upsert(&s, "slow", "q", "1").await;
    // The partition's one token went to its insert: refused.
    upsert(&s, "tbl", "p1", "1")
        .await
        .expect_error(503, "ServerBusy");
    let metrics = reqwest::get(format!("{}/metrics", s.origin))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("tableq_faults_injected_total{kind=\"error\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tableq_faults_injected_total{kind=\"latency\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tableq_throttled_total{scope=\"partition\"} 1"),
        "{metrics}"
    );
}
