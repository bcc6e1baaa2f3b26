//! Protocol-level behaviour over real HTTP: common headers, versions, content negotiation
//! (`Accept`, `$format`), method dispatch (405), accounts (403), malformed paths, `$batch`,
//! and snapshots of whole responses where the exact shape is the product.

use crate::server_support;

use server_support::{FULL, MINIMAL, NOMETA, Reply, TestServer, encode, query_path};
use tableq_model::ErrorCode;

/// A response as text for snapshots: status, headers (sorted; `date`, `x-ms-request-id`
/// and `content-length` left out), body; the port, request id, Timestamps and times
/// replaced by placeholders.
fn render(s: &TestServer, r: &Reply) -> String {
    let mut volatile: Vec<String> = Vec::new();
    if let Ok(body) = serde_json::from_str::<serde_json::Value>(&r.body) {
        let mut stack = vec![body];
        while let Some(v) = stack.pop() {
            match v {
                serde_json::Value::Object(m) => {
                    if let Some(serde_json::Value::String(t)) = m.get("Timestamp") {
                        volatile.push(t.clone());
                    }
                    stack.extend(m.into_iter().map(|(_, v)| v));
                }
                serde_json::Value::Array(a) => stack.extend(a),
                _ => {}
            }
        }
    }
    if let Some(etag) = r.header("etag") {
        let t = etag
            .trim_start_matches("W/\"datetime'")
            .trim_end_matches("'\"")
            .replace("%3A", ":");
        volatile.push(t);
    }
    let request_id = r.header("x-ms-request-id").unwrap_or("none").to_owned();
    let normalise = |text: &str| {
        let mut text = text
            .replace(&format!("127.0.0.1:{}", s.port), "127.0.0.1:<port>")
            .replace(&request_id, "<request-id>");
        for t in &volatile {
            text = text
                .replace(t.as_str(), "<timestamp>")
                .replace(&t.replace(':', "%3A"), "<timestamp>");
        }
        // ETags of entities whose Timestamp is not in the body ($select).
        let mut from = 0;
        while let Some(at) = text[from..].find("datetime'").map(|i| from + i + 9) {
            let end = text[at..].find('\'').map_or(text.len(), |e| at + e);
            text.replace_range(at..end, "<timestamp>");
            from = at;
        }
        if let Some(at) = text.find("\\nTime:") {
            let end = text[at..].find('"').map_or(text.len(), |e| at + e);
            text.replace_range(at..end, "\\nTime:<time>");
        }
        text
    };
    let mut headers: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "date" | "x-ms-request-id" | "content-length"))
        .map(|(k, v)| {
            let v = v.to_str().unwrap();
            if k == "server" {
                // Every response names the server and its version.
                assert_eq!(v, concat!("tableq/", env!("CARGO_PKG_VERSION")));
                return (k.to_string(), "tableq/<version>".to_owned());
            }
            (k.to_string(), normalise(v))
        })
        .collect();
    headers.sort();
    let mut out = format!("HTTP {}\n", r.status);
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\n"));
    }
    out.push('\n');
    out.push_str(&normalise(&r.body));
    out
}

#[tokio::test]
async fn every_response_has_the_common_headers() {
    let s = TestServer::start().await;
    s.create_table("hdrs").await;
    let ok = s
        .send(
            "GET",
            "Tables",
            &[
                ("x-ms-client-request-id", "my-id-1"),
                ("x-ms-version", "2021-12-02"),
            ],
            None,
        )
        .await;
    let err = s
        .send(
            "GET",
            "nope()",
            &[("x-ms-client-request-id", "my-id-2")],
            None,
        )
        .await;
    let no_content = s
        .send(
            "DELETE",
            "Tables('hdrs')",
            &[("x-ms-client-request-id", "my-id-3")],
            None,
        )
        .await;
    for (r, client_id, version) in [
        (&ok, "my-id-1", "2021-12-02"),
        (&err, "my-id-2", "2019-02-02"),
        (&no_content, "my-id-3", "2019-02-02"),
    ] {
        let id = r.header("x-ms-request-id").expect("x-ms-request-id");
        assert_eq!(id.len(), 36, "{id}");
        assert_eq!(r.header("x-ms-client-request-id"), Some(client_id));
        assert_eq!(r.header("x-ms-version"), Some(version));
        let date = r.header("date").expect("Date");
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
        let parts: Vec<&str> = date.split(' ').collect();
        assert!(
            parts.len() == 6
                && parts[0].len() == 4
                && parts[0].ends_with(',')
                && parts[1].len() == 2
                && parts[3].len() == 4
                && parts[4].len() == 8
                && parts[4].matches(':').count() == 2
                && parts[5] == "GMT",
            "{date}"
        );
    }
    assert_eq!(no_content.status, 204);
    // The request id of an error is also in its message.
    let message = err.expect_error(404, "TableNotFound");
    assert!(message.contains(&format!(
        "RequestId:{}",
        err.header("x-ms-request-id").unwrap()
    )));
}

