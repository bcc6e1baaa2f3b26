//! Entity operations over real HTTP: insert (with and without `Prefer`), get (`$select`),
//! replace, the three merge forms, both upserts, delete, `If-Match`, payload rules,
//! validation errors with their codes, Edm round trips, encoded keys, body limits.

use crate::server_support;

use serde_json::{Value, json};
use server_support::{FULL, NOMETA, Reply, TestServer, encode, entity_path};
use tableq_model::ErrorCode;

async fn with_table(name: &str) -> TestServer {
    let s = TestServer::start().await;
    s.create_table(name).await;
    s
}

/// The first line of an error message must be the code's service sentence.
#[track_caller]
fn assert_sentence(r: &Reply, code: ErrorCode) {
    let message = r.expect_error(code.http_status(), code.as_str());
    assert_eq!(
        message.lines().next(),
        Some(code.service_message()),
        "{message}"
    );
    let lines: Vec<&str> = message.lines().collect();
    assert!(
        lines.len() >= 4,
        "sentence, diagnostic, RequestId, Time: {message}"
    );
    assert!(
        lines[lines.len() - 2].starts_with("RequestId:"),
        "{message}"
    );
    assert_eq!(
        lines[lines.len() - 2].trim_start_matches("RequestId:"),
        r.header("x-ms-request-id").unwrap()
    );
    assert!(lines[lines.len() - 1].starts_with("Time:"), "{message}");
}

