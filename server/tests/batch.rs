//! `$batch` over real HTTP: changesets of every operation type, the bodies the official
//! clients send (captured from azure-data-tables 12.7.0 and @azure/data-tables 13.3.2,
//! replayed byte for byte), LF-only and lower-case framing, path-only request lines, the
//! 202 multipart reply (statuses, `Content-ID`, one shared ETag, `Prefer` per operation),
//! every error code with its `<index>:` message, atomicity (nothing applied on failure),
//! the limits (100 operations, 4 MiB) and malformed bodies (400, never 5xx).
//!
//! The reply is read by a small parser written here from RFC 2046, independent of the
//! server's.

use crate::server_support;

use serde_json::{Value, json};
use server_support::{ACCOUNT, Reply, TestServer, encode, entity_path};

/// One operation of a changeset, as a test writes it.
#[derive(Clone)]
struct Op {
    method: &'static str,
    /// Path under the account, e.g. `t` or `t(PartitionKey='p',RowKey='r')`.
    path: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

impl Op {
    fn new(method: &'static str, path: impl Into<String>) -> Op {
        Op {
            method,
            path: path.into(),
            headers: Vec::new(),
            body: None,
        }
    }
    fn header(mut self, name: &str, value: &str) -> Op {
        self.headers.push((name.into(), value.into()));
        self
    }
    fn json(mut self, body: Value) -> Op {
        self.body = Some(body.to_string());
        self.header("Content-Type", "application/json")
    }
}

fn insert(table: &str, entity: Value) -> Op {
    Op::new("POST", table).json(entity)
}

fn entity_op(method: &'static str, table: &str, pk: &str, rk: &str) -> Op {
    Op::new(method, entity_path(table, pk, rk))
}

/// How a body is written.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    /// CRLF, capitalised headers, `Content-ID`, absolute URLs (the Python SDK's way).
    Python,
    /// CRLF, lower-case part headers, no `Content-ID`, an extra CRLF before the body (JS).
    Js,
    /// Bare LF everywhere, lower-case headers, path-only request lines.
    LfPathOnly,
}

/// A batch body holding one changeset; returns (Content-Type, body).
fn changeset(origin: &str, style: Style, ops: &[Op]) -> (String, String) {
    let eol = if style == Style::LfPathOnly {
        "\n"
    } else {
        "\r\n"
    };
    let (batch, cs) = ("batch_0b1c", "changeset_77aa");
    let mut b = format!("--{batch}{eol}");
    let ct = if style == Style::Python {
        "Content-Type"
    } else {
        "content-type"
    };
    b += &format!("{ct}: multipart/mixed; boundary={cs}{eol}{eol}");
    for (i, op) in ops.iter().enumerate() {
        b += &format!("--{cs}{eol}");
        match style {
            Style::Python => {
                b += &format!(
                    "Content-Type: application/http{eol}Content-Transfer-Encoding: binary{eol}Content-ID: {i}{eol}{eol}"
                )
            }
            _ => {
                b += &format!(
                    "content-type: application/http{eol}content-transfer-encoding: binary{eol}{eol}"
                )
            }
        }
        let url = if style == Style::LfPathOnly {
            format!("/{ACCOUNT}/{}", op.path)
        } else {
            format!("{origin}/{ACCOUNT}/{}", op.path)
        };
        b += &format!("{} {url} HTTP/1.1{eol}", op.method);
        for (k, v) in &op.headers {
            let k = if style == Style::Python {
                k.clone()
            } else {
                k.to_ascii_lowercase()
            };
            b += &format!("{k}: {v}{eol}");
        }
        if style == Style::Python
            && let Some(body) = &op.body
        {
            b += &format!("Content-Length: {}{eol}", body.len());
        }
        b += eol;
        if style == Style::Js {
            b += eol;
        }
        if let Some(body) = &op.body {
            b += body;
        }
        b += eol;
    }
    b += &format!("--{cs}--{eol}--{batch}--{eol}");
    (format!("multipart/mixed; boundary={batch}"), b)
}