#[tokio::test]
async fn versions_and_data_service_versions() {
    let s = TestServer::start().await;
    for (name, value, ok) in [
        ("x-ms-version", "2013-08-15", true),
        ("x-ms-version", "2019-02-02", true),
        ("x-ms-version", "2025-11-05", true),
        ("x-ms-version", "2012-02-12", false),
        ("x-ms-version", "v2", false),
        ("DataServiceVersion", "3.0;NetFx", true),
        ("DataServiceVersion", "3.0", true),
        ("MaxDataServiceVersion", "3.0;NetFx", true),
        ("MaxDataServiceVersion", "2.0;NetFx", true),
        ("MaxDataServiceVersion", "4.0", false),
        ("DataServiceVersion", "three", false),
    ] {
        let r = s.send("GET", "Tables", &[(name, value)], None).await;
        if ok {
            assert_eq!(r.status, 200, "{name}: {value}: {}", r.body);
        } else {
            let m = r.expect_error(400, "InvalidHeaderValue");
            assert!(m.contains(name) || m.contains("x-ms-version"), "{m}");
        }
    }
}

#[tokio::test]
async fn metadata_levels_accept_and_format() {
    let s = TestServer::start().await;
    s.create_table("lvl").await;
    s.insert(
        "lvl",
        &serde_json::json!({"PartitionKey":"p","RowKey":"r","N":1}),
    )
    .await;
    let ct = |r: &Reply| r.header("content-type").unwrap().to_owned();
    for (accept, level) in [
        (None, "minimalmetadata"),
        (Some("application/json"), "minimalmetadata"),
        (Some("*/*"), "minimalmetadata"),
        (Some(NOMETA), "nometadata"),
        (Some(MINIMAL), "minimalmetadata"),
        (Some(FULL), "fullmetadata"),
    ] {
        let headers: Vec<(&str, &str)> = accept.iter().map(|a| ("Accept", *a)).collect();
        let r = s.send("GET", "lvl()", &headers, None).await;
        assert_eq!(
            ct(&r),
            format!("application/json;odata={level};streaming=true;charset=utf-8")
        );
        let row = &r.json()["value"][0];
        assert_eq!(row.get("odata.etag").is_some(), level != "nometadata");
        assert_eq!(row.get("odata.id").is_some(), level == "fullmetadata");
        // An Int32 is never annotated (the service annotates none, at any level); the
        // Timestamp only at full metadata.
        assert!(row.get("N@odata.type").is_none());
        assert_eq!(
            row.get("Timestamp@odata.type").is_some(),
            level == "fullmetadata"
        );
    }
    // $format overrides Accept.
    let r = s
        .send(
            "GET",
            &query_path("lvl", &[("$format", "application/json;odata=fullmetadata")]),
            &[("Accept", NOMETA)],
            None,
        )
        .await;
    assert!(ct(&r).contains("odata=fullmetadata"));
    let r = s
        .send(
            "GET",
            &query_path("lvl", &[("$format", "application/json;odata=nometadata")]),
            &[("Accept", "application/atom+xml")],
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(ct(&r).contains("odata=nometadata"));
    // XML is refused with a JSON error.
    let r = s
        .send("GET", "lvl()", &[("Accept", "application/atom+xml")], None)
        .await;
    let m = r.expect_error(415, "UnsupportedMediaType");
    assert!(m.starts_with(ErrorCode::UnsupportedMediaType.service_message()));
    assert!(ct(&r).starts_with("application/json"));
    s.send("GET", &query_path("lvl", &[("$format", "atom")]), &[], None)
        .await
        .expect_error(415, "UnsupportedMediaType");
    s.send("GET", &query_path("lvl", &[("$format", "csv")]), &[], None)
        .await
        .expect_error(400, "InvalidQueryParameterValue");
    s.send(
        "GET",
        "lvl()",
        &[("Accept", "application/json;odata=verbose")],
        None,
    )
    .await
    .expect_error(400, "InvalidHeaderValue");
}

#[tokio::test]
async fn methods_a_resource_does_not_support_are_405() {
    let s = TestServer::start().await;
    s.create_table("meth").await;
    for (method, path, allow) in [
        ("PUT", "Tables", "GET, POST"),
        ("DELETE", "Tables", "GET, POST"),
        ("PATCH", "Tables('meth')", "GET, DELETE"),
        ("POST", "Tables('meth')", "GET, DELETE"),
        ("DELETE", "meth()", "GET, POST"),
        ("PUT", "meth", "GET, POST"),
        (
            "POST",
            "meth(PartitionKey='p',RowKey='r')",
            "GET, PUT, MERGE, PATCH, DELETE",
        ),
        (
            "HEAD",
            "meth(PartitionKey='p',RowKey='r')",
            "GET, PUT, MERGE, PATCH, DELETE",
        ),
        ("GET", "$batch", "POST"),
    ] {
        let r = s.send(method, path, &[], Some("{}")).await;
        assert_eq!(r.status, 405, "{method} {path}");
        assert_eq!(r.header("allow"), Some(allow), "{method} {path}");
        if method != "HEAD" {
            assert_eq!(r.error_code(), "MethodNotAllowed");
        }
    }
}

#[tokio::test]
async fn accounts_paths_and_batch() {
    let s = TestServer::start().await;
    let r = s
        .send_url(
            "GET",
            &format!("{}/otheraccount/Tables", s.origin),
            &[],
            None,
        )
        .await;
    let m = r.expect_error(403, "AuthenticationFailed");
    assert!(m.starts_with(ErrorCode::AuthenticationFailed.service_message()));
    // The hosted accounts are not told to a caller who does not know them (issue 19 D7).
    assert!(!m.contains("devstoreaccount1"), "{m}");
    for path in [
        "/",
        "/devstoreaccount1",
        "/devstoreaccount1/",
        "/devstoreaccount1/a/b",
        "/devstoreaccount1/tbl(PartitionKey='a')",
        "/devstoreaccount1/tbl(PartitionKey='a',RowKey=b)",
        "/devstoreaccount1/Tables('x'",
        "/devstoreaccount1/%FF",
    ] {
        let r = s
            .send_url("GET", &format!("{}{path}", s.origin), &[], None)
            .await;
        r.expect_error(400, "InvalidUri");
    }
    // The diagnostic is the resource-path parser's.
    let m = s
        .get("tbl(PartitionKey=1,RowKey='r')")
        .await
        .expect_error(400, "InvalidUri");
    assert!(
        m.contains("resource path: PartitionKey must be a string literal"),
        "{m}"
    );
    assert!(m.contains("key values are quoted: PartitionKey='1'"), "{m}");
    let r = s
        .send(
            "POST",
            "$batch",
            &[("Content-Type", "multipart/mixed; boundary=batch_1")],
            Some(""),
        )
        .await;
    // An empty body has no batch in it (`$batch` itself: server/tests/batch.rs).
    r.expect_error(400, "InvalidBatchRequest");
}

#[tokio::test]
async fn snapshots_of_whole_responses() {
    let s = TestServer::start().await;
    let create = s
        .send(
            "POST",
            "Tables",
            &[
                ("Content-Type", "application/json"),
                ("Accept", MINIMAL),
                ("x-ms-client-request-id", "snap"),
            ],
            Some(r#"{"TableName":"Snap"}"#),
        )
        .await;
    insta::assert_snapshot!("create_table", render(&s, &create));

    let body = r#"{"PartitionKey":"p'1","RowKey":"ü","S":"s","I":1,"L@odata.type":"Edm.Int64","L":"2","D":3.0,"B":false,"T@odata.type":"Edm.DateTime","T":"2020-01-01T00:00:00+02:00","G@odata.type":"Edm.Guid","G":"0F0E0D0C-0B0A-0908-0706-050403020100","X@odata.type":"Edm.Binary","X":"AQI="}"#;
    let insert = s
        .send(
            "POST",
            "Snap",
            &[("Content-Type", "application/json"), ("Accept", FULL)],
            Some(body),
        )
        .await;
    insta::assert_snapshot!("insert_entity_full_metadata", render(&s, &insert));

    let get = s
        .send(
            "GET",
            &format!(
                "Snap(PartitionKey='{}',RowKey='{}')",
                encode("p''1"),
                encode("ü")
            ),
            &[("Accept", NOMETA)],
            None,
        )
        .await;
    insta::assert_snapshot!("get_entity_no_metadata", render(&s, &get));

    s.insert(
        "Snap",
        &serde_json::json!({"PartitionKey":"p2","RowKey":"r"}),
    )
    .await;
    let page = s
        .send(
            "GET",
            &query_path("Snap", &[("$top", "1"), ("$select", "RowKey,I,Missing")]),
            &[("Accept", MINIMAL)],
            None,
        )
        .await;
    insta::assert_snapshot!("query_page_with_continuation", render(&s, &page));

    let error = s
        .send(
            "GET",
            &query_path(
                "Snap",
                &[("$filter", "I gt 1 and (S eq 'a' or Name EQ 'x')")],
            ),
            &[("Accept", MINIMAL)],
            None,
        )
        .await;
    insta::assert_snapshot!("filter_error", render(&s, &error));
}

#[tokio::test]
async fn a_closed_store_answers_server_busy() {
    use tableq_store::Backend;
    let s = TestServer::start().await;
    s.create_table("busy").await;
    s.backend.close().unwrap();
    let m = s.get("busy()").await.expect_error(503, "ServerBusy");
    assert!(
        m.starts_with(ErrorCode::ServerBusy.service_message()),
        "{m}"
    );
    s.post_json("Tables", r#"{"TableName":"other"}"#)
        .await
        .expect_error(503, "ServerBusy");
}