#[tokio::test]
async fn insert_echoes_the_stored_entity() {
    let s = with_table("tbl").await;
    let r = s
        .post_json(
            "tbl",
            r#"{"PartitionKey":"p","RowKey":"r","Age":7,"Name":"n"}"#,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let etag = r.header("etag").unwrap().to_owned();
    assert!(
        etag.starts_with("W/\"datetime'") && etag.contains("%3A"),
        "{etag}"
    );
    let url = format!(
        "{}/devstoreaccount1/tbl(PartitionKey='p',RowKey='r')",
        s.origin
    );
    assert_eq!(r.header("location"), Some(url.as_str()));
    assert_eq!(r.header("dataserviceid"), Some(url.as_str()));
    let body = r.json();
    assert_eq!(
        body["odata.metadata"],
        format!("{}/devstoreaccount1/$metadata#tbl/@Element", s.origin)
    );
    assert_eq!(body["odata.etag"], etag.as_str());
    assert!(
        body.get("Timestamp@odata.type").is_none(),
        "minimal metadata: the Timestamp is bare"
    );
    assert_eq!(
        (body["Age"].clone(), body["Name"].clone()),
        (json!(7), json!("n"))
    );
    // The Timestamp is the one the ETag names.
    let ts = body["Timestamp"].as_str().unwrap();
    assert_eq!(etag, format!("W/\"datetime'{}'\"", ts.replace(':', "%3A")));

    let again = s
        .post_json("tbl", r#"{"PartitionKey":"p","RowKey":"r"}"#)
        .await;
    assert_sentence(&again, ErrorCode::EntityAlreadyExists);
}

#[tokio::test]
async fn insert_with_prefer_no_content() {
    let s = with_table("tbl").await;
    let r = s
        .send(
            "POST",
            "tbl",
            &[
                ("Content-Type", "application/json"),
                ("Prefer", "return-no-content"),
            ],
            Some(r#"{"PartitionKey":"p","RowKey":"r"}"#),
        )
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(r.body, "");
    assert_eq!(r.header("preference-applied"), Some("return-no-content"));
    assert!(r.header("etag").is_some());
    assert!(
        r.header("location")
            .unwrap()
            .ends_with("/tbl(PartitionKey='p',RowKey='r')")
    );
    assert_eq!(r.header("content-type"), None);
    let with_content = s
        .send(
            "POST",
            "tbl",
            &[
                ("Content-Type", "application/json"),
                ("Prefer", "return-content"),
            ],
            Some(r#"{"PartitionKey":"p","RowKey":"r2"}"#),
        )
        .await;
    assert_eq!(with_content.status, 201);
    assert_eq!(
        with_content.header("preference-applied"),
        Some("return-content")
    );
}

#[tokio::test]
async fn missing_table_and_missing_entity() {
    let s = with_table("tbl").await;
    let r = s
        .post_json("nope", r#"{"PartitionKey":"p","RowKey":"r"}"#)
        .await;
    assert_sentence(&r, ErrorCode::TableNotFound);
    assert_sentence(
        &s.get("nope(PartitionKey='p',RowKey='r')").await,
        ErrorCode::TableNotFound,
    );
    assert_sentence(&s.get("nope()").await, ErrorCode::TableNotFound);
    assert_sentence(
        &s.get("tbl(PartitionKey='p',RowKey='r')").await,
        ErrorCode::ResourceNotFound,
    );
}

#[tokio::test]
async fn get_with_select_returns_nulls_for_missing_properties() {
    let s = with_table("tbl").await;
    let etag = s
        .insert(
            "tbl",
            &json!({"PartitionKey":"p","RowKey":"r","A":1,"Big@odata.type":"Edm.Int64","Big":"5"}),
        )
        .await;
    let r = s
        .get("tbl(PartitionKey='p',RowKey='r')?$select=Big,Missing,RowKey")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(
        r.body,
        format!(
            r#"{{"odata.metadata":"{}/devstoreaccount1/$metadata#tbl/@Element&$select=Big,Missing,RowKey","odata.etag":{},"Big@odata.type":"Edm.Int64","Big":"5","Missing":null,"RowKey":"r"}}"#,
            s.origin,
            Value::from(etag.as_str())
        )
    );
    let bad = s.get("tbl(PartitionKey='p',RowKey='r')?$select=A,,B").await;
    let message = bad.expect_error(400, "InvalidInput");
    assert!(message.contains("$select:"), "{message}");
}

async fn put(s: &TestServer, path: &str, if_match: Option<&str>, body: &str) -> Reply {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(m) = if_match {
        headers.push(("If-Match", m));
    }
    s.send("PUT", path, &headers, Some(body)).await
}

#[tokio::test]
async fn replace_and_if_match() {
    let s = with_table("tbl").await;
    let path = "tbl(PartitionKey='p',RowKey='r')";
    let etag1 = s
        .insert("tbl", &json!({"PartitionKey":"p","RowKey":"r","A":1,"B":2}))
        .await;
    // Replace with the current ETag: the whole property set is swapped.
    let r = put(
        &s,
        path,
        Some(&etag1),
        r#"{"PartitionKey":"p","RowKey":"r","C":3}"#,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(r.body, "");
    let etag2 = r.header("etag").unwrap().to_owned();
    assert_ne!(etag1, etag2);
    let got = s.get(path).await.json();
    assert_eq!(
        (got["A"].clone(), got["C"].clone()),
        (Value::Null, json!(3))
    );
    assert_eq!(got["odata.etag"], etag2.as_str());

    // `*` matches any version; keys may be left out of the body.
    assert_eq!(put(&s, path, Some("*"), r#"{"D":5}"#).await.status, 204);
    // Not an ETag.
    assert_sentence(
        &put(&s, path, Some("\"0x8D\""), r#"{"D":5}"#).await,
        ErrorCode::InvalidInput,
    );
    // Without If-Match: insert or replace, answered like a replace.
    let r = put(&s, "tbl(PartitionKey='p',RowKey='new')", None, r#"{"E":6}"#).await;
    assert_eq!(r.status, 204);
    assert!(r.header("etag").is_some());
    // What If-Match means — a stale ETag, a missing entity, upserts — is the store
    // contract suite's, run over HTTP too (tests/store_suite_http.rs).
}

#[tokio::test]
async fn merge_in_all_three_forms() {
    let s = with_table("tbl").await;
    let path = "tbl(PartitionKey='p',RowKey='r')";
    s.insert("tbl", &json!({"PartitionKey":"p","RowKey":"r","A":1,"B":2}))
        .await;
    for (i, (method, extra)) in [
        ("MERGE", None),
        ("PATCH", None),
        ("POST", Some(("X-HTTP-Method", "MERGE"))),
    ]
    .into_iter()
    .enumerate()
    {
        let mut headers = vec![("Content-Type", "application/json"), ("If-Match", "*")];
        headers.extend(extra);
        let body = format!(r#"{{"M{i}":{i},"B":null}}"#);
        let r = s.send(method, path, &headers, Some(&body)).await;
        assert_eq!(r.status, 204, "{method}: {}", r.body);
        assert!(r.header("etag").is_some());
        let got = s.get(path).await.json();
        // Properties not mentioned stay; null leaves the stored value alone.
        assert_eq!(got["A"], 1, "{method}");
        assert_eq!(got["B"], 2, "{method}");
        assert_eq!(got[format!("M{i}")], i, "{method}");
    }
    // An unknown X-HTTP-Method. (Merge of a missing entity, insert-or-merge and stale
    // ETags: the store contract suite over HTTP.)
    let missing = "tbl(PartitionKey='p',RowKey='x')";
    let r = s
        .send(
            "POST",
            missing,
            &[("X-HTTP-Method", "FROB")],
            Some(r#"{"A":1}"#),
        )
        .await;
    r.expect_error(400, "InvalidHeaderValue");
}

#[tokio::test]
async fn delete_with_if_match() {
    let s = with_table("tbl").await;
    let path = "tbl(PartitionKey='p',RowKey='r')";
    let etag = s
        .insert("tbl", &json!({"PartitionKey":"p","RowKey":"r"}))
        .await;
    assert_sentence(
        &s.send("DELETE", path, &[], None).await,
        ErrorCode::InvalidInput,
    );
    assert_sentence(
        &s.send("DELETE", path, &[("If-Match", "nonsense")], None)
            .await,
        ErrorCode::InvalidInput,
    );
    let r = s.send("DELETE", path, &[("If-Match", &etag)], None).await;
    assert_eq!((r.status, r.body.as_str()), (204, ""));
    // Stale ETags, missing entities, `*`: the store contract suite over HTTP.
}

#[tokio::test]
async fn payload_timestamp_and_annotations_are_ignored_and_values_normalised() {
    let s = with_table("tbl").await;
    // What the JS SDK sends back after reading an entity.
    let body = json!({
        "odata.metadata": "http://x/devstoreaccount1/$metadata#tbl/@Element",
        "odata.etag": "W/\"datetime'2000-01-01T00%3A00%3A00Z'\"",
        "PartitionKey": "p", "RowKey": "r",
        "Timestamp@odata.type": "Edm.DateTime", "Timestamp": "2000-01-01T00:00:00Z",
        "When@odata.type": "Edm.DateTime", "When": "2020-05-06T07:08:09.5+02:00",
        "Id@odata.type": "Edm.Guid", "Id": "C9DA6455-213D-42C9-9A79-3E9149A57833",
        "Name@foo.bar": "unknown annotation", "Name": "n",
    });
    let r = s.post_json("tbl", &body.to_string()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let echoed = r.json();
    assert_ne!(echoed["Timestamp"], "2000-01-01T00:00:00Z");
    assert_eq!(echoed["When"], "2020-05-06T05:08:09.5Z");
    assert_eq!(echoed["Id"], "c9da6455-213d-42c9-9a79-3e9149a57833");
    assert!(echoed.get("Name@foo.bar").is_none());
    let got = s.get("tbl(PartitionKey='p',RowKey='r')").await.json();
    assert_eq!(got["When"], "2020-05-06T05:08:09.5Z");
    assert_eq!(got["Id"], "c9da6455-213d-42c9-9a79-3e9149a57833");
    assert_eq!(got["Timestamp"], echoed["Timestamp"]);
    // The same payload as a merge body.
    let r = s
        .send(
            "MERGE",
            "tbl(PartitionKey='p',RowKey='r')",
            &[("If-Match", "*"), ("Content-Type", "application/json")],
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
}

#[tokio::test]
async fn body_keys_must_match_the_url() {
    let s = with_table("tbl").await;
    let r = s
        .send(
            "PUT",
            "tbl(PartitionKey='p',RowKey='r')",
            &[("Content-Type", "application/json")],
            Some(r#"{"PartitionKey":"p","RowKey":"other"}"#),
        )
        .await;
    let message = r.expect_error(400, "InvalidInput");
    assert!(message.contains("RowKey"), "{message}");
}

#[tokio::test]
async fn validation_errors_map_to_the_services_codes() {
    let s = with_table("tbl").await;
    let many: serde_json::Map<String, Value> = (0..253)
        .map(|i| (format!("P{i}"), json!(i)))
        .chain([
            ("PartitionKey".into(), json!("p")),
            ("RowKey".into(), json!("r")),
        ])
        .collect();
    let big: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("S{i}"), json!("x".repeat(30_000))))
        .chain([
            ("PartitionKey".into(), json!("p")),
            ("RowKey".into(), json!("r")),
        ])
        .collect();
    let cases: Vec<(String, ErrorCode)> = vec![
        (r#"{"PartitionKey":"p"}"#.into(), ErrorCode::PropertiesNeedValue),
        (
            r#"{"PartitionKey":"p","RowKey":"r","first-name":"x"}"#.into(),
            ErrorCode::PropertyNameInvalid,
        ),
        (
            json!({"PartitionKey":"p","RowKey":"r", "N".repeat(256): 1}).to_string(),
            ErrorCode::PropertyNameTooLong,
        ),
        (
            r#"{"PartitionKey":"p","RowKey":"r","a":1,"a":2}"#.into(),
            ErrorCode::DuplicatePropertiesSpecified,
        ),
        (Value::Object(many).to_string(), ErrorCode::TooManyProperties),
        (
            json!({"PartitionKey":"p","RowKey":"r","S":"x".repeat(32_769)}).to_string(),
            ErrorCode::PropertyValueTooLarge,
        ),
        (Value::Object(big).to_string(), ErrorCode::EntityTooLarge),
        (
            json!({"PartitionKey":"p".repeat(1025),"RowKey":"r"}).to_string(),
            ErrorCode::KeyValueTooLarge,
        ),
        (
            r#"{"PartitionKey":"a/b","RowKey":"r"}"#.into(),
            ErrorCode::InvalidInput,
        ),
        (r#"{"PartitionKey":"p","RowKey":"r""#.into(), ErrorCode::InvalidInput),
        (r#"{"PartitionKey":5,"RowKey":"r"}"#.into(), ErrorCode::InvalidInput),
        (
            r#"{"PartitionKey":"p","RowKey":"r","V":{"a":1}}"#.into(),
            ErrorCode::InvalidInput,
        ),
        (
            r#"{"PartitionKey":"p","RowKey":"r","V@odata.type":"Edm.Int64","V":"99999999999999999999"}"#
                .into(),
            ErrorCode::InvalidInput,
        ),
        (
            r#"{"PartitionKey":"p","RowKey":"r","V@odata.type":"Edm.DateTime","V":"1600-01-01T00:00:00Z"}"#
                .into(),
            ErrorCode::OutOfRangeInput,
        ),
        (
            r#"{"PartitionKey":"p","RowKey":"r","V@odata.type":"Edm.Nope","V":"1"}"#.into(),
            ErrorCode::InvalidInput,
        ),
    ];
    for (body, code) in cases {
        let r = s.post_json("tbl", &body).await;
        assert_eq!(
            r.error_code(),
            code.as_str(),
            "{}",
            &body[..body.len().min(100)]
        );
        assert_sentence(&r, code);
    }
    // Nothing was stored.
    assert_eq!(s.get("tbl()").await.json()["value"], json!([]));
}

#[tokio::test]
async fn deep_json_is_an_error_not_a_crash() {
    let s = with_table("tbl").await;
    for depth in [200usize, 100_000] {
        let body = format!(
            r#"{{"PartitionKey":"p","RowKey":"r","X":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let r = s.post_json("tbl", &body).await;
        r.expect_error(400, "InvalidInput");
        let r = s
            .post_json(
                "Tables",
                &format!(
                    r#"{{"TableName":{}1{}}}"#,
                    "[".repeat(depth),
                    "]".repeat(depth)
                ),
            )
            .await;
        r.expect_error(400, "InvalidInput");
    }
    // Still serving.
    assert_eq!(s.get("tbl()").await.status, 200);
}

#[tokio::test]
async fn every_edm_type_round_trips_through_get_and_query() {
    let s = with_table("tbl").await;
    let body = r#"{"PartitionKey":"p","RowKey":"r",
        "S":"text ü 😀","I32":-42,"I64@odata.type":"Edm.Int64","I64":"-9007199254740993",
        "D":1.5,"D5":5.0,"Dbig":3000000000,"NaN@odata.type":"Edm.Double","NaN":"NaN",
        "Inf@odata.type":"Edm.Double","Inf":"-Infinity","B":true,
        "T@odata.type":"Edm.DateTime","T":"2013-08-02T17:37:43.9004348Z",
        "G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833",
        "X@odata.type":"Edm.Binary","X":"AAEC/w=="}"#;
    let r = s.post_json("tbl", body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let expected_minimal = r#""B":true,"D":1.5,"D5":5.0,"Dbig":3000000000.0,"G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833","I32":-42,"I64@odata.type":"Edm.Int64","I64":"-9007199254740993","Inf@odata.type":"Edm.Double","Inf":"-Infinity","NaN@odata.type":"Edm.Double","NaN":"NaN","S":"text ü 😀","T@odata.type":"Edm.DateTime","T":"2013-08-02T17:37:43.9004348Z","X@odata.type":"Edm.Binary","X":"AAEC/w=="}"#;
    let get = s.get("tbl(PartitionKey='p',RowKey='r')").await;
    assert!(get.body.ends_with(expected_minimal), "{}", get.body);
    let query = s.get("tbl()").await;
    assert!(
        query.body.ends_with(&format!("{expected_minimal}]}}")),
        "{}",
        query.body
    );
    // Full metadata annotates as the service does: what minimal metadata annotates, never
    // an Int32, a Boolean, a finite Double or a String.
    let full = s
        .send(
            "GET",
            "tbl(PartitionKey='p',RowKey='r')",
            &[("Accept", FULL)],
            None,
        )
        .await;
    let full = full.json();
    for (name, t) in [
        ("I64", "Edm.Int64"),
        ("T", "Edm.DateTime"),
        ("G", "Edm.Guid"),
        ("X", "Edm.Binary"),
        ("NaN", "Edm.Double"),
        ("Timestamp", "Edm.DateTime"),
    ] {
        assert_eq!(full[format!("{name}@odata.type")], t, "{name}");
    }
    for name in ["S", "B", "D", "D5", "I32"] {
        assert!(full.get(format!("{name}@odata.type")).is_none(), "{name}");
    }
    // No metadata: bare values.
    let none = s
        .send(
            "GET",
            "tbl(PartitionKey='p',RowKey='r')",
            &[("Accept", NOMETA)],
            None,
        )
        .await;
    assert!(!none.body.contains("odata"), "{}", none.body);
    assert_eq!(none.json()["I64"], "-9007199254740993");
    // Writing the read entity back (as SDKs do) stores the same values.
    let read = s.get("tbl(PartitionKey='p',RowKey='r')").await.body;
    let r = s
        .send(
            "PUT",
            "tbl(PartitionKey='p',RowKey='r')",
            &[("Content-Type", "application/json"), ("If-Match", "*")],
            Some(&read),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    let again = s.get("tbl(PartitionKey='p',RowKey='r')").await;
    assert!(again.body.ends_with(expected_minimal), "{}", again.body);
}

#[tokio::test]
async fn encoded_keys_with_quotes_and_unicode() {
    let s = with_table("tbl").await;
    let keys = [
        ("it's", "a''b"),
        ("ünï 😀", "(c),=&+ %20"),
        ("", ""),
        ("\u{e000}", "\u{10000}"),
    ];
    for (pk, rk) in keys {
        let etag = s
            .insert("tbl", &json!({"PartitionKey": pk, "RowKey": rk, "V": 1}))
            .await;
        let path = entity_path("tbl", pk, rk);
        let got = s.get(&path).await;
        assert_eq!(got.status, 200, "{path}: {}", got.body);
        assert_eq!(
            (
                got.json()["PartitionKey"].clone(),
                got.json()["RowKey"].clone()
            ),
            (json!(pk), json!(rk))
        );
        assert!(got.header("etag") == Some(etag.as_str()));
        // The links name the same entity.
        let full = s.send("GET", &path, &[("Accept", FULL)], None).await.json();
        let edit = full["odata.editLink"].as_str().unwrap();
        let by_link = s.get(edit).await;
        assert_eq!(by_link.status, 200, "{edit}");
        let r = s
            .send(
                "MERGE",
                &path,
                &[("Content-Type", "application/json"), ("If-Match", &etag)],
                Some(r#"{"W":2}"#),
            )
            .await;
        assert_eq!(r.status, 204, "{path}: {}", r.body);
    }
    let all = s.get("tbl()").await.json();
    assert_eq!(all["value"].as_array().unwrap().len(), 4);
    for (pk, rk) in keys {
        let r = s
            .send(
                "DELETE",
                &entity_path("tbl", pk, rk),
                &[("If-Match", "*")],
                None,
            )
            .await;
        assert_eq!(r.status, 204, "{pk:?}/{rk:?}: {}", r.body);
    }
    // A raw (unencoded) quote pair in the URL is read the same way.
    s.insert("tbl", &json!({"PartitionKey": "a'b", "RowKey": "c"}))
        .await;
    assert_eq!(
        s.get("tbl(PartitionKey='a''b',RowKey='c')").await.status,
        200
    );
    assert_eq!(
        s.get(&format!(
            "tbl(PartitionKey={},RowKey='c')",
            encode("'a''b'")
        ))
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn request_bodies_over_the_limit_are_413() {
    let config = tableq_server::ServerConfig {
        max_body_bytes: 1024,
        ..Default::default()
    };
    let s = TestServer::start_with(config).await;
    s.create_table("tbl").await;
    let body = json!({"PartitionKey":"p","RowKey":"r","S":"x".repeat(64 * 1024)}).to_string();
    let r = s.post_json("tbl", &body).await;
    let message = r.expect_error(413, "RequestBodyTooLarge");
    assert!(message.contains("1024 bytes"), "{message}");

    // A chunked body (no Content-Length) is cut off at the limit too.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .unwrap();
    let chunk = "x".repeat(4096);
    let request = server_support::sign_raw(&format!(
        "POST /devstoreaccount1/tbl HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    ));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(response.contains("RequestBodyTooLarge"), "{response}");
}

#[tokio::test]
async fn bodies_must_be_json() {
    let s = with_table("tbl").await;
    let r = s
        .send(
            "POST",
            "tbl",
            &[("Content-Type", "application/atom+xml")],
            Some("<entry/>"),
        )
        .await;
    r.expect_error(415, "UnsupportedMediaType");
    let r = s
        .send(
            "POST",
            "tbl",
            &[("Content-Type", "text/plain")],
            Some(r#"{"PartitionKey":"p","RowKey":"r"}"#),
        )
        .await;
    r.expect_error(400, "InvalidContentType");
    // No Content-Type at all is read as JSON.
    let r = s
        .send(
            "POST",
            "tbl",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"r"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
}