async fn post_batch(s: &TestServer, content_type: &str, body: &str) -> Reply {
    s.send(
        "POST",
        "$batch",
        &[
            ("Content-Type", content_type),
            ("Accept", "application/json"),
            ("DataServiceVersion", "3.0"),
            ("MaxDataServiceVersion", "3.0;NetFx"),
        ],
        Some(body),
    )
    .await
}

async fn submit(s: &TestServer, style: Style, ops: &[Op]) -> Reply {
    let (ct, body) = changeset(&s.origin, style, ops);
    post_batch(s, &ct, &body).await
}

/// One operation's answer in a batch reply.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Header lines as sent (names in the server's case).
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
    /// (code, message) of an `odata.error` body.
    fn error(&self) -> (String, String) {
        let j = self.json();
        (
            j["odata.error"]["code"].as_str().unwrap().to_owned(),
            j["odata.error"]["message"]["value"]
                .as_str()
                .unwrap()
                .to_owned(),
        )
    }
}

fn boundary_of(content_type: &str) -> String {
    let (_, b) = content_type
        .split_once("boundary=")
        .unwrap_or_else(|| panic!("no boundary in {content_type:?}"));
    b.trim().to_owned()
}

/// The parts of a multipart text, each part's MIME headers (lower-case names) and content.
fn mime_parts(text: &str, boundary: &str) -> Vec<(Vec<(String, String)>, String)> {
    let delimiter = format!("\r\n--{boundary}");
    let text = format!("\r\n{text}");
    let (body, _) = text
        .split_once(&format!("{delimiter}--"))
        .unwrap_or_else(|| panic!("no close delimiter --{boundary}-- in {text:?}"));
    body.split(&delimiter)
        .skip(1)
        .map(|part| {
            let part = part.strip_prefix("\r\n").expect("CRLF after a delimiter");
            let (head, content) = part.split_once("\r\n\r\n").unwrap_or((part, ""));
            let headers = head
                .lines()
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (k, v) = l.split_once(':').expect("header line");
                    (k.to_ascii_lowercase(), v.trim().to_owned())
                })
                .collect();
            (headers, content.to_owned())
        })
        .collect()
}

fn http_answer(content: &str) -> Answer {
    let (head, body) = content.split_once("\r\n\r\n").expect("HTTP head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(": ").expect("header line");
            (k.to_owned(), v.to_owned())
        })
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// A 202 reply holding a changeset response: its answers.
#[track_caller]
fn changeset_answers(r: &Reply) -> Vec<Answer> {
    assert_eq!(r.status, 202, "{}", r.body);
    let ct = r.header("content-type").expect("Content-Type");
    assert!(
        ct.starts_with("multipart/mixed; boundary=batchresponse_"),
        "{ct}"
    );
    let outer = mime_parts(&r.body, &boundary_of(ct));
    assert_eq!(outer.len(), 1, "{}", r.body);
    let (headers, content) = &outer[0];
    let inner_ct = &headers
        .iter()
        .find(|(k, _)| k == "content-type")
        .expect("changeset Content-Type")
        .1;
    assert!(
        inner_ct.starts_with("multipart/mixed; boundary=changesetresponse_"),
        "{inner_ct}"
    );
    mime_parts(content, &boundary_of(inner_ct))
        .into_iter()
        .map(|(headers, content)| {
            assert!(
                headers.contains(&("content-type".into(), "application/http".into())),
                "{headers:?}"
            );
            http_answer(&content)
        })
        .collect()
}

