//! Authorization over real HTTP, with hand-built requests: SharedKey and SharedKeyLite
//! signatures, table and account SAS tokens, several accounts, and `--no-auth`. Every
//! refusal is a 403 with the service's code (`AuthenticationFailed` when the request cannot
//! be authenticated; what a valid SAS does not allow has its own codes) and an
//! `odata.error` body, and nothing is written (the tests look at the store afterwards).

use crate::server_support;

use serde_json::json;
use server_support::{MINIMAL, Reply, TestServer, entity_path};
use tableq_client::sign::{AccountKey, SasBuilder, Scheme, SharedKeySigner};
use tableq_server::{Account, AuthMode, ServerConfig};

const OTHER_KEY: &str = "b3RoZXIgYWNjb3VudCBrZXkgZm9yIHRlc3RzIG9ubHkgMDEyMzQ1Njc4OQ==";

fn other_account() -> Account {
    Account {
        name: "other1".into(),
        key: OTHER_KEY.into(),
    }
}

#[track_caller]
fn denied(r: &Reply) -> String {
    r.expect_error(403, "AuthenticationFailed")
}

/// A valid SAS without the permission.
#[track_caller]
fn lacks_permission(r: &Reply) -> String {
    r.expect_error(403, "AuthorizationPermissionMismatch")
}

/// A valid SAS used outside its table or key range.
#[track_caller]
fn outside(r: &Reply) -> String {
    r.expect_error(403, "AuthorizationFailure")
}

