//! Authorization codes as the service gives them, and the protocol corners clients depend
//! on (issue 16), each sent raw: trailing `/`, weak ETags, the Timestamp annotation, empty
//! options, future `x-ms-version`s, Query Tables with `$select`/`$top`/paging, and an
//! unknown account that is not told which accounts exist.

use crate::server_support;

use serde_json::json;
use server_support::{FULL, MINIMAL, Reply, TestServer, entity_path, sign_raw};
use tableq_client::sign::{AccountKey, SasBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn sas_url(s: &TestServer, path: &str, token: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{}{sep}{token}", s.url(path))
}

async fn with_sas(
    s: &TestServer,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Reply {
    let headers: &[(&str, &str)] = if body.is_some() {
        &[("Content-Type", "application/json"), ("Accept", MINIMAL)]
    } else {
        &[("Accept", MINIMAL)]
    };
    s.exchange(method, &sas_url(s, path, token), headers, body, None)
        .await
}

#[tokio::test]
async fn authorization_failures_carry_the_services_codes() {
    let s = TestServer::start().await;
    s.create_table("Codes").await;
    s.create_table("Other").await;
    s.insert("Codes", &json!({"PartitionKey": "b", "RowKey": "1"}))
        .await;
    let key = AccountKey::development();
    let insert = Some(r#"{"PartitionKey":"b","RowKey":"2"}"#);

    let read_only = SasBuilder::table("codes")
        .permissions("r")
        .window_from_now(None, 3600)
        .sign(&key);
    assert_eq!(
        with_sas(&s, "GET", "Codes()", &read_only, None)
            .await
            .status,
        200
    );
    with_sas(&s, "POST", "Codes", &read_only, insert)
        .await
        .expect_error(403, "AuthorizationPermissionMismatch");
    with_sas(&s, "GET", "Other()", &read_only, None)
        .await
        .expect_error(403, "AuthorizationFailure");

    let ranged = SasBuilder::table("codes")
        .permissions("raud")
        .window_from_now(None, 3600)
        .start_key("a", None)
        .end_key("a", None)
        .sign(&key);
    with_sas(&s, "GET", &entity_path("Codes", "b", "1"), &ranged, None)
        .await
        .expect_error(403, "AuthorizationFailure");
    with_sas(&s, "POST", "Codes", &ranged, insert)
        .await
        .expect_error(403, "AuthorizationFailure");

    let objects_only = SasBuilder::account("o")
        .permissions("rl")
        .window_from_now(None, 3600)
        .sign(&key);
    with_sas(&s, "GET", "Tables", &objects_only, None)
        .await
        .expect_error(403, "AuthorizationResourceTypeMismatch");

    let expired = SasBuilder::table("codes")
        .permissions("r")
        .window_from_now(Some(-7200), -3600)
        .sign(&key);
    with_sas(&s, "GET", "Codes()", &expired, None)
        .await
        .expect_error(403, "AuthenticationFailed");
    let forged = read_only.replace("sp=r", "sp=raud");
    with_sas(&s, "GET", "Codes()", &forged, None)
        .await
        .expect_error(403, "AuthenticationFailed");

    let elsewhere = SasBuilder::table("codes")
        .permissions("r")
        .window_from_now(None, 3600)
        .ip("10.1.2.3")
        .sign(&key);
    with_sas(&s, "GET", "Codes()", &elsewhere, None)
        .await
        .expect_error(403, "AuthorizationSourceIPMismatch");
    let loopback = SasBuilder::table("codes")
        .permissions("r")
        .window_from_now(None, 3600)
        .ip("127.0.0.0-127.255.255.255")
        .sign(&key);
    assert_eq!(
        with_sas(&s, "GET", "Codes()", &loopback, None).await.status,
        200
    );
    let https_only = SasBuilder::table("codes")
        .permissions("r")
        .window_from_now(None, 3600)
        .protocol("https")
        .sign(&key);
    with_sas(&s, "GET", "Codes()", &https_only, None)
        .await
        .expect_error(403, "AuthorizationProtocolMismatch");

    // A wrong key and an unsigned request.
    let r = s.send_unsigned("GET", "Tables", &[], None).await;
    r.expect_error(403, "AuthenticationFailed");
    // Nothing was written by the refused requests.
    let r = s.get("Codes()").await;
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_unknown_account_is_not_told_the_hosted_ones() {
    let s = TestServer::start().await;
    let r = s
        .exchange(
            "GET",
            &format!("{}/nosuch/Tables", s.origin),
            &[],
            None,
            None,
        )
        .await;
    let message = r.expect_error(403, "AuthenticationFailed");
    assert!(!message.contains("devstoreaccount1"), "{message}");
}

/// Sends one raw HTTP/1.1 request and returns the status line and the whole response.
async fn raw(s: &TestServer, request: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.expect("read");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn a_trailing_slash_names_the_same_resource_and_is_signed_as_sent() {
    let s = TestServer::start().await;
    s.create_table("Slash").await;
    s.insert("Slash", &json!({"PartitionKey": "p", "RowKey": "r"}))
        .await;
    for path in ["Tables/", "Slash()/", "Tables('Slash')/"] {
        let r = s.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    let r = s.get("Slash()/").await;
    assert_eq!(r.json()["value"][0]["RowKey"], "r");
    // The signature covers the path as sent, or that path without its one trailing `/`
    // (hand-written REST helpers sign `/Tables` and send `/Tables/`): raw, so that no
    // client normalises the path.
    let request = format!(
        "GET /devstoreaccount1/Tables/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {MINIMAL}\r\nConnection: close\r\n\r\n"
    );
    let (status, text) = raw(&s, &sign_raw(&request)).await;
    assert_eq!(status, 200, "{text}");
    let signed_without_slash =
        sign_raw(&request.replace("/Tables/ ", "/Tables ")).replace("/Tables ", "/Tables/ ");
    let (status, text) = raw(&s, &signed_without_slash).await;
    assert_eq!(status, 200, "{text}");
    // Not the other way round: signed with a `/` the request does not have.
    let signed_with_slash =
        sign_raw(&request.replace("/Tables/ ", "/Tables// ")).replace("/Tables// ", "/Tables/ ");
    let (status, text) = raw(&s, &signed_with_slash).await;
    assert_eq!(status, 403, "{text}");
    // $batch/ with a one-operation changeset.
    let body = "--batch_1\r\nContent-Type: multipart/mixed; boundary=changeset_1\r\n\r\n\
        --changeset_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
        POST http://127.0.0.1/devstoreaccount1/Slash HTTP/1.1\r\nContent-Type: application/json\r\n\
        Accept: application/json;odata=minimalmetadata\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"b\"}\r\n\
        --changeset_1--\r\n--batch_1--\r\n";
    let r = s
        .send(
            "POST",
            "$batch/",
            &[("Content-Type", "multipart/mixed; boundary=batch_1")],
            Some(body),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body.contains("HTTP/1.1 201"), "{}", r.body);
}

#[tokio::test]
async fn weak_etags_in_either_case_and_malformed_ones() {
    let s = TestServer::start().await;
    s.create_table("Tags").await;
    let etag = s
        .insert("Tags", &json!({"PartitionKey": "p", "RowKey": "r", "V": 1}))
        .await;
    let path = entity_path("Tags", "p", "r");
    let merge = |if_match: String| {
        let s = &s;
        let path = path.clone();
        async move {
            s.send(
                "MERGE",
                &path,
                &[
                    ("Content-Type", "application/json"),
                    ("If-Match", &if_match),
                ],
                Some(r#"{"V":2}"#),
            )
            .await
        }
    };
    for wrong in [
        r#"W/"wrong""#,
        r#"w/"wrong""#,
        r#"W/"datetime'2000-01-01T00%3A00%3A00Z'""#,
    ] {
        merge(wrong.to_owned())
            .await
            .expect_error(412, "UpdateConditionNotSatisfied");
    }
    for malformed in ["wrong", r#""wrong""#, "\"", r#"W/wrong"#] {
        merge(malformed.to_owned())
            .await
            .expect_error(400, "InvalidInput");
    }
    // The right ETag with a lower-case `w/` matches.
    let lower = etag.replacen("W/", "w/", 1);
    let r = merge(lower).await;
    assert_eq!(r.status, 204, "{}", r.body);
}

#[tokio::test]
async fn the_timestamp_is_annotated_at_full_metadata_only() {
    let s = TestServer::start().await;
    s.create_table("Stamps").await;
    s.insert(
        "Stamps",
        &json!({"PartitionKey": "p", "RowKey": "r", "When@odata.type": "Edm.DateTime", "When": "2020-01-01T00:00:00Z"}),
    )
    .await;
    let path = entity_path("Stamps", "p", "r");
    let minimal = s.get(&path).await.json();
    assert!(minimal.get("Timestamp").is_some_and(|t| t.is_string()));
    assert!(minimal.get("Timestamp@odata.type").is_none(), "{minimal}");
    assert_eq!(minimal["When@odata.type"], "Edm.DateTime");
    let page = s.get("Stamps()").await.json();
    assert!(page["value"][0].get("Timestamp@odata.type").is_none());
    let full = s.send("GET", &path, &[("Accept", FULL)], None).await.json();
    assert_eq!(full["Timestamp@odata.type"], "Edm.DateTime");
}

#[tokio::test]
async fn empty_options_future_versions_and_query_tables() {
    let s = TestServer::start().await;
    for name in ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"] {
        s.create_table(name).await;
    }
    s.insert(
        "Alpha",
        &json!({"PartitionKey": "p", "RowKey": "r", "A": 1}),
    )
    .await;
    // Storage Explorer's first request for a table.
    let r = s.get("Alpha()?$select=&$filter=").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["value"][0]["A"], 1);
    // An empty $top is still an invalid value.
    s.get("Alpha()?$top=")
        .await
        .expect_error(400, "InvalidInput");

    // Versions: old ones, the SDKs', and one newer than this server knows.
    for version in ["2013-08-15", "2019-02-02", "2099-12-31"] {
        let r = s
            .send(
                "GET",
                "Tables",
                &[("Accept", MINIMAL), ("x-ms-version", version)],
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{version}: {}", r.body);
        let answered = r.header("x-ms-version").unwrap();
        assert!(
            answered <= tableq_server::negotiate::NEWEST_VERSION,
            "{answered}"
        );
    }
    s.send("GET", "Tables", &[("x-ms-version", "2012-01-01")], None)
        .await
        .expect_error(400, "InvalidHeaderValue");

    // Query Tables: $select=TableName, $top and paging with NextTableName.
    let mut names = Vec::new();
    let mut next: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &next {
            Some(t) => format!("Tables?$select=TableName&$top=2&NextTableName={t}"),
            None => "Tables?$select=TableName&$top=2".to_owned(),
        };
        let r = s.get(&path).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let body = r.json();
        let value = body["value"].as_array().unwrap();
        assert!(value.len() <= 2);
        for t in value {
            assert_eq!(
                t.as_object()
                    .unwrap()
                    .keys()
                    .filter(|k| !k.starts_with("odata."))
                    .count(),
                1
            );
            names.push(t["TableName"].as_str().unwrap().to_owned());
        }
        pages += 1;
        match r.header("x-ms-continuation-NextTableName") {
            Some(t) => next = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["Alpha", "Beta", "Delta", "Epsilon", "Gamma"]);
}