/// A failed changeset: its single answer's status, code and message (asserting the
/// `<index>:` prefix).
#[track_caller]
fn failure(r: &Reply, index: usize, status: u16, code: &str) -> String {
    let answers = changeset_answers(r);
    assert_eq!(answers.len(), 1, "a failure has one part: {answers:?}");
    let a = &answers[0];
    assert_eq!(a.status, status, "{a:?}");
    let (got_code, message) = a.error();
    assert_eq!(got_code, code, "{message}");
    assert!(
        message.starts_with(&format!("{index}:")),
        "message must start with {index}: {message}"
    );
    assert!(message.contains("\nRequestId:"), "{message}");
    message
}

async fn with_table(name: &str) -> TestServer {
    let s = TestServer::start().await;
    s.create_table(name).await;
    s
}

async fn get_entity(s: &TestServer, table: &str, pk: &str, rk: &str) -> Option<(Value, String)> {
    let r = s.get(&entity_path(table, pk, rk)).await;
    match r.status {
        200 => Some((r.json(), r.header("etag").unwrap().to_owned())),
        404 => None,
        other => panic!("GET answered {other}: {}", r.body),
    }
}

async fn count(s: &TestServer, table: &str) -> usize {
    let r = s.get(&format!("{table}()")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["value"].as_array().unwrap().len()
}

#[tokio::test]
async fn every_operation_type_in_one_changeset() {
    let s = with_table("tbl").await;
    let etag_b = s
        .insert("tbl", &json!({"PartitionKey":"p","RowKey":"b","Old":1}))
        .await;
    s.insert("tbl", &json!({"PartitionKey":"p","RowKey":"c","Keep":1}))
        .await;
    s.insert("tbl", &json!({"PartitionKey":"p","RowKey":"c2","Keep":2}))
        .await;
    let etag_f = s
        .insert("tbl", &json!({"PartitionKey":"p","RowKey":"f"}))
        .await;
    s.insert("tbl", &json!({"PartitionKey":"p","RowKey":"g"}))
        .await;

    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"a","N":1}))
            .header("Accept", "application/json;odata=minimalmetadata"),
        insert("tbl", json!({"PartitionKey":"p","RowKey":"a2"}))
            .header("Prefer", "return-no-content"),
        entity_op("PUT", "tbl", "p", "b")
            .json(json!({"New":2}))
            .header("If-Match", &etag_b),
        entity_op("MERGE", "tbl", "p", "c")
            .json(json!({"Added":3}))
            .header("If-Match", "*"),
        entity_op("PATCH", "tbl", "p", "d").json(json!({"Upserted":4})),
        entity_op("PUT", "tbl", "p", "e'x").json(json!({"Replaced":5})),
        Op::new("POST", entity_path("tbl", "p", "c2"))
            .json(json!({"ViaOverride":6}))
            .header("X-HTTP-Method", "MERGE")
            .header("If-Match", "*"),
        entity_op("DELETE", "tbl", "p", "f").header("If-Match", &etag_f),
        entity_op("DELETE", "tbl", "p", "g").header("If-Match", "*"),
    ];
    let r = submit(&s, Style::Python, &ops).await;
    let answers = changeset_answers(&r);
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [201, 204, 204, 204, 204, 204, 204, 204, 204]);
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a.header("Content-ID"), Some(i.to_string().as_str()));
    }
    // The insert echoes the entity at the operation's metadata level.
    let created = answers[0].json();
    assert_eq!(created["RowKey"], "a");
    assert_eq!(created["N"], 1);
    assert!(
        created["odata.metadata"]
            .as_str()
            .unwrap()
            .ends_with("/$metadata#tbl/@Element")
    );
    assert!(answers[0].headers.iter().any(|(k, _)| k == "ETag"));
    assert!(
        answers[0]
            .header("Location")
            .unwrap()
            .ends_with("/devstoreaccount1/tbl(PartitionKey='p',RowKey='a')")
    );
    // Return-no-content is honoured per operation.
    assert!(answers[1].body.is_empty());
    assert_eq!(
        answers[1].header("Preference-Applied"),
        Some("return-no-content")
    );
    // One Timestamp for the whole changeset: every write has the same ETag.
    let etag = answers[0].header("ETag").unwrap().to_owned();
    for a in &answers[..7] {
        assert_eq!(a.header("ETag"), Some(etag.as_str()), "{a:?}");
    }
    assert_eq!(created["odata.etag"], etag.as_str());

    // The store holds the result, with the ETags the reply gave.
    for rk in ["a", "a2", "b", "c", "d", "e'x", "c2"] {
        let (_, got) = get_entity(&s, "tbl", "p", rk).await.expect(rk);
        assert_eq!(got, etag, "{rk}");
    }
    let (b, _) = get_entity(&s, "tbl", "p", "b").await.unwrap();
    assert_eq!((b.get("Old"), &b["New"]), (None, &json!(2)));
    let (c, _) = get_entity(&s, "tbl", "p", "c").await.unwrap();
    assert_eq!((&c["Keep"], &c["Added"]), (&json!(1), &json!(3)));
    let (c2, _) = get_entity(&s, "tbl", "p", "c2").await.unwrap();
    assert_eq!((&c2["Keep"], &c2["ViaOverride"]), (&json!(2), &json!(6)));
    assert!(get_entity(&s, "tbl", "p", "f").await.is_none());
    assert!(get_entity(&s, "tbl", "p", "g").await.is_none());
    assert_eq!(count(&s, "tbl").await, 7);
}