/// The entities of `table` in the first account's store, as (PartitionKey, RowKey) — read
/// with the development key.
async fn stored(s: &TestServer, table: &str) -> Vec<(String, String)> {
    let r = s.get(&format!("{table}()")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["PartitionKey"].as_str().unwrap().to_owned(),
                e["RowKey"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The table names of the first account, read with the development key.
async fn tables(s: &TestServer) -> Vec<String> {
    let r = s.get("Tables").await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["TableName"].as_str().unwrap().to_owned())
        .collect()
}

async fn send_signed_by(
    s: &TestServer,
    signer: &SharedKeySigner,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Reply {
    let headers: &[(&str, &str)] = if body.is_some() {
        &[("Content-Type", "application/json"), ("Accept", MINIMAL)]
    } else {
        &[("Accept", MINIMAL)]
    };
    s.exchange(method, &s.url(path), headers, body, Some(signer))
        .await
}

#[tokio::test]
async fn shared_key_and_shared_key_lite_signatures_pass() {
    let s = TestServer::start().await;
    for (scheme, table) in [
        (Scheme::SharedKey, "keyed"),
        (Scheme::SharedKeyLite, "lite"),
    ] {
        let signer = SharedKeySigner::new(AccountKey::development(), scheme);
        let body = format!(r#"{{"TableName":"{table}"}}"#);
        let r = send_signed_by(&s, &signer, "POST", "Tables", Some(&body)).await;
        assert_eq!(r.status, 201, "{scheme:?}: {}", r.body);
        let entity = r#"{"PartitionKey":"p","RowKey":"r","V":1}"#;
        let r = send_signed_by(&s, &signer, "POST", table, Some(entity)).await;
        assert_eq!(r.status, 201, "{scheme:?}: {}", r.body);
        // Keys that need percent-encoding: the path is signed as sent.
        let path = entity_path(table, "p", "r");
        let r = send_signed_by(&s, &signer, "GET", &path, None).await;
        assert_eq!(r.status, 200, "{scheme:?}: {}", r.body);
        let r = send_signed_by(
            &s,
            &signer,
            "GET",
            &format!("{table}()?$filter=V%20eq%201"),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{scheme:?}: {}", r.body);
        assert_eq!(r.json()["value"].as_array().unwrap().len(), 1);
    }
    assert_eq!(stored(&s, "keyed").await.len(), 1);
}

#[tokio::test]
async fn missing_or_wrong_credentials_are_refused_and_nothing_is_written() {
    let s = TestServer::start_accounts(ServerConfig::default(), vec![other_account()]).await;
    s.create_table("kept").await;
    let entity = r#"{"PartitionKey":"p","RowKey":"r"}"#;
    let json = [("Content-Type", "application/json"), ("Accept", MINIMAL)];

    // No credentials at all.
    let m = denied(&s.send_unsigned("POST", "kept", &json, Some(entity)).await);
    assert!(m.contains("not signed"), "{m}");
    denied(
        &s.send_unsigned("POST", "Tables", &json, Some(r#"{"TableName":"new1"}"#))
            .await,
    );
    denied(&s.send_unsigned("GET", "Tables", &[], None).await);

    // Signed with another account's key (wrong signature), or naming another account.
    let wrong_key = SharedKeySigner::new(
        AccountKey::new("devstoreaccount1", OTHER_KEY).unwrap(),
        Scheme::SharedKey,
    );
    let m = denied(&send_signed_by(&s, &wrong_key, "POST", "kept", Some(entity)).await);
    assert!(m.contains("signature does not match"), "{m}");
    let other = SharedKeySigner::new(
        AccountKey::new("other1", OTHER_KEY).unwrap(),
        Scheme::SharedKeyLite,
    );
    let m = denied(&send_signed_by(&s, &other, "POST", "kept", Some(entity)).await);
    assert!(m.contains("signed for account `other1`"), "{m}");

    // An account this server does not host.
    let r = s
        .exchange(
            "GET",
            &format!("{}/nobody1/Tables", s.origin),
            &[],
            None,
            Some(&SharedKeySigner::new(
                AccountKey::new("nobody1", OTHER_KEY).unwrap(),
                Scheme::SharedKey,
            )),
        )
        .await;
    let m = denied(&r);
    assert!(m.contains("`nobody1` is not served here"), "{m}");
    assert!(
        !m.contains("devstoreaccount1"),
        "the hosted accounts are not told: {m}"
    );

    // Hand-made headers: a good signature over another path, a broken header, bad dates.
    let dev = server_support::dev_signer();
    let date = "Mon, 23 Nov 2026 16:00:00 GMT";
    let path = "/devstoreaccount1/kept";
    let other_path = dev.authorization(
        "POST",
        "/devstoreaccount1/other",
        Some("application/json"),
        date,
    );
    let stale = dev.authorization(
        "POST",
        path,
        Some("application/json"),
        "Mon, 01 Jan 2024 00:00:00 GMT",
    );
    let now = tableq_client::sign::http_date_now();
    let fresh = dev.authorization("POST", path, Some("application/json"), &now);
    let iso = dev.authorization(
        "POST",
        path,
        Some("application/json"),
        "2026-11-23T16:00:00Z",
    );
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![("x-ms-date", &now), ("Authorization", &other_path)],
            "signature does not match",
        ),
        (
            vec![
                ("x-ms-date", "Mon, 01 Jan 2024 00:00:00 GMT"),
                ("Authorization", &stale),
            ],
            "15 minutes",
        ),
        (
            vec![
                ("x-ms-date", "2026-11-23T16:00:00Z"),
                ("Authorization", &iso),
            ],
            "RFC 1123",
        ),
        (vec![("Authorization", &fresh)], "no x-ms-date or Date"),
        (
            vec![
                ("x-ms-date", &now),
                ("Authorization", "SharedKey devstoreaccount1"),
            ],
            "not `SharedKey",
        ),
        (
            // A bearer token over plain HTTP (tests/server_tokens.rs has the HTTPS side).
            vec![("x-ms-date", &now), ("Authorization", "Bearer abc")],
            "accepted over HTTPS only",
        ),
        (
            vec![
                ("x-ms-date", &now),
                ("Authorization", "SharedKey devstoreaccount1:AAAA"),
            ],
            "does not match",
        ),
        (
            vec![
                ("x-ms-date", &now),
                ("Authorization", "SharedKey devstoreaccount1:!!"),
            ],
            "does not match",
        ),
    ];
    for (extra, expected) in cases {
        let mut headers = json.to_vec();
        headers.extend(extra);
        let m = denied(
            &s.send_unsigned("POST", "kept", &headers, Some(entity))
                .await,
        );
        assert!(m.contains(expected), "{expected}: {m}");
    }
    // The Date header works when there is no x-ms-date.
    let r = s
        .send_unsigned(
            "POST",
            "kept",
            &[
                ("Content-Type", "application/json"),
                ("Date", &now),
                ("Authorization", &fresh),
            ],
            Some(entity),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        stored(&s, "kept").await,
        vec![("p".to_owned(), "r".to_owned())]
    );
    assert_eq!(tables(&s).await, vec!["kept".to_owned()]);
}

#[tokio::test]
async fn several_accounts_have_separate_stores() {
    let s = TestServer::start_accounts(ServerConfig::default(), vec![other_account()]).await;
    let other = SharedKeySigner::new(
        AccountKey::new("other1", OTHER_KEY).unwrap(),
        Scheme::SharedKey,
    );
    let url = |path: &str| format!("{}/other1/{path}", s.origin);
    let r = s
        .exchange(
            "POST",
            &url("Tables"),
            &[("Content-Type", "application/json")],
            Some(r#"{"TableName":"mine"}"#),
            Some(&other),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(
        r.json()["odata.metadata"]
            .as_str()
            .unwrap()
            .contains("/other1/$metadata")
    );
    let r = s
        .exchange("GET", &url("Tables"), &[], None, Some(&other))
        .await;
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 1, "{}", r.body);
    // The development account does not see it.
    assert!(tables(&s).await.is_empty());
    let r = s.get("Tables").await;
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 0, "{}", r.body);
    // The development key does not open the other account.
    denied(
        &s.exchange(
            "GET",
            &url("Tables"),
            &[],
            None,
            Some(&server_support::dev_signer()),
        )
        .await,
    );
}

#[tokio::test]
async fn no_auth_accepts_unsigned_requests_but_not_unknown_accounts() {
    let config = ServerConfig {
        auth: AuthMode::Off,
        ..ServerConfig::default()
    };
    let s = TestServer::start_with(config).await;
    let r = s
        .send_unsigned(
            "POST",
            "Tables",
            &[("Content-Type", "application/json")],
            Some(r#"{"TableName":"open"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = s
        .exchange(
            "GET",
            &format!("{}/nobody1/Tables", s.origin),
            &[],
            None,
            None,
        )
        .await;
    denied(&r);
}

/// `path` with a SAS token appended.
fn with_token(path: &str, token: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{token}")
}

async fn seed(s: &TestServer) {
    s.create_table("sas").await;
    for (pk, rk) in [("a", "1"), ("b", "1"), ("b", "5"), ("c", "1"), ("d", "1")] {
        s.insert("sas", &json!({"PartitionKey": pk, "RowKey": rk}))
            .await;
    }
}

#[tokio::test]
async fn table_sas_permissions_time_window_and_table() {
    let s = TestServer::start().await;
    seed(&s).await;
    let key = AccountKey::development();
    let json = [("Content-Type", "application/json"), ("Accept", MINIMAL)];
    let entity = r#"{"PartitionKey":"x","RowKey":"1"}"#;
    let read = SasBuilder::table("sas")
        .permissions("r")
        .window_from_now(Some(-60), 3600)
        .sign(&key);

    let r = s
        .send_unsigned("GET", &with_token("sas()", &read), &json, None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 5);
    let r = s
        .send_unsigned(
            "GET",
            &with_token(&entity_path("sas", "b", "5"), &read),
            &json,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Table names are case-insensitive.
    let r = s
        .send_unsigned("GET", &with_token("SAS()", &read), &json, None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Missing permissions: insert, upsert, update, delete.
    let m = lacks_permission(
        &s.send_unsigned("POST", &with_token("sas", &read), &json, Some(entity))
            .await,
    );
    assert!(m.contains("permission `a`"), "{m}");
    let put = with_token(&entity_path("sas", "b", "5"), &read);
    lacks_permission(&s.send_unsigned("PUT", &put, &json, Some("{}")).await);
    lacks_permission(
        &s.send_unsigned("DELETE", &put, &[("If-Match", "*")], None)
            .await,
    );
    let add_only = SasBuilder::table("sas")
        .permissions("a")
        .window_from_now(None, 3600)
        .sign(&key);
    let upsert = with_token(&entity_path("sas", "b", "5"), &add_only);
    let m = lacks_permission(&s.send_unsigned("PUT", &upsert, &json, Some("{}")).await);
    assert!(m.contains("permission `u`"), "{m}");

    // Another table; the table list; expired; not yet valid; tampered.
    let m = outside(
        &s.send_unsigned("GET", &with_token("other()", &read), &json, None)
            .await,
    );
    assert!(m.contains("not `other`"), "{m}");
    outside(
        &s.send_unsigned("GET", &with_token("Tables", &read), &json, None)
            .await,
    );
    let expired = SasBuilder::table("sas")
        .permissions("raud")
        .window_from_now(Some(-7200), -3600)
        .sign(&key);
    let m = denied(
        &s.send_unsigned("POST", &with_token("sas", &expired), &json, Some(entity))
            .await,
    );
    assert!(m.contains("expired"), "{m}");
    let early = SasBuilder::table("sas")
        .permissions("raud")
        .window_from_now(Some(3600), 7200)
        .sign(&key);
    let m = denied(
        &s.send_unsigned("POST", &with_token("sas", &early), &json, Some(entity))
            .await,
    );
    assert!(m.contains("not valid yet"), "{m}");
    let widened = read.replace("sp=r", "sp=raud");
    let m = denied(
        &s.send_unsigned("POST", &with_token("sas", &widened), &json, Some(entity))
            .await,
    );
    assert!(m.contains("does not match"), "{m}");
    let foreign = SasBuilder::table("sas")
        .permissions("raud")
        .window_from_now(None, 3600)
        .sign(&AccountKey::new("devstoreaccount1", OTHER_KEY).unwrap());
    denied(
        &s.send_unsigned("POST", &with_token("sas", &foreign), &json, Some(entity))
            .await,
    );
    assert_eq!(stored(&s, "sas").await.len(), 5, "nothing was written");

    // With the permissions, the same requests work.
    let all = SasBuilder::table("sas")
        .permissions("raud")
        .window_from_now(None, 3600)
        .sign(&key);
    let r = s
        .send_unsigned("POST", &with_token("sas", &all), &json, Some(entity))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = s
        .send_unsigned(
            "DELETE",
            &with_token(&entity_path("sas", "x", "1"), &all),
            &[("If-Match", "*")],
            None,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
}

#[tokio::test]
async fn table_sas_key_ranges_limit_writes_reads_and_queries() {
    let s = TestServer::start().await;
    seed(&s).await;
    let key = AccountKey::development();
    let json = [("Content-Type", "application/json"), ("Accept", MINIMAL)];
    // From (b, 2) to (c, *), inclusive.
    let ranged = SasBuilder::table("sas")
        .permissions("raud")
        .window_from_now(None, 3600)
        .start_key("b", Some("2"))
        .end_key("c", None)
        .sign(&key);

    for (pk, rk) in [("a", "9"), ("b", "1"), ("d", "0")] {
        let e = json!({"PartitionKey": pk, "RowKey": rk}).to_string();
        let m = outside(
            &s.send_unsigned("POST", &with_token("sas", &ranged), &json, Some(&e))
                .await,
        );
        assert!(m.contains("outside the SAS's key range"), "{m}");
        let one = with_token(&entity_path("sas", pk, rk), &ranged);
        outside(&s.send_unsigned("PUT", &one, &json, Some("{}")).await);
        outside(&s.send_unsigned("GET", &one, &json, None).await);
        outside(
            &s.send_unsigned("DELETE", &one, &[("If-Match", "*")], None)
                .await,
        );
    }
    assert_eq!(stored(&s, "sas").await.len(), 5, "nothing was written");

    let e = json!({"PartitionKey": "b", "RowKey": "2"}).to_string();
    let r = s
        .send_unsigned("POST", &with_token("sas", &ranged), &json, Some(&e))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = s
        .send_unsigned(
            "GET",
            &with_token(&entity_path("sas", "c", "1"), &ranged),
            &json,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Queries see only the range, with or without a filter of their own.
    let keys = |r: &Reply| -> Vec<String> {
        r.json()["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{}{}",
                    e["PartitionKey"].as_str().unwrap(),
                    e["RowKey"].as_str().unwrap()
                )
            })
            .collect()
    };
    let r = s
        .send_unsigned("GET", &with_token("sas()", &ranged), &json, None)
        .await;
    assert_eq!(keys(&r), ["b2", "b5", "c1"], "{}", r.body);
    let r = s
        .send_unsigned(
            "GET",
            &with_token(
                "sas()?$filter=RowKey%20eq%20%271%27%20or%20RowKey%20eq%20%275%27",
                &ranged,
            ),
            &json,
            None,
        )
        .await;
    assert_eq!(keys(&r), ["b5", "c1"], "{}", r.body);
}

#[tokio::test]
async fn account_sas_resource_types_and_permissions() {
    let s = TestServer::start().await;
    seed(&s).await;
    let key = AccountKey::development();
    let json = [("Content-Type", "application/json"), ("Accept", MINIMAL)];
    let tables_only = SasBuilder::account("c")
        .permissions("lc")
        .window_from_now(None, 3600)
        .sign(&key);
    let r = s
        .send_unsigned(
            "POST",
            &with_token("Tables", &tables_only),
            &json,
            Some(r#"{"TableName":"made"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = s
        .send_unsigned("GET", &with_token("Tables", &tables_only), &json, None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let m = lacks_permission(
        &s.send_unsigned(
            "DELETE",
            &with_token("Tables('made')", &tables_only),
            &[],
            None,
        )
        .await,
    );
    assert!(m.contains("permission `d`"), "{m}");
    let m = s
        .send_unsigned("GET", &with_token("sas()", &tables_only), &json, None)
        .await
        .expect_error(403, "AuthorizationResourceTypeMismatch");
    assert!(m.contains("resource type `o`"), "{m}");

    let entities = SasBuilder::account("o")
        .permissions("ra")
        .window_from_now(None, 3600)
        .sign(&key);
    let r = s
        .send_unsigned("GET", &with_token("sas()", &entities), &json, None)
        .await;
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 5);
    let r = s
        .send_unsigned(
            "POST",
            &with_token("sas", &entities),
            &json,
            Some(r#"{"PartitionKey":"n","RowKey":"1"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    lacks_permission(
        &s.send_unsigned(
            "DELETE",
            &with_token(&entity_path("sas", "n", "1"), &entities),
            &[("If-Match", "*")],
            None,
        )
        .await,
    );
    s.send_unsigned(
        "POST",
        &with_token("Tables", &entities),
        &json,
        Some(r#"{"TableName":"nope"}"#),
    )
    .await
    .expect_error(403, "AuthorizationResourceTypeMismatch");
    let expired = SasBuilder::account("sco")
        .permissions("rwdlacu")
        .window_from_now(Some(-7200), -60)
        .sign(&key);
    denied(
        &s.send_unsigned("GET", &with_token("sas()", &expired), &json, None)
            .await,
    );
    assert_eq!(stored(&s, "sas").await.len(), 6);
    assert_eq!(tables(&s).await, vec!["made".to_owned(), "sas".to_owned()]);
}

// ---- the CLI: --account, --no-auth ----------------------------------------------------

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

/// Starts `tableq serve` with `args` on a free port; returns the child, its port and the
/// banner (every line up to and including the authorization line).
fn serve(args: &[&str]) -> (Child, u16, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            panic!("the server stopped before its banner ended: {banner}");
        }
        banner.push_str(&line);
        if line.starts_with("authorization:") || line.contains("--no-auth") {
            break;
        }
    }
    let port = banner
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://127.0.0.1:"))
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {banner}"));
    (child, port, banner)
}

/// Stops a server this test started (by its pid) and returns its stderr.
fn stop(mut child: Child) -> String {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    stderr
}

/// One HTTP/1.1 exchange, signed by `signer` (or not).
fn raw(port: u16, request: &str, signer: Option<&SharedKeySigner>) -> String {
    let request = match signer {
        Some(s) => server_support::sign_raw_with(request, s),
        None => request.to_owned(),
    };
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    out
}

fn create_table_request(account: &str, table: &str) -> String {
    let body = format!(r#"{{"TableName":"{table}"}}"#);
    format!(
        "POST /{account}/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn cli_no_auth_says_so_loudly_and_accepts_unsigned_requests() {
    let (child, port, banner) = serve(&["--in-memory", "--no-auth"]);
    assert!(banner.contains("WARNING: --no-auth"), "{banner}");
    let reply = raw(
        port,
        &create_table_request("devstoreaccount1", "open"),
        None,
    );
    assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");
    let stderr = stop(child);
    assert!(stderr.contains("WARNING: --no-auth"), "{stderr}");

    let (child, port, banner) = serve(&["--in-memory"]);
    assert!(banner.contains("authorization: on"), "{banner}");
    let reply = raw(
        port,
        &create_table_request("devstoreaccount1", "closed"),
        None,
    );
    assert!(reply.starts_with("HTTP/1.1 403"), "{reply}");
    assert!(reply.contains("AuthenticationFailed"), "{reply}");
    stop(child);
}

#[test]
fn cli_accounts_have_their_own_data_directories() {
    let dir = std::env::temp_dir().join(format!("tableq-auth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().unwrap();
    let account = format!("other1:{OTHER_KEY}");
    let other = SharedKeySigner::new(
        AccountKey::new("other1", OTHER_KEY).unwrap(),
        Scheme::SharedKeyLite,
    );
    let (child, port, banner) = serve(&["--data", data, "--account", &account]);
    assert!(
        banner.contains("accounts: devstoreaccount1, other1"),
        "{banner}"
    );
    let reply = raw(port, &create_table_request("other1", "mine"), Some(&other));
    assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");
    // The development key does not open the other account.
    let reply = raw(
        port,
        &create_table_request("other1", "theirs"),
        Some(&server_support::dev_signer()),
    );
    assert!(reply.starts_with("HTTP/1.1 403"), "{reply}");
    stop(child);
    assert!(dir.join("accounts").join("other1").is_dir());

    // After a restart the table is still there, in its account only.
    let (child, port, _) = serve(&["--data", data, "--account", &account]);
    let list = |acct: &str, signer: &SharedKeySigner| {
        raw(
            port,
            &format!("GET /{acct}/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
            Some(signer),
        )
    };
    let reply = list("other1", &other);
    assert!(
        reply.starts_with("HTTP/1.1 200") && reply.contains(r#""TableName":"mine""#),
        "{reply}"
    );
    let reply = list("devstoreaccount1", &server_support::dev_signer());
    assert!(
        reply.starts_with("HTTP/1.1 200") && !reply.contains("mine"),
        "{reply}"
    );
    stop(child);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_rejects_unusable_accounts() {
    for (flag, expected) in [
        ("other1", "want NAME:BASE64KEY"),
        ("Other1:AAAA", "lower-case letters and digits"),
        ("other1:not base64!", "not base64"),
        ("devstoreaccount1:AAAA", "given twice"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_tableq"))
            .args(["serve", "--in-memory", "--port", "0", "--account", flag])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(expected), "{flag}: {stderr}");
    }
}

/// A `$batch` body of one changeset: each operation is (method, URL, body).
fn changeset_body(ops: &[(&str, String, Option<&str>)]) -> (String, String) {
    let mut cs = String::new();
    for (method, url, body) in ops {
        cs.push_str("--changeset_c\r\nContent-Type: application/http\r\n");
        cs.push_str("Content-Transfer-Encoding: binary\r\n\r\n");
        cs.push_str(&format!("{method} {url} HTTP/1.1\r\n"));
        cs.push_str("Accept: application/json;odata=minimalmetadata\r\n");
        if method == &"DELETE" || method == &"PUT" {
            cs.push_str("If-Match: *\r\n");
        }
        match body {
            Some(b) => cs.push_str(&format!("Content-Type: application/json\r\n\r\n{b}\r\n")),
            None => cs.push_str("\r\n"),
        }
    }
    cs.push_str("--changeset_c--\r\n");
    let body = format!(
        "--batch_b\r\nContent-Type: multipart/mixed; boundary=changeset_c\r\n\r\n{cs}--batch_b--\r\n"
    );
    ("multipart/mixed; boundary=batch_b".to_owned(), body)
}

#[tokio::test]
async fn a_batch_under_a_sas_is_checked_operation_by_operation() {
    let s = TestServer::start().await;
    seed(&s).await;
    let key = AccountKey::development();
    let insert = |rk: &str| {
        (
            "POST",
            s.url("sas"),
            Some(if rk == "9" {
                r#"{"PartitionKey":"b","RowKey":"9"}"#
            } else {
                r#"{"PartitionKey":"b","RowKey":"7"}"#
            }),
        )
    };
    let delete = ("DELETE", s.url(&entity_path("sas", "b", "1")), None);
    let send = |token: String, ops: Vec<(&'static str, String, Option<&'static str>)>| {
        let (content_type, body) = changeset_body(&ops);
        let s = &s;
        async move {
            s.send_unsigned(
                "POST",
                &with_token("$batch", &token),
                &[("Content-Type", content_type.as_str())],
                Some(&body),
            )
            .await
        }
    };

    // Insert-only token: the insert passes its check, the delete (operation 1) fails it —
    // 403 for that operation, nothing written.
    let add_only = SasBuilder::table("sas")
        .permissions("a")
        .window_from_now(None, 3600)
        .sign(&key);
    let r = send(add_only.clone(), vec![insert("7"), delete.clone()]).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body.contains("HTTP/1.1 403"), "{}", r.body);
    assert!(
        r.body.contains("AuthorizationPermissionMismatch"),
        "{}",
        r.body
    );
    assert!(r.body.contains("1:"), "{}", r.body);
    assert_eq!(stored(&s, "sas").await.len(), 5, "nothing was written");

    // A key range: an insert whose body keys fall outside it is refused.
    let ranged = SasBuilder::table("sas")
        .permissions("raud")
        .window_from_now(None, 3600)
        .start_key("b", Some("0"))
        .end_key("b", Some("8"))
        .sign(&key);
    let r = send(ranged.clone(), vec![insert("7"), insert("9")]).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body.contains("HTTP/1.1 403"), "{}", r.body);
    assert!(r.body.contains("outside the SAS"), "{}", r.body);
    assert_eq!(stored(&s, "sas").await.len(), 5, "nothing was written");

    // Another table's token is refused for every operation.
    let other = SasBuilder::table("other")
        .permissions("raud")
        .window_from_now(None, 3600)
        .sign(&key);
    let r = send(other, vec![insert("7")]).await;
    assert!(r.body.contains("HTTP/1.1 403"), "{}", r.body);

    // Within its permissions and range the batch is applied.
    let r = send(ranged, vec![insert("7"), delete]).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(!r.body.contains("HTTP/1.1 403"), "{}", r.body);
    let rows = stored(&s, "sas").await;
    assert!(rows.contains(&("b".into(), "7".into())), "{rows:?}");
    assert!(!rows.contains(&("b".into(), "1".into())), "{rows:?}");
}
