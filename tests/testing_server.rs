//! `tableq::testing::TestServer` from plain `#[test]` functions: a real server (signatures
//! checked, tables and entities stored), one store per server, stopped on drop with its
//! port released.

use crate::testing_support;

use std::net::TcpListener;
use tableq::testing::TestServer;
use tableq_server::{Account, ServerConfig};
use testing_support::request;

#[test]
fn a_test_server_stores_what_signed_requests_write() {
    let server = TestServer::start().expect("start");
    let account = Some((server.account_name(), server.account_key()));
    assert_eq!(server.account_name(), "devstoreaccount1");
    assert_eq!(
        server.endpoint(),
        format!("http://127.0.0.1:{}/devstoreaccount1", server.port())
    );
    assert_eq!(
        server.connection_string(),
        format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={};\
             TableEndpoint={};",
            server.account_key(),
            server.endpoint()
        )
    );
    let addr = server.addr();
    let (status, body) = request(
        addr,
        "POST",
        "/devstoreaccount1/Tables",
        r#"{"TableName":"people"}"#,
        account,
    )
    .unwrap();
    assert_eq!(status, 201, "{body}");
    let (status, body) = request(
        addr,
        "POST",
        "/devstoreaccount1/people",
        r#"{"PartitionKey":"p","RowKey":"r","Age":7}"#,
        account,
    )
    .unwrap();
    assert_eq!(status, 201, "{body}");
    let path = "/devstoreaccount1/people(PartitionKey='p',RowKey='r')";
    let (status, body) = request(addr, "GET", path, "", account).unwrap();
    assert_eq!(status, 200, "{body}");
    let entity: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(entity["Age"], 7);
    // Signatures are checked, as `tableq serve` checks them by default.
    let (status, _) = request(addr, "GET", path, "", None).unwrap();
    assert_eq!(status, 403);
    server.stop().expect("a clean stop");
    assert!(
        TcpListener::bind(addr).is_ok(),
        "the port is free after stop"
    );
}

#[test]
fn every_server_has_its_own_store_and_account() {
    let first = TestServer::start().unwrap();
    let key = "c2Vjb25kLWtleS1mb3ItdGhlLXRlc3Qtc2VydmVy";
    let second = TestServer::start_with(ServerConfig {
        account: Account {
            name: "second".into(),
            key: key.into(),
        },
        ..ServerConfig::default()
    })
    .unwrap();
    assert_ne!(first.port(), second.port());
    assert_eq!(second.account_name(), "second");
    assert_eq!(second.account_key(), key);
    assert!(second.endpoint().ends_with("/second"));
    let dev = Some((first.account_name(), first.account_key()));
    let (status, _) = request(
        first.addr(),
        "POST",
        "/devstoreaccount1/Tables",
        r#"{"TableName":"only1"}"#,
        dev,
    )
    .unwrap();
    assert_eq!(status, 201);
    let (status, body) = request(
        second.addr(),
        "GET",
        "/second/Tables",
        "",
        Some(("second", key)),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body.trim(), r#"{"value":[]}"#);
}

#[test]
fn a_bad_configuration_is_an_error_not_a_panic() {
    let refused = TestServer::start_with(ServerConfig {
        account: Account {
            name: "metrics".into(),
            key: "a2V5".into(),
        },
        ..ServerConfig::default()
    })
    .unwrap_err();
    assert!(refused.to_string().contains("metrics"), "{refused}");
}