#[tokio::test]
async fn js_style_and_lf_only_bodies() {
    for style in [Style::Js, Style::LfPathOnly] {
        let s = with_table("tbl").await;
        let ops = vec![
            insert("tbl", json!({"PartitionKey":"p","RowKey":"1"}))
                .header("Prefer", "return-no-content"),
            entity_op("PUT", "tbl", "p", "2").json(json!({"A":"x"})),
            entity_op("MERGE", "tbl", "p", "3").json(json!({"B":true})),
        ];
        let answers = changeset_answers(&submit(&s, style, &ops).await);
        assert_eq!(
            answers.iter().map(|a| a.status).collect::<Vec<_>>(),
            [204, 204, 204]
        );
        for a in &answers {
            assert_eq!(a.header("Content-ID"), None);
            // The JS SDK matches `ETag: ` case-sensitively.
            assert!(a.headers.iter().any(|(k, _)| k == "ETag"), "{a:?}");
        }
        assert_eq!(count(&s, "tbl").await, 3);
    }
}

/// Replays a body an SDK sent (captured off the wire); `fix` adjusts it to this server.
async fn replay(s: &TestServer, fixture: &[u8], fix: impl Fn(String) -> String) -> Reply {
    // The captures name table `bt`, too short for this server: `btab` here.
    let body = fix(String::from_utf8(fixture.to_vec()).unwrap()).replace("/bt", "/btab");
    let first = body.lines().next().unwrap();
    let boundary = first.trim_end().trim_start_matches("--");
    post_batch(s, &format!("multipart/mixed; boundary={boundary}"), &body).await
}

const STALE_ETAG: &str = "W/\"datetime'2024-01-01T00%3A00%3A00.0000000Z'\"";

#[tokio::test]
async fn bodies_the_sdks_send() {
    // Both captures: create a; replace b (If-Match); merge c (If-Match *); upsert-merge d;
    // upsert-replace e'x; delete f. Python's request lines name port 18611, JS's 18612:
    // only the path is used.
    for (fixture, first_status) in [
        (
            &include_bytes!("fixtures/batch/python_sdk.multipart")[..],
            201,
        ),
        (&include_bytes!("fixtures/batch/js_sdk.multipart")[..], 204),
    ] {
        let s = with_table("btab").await;
        let etag_b = s
            .insert("btab", &json!({"PartitionKey":"p","RowKey":"b"}))
            .await;
        s.insert("btab", &json!({"PartitionKey":"p","RowKey":"c"}))
            .await;
        s.insert("btab", &json!({"PartitionKey":"p","RowKey":"f"}))
            .await;
        let r = replay(&s, fixture, |b| b.replace(STALE_ETAG, &etag_b)).await;
        let answers = changeset_answers(&r);
        assert_eq!(
            answers.iter().map(|a| a.status).collect::<Vec<_>>(),
            [first_status, 204, 204, 204, 204, 204]
        );
        let (e, _) = get_entity(&s, "btab", "p", "e'x").await.unwrap();
        assert_eq!(e["n"].as_i64().or(e["N"].as_i64()), Some(5));
        assert!(get_entity(&s, "btab", "p", "f").await.is_none());
        assert_eq!(count(&s, "btab").await, 5);

        // The same body with the stale ETag fails at operation 1 and changes nothing.
        let s = with_table("btab").await;
        s.insert("btab", &json!({"PartitionKey":"p","RowKey":"b"}))
            .await;
        s.insert("btab", &json!({"PartitionKey":"p","RowKey":"c"}))
            .await;
        s.insert("btab", &json!({"PartitionKey":"p","RowKey":"f"}))
            .await;
        let r = replay(&s, fixture, |b| b).await;
        failure(&r, 1, 412, "UpdateConditionNotSatisfied");
        assert!(get_entity(&s, "btab", "p", "a").await.is_none());
        assert_eq!(count(&s, "btab").await, 3);
    }
}

#[tokio::test]
async fn a_failure_names_its_index_and_applies_nothing() {
    let s = with_table("tbl").await;
    s.insert("tbl", &json!({"PartitionKey":"p","RowKey":"exists","V":1}))
        .await;
    s.insert("tbl", &json!({"PartitionKey":"p","RowKey":"exists2","V":1}))
        .await;
    let before = get_entity(&s, "tbl", "p", "exists").await.unwrap();
    let before2 = get_entity(&s, "tbl", "p", "exists2").await.unwrap();

    // 409 at index 2: the insert before it and the merge are rolled back.
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"new1"})),
        entity_op("MERGE", "tbl", "p", "exists2")
            .json(json!({"V":2}))
            .header("If-Match", "*"),
        insert("tbl", json!({"PartitionKey":"p","RowKey":"exists"})),
        insert("tbl", json!({"PartitionKey":"p","RowKey":"new2"})),
    ];
    let m = failure(
        &submit(&s, Style::Python, &ops).await,
        2,
        409,
        "EntityAlreadyExists",
    );
    assert!(
        m.starts_with("2:The specified entity already exists."),
        "{m}"
    );
    assert_eq!(count(&s, "tbl").await, 2);
    assert_eq!(get_entity(&s, "tbl", "p", "exists").await.unwrap(), before);
    assert_eq!(
        get_entity(&s, "tbl", "p", "exists2").await.unwrap(),
        before2
    );

    // 404: merge, replace and delete of a missing entity.
    for op in [
        entity_op("MERGE", "tbl", "p", "missing")
            .json(json!({}))
            .header("If-Match", "*"),
        entity_op("PUT", "tbl", "p", "missing")
            .json(json!({}))
            .header("If-Match", "*"),
        entity_op("DELETE", "tbl", "p", "missing").header("If-Match", "*"),
    ] {
        let ops = vec![insert("tbl", json!({"PartitionKey":"p","RowKey":"n"})), op];
        failure(
            &submit(&s, Style::Js, &ops).await,
            1,
            404,
            "ResourceNotFound",
        );
    }
    // 412: a stale ETag.
    let ops = vec![entity_op("DELETE", "tbl", "p", "exists").header("If-Match", STALE_ETAG)];
    failure(
        &submit(&s, Style::Python, &ops).await,
        0,
        412,
        "UpdateConditionNotSatisfied",
    );
    // 400 from the payload of operation 1 (a bad Edm value), and from its If-Match.
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"n"})),
        insert(
            "tbl",
            json!({"PartitionKey":"p","RowKey":"m","X":"nope","X@odata.type":"Edm.Int64"}),
        ),
    ];
    failure(
        &submit(&s, Style::Python, &ops).await,
        1,
        400,
        "InvalidInput",
    );
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"n"})),
        entity_op("DELETE", "tbl", "p", "exists").header("If-Match", "not-an-etag"),
    ];
    failure(
        &submit(&s, Style::Python, &ops).await,
        1,
        400,
        "InvalidInput",
    );
    // A body that is not JSON, and one whose keys differ from the URL's.
    let mut bad = insert("tbl", json!({}));
    bad.body = Some("{\"PartitionKey\":".into());
    failure(
        &submit(&s, Style::Python, &[bad]).await,
        0,
        400,
        "InvalidInput",
    );
    let ops = vec![entity_op("PUT", "tbl", "p", "k").json(json!({"RowKey":"other"}))];
    failure(
        &submit(&s, Style::Python, &ops).await,
        0,
        400,
        "InvalidInput",
    );
    assert_eq!(get_entity(&s, "tbl", "p", "exists").await.unwrap(), before);
    assert_eq!(
        get_entity(&s, "tbl", "p", "exists2").await.unwrap(),
        before2
    );
    assert_eq!(count(&s, "tbl").await, 2);
}

#[tokio::test]
async fn partitions_duplicates_and_tables() {
    let s = with_table("tbl").await;
    s.create_table("other").await;
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"1"})),
        insert("tbl", json!({"PartitionKey":"p","RowKey":"2"})),
        insert("tbl", json!({"PartitionKey":"q","RowKey":"3"})),
    ];
    let m = failure(
        &submit(&s, Style::Python, &ops).await,
        2,
        400,
        "CommandsInBatchActOnDifferentPartitions",
    );
    assert!(m.contains("\"q\""), "{m}");
    // A delete names its partition in the URL.
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"1"})),
        entity_op("DELETE", "tbl", "q", "1").header("If-Match", "*"),
    ];
    failure(
        &submit(&s, Style::Js, &ops).await,
        1,
        400,
        "CommandsInBatchActOnDifferentPartitions",
    );
    // The same entity twice, whatever the operations.
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"1"})),
        insert("tbl", json!({"PartitionKey":"p","RowKey":"2"})),
        entity_op("MERGE", "tbl", "p", "1").json(json!({"A":1})),
    ];
    failure(
        &submit(&s, Style::Python, &ops).await,
        2,
        400,
        "InvalidDuplicateRow",
    );
    // Two tables.
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"1"})),
        insert("other", json!({"PartitionKey":"p","RowKey":"2"})),
    ];
    failure(
        &submit(&s, Style::Python, &ops).await,
        1,
        400,
        "InvalidInput",
    );
    // A missing table.
    let ops = vec![insert("nosuch", json!({"PartitionKey":"p","RowKey":"1"}))];
    let m = failure(
        &submit(&s, Style::Python, &ops).await,
        0,
        404,
        "TableNotFound",
    );
    assert!(
        m.starts_with("0:The table specified does not exist."),
        "{m}"
    );
    // Not an entity write, and another account.
    let ops = vec![
        insert("tbl", json!({"PartitionKey":"p","RowKey":"1"})),
        entity_op("GET", "tbl", "p", "1"),
    ];
    failure(
        &submit(&s, Style::Python, &ops).await,
        1,
        400,
        "InvalidInput",
    );
    let (ct, body) = changeset(
        &s.origin,
        Style::Python,
        &[insert("tbl", json!({"PartitionKey":"p","RowKey":"1"}))],
    );
    let body = body.replace("/devstoreaccount1/tbl ", "/someoneelse/t ");
    failure(&post_batch(&s, &ct, &body).await, 0, 400, "InvalidInput");
    assert_eq!(count(&s, "tbl").await, 0);
    assert_eq!(count(&s, "other").await, 0);
}

fn many(n: usize) -> Vec<Op> {
    (0..n)
        .map(|i| {
            insert(
                "tbl",
                json!({"PartitionKey":"p","RowKey":format!("{i:03}")}),
            )
            .header("Prefer", "return-no-content")
        })
        .collect()
}

#[tokio::test]
async fn at_most_100_operations() {
    let s = with_table("tbl").await;
    let m = failure(
        &submit(&s, Style::Python, &many(101)).await,
        100,
        400,
        "InvalidInput",
    );
    assert!(
        m.contains("The batch request operation exceeds the maximum 100 changes per change set"),
        "{m}"
    );
    assert_eq!(count(&s, "tbl").await, 0);
    let answers = changeset_answers(&submit(&s, Style::Python, &many(100)).await);
    assert_eq!(answers.len(), 100);
    assert!(answers.iter().all(|a| a.status == 204));
    assert_eq!(count(&s, "tbl").await, 100);
}

#[tokio::test]
async fn at_most_4_mib() {
    const LIMIT: usize = 4 * 1024 * 1024;
    let s = with_table("tbl").await;
    let (ct, body) = changeset(&s.origin, Style::Python, &many(1));
    // Exactly 4 MiB (padded with an epilogue, which is ignored) is accepted.
    let padded = format!("{body}{}", "x".repeat(LIMIT - body.len()));
    assert_eq!(padded.len(), LIMIT);
    let answers = changeset_answers(&post_batch(&s, &ct, &padded).await);
    assert_eq!(answers.len(), 1);
    // One byte more is refused before anything is read or written.
    let s = with_table("tbl").await;
    let over = format!("{padded}x");
    post_batch(&s, &ct, &over)
        .await
        .expect_error(413, "RequestBodyTooLarge");
    assert_eq!(count(&s, "tbl").await, 0);
}

#[tokio::test]
async fn malformed_bodies_are_400() {
    let s = with_table("tbl").await;
    let (ct, good) = changeset(
        &s.origin,
        Style::Python,
        &[insert("tbl", json!({"PartitionKey":"p","RowKey":"1"}))],
    );
    let cases: Vec<(String, String, &str)> = vec![
        (
            "application/json".into(),
            good.clone(),
            "InvalidBatchRequest",
        ),
        (
            "multipart/mixed".into(),
            good.clone(),
            "InvalidBatchRequest",
        ),
        (
            "multipart/mixed; boundary=other".into(),
            good.clone(),
            "InvalidBatchRequest",
        ),
        (
            ct.clone(),
            good[..good.len() / 2].to_owned(),
            "InvalidBatchRequest",
        ),
        (ct.clone(), String::new(), "InvalidBatchRequest"),
        (
            ct.clone(),
            "--batch_0b1c--\r\n".into(),
            "InvalidBatchRequest",
        ),
        (
            ct.clone(),
            good.replace("--changeset_77aa--", ""),
            "InvalidBatchRequest",
        ),
        (
            ct.clone(),
            good.replace("POST http", "garbage line\r\nhttp"),
            "InvalidBatchRequest",
        ),
        (
            ct.clone(),
            good.replace("Content-Type: application/http", "Content-Type: text/plain"),
            "InvalidBatchRequest",
        ),
        (
            ct.clone(),
            good.replace("Content-Type: application/json\r\n", "Broken header\r\n"),
            "InvalidBatchRequest",
        ),
        // (An empty changeset is answered 202, as the service answers it:
        // server/tests/service_replies.rs.)
        (
            ct.clone(),
            format!(
                "{}{}",
                &good[..good.len() - "--batch_0b1c--\r\n".len()],
                &good
            ),
            "InvalidBatchRequest",
        ),
        (
            ct.clone(),
            format!(
                "--batch_0b1c\r\nContent-Type: application/http\r\n\r\nPOST {}/{ACCOUNT}/tbl HTTP/1.1\r\n\r\n{{}}\r\n--batch_0b1c--\r\n",
                s.origin
            ),
            "InvalidBatchRequest",
        ),
    ];
    for (ct, body, code) in cases {
        let r = post_batch(&s, &ct, &body).await;
        let m = r.expect_error(400, code);
        assert!(m.lines().nth(1).is_some_and(|l| !l.is_empty()), "{m}");
    }
    // A bad URL in an operation is that operation's failure.
    let bad_url = good.replace(
        "/devstoreaccount1/tbl ",
        "/devstoreaccount1/tbl(PartitionKey=1) ",
    );
    failure(&post_batch(&s, &ct, &bad_url).await, 0, 400, "InvalidUri");
    // GET and PUT on $batch itself.
    s.send("GET", "$batch", &[], None)
        .await
        .expect_error(405, "MethodNotAllowed");
    assert_eq!(count(&s, "tbl").await, 0);
}

#[tokio::test]
async fn bytes_never_crash_the_server() {
    // Every prefix and a few corruptions of a good body: always a 202 or a 4xx.
    let s = with_table("tbl").await;
    let (ct, good) = changeset(
        &s.origin,
        Style::Python,
        &[
            insert("tbl", json!({"PartitionKey":"p","RowKey":"1"})),
            entity_op("DELETE", "tbl", "p", "2").header("If-Match", "*"),
        ],
    );
    let bytes = good.as_bytes();
    for cut in (0..bytes.len()).step_by(7) {
        let mut body = bytes[..cut].to_vec();
        body.extend_from_slice(&bytes[(cut + 3).min(bytes.len())..]);
        let body = String::from_utf8_lossy(&body).into_owned();
        let r = post_batch(&s, &ct, &body).await;
        assert!(
            r.status == 202 || (400..500).contains(&r.status),
            "{}: {}",
            r.status,
            r.body
        );
        if r.status != 202 {
            r.error_code();
        }
    }
}

#[tokio::test]
async fn a_lone_query_operation() {
    let s = with_table("tbl").await;
    let etag = s
        .insert("tbl", &json!({"PartitionKey":"p","RowKey":"r","N":7}))
        .await;
    let lone = |path: &str| {
        format!(
            "--batch_q\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
             GET {}/{ACCOUNT}/{path} HTTP/1.1\r\nAccept: application/json;odata=nometadata\r\n\r\n\r\n--batch_q--\r\n",
            s.origin
        )
    };
    let answer = |r: &Reply| {
        assert_eq!(r.status, 202, "{}", r.body);
        let ct = r.header("content-type").unwrap();
        let parts = mime_parts(&r.body, &boundary_of(ct));
        assert_eq!(parts.len(), 1);
        http_answer(&parts[0].1)
    };
    let ct = "multipart/mixed; boundary=batch_q";
    let a = answer(&post_batch(&s, ct, &lone(&entity_path("tbl", "p", "r"))).await);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("ETag"), Some(etag.as_str()));
    assert_eq!(
        a.json(),
        json!({"PartitionKey":"p","RowKey":"r","N":7, "Timestamp": a.json()["Timestamp"]})
    );
    let a = answer(
        &post_batch(
            &s,
            ct,
            &lone(&format!("tbl()?$filter={}", encode("N eq 7"))),
        )
        .await,
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.json()["value"].as_array().unwrap().len(), 1);
    let a = answer(&post_batch(&s, ct, &lone(&entity_path("tbl", "p", "missing"))).await);
    assert_eq!(a.status, 404);
    assert_eq!(a.error().0, "ResourceNotFound");
    let a = answer(&post_batch(&s, ct, &lone("Tables")).await);
    assert_eq!((a.status, a.error().0.as_str()), (400, "InvalidInput"));
}
