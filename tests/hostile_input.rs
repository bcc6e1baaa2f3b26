//! Hostile input over real HTTP: thousands of malformed requests against a server on a
//! durable data directory — broken URLs and key literals, bad percent-encoding, truncated,
//! deeply nested, non-UTF-8 and wrongly shaped JSON, wrong Edm annotations and values,
//! oversized bodies, keys and filters, nonsense headers, broken HTTP framing, and random
//! mutations of valid requests.
//!
//! The rules:
//! * a request HTTP can carry (well framed) gets a 4xx whose body is an `odata.error` with
//!   a code equal to `x-ms-error-code` — never a 5xx, a reset or a hang (every request has
//!   a 20 s timeout);
//! * a request whose HTTP framing is broken gets a 4xx from the HTTP layer or a clean close
//!   (the HTTP layer answers before the service does, with no `odata.error`, as the real
//!   service's front end does), never a 5xx or a hang;
//! * a random mutation of a valid request may succeed, but is never answered with a 5xx,
//!   a reset or a hang, and an error it gets is an `odata.error`;
//! * the server stays up, and the data written before (table `kept`) is unchanged.
//!
//! The same oracle also runs in-process: the kept fuzz findings in
//! `tests/robust_support/regressions/` and a seeded random driver over the request-path
//! fuzz target's input format (`fuzz/fuzz_targets/request.rs`).

use crate::robust_support;

use robust_support::{
    Client, InProcess, MINIMAL, Outcome, Reply, Request, Rng, TempDir, batch_parts, dev_signer,
    encode, entity_target, excerpt, request_oracle, sign_request,
};
use std::sync::Arc;
use tableq_client::sign::{AccountKey, SasBuilder, Scheme, SharedKeySigner};
use tableq_server::ServerConfig;
use tableq_store::DurableBackend;

/// How a case's reply is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Well framed, certainly invalid: a 4xx with an `odata.error`.
    Service,
    /// Broken framing: a 4xx (any body) or a clean close without a reply.
    Framing,
    /// A mutation of a valid request: anything but a 5xx / reset / hang; errors are
    /// `odata.error`s when the request was well framed.
    Mutant,
    /// Unsigned or wrongly signed: 403 `AuthenticationFailed` with an `odata.error`.
    Auth,
    /// A broken `$batch`: a 4xx `odata.error`, or a 202 whose single part is a 4xx with an
    /// `odata.error` (an operation's failure); nothing applied either way.
    Batch,
}

struct Case {
    label: String,
    bytes: Vec<u8>,
    kind: Kind,
}

struct Corpus {
    host: String,
    cases: Vec<Case>,
}

impl Corpus {
    /// A well-framed, correctly signed (unless it carries its own `Authorization`), invalid
    /// request.
    fn service(&mut self, label: impl Into<String>, request: Request) {
        self.push(label, signed(request), Kind::Service);
    }

    /// A request sent as built (its credentials are missing or wrong).
    fn auth(&mut self, label: impl Into<String>, request: Request) {
        self.push(label, request, Kind::Auth);
    }

    /// A correctly signed `$batch` with the multipart `body` (boundary `batch_b`).
    fn batch(&mut self, label: impl Into<String>, body: impl Into<Vec<u8>>) {
        let request = Request::new("POST", target("$batch"))
            .header("Content-Type", "multipart/mixed; boundary=batch_b")
            .header("Accept", "application/json")
            .header("DataServiceVersion", "3.0")
            .body(body);
        self.push(label, signed(request), Kind::Batch);
    }

    fn push(&mut self, label: impl Into<String>, request: Request, kind: Kind) {
        let bytes = request.to_bytes(&self.host);
        self.cases.push(Case {
            label: label.into(),
            bytes,
            kind,
        });
    }

    fn framing(&mut self, label: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        self.cases.push(Case {
            label: label.into(),
            bytes: bytes.into(),
            kind: Kind::Framing,
        });
    }
}

fn target(path: &str) -> String {
    Client::target(path)
}

/// `request` signed with the development key, unless it has an `Authorization` header.
fn signed(request: Request) -> Request {
    if request
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    {
        request
    } else {
        sign_request(request, &dev_signer())
    }
}

fn json_post(path: &str, body: impl Into<Vec<u8>>) -> Request {
    Request::new("POST", target(path))
        .header("Content-Type", "application/json")
        .header("Accept", MINIMAL)
        .body(body)
}

fn json_put(path: &str, body: impl Into<Vec<u8>>) -> Request {
    Request::new("PUT", path.to_owned())
        .header("Content-Type", "application/json")
        .header("Accept", MINIMAL)
        .header("If-Match", "*")
        .body(body)
}

/// `{"PartitionKey":"p","RowKey":"new",<members>}`.
fn with(members: &str) -> String {
    format!(r#"{{"PartitionKey":"hostile","RowKey":"new",{members}}}"#)
}

/// A valid entity body (used truncated and mutated; never sent whole to `kept`).
const VALID: &str = r#"{"PartitionKey":"hostile","RowKey":"r1","Name":"Ann","Age":31,"Big@odata.type":"Edm.Int64","Big":"9007199254740993","When@odata.type":"Edm.DateTime","When":"2024-01-02T03:04:05.1234567Z","Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Raw@odata.type":"Edm.Binary","Raw":"AAEC","Ok":true,"Pi":3.25}"#;

fn build_corpus(host: &str, rng: &mut Rng) -> Corpus {
    let mut c = Corpus {
        host: host.to_owned(),
        cases: Vec::new(),
    };
    let kept_entity = entity_target("kept", "p", "r");

    // --- Broken URLs and key literals, every method.
    let paths: Vec<String> = vec![
        "/".into(),
        "/devstoreaccount1".into(),
        "/devstoreaccount1/".into(),
        "/otheraccount/Tables".into(),
        "/otheraccount/kept(PartitionKey='p',RowKey='r')".into(),
        "/%FF/Tables".into(),
        target("Tables('"),
        target("Tables('kept"),
        target("Tables(kept)"),
        target("Tables('a'b')"),
        target("Tables('kept')x"),
        target("Tables('kept')/x"),
        target("kept(PartitionKey='p'"),
        target("kept(PartitionKey='p',RowKey=)"),
        target("kept(PartitionKey=p,RowKey='r')"),
        target("kept(RowKey='r')"),
        target("kept(PartitionKey='p')"),
        target("kept(PartitionKey='p',RowKey='r',X='y')"),
        target("kept(PartitionKey='p',PartitionKey='p')"),
        target("kept(PartitionKey='a''b,RowKey='r')"),
        target("kept(PartitionKey='p',RowKey='r'"),
        target("kept(PartitionKey='p',RowKey='r'))"),
        target("kept(PartitionKey='p',RowKey='r')/x"),
        target("kept(PartitionKey='p';RowKey='r')"),
        target("kept(PartitionKey=='p',RowKey='r')"),
        target("kept(PartitionKey='p',RowKey='r')()"),
        target("kept(PartitionKey='%FF',RowKey='r')"),
        target("kept(PartitionKey='%C3%28',RowKey='r')"),
        target("kept(PartitionKey='%ED%A0%80',RowKey='r')"),
        target("kept(PartitionKey='p',RowKey='%zz')"),
        target("kept(PartitionKey='p',RowKey='%')"),
        target("kept(PartitionKey='p',RowKey='%2')"),
        target("kept(PartitionKey='%2F',RowKey='%23')"),
        target("kept(PartitionKey='%00',RowKey='%01')"),
        target("kept(PartitionKey='p',RowKey='r%5C')"),
        target(&format!(
            "kept(PartitionKey='{}',RowKey='r')",
            "k".repeat(2000)
        )),
        target("kept("),
        target("kept)("),
        target("kept()x"),
        target("kept()()"),
        target("kept(()"),
        target(&format!("kept{}", "(".repeat(10_000))),
        target("%"),
        target("%zz"),
        target("%FF%FE"),
        target("Tab%00les"),
        target("1table"),
        target("ab"),
        target(&"t".repeat(100)),
        target("kept()/extra/segments"),
        target("$batch/x"),
        target("$metadata"),
        "//devstoreaccount1//Tables".into(),
        "/devstoreaccount1/../Tables".into(),
        "/devstoreaccount1/./kept()".into(),
        "/devstoreaccount1/Tables%28%27kept%27%29/x".into(),
    ];
    let methods = [
        "GET", "POST", "PUT", "MERGE", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO",
    ];
    for path in &paths {
        for method in methods {
            let mut r = Request::new(method, path.clone()).header("Accept", MINIMAL);
            if !matches!(method, "GET" | "OPTIONS" | "TRACE") {
                r = r
                    .header("Content-Type", "application/json")
                    .header("If-Match", "*")
                    .body(with(r#""X":1"#));
            }
            c.service(format!("url {method} {}", excerpt(path)), r);
        }
    }
    // Methods a resource does not support.
    for (method, path) in [
        ("PUT", target("Tables")),
        ("DELETE", target("Tables")),
        ("PATCH", target("Tables")),
        ("PUT", target("Tables('kept')")),
        ("POST", target("Tables('kept')")),
        ("MERGE", target("Tables('kept')")),
        ("PUT", target("kept()")),
        ("DELETE", target("kept()")),
        ("POST", kept_entity.clone()),
        ("GET", target("$batch")),
        ("PUT", target("$batch")),
        ("DELETE", target("$batch")),
    ] {
        c.service(
            format!("method {method} {path}"),
            Request::new(method, path)
                .header("Content-Type", "application/json")
                .header("Accept", MINIMAL)
                .header("If-Match", "*")
                .body(with(r#""X":1"#)),
        );
    }

    // --- Query strings.
    let filters: Vec<String> = vec![
        "PartitionKey eq".into(),
        "eq 'p'".into(),
        "PartitionKey eq 'p".into(),
        "PartitionKey eq 'p' and".into(),
        "not".into(),
        "()".into(),
        "(".repeat(10_000),
        format!("{}PartitionKey eq 'p'", "(".repeat(5000)),
        format!("{}true", "not ".repeat(5000)),
        (0..20)
            .map(|i| format!("A eq {i}"))
            .collect::<Vec<_>>()
            .join(" or "),
        "A eq datetime'2020-13-01T00:00:00Z'".into(),
        "A eq guid'nope'".into(),
        "A eq X'zz'".into(),
        "A eq binary'0'".into(),
        "A eq 1e999".into(),
        "A eq 99999999999999999999L".into(),
        "A eq 99999999999999999999".into(),
        "A eq 'x' xor B eq 'y'".into(),
        "A/B eq 1".into(),
        "substringof('a', A)".into(),
        "A eq @p".into(),
        "\u{FFFF}".into(),
        "A eq 'x' or".into(),
        format!("A eq '{}'", "x".repeat(40_000)),
        "A gt".into(),
        "A eq 1 1".into(),
        "A eq -".into(),
        "PartitionKey eq 'p' and (RowKey eq 'r'".into(),
    ];
    for f in &filters {
        c.service(
            format!("filter {}", excerpt(f)),
            Request::new("GET", target(&format!("kept()?$filter={}", encode(f))))
                .header("Accept", MINIMAL),
        );
        c.service(
            format!("table filter {}", excerpt(f)),
            Request::new("GET", target(&format!("Tables?$filter={}", encode(f))))
                .header("Accept", MINIMAL),
        );
    }
    let queries: Vec<String> = vec![
        "$filter=%".into(),
        "$filter=%zz".into(),
        "$filter=%FF".into(),
        "$filter=A%20eq%20%27%C3%28%27".into(),
        "%FF=1".into(),
        "$top=0".into(),
        "$top=-1".into(),
        "$top=1001".into(),
        "$top=abc".into(),
        "$top=1e3".into(),
        "$top=99999999999999999999".into(),
        "$top=".into(),
        "$top=1&$top=2".into(),
        "$filter=true&$filter=true".into(),
        "$select=,".into(),
        "$select=a,,b".into(),
        "$select=1abc".into(),
        "$select=a%20b".into(),
        format!("$select={}", "a,".repeat(20_000)),
        "$format=xml".into(),
        "$format=application/atom%2Bxml".into(),
        "$format=application/json;odata=verbose".into(),
        "$format=".into(),
        "$expand=x".into(),
        "$orderby=A".into(),
        "$skip=1".into(),
        "$inlinecount=allpages".into(),
        "$Filter=true".into(),
        "NextPartitionKey=1!x!y&NextRowKey=1!4!cg==".into(),
        "NextPartitionKey=!!!&NextRowKey=!!!".into(),
        "NextPartitionKey=1!4!%25%25%25&NextRowKey=1!4!cg==".into(),
        "NextPartitionKey=1!99999999999999999999!cA==&NextRowKey=1!4!cg==".into(),
        "NextPartitionKey=1!4!cA==".into(),
        "NextRowKey=1!4!cg==".into(),
        "NextPartitionKey=1!4!%2F%2F8%3D&NextRowKey=1!4!cg==".into(),
    ];
    for q in &queries {
        c.service(
            format!("query {}", excerpt(q)),
            Request::new("GET", target(&format!("kept()?{q}"))).header("Accept", MINIMAL),
        );
    }
    for q in [
        "NextTableName=!!!",
        "NextTableName=1!99!eA==",
        "NextTableName=%FF",
        "$top=0",
        "$top=x",
        "$format=xml",
        "$select=%",
    ] {
        c.service(
            format!("tables query {q}"),
            Request::new("GET", target(&format!("Tables?{q}"))).header("Accept", MINIMAL),
        );
    }

    // --- Bodies: truncated, deep, non-UTF-8, wrong shape, wrong Edm, oversized values.
    let mut bodies: Vec<(String, Vec<u8>)> = Vec::new();
    for cut in 0..VALID.len() {
        if VALID.is_char_boundary(cut) {
            bodies.push((format!("truncated at {cut}"), VALID[..cut].into()));
        }
    }
    let n = 100_000;
    for (label, text) in [
        ("deep [", "[".repeat(n)),
        (
            "deep [] closed",
            format!("{}{}", "[".repeat(n), "]".repeat(n)),
        ),
        ("deep {", "{\"a\":".repeat(n)),
        ("deep value [", with(&format!("\"A\":{}", "[".repeat(n)))),
        (
            "deep value {",
            with(&format!("\"A\":{}1{}", "{\"a\":".repeat(n), "}".repeat(n))),
        ),
        (
            "deep annotation",
            with(&format!("\"A@odata.type\":{}", "[".repeat(n))),
        ),
        (
            "deep metadata unclosed",
            with(&format!("\"odata.etag\":{}", "[".repeat(n))),
        ),
    ] {
        bodies.push((label.into(), text.into_bytes()));
    }
    for (label, bytes) in [
        ("non-UTF-8 in a string", {
            let mut b = with(r#""A":"xx""#).into_bytes();
            let at = b.len() - 3;
            b[at] = 0xFF;
            b
        }),
        ("non-UTF-8 key", {
            let mut b = br#"{"PartitionKey":"p","RowKey":"r","#.to_vec();
            b.extend_from_slice(b"\"\xC3\x28\":1}");
            b
        }),
        (
            "latin-1 body",
            b"{\"PartitionKey\":\"\xe9\",\"RowKey\":\"r\"}".to_vec(),
        ),
        ("UTF-16 body", {
            let text = r#"{"PartitionKey":"hostile","RowKey":"u16"}"#;
            let mut b = vec![0xFF, 0xFE];
            for u in text.encode_utf16() {
                b.extend_from_slice(&u.to_le_bytes());
            }
            b
        }),
        ("NUL bytes", b"\0\0\0\0".to_vec()),
        ("random bytes", rng.bytes(300)),
    ] {
        bodies.push((label.into(), bytes));
    }
    let shapes: Vec<(&str, String)> = vec![
        ("empty", "".into()),
        ("spaces", "   ".into()),
        ("array", "[]".into()),
        ("array of entity", format!("[{}]", with(r#""A":1"#))),
        ("number", "42".into()),
        ("string", "\"entity\"".into()),
        ("null", "null".into()),
        ("true", "true".into()),
        (
            "two objects",
            format!("{}{}", with(r#""A":1"#), with(r#""B":1"#)),
        ),
        ("trailing garbage", format!("{}x", with(r#""A":1"#))),
        ("trailing comma", with(r#""A":1,"#)),
        (
            "single quotes",
            "{'PartitionKey':'hostile','RowKey':'x'}".into(),
        ),
        ("comment", format!("/*c*/{}", with(r#""A":1"#))),
        ("no keys", r#"{"A":1}"#.into()),
        ("only PartitionKey", r#"{"PartitionKey":"hostile"}"#.into()),
        ("only RowKey", r#"{"RowKey":"x"}"#.into()),
        (
            "PartitionKey number",
            r#"{"PartitionKey":1,"RowKey":"x"}"#.into(),
        ),
        (
            "RowKey null",
            r#"{"PartitionKey":"hostile","RowKey":null}"#.into(),
        ),
        (
            "RowKey object",
            r#"{"PartitionKey":"hostile","RowKey":{}}"#.into(),
        ),
        (
            "key with slash",
            r#"{"PartitionKey":"a/b","RowKey":"x"}"#.into(),
        ),
        (
            "key with hash",
            r#"{"PartitionKey":"hostile","RowKey":"a#b"}"#.into(),
        ),
        (
            "key with ?",
            r#"{"PartitionKey":"hostile","RowKey":"a?b"}"#.into(),
        ),
        (
            "key with backslash",
            r#"{"PartitionKey":"hostile","RowKey":"a\\b"}"#.into(),
        ),
        (
            "key with control",
            r#"{"PartitionKey":"hostile","RowKey":"a\u0001b"}"#.into(),
        ),
        (
            "key lone surrogate",
            r#"{"PartitionKey":"hostile","RowKey":"\ud800"}"#.into(),
        ),
        (
            "key too long",
            format!(
                r#"{{"PartitionKey":"hostile","RowKey":"{}"}}"#,
                "k".repeat(1025)
            ),
        ),
        ("object value", with(r#""A":{"b":1}"#)),
        ("array value", with(r#""A":[1,2]"#)),
        ("duplicate property", with(r#""A":1,"A":2"#)),
        ("duplicate via escape", with(r#""A":1,"\u0041":2"#)),
        ("duplicate key", with(r#""PartitionKey":"x""#)),
        ("bad property name", with(r#""1abc":1"#)),
        ("property name with space", with(r#""a b":1"#)),
        ("empty property name", with(r#""":1"#)),
        (
            "long property name",
            with(&format!(r#""{}":1"#, "a".repeat(256))),
        ),
        ("unknown Edm", with(r#""A@odata.type":"Edm.Foo","A":"1""#)),
        ("annotation number", with(r#""A@odata.type":5,"A":"1""#)),
        ("annotation null", with(r#""A@odata.type":null,"A":"1""#)),
        (
            "Int32 overflow",
            with(r#""A@odata.type":"Edm.Int32","A":2147483648"#),
        ),
        (
            "Int32 string",
            with(r#""A@odata.type":"Edm.Int32","A":"x""#),
        ),
        (
            "Int32 fraction",
            with(r#""A@odata.type":"Edm.Int32","A":1.5"#),
        ),
        (
            "Int64 overflow",
            with(r#""A@odata.type":"Edm.Int64","A":"9223372036854775808""#),
        ),
        (
            "Int64 words",
            with(r#""A@odata.type":"Edm.Int64","A":"twelve""#),
        ),
        (
            "Double words",
            with(r#""A@odata.type":"Edm.Double","A":"pi""#),
        ),
        ("Double overflow", with(r#""A":1e309"#)),
        (
            "Double object",
            with(r#""A@odata.type":"Edm.Double","A":{}"#),
        ),
        (
            "Guid short",
            with(r#""A@odata.type":"Edm.Guid","A":"c9da6455""#),
        ),
        (
            "Guid braces",
            with(r#""A@odata.type":"Edm.Guid","A":"{c9da6455-213d-42c9-9a79-3e9149a57833}x""#),
        ),
        ("Guid number", with(r#""A@odata.type":"Edm.Guid","A":5"#)),
        (
            "DateTime month 13",
            with(r#""A@odata.type":"Edm.DateTime","A":"2020-13-01T00:00:00Z""#),
        ),
        (
            "DateTime words",
            with(r#""A@odata.type":"Edm.DateTime","A":"yesterday""#),
        ),
        (
            "DateTime year 0",
            with(r#""A@odata.type":"Edm.DateTime","A":"0000-01-01T00:00:00Z""#),
        ),
        (
            "DateTime before 1601",
            with(r#""A@odata.type":"Edm.DateTime","A":"1600-12-31T23:59:59Z""#),
        ),
        (
            "DateTime number",
            with(r#""A@odata.type":"Edm.DateTime","A":0"#),
        ),
        (
            "Binary bad base64",
            with(r#""A@odata.type":"Edm.Binary","A":"!!!""#),
        ),
        (
            "Binary number",
            with(r#""A@odata.type":"Edm.Binary","A":1"#),
        ),
        (
            "Boolean string",
            with(r#""A@odata.type":"Edm.Boolean","A":"yes""#),
        ),
        (
            "Boolean number",
            with(r#""A@odata.type":"Edm.Boolean","A":1"#),
        ),
        ("lone surrogate value", with(r#""A":"\udc00""#)),
        ("bad escape", with(r#""A":"\q""#)),
        ("raw control in string", with("\"A\":\"a\u{1}b\"")),
        (
            "huge number",
            with(&format!(r#""A":{}"#, "9".repeat(100_000))),
        ),
        (
            "253 properties",
            with(
                &(0..253)
                    .map(|i| format!(r#""P{i}":{i}"#))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ),
        (
            "string over 64 KiB",
            with(&format!(r#""A":"{}""#, "s".repeat(40_000))),
        ),
        (
            "binary over 64 KiB",
            with(&format!(
                r#""A@odata.type":"Edm.Binary","A":"{}""#,
                "AAAA".repeat(22_000)
            )),
        ),
        (
            "entity over 1 MiB",
            with(
                &(0..20)
                    .map(|i| format!(r#""S{i}":"{}""#, "s".repeat(30_000)))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ),
    ];
    for (label, text) in shapes {
        bodies.push((label.into(), text.into_bytes()));
    }
    for (label, body) in &bodies {
        c.service(
            format!("insert body: {label}"),
            json_post("kept", body.clone()),
        );
        if label == "no keys" {
            // A valid update payload (the keys come from the URL).
            continue;
        }
        // Replacing and merging the kept entity with the same bodies (keys from the URL;
        // a body naming other keys is an error too).
        let body_no_keys = body.clone();
        c.service(
            format!("replace body: {label}"),
            json_put(&kept_entity, body_no_keys.clone()),
        );
        let mut merge = json_put(&kept_entity, body_no_keys);
        merge.method = "MERGE".into();
        c.service(format!("merge body: {label}"), merge);
        c.service(
            format!("create-table body: {label}"),
            json_post("Tables", body.clone()),
        );
    }
    for bad in [
        r#"{"TableName":1}"#,
        r#"{"TableName":null}"#,
        r#"{"TableName":"a"}"#,
        r#"{"TableName":"1abc"}"#,
        r#"{"TableName":"tables"}"#,
        r#"{"TableName":"kept"}"#,
        r#"{"TableName":"ab-cd"}"#,
        r#"{"tablename":"abc"}"#,
        r#"{"TableName":["abc"]}"#,
    ] {
        c.service(format!("create table {bad}"), json_post("Tables", bad));
    }
    c.service(
        "create table with a 64-character name",
        json_post("Tables", format!(r#"{{"TableName":"{}"}}"#, "a".repeat(64))),
    );

    // --- Oversized bodies.
    c.service(
        "Content-Length 5 MiB announced",
        json_post("kept", Vec::new()).header("Content-Length", (5 << 20).to_string()),
    );
    let big = with(&format!(r#""A":"{}""#, "x".repeat((4 << 20) + 10)));
    c.service("body over 4 MiB", json_post("kept", big.clone()));
    c.service("table body over 4 MiB", json_post("Tables", big.clone()));
    c.service(
        "replace body over 4 MiB",
        json_put(&kept_entity, big.clone()),
    );

    // --- Nonsense headers on otherwise valid requests.
    let valid_get = || Request::new("GET", entity_target("kept", "p", "r"));
    let valid_insert = || json_post("kept", r#"{"PartitionKey":"hostile","RowKey":"hdr","A":1}"#);
    for (name, value) in [
        ("Accept", "text/html"),
        ("Accept", "application/atom+xml"),
        ("Accept", "application/json;odata=verbose"),
        ("Accept", "application/json;odata=nonsense"),
        ("Accept", "image/png, text/plain"),
        ("x-ms-version", "garbage"),
        ("x-ms-version", "1999-01-01"),
        ("x-ms-version", "2020-1-1"),
        ("DataServiceVersion", "9.0"),
        ("DataServiceVersion", "abc"),
        ("DataServiceVersion", "3.0;Foo"),
        ("MaxDataServiceVersion", "0.5"),
        ("MaxDataServiceVersion", ""),
    ] {
        let mut get = valid_get();
        get.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        c.service(format!("GET with {name}: {value}"), get.header(name, value));
        let mut insert = valid_insert();
        insert
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        c.service(
            format!("insert with {name}: {value}"),
            insert.header(name, value),
        );
    }
    for (name, value) in [
        ("Content-Type", "text/plain"),
        ("Content-Type", "application/xml"),
        ("Content-Type", "application/atom+xml"),
        ("Content-Type", "multipart/mixed; boundary=x"),
        ("Content-Type", "garbage"),
        ("Content-Type", ""),
        ("X-HTTP-Method", "FOO"),
        ("X-HTTP-Method", "GET"),
    ] {
        let mut r = valid_insert();
        r.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        c.service(
            format!("insert with {name}: {value}"),
            r.header(name, value),
        );
    }
    for value in [
        "garbage",
        "\"",
        "W/\"bad\"",
        "W/\"datetime'nope'\"",
        "**",
        "",
    ] {
        let mut put = json_put(&kept_entity, r#"{"A":1}"#);
        put.headers.retain(|(k, _)| k != "If-Match");
        c.service(
            format!("replace with If-Match {value:?}"),
            put.header("If-Match", value),
        );
        c.service(
            format!("delete with If-Match {value:?}"),
            Request::new("DELETE", kept_entity.clone()).header("If-Match", value),
        );
    }
    c.service(
        "delete without If-Match",
        Request::new("DELETE", kept_entity.clone()),
    );
    let mut stale = json_put(&kept_entity, r#"{"A":1}"#);
    stale.headers.retain(|(k, _)| k != "If-Match");
    c.service(
        "replace with a stale ETag",
        stale.header(
            "If-Match",
            "W/\"datetime'2001-01-01T00%3A00%3A00.0000000Z'\"",
        ),
    );
    // Header values with bytes outside ASCII (obs-text).
    for name in [
        "Accept",
        "x-ms-version",
        "DataServiceVersion",
        "Content-Type",
        "If-Match",
        "X-HTTP-Method",
    ] {
        // PUT without If-Match would replace the entity: X-HTTP-Method needs a POST.
        let method = if name == "X-HTTP-Method" {
            "POST"
        } else {
            "PUT"
        };
        let mut bytes = format!(
            "{method} {kept_entity} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: 7\r\n{name}: \u{ff}\u{fe}\r\n\r\n{{\"A\":1}}"
        )
        .into_bytes();
        // Replace the U+00FF U+00FE characters by the raw bytes 0xFF 0xFE.
        let marker = "\u{ff}\u{fe}".as_bytes().to_vec();
        if let Some(at) = bytes.windows(marker.len()).position(|w| w == marker) {
            bytes.splice(at..at + marker.len(), [0xFF, 0xFE]);
        }
        c.cases.push(Case {
            label: format!("non-ASCII {name}"),
            bytes,
            kind: Kind::Service,
        });
    }

    // --- Broken HTTP framing.
    let h = host;
    for (label, bytes) in [
        ("garbage line", "garbage\r\n\r\n".to_owned()),
        ("no version", "GET /devstoreaccount1/Tables\r\n\r\n".into()),
        (
            "HTTP/9.9",
            format!("GET /devstoreaccount1/Tables HTTP/9.9\r\nHost: {h}\r\n\r\n"),
        ),
        (
            "space in target",
            format!("GET /devstoreaccount1/kept() x HTTP/1.1\r\nHost: {h}\r\n\r\n"),
        ),
        (
            "header without colon",
            format!("GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: {h}\r\nnonsense\r\n\r\n"),
        ),
        (
            "bad header name",
            format!("GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: {h}\r\nBad Name: x\r\n\r\n"),
        ),
        (
            "Content-Length letters",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nContent-Length: ab\r\n\r\n{{}}"
            ),
        ),
        (
            "Content-Length negative",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nContent-Length: -5\r\n\r\n"
            ),
        ),
        (
            "Content-Length huge",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nContent-Length: 99999999999999999999\r\n\r\n"
            ),
        ),
        (
            "Content-Length twice",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}x"
            ),
        ),
        (
            "bad chunk size",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nConnection: close\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n"
            ),
        ),
        (
            "chunk longer than said",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n2\r\n{{\"PartitionKey\"\r\n0\r\n\r\n"
            ),
        ),
        (
            "chunked and length",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\nConnection: close\r\n\r\n0\r\n\r\n"
            ),
        ),
        (
            "unknown transfer coding",
            format!(
                "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n{{}}"
            ),
        ),
        (
            "NUL in target",
            format!("GET /devstoreaccount1/ke\0pt() HTTP/1.1\r\nHost: {h}\r\n\r\n"),
        ),
        (
            "long key in the URL",
            format!(
                "GET /devstoreaccount1/kept(PartitionKey='p',RowKey='{}') HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n",
                "%41".repeat(200_000)
            ),
        ),
        (
            "many headers",
            format!(
                "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: {h}\r\n{}Connection: close\r\n\r\n",
                (0..500)
                    .map(|i| format!("X-H{i}: v\r\n"))
                    .collect::<String>()
            ),
        ),
        (
            "long URL",
            format!(
                "GET /devstoreaccount1/kept()?$filter={} HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n",
                "a".repeat(500_000)
            ),
        ),
        ("only CRLFs", "\r\n\r\n\r\n\r\n".into()),
        (
            "TLS hello",
            "\u{16}\u{3}\u{1}\u{0}\u{a5}\u{1}\u{0}\u{0}".into(),
        ),
        ("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".into()),
        (
            "asterisk form",
            format!("OPTIONS * HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n"),
        ),
    ] {
        c.framing(label, bytes.into_bytes());
    }
    let mut raw =
        format!("GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: {h}\r\nX-Bin: ").into_bytes();
    raw.extend_from_slice(b"a\x00b\x7f\r\nConnection: close\r\n\r\n");
    c.framing("control bytes in a header value", raw);
    let mut raw = b"GET /devstoreaccount1/k\xffept() HTTP/1.1\r\n".to_vec();
    raw.extend_from_slice(format!("Host: {h}\r\nConnection: close\r\n\r\n").as_bytes());
    c.framing("byte 0xFF in the target", raw);
    // Oversized chunked body: the limit is found while reading.
    let mut chunked = format!(
        "POST /devstoreaccount1/kept HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    let piece = vec![b'x'; 64 * 1024];
    for _ in 0..80 {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(&piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    c.cases.push(Case {
        label: "chunked body over 4 MiB".into(),
        bytes: chunked,
        kind: Kind::Service,
    });

    add_auth_cases(&mut c, &kept_entity);
    add_batch_cases(&mut c);

    // --- Random mutations of valid requests (to `scratch`).
    let scratch_entity = entity_target("scratch", "m", "r");
    // Signed: a mutation of the body, of a header other than the signed ones, or of the
    // query beyond `comp` keeps the signature valid and reaches the handlers.
    let seeds: Vec<Vec<u8>> = vec![
        signed(json_post("scratch", VALID)).to_bytes(h),
        signed(json_put(&scratch_entity, r#"{"A":1,"B@odata.type":"Edm.Int64","B":"5"}"#)).to_bytes(h),
        signed(Request::new("GET", target("scratch()?$filter=A%20gt%201%20and%20PartitionKey%20eq%20%27m%27&$top=5&$select=A,B"))
            .header("Accept", MINIMAL))
            .to_bytes(h),
        signed(Request::new("GET", target("Tables?$filter=TableName%20ge%20%27s%27"))
            .header("Accept", MINIMAL))
            .to_bytes(h),
        signed(Request::new("DELETE", scratch_entity.clone())
            .header("If-Match", "*"))
            .to_bytes(h),
    ];
    for i in 0..2000 {
        let seed = rng.pick(&seeds).clone();
        let mutated = mutate(&seed, rng);
        c.cases.push(Case {
            label: format!("mutant {i}"),
            bytes: mutated,
            kind: Kind::Mutant,
        });
    }
    c
}

/// A base64 key that is not the development account's.
const WRONG_KEY: &str = "bm90IHRoZSBhY2NvdW50IGtleSwganVzdCBzb21lIGJ5dGVz";

/// Unsigned and wrongly signed requests (reads and writes, `kept` and the table list):
/// each must get 403 `AuthenticationFailed` and write nothing.
fn add_auth_cases(c: &mut Corpus, kept_entity: &str) {
    let dev = dev_signer();
    let wrong_key = SharedKeySigner::new(
        AccountKey::new("devstoreaccount1", WRONG_KEY).expect("a key"),
        Scheme::SharedKey,
    );
    let wrong_lite = SharedKeySigner::new(
        AccountKey::new("devstoreaccount1", WRONG_KEY).expect("a key"),
        Scheme::SharedKeyLite,
    );
    let other_account = SharedKeySigner::new(
        AccountKey::new("otheraccount", tableq_server::DEV_ACCOUNT_KEY).expect("a key"),
        Scheme::SharedKey,
    );
    let insert_batch = robust_support::batch_request(
        "http://127.0.0.1",
        "kept",
        &[robust_support::BatchOp::Insert(
            serde_json::json!({"PartitionKey":"p","RowKey":"auth-batch"}),
        )],
    );
    let requests: Vec<(&str, Request)> = vec![
        (
            "insert",
            json_post("kept", r#"{"PartitionKey":"p","RowKey":"auth-new","A":1}"#),
        ),
        (
            "replace",
            json_put(kept_entity, r#"{"Name":"overwritten"}"#),
        ),
        (
            "merge",
            Request::new("MERGE", kept_entity.to_owned())
                .header("Content-Type", "application/json")
                .header("If-Match", "*")
                .body(r#"{"Name":"merged"}"#),
        ),
        (
            "delete",
            Request::new("DELETE", kept_entity.to_owned()).header("If-Match", "*"),
        ),
        (
            "create table",
            json_post("Tables", r#"{"TableName":"authtable"}"#),
        ),
        (
            "delete table",
            Request::new("DELETE", target("Tables('kept')")),
        ),
        (
            "query",
            Request::new("GET", target("kept()")).header("Accept", MINIMAL),
        ),
        ("batch insert", insert_batch),
    ];
    let content_type = |r: &Request| {
        r.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.clone())
    };
    let stale = "Mon, 23 Nov 2020 16:00:00 GMT".to_owned();
    let future = "Fri, 01 Jan 2100 00:00:00 GMT".to_owned();
    for (what, request) in requests {
        let ct = content_type(&request);
        c.auth(format!("unsigned {what}"), request.clone());
        c.auth(
            format!("wrong key {what}"),
            sign_request(request.clone(), &wrong_key),
        );
        c.auth(
            format!("wrong key SharedKeyLite {what}"),
            sign_request(request.clone(), &wrong_lite),
        );
        c.auth(
            format!("another account's signature {what}"),
            sign_request(request.clone(), &other_account),
        );
        for (when, date) in [("stale", &stale), ("future", &future)] {
            let auth = dev.authorization(&request.method, &request.target, ct.as_deref(), date);
            c.auth(
                format!("{when} date {what}"),
                request
                    .clone()
                    .header("x-ms-date", date.clone())
                    .header("Authorization", auth),
            );
        }
        // Signed for another path.
        let other = if request.target == target("Tables") {
            target("kept()")
        } else {
            target("Tables")
        };
        let [(n1, date), (n2, auth)] = dev.headers(&request.method, &other, ct.as_deref());
        c.auth(
            format!("signature of another path {what}"),
            request.clone().header(n1, date).header(n2, auth),
        );
        // Signed, then the method changed.
        let [(n1, date), (n2, auth)] = dev.headers("GET", &request.target, ct.as_deref());
        if request.method != "GET" {
            c.auth(
                format!("signature of GET {what}"),
                request.clone().header(n1, date).header(n2, auth),
            );
        }
        // A good signature with one character changed.
        let signed = sign_request(request.clone(), &dev);
        let mut tampered = signed.clone();
        for (k, v) in tampered.headers.iter_mut() {
            if k.eq_ignore_ascii_case("authorization") {
                let last = v.pop().unwrap_or('=');
                let flip = if v.ends_with('A') { 'B' } else { 'A' };
                v.pop();
                v.push(flip);
                v.push(last);
            }
        }
        c.auth(format!("tampered signature {what}"), tampered);
        for (label, value) in [
            ("empty Authorization", String::new()),
            ("Bearer", "Bearer abc".to_owned()),
            ("no colon", "SharedKey devstoreaccount1".to_owned()),
            ("not base64", "SharedKey devstoreaccount1:!!!".to_owned()),
            (
                "unknown scheme",
                "SharedKeyHeavy devstoreaccount1:AAAA".to_owned(),
            ),
        ] {
            c.auth(
                format!("{label} {what}"),
                request
                    .clone()
                    .header("x-ms-date", sign_date())
                    .header("Authorization", value),
            );
        }
        // SAS tokens: tampered (permissions widened after signing), expired, not yet
        // valid, another table, signed with a wrong key.
        let sep = if request.target.contains('?') {
            '&'
        } else {
            '?'
        };
        let read_only = SasBuilder::table("kept")
            .permissions("r")
            .expiry("2099-01-01T00:00:00Z")
            .sign(&AccountKey::development());
        let widened = read_only.replace("sp=r", "sp=raud");
        let tokens = [
            ("tampered SAS", widened),
            ("tampered SAS signature", read_only.replace("sig=", "sig=A")),
            (
                "expired SAS",
                SasBuilder::table("kept")
                    .permissions("raud")
                    .start("2020-01-01T00:00:00Z")
                    .expiry("2021-01-01T00:00:00Z")
                    .sign(&AccountKey::development()),
            ),
            (
                "SAS not yet valid",
                SasBuilder::table("kept")
                    .permissions("raud")
                    .start("2098-01-01T00:00:00Z")
                    .expiry("2099-01-01T00:00:00Z")
                    .sign(&AccountKey::development()),
            ),
            (
                "SAS of a wrong key",
                SasBuilder::table("kept")
                    .permissions("raud")
                    .expiry("2099-01-01T00:00:00Z")
                    .sign(&AccountKey::new("devstoreaccount1", WRONG_KEY).expect("a key")),
            ),
        ];
        for (label, token) in tokens {
            let mut r = request.clone();
            r.target = format!("{}{sep}{token}", r.target);
            c.auth(format!("{label} {what}"), r);
        }
    }
}

fn sign_date() -> String {
    let [(_, date), _] = dev_signer().headers("GET", "/", None);
    date
}

/// A changeset part: one operation (`line` e.g. `POST http://h/devstoreaccount1/kept`).
fn part(changeset: &str, line: &str, body: &str) -> String {
    format!(
        "--{changeset}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
         {line} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\n\
         Content-Length: {}\r\n\r\n{body}\r\n",
        body.len()
    )
}

/// A batch body (boundary `batch_b`) holding one changeset `cs` of `parts`.
fn changeset(parts: &str) -> String {
    format!(
        "--batch_b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n{parts}--cs--\r\n\r\n--batch_b--\r\n"
    )
}

/// Broken `$batch` requests, all aimed at `kept` (so a partial application shows).
fn add_batch_cases(c: &mut Corpus) {
    let origin = "http://127.0.0.1:10002/devstoreaccount1";
    let insert = |rk: &str| {
        part(
            "cs",
            &format!("POST {origin}/kept"),
            &format!(r#"{{"PartitionKey":"p","RowKey":"{rk}"}}"#),
        )
    };
    let good = insert("batch-1");
    c.batch("no body", "");
    c.batch("garbage body", "this is not multipart");
    c.batch(
        "wrong boundary",
        changeset(&good).replace("--batch_b", "--batch_x"),
    );
    c.batch(
        "missing changeset end",
        changeset(&good).replace("--cs--\r\n", ""),
    );
    c.batch(
        "missing batch end",
        changeset(&good).replace("--batch_b--\r\n", ""),
    );
    c.batch(
        "changeset without boundary",
        changeset(&good).replace("boundary=cs", ""),
    );
    c.batch(
        "part without request line",
        changeset(&format!(
            "{good}--cs\r\nContent-Type: application/http\r\n\r\nContent-Type: application/json\r\n\r\n{{}}\r\n"
        )),
    );
    c.batch(
        "part with a garbage request line",
        changeset(&format!(
            "{good}--cs\r\nContent-Type: application/http\r\n\r\nFROB the kept table\r\n\r\n"
        )),
    );
    c.batch(
        "nested garbage",
        changeset(&format!(
            "{good}--cs\r\nContent-Type: multipart/mixed; boundary=deeper\r\n\r\n--deeper\r\n\
             --deeper\r\n\u{1}\u{2}garbage\r\n--deeper--\r\n"
        )),
    );
    c.batch(
        "nested changeset",
        changeset(&format!(
            "{good}--cs\r\nContent-Type: multipart/mixed; boundary=cs2\r\n\r\n{}--cs2--\r\n",
            insert("nested").replace("--cs\r\n", "--cs2\r\n")
        )),
    );
    // (An empty changeset is a valid request, answered 202 with an empty changeset response
    // as the service answers it: server/tests/service_replies.rs.)
    let many: String = (0..101).map(|i| insert(&format!("many-{i:03}"))).collect();
    c.batch("101 operations", changeset(&many));
    let mixed = format!(
        "{good}{}",
        part(
            "cs",
            &format!("POST {origin}/kept"),
            r#"{"PartitionKey":"q","RowKey":"batch-2"}"#
        )
    );
    c.batch("mixed partitions", changeset(&mixed));
    c.batch(
        "duplicate row",
        changeset(&format!("{good}{}", insert("batch-1"))),
    );
    c.batch(
        "second operation truncated JSON",
        changeset(&format!(
            "{good}{}",
            part(
                "cs",
                &format!("POST {origin}/kept"),
                r#"{"PartitionKey":"p","#
            )
        )),
    );
    c.batch(
        "another account in a part",
        changeset(&format!(
            "{good}{}",
            part(
                "cs",
                "POST http://127.0.0.1:10002/otheraccount/kept",
                r#"{"PartitionKey":"p","RowKey":"batch-3"}"#
            )
        )),
    );
    c.batch(
        "another table in a part",
        changeset(&format!(
            "{good}{}",
            part(
                "cs",
                &format!("POST {origin}/scratch"),
                r#"{"PartitionKey":"p","RowKey":"batch-4"}"#
            )
        )),
    );
    c.batch(
        "a query in a changeset",
        changeset(&format!(
            "{good}--cs\r\nContent-Type: application/http\r\n\r\nGET {origin}/kept() HTTP/1.1\r\n\r\n"
        )),
    );
    c.batch(
        "existing entity inserted again",
        changeset(&format!(
            "{good}{}",
            part(
                "cs",
                &format!("POST {origin}/kept"),
                r#"{"PartitionKey":"p","RowKey":"r"}"#
            )
        )),
    );
    c.batch(
        "replace with a stale If-Match",
        changeset(&format!(
            "{good}--cs\r\nContent-Type: application/http\r\n\r\nPUT {origin}/kept(PartitionKey='p',RowKey='r') HTTP/1.1\r\n\
             Content-Type: application/json\r\nIf-Match: W/\"datetime'2001-01-01T00%3A00%3A00.0000000Z'\"\r\n\
             Content-Length: 8\r\n\r\n{{\"A\":1}}\r\n"
        )),
    );
    c.batch(
        "missing table",
        changeset(&part(
            "cs",
            &format!("POST {origin}/nosuchtable"),
            r#"{"PartitionKey":"p","RowKey":"x"}"#,
        )),
    );
    let mut non_utf8 = changeset(&good).into_bytes();
    non_utf8.splice(10..10, [0xFF, 0xFE, 0x00]);
    c.batch("non-UTF-8 bytes", non_utf8);
    let mut big = changeset(&good);
    big.push_str(&"x".repeat(4 * 1024 * 1024 + 10));
    c.batch("body over 4 MiB", big);
    // Truncations of a good two-operation batch at every tenth byte.
    let two = changeset(&format!("{good}{}", insert("batch-5")));
    for cut in (0..two.len()).step_by(10) {
        c.batch(format!("batch truncated at {cut}"), two[..cut].to_owned());
    }
}

/// A few random edits of `seed`: byte flips, insertions of interesting bytes, deletions,
/// duplications — never touching the `kept` table name (mutants write to `scratch`).
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = seed.to_vec();
    let interesting: &[&[u8]] = &[
        b"'",
        b"''",
        b"(",
        b")",
        b"%",
        b"%FF",
        b"%00",
        b"\"",
        b"{",
        b"}",
        b"[",
        b"\\",
        b"\xff",
        b"\r\n",
        b"\0",
        b",",
        b":",
        b"@odata.type",
        b"Edm.Int64",
        b"9999999999999999999999",
        b"-",
        b" ",
        b"&",
        b"=",
        b"$top",
        b"?",
    ];
    for _ in 0..rng.range(1, 4) {
        if out.is_empty() {
            break;
        }
        let at = rng.below(out.len() as u64) as usize;
        match rng.below(4) {
            0 => out[at] = rng.next_u64() as u8,
            1 => {
                let piece = rng.pick(interesting);
                out.splice(at..at, piece.iter().copied());
            }
            2 => {
                let end = (at + rng.range(1, 8) as usize).min(out.len());
                out.drain(at..end);
            }
            _ => {
                let end = (at + rng.range(1, 16) as usize).min(out.len());
                let piece = out[at..end].to_vec();
                out.splice(at..at, piece);
            }
        }
    }
    out
}

/// Whether bytes look like a well-framed request (so an error must be an `odata.error`):
/// the request line and headers parse with the rules the HTTP layer applies.
fn split_crlf(mut head: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some(at) = head.windows(2).position(|w| w == b"\r\n") {
        out.push(&head[..at]);
        head = &head[at + 2..];
    }
    out.push(head);
    out
}

fn well_framed(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = &bytes[..end];
    // Lines end with CRLF exactly; a lone CR or LF left in a line is not well framed.
    let mut lines = split_crlf(head).into_iter();
    let Some(line) = lines.next().and_then(|l| std::str::from_utf8(l).ok()) else {
        return false;
    };
    let parts: Vec<&str> = line.split(' ').collect();
    if parts.len() != 3
        || parts[2] != "HTTP/1.1"
        || !parts[1].starts_with('/')
        || parts[0].is_empty()
        || !parts[0].bytes().all(|b| b.is_ascii_alphabetic())
        // The characters a URI cannot hold (the HTTP layer rejects them with a bare 400).
        || !parts[1]
            .bytes()
            .all(|b| (0x21..0x7f).contains(&b) && !b"\"<>\\^`{|}".contains(&b))
    {
        return false;
    }
    let mut length = None;
    for l in lines {
        // Header values may hold obs-text (bytes 0x80–0xFF); names are tokens.
        let Some(colon) = l.iter().position(|&b| b == b':') else {
            return false;
        };
        let (k, v) = (&l[..colon], &l[colon + 1..]);
        if k.is_empty()
            || !k
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(b))
            || !v
                .iter()
                .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80)
        {
            return false;
        }
        if k.eq_ignore_ascii_case(b"transfer-encoding") {
            return false;
        }
        if k.eq_ignore_ascii_case(b"content-length") {
            if length.is_some() {
                return false;
            }
            // Digits only (no sign), as the HTTP layer reads it.
            match std::str::from_utf8(v)
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<usize>().ok())
            {
                Some(n) => length = Some(n),
                None => return false,
            }
        }
    }
    // The body must be exactly as long as announced.
    bytes.len() - (end + 4) == length.unwrap_or(0)
}

fn judge(case: &Case, outcome: Outcome) -> Result<Option<u16>, String> {
    match (case.kind, outcome) {
        (_, Outcome::NotSent(e)) => Err(format!("cannot connect: {e}")),
        (Kind::Framing | Kind::Mutant, Outcome::Unknown(why))
            if !well_framed(&case.bytes)
                && !why.contains("timed out")
                && !why.contains("WouldBlock") =>
        {
            if why.contains("reset") {
                Err(format!("reset: {why}"))
            } else {
                Ok(None)
            }
        }
        (_, Outcome::Unknown(why)) => Err(format!("no reply: {why}")),
        (Kind::Service, Outcome::Reply(r)) => match r.service_error_problem() {
            Some(p) => Err(p),
            None => Ok(Some(r.status)),
        },
        (Kind::Auth, Outcome::Reply(r)) => match r.service_error_problem() {
            Some(p) => Err(p),
            None if r.status == 403
                && r.error_code().as_deref() == Some("AuthenticationFailed") =>
            {
                Ok(Some(r.status))
            }
            None => Err(format!(
                "status {} {:?}, not 403 AuthenticationFailed",
                r.status,
                r.error_code()
            )),
        },
        (Kind::Batch, Outcome::Reply(r)) => {
            if r.status != 202 {
                return match r.service_error_problem() {
                    Some(p) => Err(p),
                    None => Ok(Some(r.status)),
                };
            }
            // An operation's failure: one part, a 4xx with an odata.error.
            let parts = batch_parts(&r);
            let text = r.text();
            match parts.as_slice() {
                [(status, _)]
                    if (400..500).contains(status) && text.contains("\"odata.error\"") =>
                {
                    Ok(Some(*status))
                }
                _ => Err(format!(
                    "202 that is not a single failed operation: {}",
                    excerpt(&text)
                )),
            }
        }
        (Kind::Framing, Outcome::Reply(r)) => {
            if (400..500).contains(&r.status) {
                Ok(Some(r.status))
            } else {
                Err(format!("status {}: {}", r.status, excerpt(&r.text())))
            }
        }
        (Kind::Mutant, Outcome::Reply(r)) => {
            if r.status >= 500 {
                return Err(format!("status {}: {}", r.status, excerpt(&r.text())));
            }
            if r.status >= 400
                && well_framed(&case.bytes)
                && !r.body.is_empty()
                && let Some(p) = r.service_error_problem()
            {
                return Err(p);
            }
            if r.status >= 400 && well_framed(&case.bytes) && r.body.is_empty() {
                return Err(format!("status {} without an odata.error body", r.status));
            }
            Ok(Some(r.status))
        }
    }
}

/// What `kept` and the table list look like (bodies at full metadata).
fn snapshot(client: &Client) -> (String, String) {
    let get = |path: &str| {
        let r = client.call(
            Request::new("GET", target(path))
                .header("Accept", "application/json;odata=fullmetadata"),
        );
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        r.text()
    };
    (get("kept()"), get("Tables"))
}

fn seed_data(client: &Client) {
    client.create_table("kept");
    client.create_table("scratch");
    for (pk, rk, extra) in [
        ("p", "r", r#""Name":"kept","Age":7"#),
        ("p", "r2", r#""Big@odata.type":"Edm.Int64","Big":"123""#),
        (
            "hostile",
            "r1",
            r#""Note":"the truncated bodies name this key""#,
        ),
        (
            "q",
            "'quoted'",
            r#""When@odata.type":"Edm.DateTime","When":"2024-01-01T00:00:00Z""#,
        ),
    ] {
        let body = format!(
            r#"{{"PartitionKey":"{pk}","RowKey":"{}",{extra}}}"#,
            rk.replace('"', "\\\"")
        );
        let r = client.call(json_post("kept", body));
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

#[test]
fn thousands_of_malformed_requests_get_4xx_errors_and_change_nothing() {
    let dir = TempDir::new("hostile");
    let backend = Arc::new(DurableBackend::open(&dir.0).expect("open the data directory"));
    let server = InProcess::start(backend, ServerConfig::default());
    let client = server.client();
    seed_data(&client);
    let before = snapshot(&client);

    let (mut rng, _) = Rng::from_env("TABLEQ_HOSTILE_SEED");
    let corpus = build_corpus(&client.addr.to_string(), &mut rng);
    let total = corpus.cases.len();
    let mut kinds = std::collections::BTreeMap::new();
    for case in &corpus.cases {
        *kinds.entry(format!("{:?}", case.kind)).or_insert(0) += 1;
    }
    eprintln!("cases by kind: {kinds:?}");
    // Four senders: each takes every fourth case.
    let cases = Arc::new(corpus.cases);
    let results: Vec<(Vec<String>, std::collections::BTreeMap<u16, usize>)> = (0..4)
        .map(|k| {
            let cases = cases.clone();
            let client = client.clone();
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                let mut statuses = std::collections::BTreeMap::new();
                for case in cases.iter().skip(k).step_by(4) {
                    let began = std::time::Instant::now();
                    // A request that is not complete, well-framed HTTP may leave the
                    // server waiting for the rest: the sender closes its half after it.
                    let outcome = if well_framed(&case.bytes) {
                        client.send_bytes(&case.bytes)
                    } else {
                        client.send_bytes_then_close(&case.bytes)
                    };
                    if began.elapsed() > std::time::Duration::from_secs(2) {
                        eprintln!("slow ({:.1?}): {}", began.elapsed(), case.label);
                    }
                    match judge(case, outcome) {
                        Ok(Some(s)) => *statuses.entry(s).or_insert(0) += 1,
                        Ok(None) => *statuses.entry(0).or_insert(0) += 1,
                        Err(problem) => failures.push(format!(
                            "[{:?}] {}: {problem}\n    request: {:?}",
                            case.kind,
                            case.label,
                            excerpt(&String::from_utf8_lossy(&case.bytes))
                        )),
                    }
                }
                (failures, statuses)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("sender thread"))
        .collect();
    let mut failures = Vec::new();
    let mut statuses = std::collections::BTreeMap::new();
    for (f, s) in results {
        failures.extend(f);
        for (k, v) in s {
            *statuses.entry(k).or_insert(0) += v;
        }
    }
    eprintln!("{total} requests; statuses (0 = closed without a reply): {statuses:?}");
    assert!(
        failures.is_empty(),
        "{} of {total} requests were mishandled:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(total >= 2000, "only {total} requests");

    // The server is still up and the data written before is unchanged.
    let after = snapshot(&client);
    assert_eq!(before.0, after.0, "table `kept` changed");
    // Refused requests created no table.
    assert!(!after.1.contains("authtable"), "{}", after.1);
    // Mutants may have created tables; the kept ones are still listed.
    for name in ["kept", "scratch"] {
        assert!(
            after.1.contains(&format!("\"TableName\":\"{name}\"")),
            "{}",
            after.1
        );
    }
    server.stop();
}

/// The framing check itself: what counts as well framed.
#[test]
fn well_framed_requests_are_recognised() {
    let ok = Request::new("GET", target("Tables")).to_bytes("h");
    assert!(well_framed(&ok));
    let post = json_post("kept", "{}").to_bytes("h");
    assert!(well_framed(&post));
    let mut short = post.clone();
    short.pop();
    assert!(!well_framed(&short));
    assert!(!well_framed(b"GET /x HTTP/1.0\r\n\r\n"));
    assert!(!well_framed(b"GET x HTTP/1.1\r\n\r\n"));
    assert!(!well_framed(b"GET /x HTTP/1.1\r\nBad Name: v\r\n\r\n"));
    assert!(!well_framed(b"GET /x HTTP/1.1\r\nA: v\r\r\n\r\n"));
    assert!(!well_framed(
        b"POST /x HTTP/1.1\r\nContent-Length: +1\r\n\r\nx"
    ));
}

/// The kept fuzz findings of the request path, replayed through the in-process oracle.
#[test]
fn request_fuzz_regressions_replay() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/robust_support/regressions");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("regressions directory") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let data = std::fs::read(&path).expect("read");
        if let Err(problem) = request_oracle::run(&data) {
            panic!("{}: {problem}", path.display());
        }
        count += 1;
    }
    assert!(count > 0, "no regression inputs in {}", dir.display());
}

/// A two-insert changeset into `tbl` partition `p` (boundary `b`, changeset `c`).
const BATCH_BODY: &str = "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n\
    --c\r\nContent-Type: application/http\r\n\r\nPOST http://h/devstoreaccount1/tbl HTTP/1.1\r\n\
    Content-Type: application/json\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"b1\"}\r\n\
    --c\r\nContent-Type: application/http\r\n\r\nPOST http://h/devstoreaccount1/tbl HTTP/1.1\r\n\
    Content-Type: application/json\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"b2\"}\r\n\
    --c--\r\n--b--\r\n";

/// A seeded random driver over the fuzz target's input format (stable stand-in for
/// `cargo fuzz run request`): structured requests with random parts, through the oracle.
#[test]
fn request_path_random_inputs_through_the_oracle() {
    let (mut rng, _) = Rng::from_env("TABLEQ_REQUEST_SEED");
    let methods = [
        "GET", "POST", "PUT", "MERGE", "PATCH", "DELETE", "HEAD", "OPTIONS",
    ];
    let targets = [
        "Tables",
        "Tables('tbl')",
        "Tables('nope')",
        "tbl",
        "tbl()",
        "tbl()?$filter=V%20eq%201&$top=1",
        "tbl()?$filter=V%20eq%20'",
        "tbl()?$select=V&$top=0",
        "tbl(PartitionKey='p',RowKey='r')",
        "tbl(PartitionKey='p',RowKey='x')",
        "tbl(PartitionKey='p'",
        "$batch",
        "/otheraccount/Tables",
        "tbl()?NextPartitionKey=1!4!cA==&NextRowKey=1!4!cg==",
    ];
    let headers = [
        "Content-Type: application/json",
        "Content-Type: text/plain",
        "Accept: application/json;odata=fullmetadata",
        "Accept: application/json;odata=bogus",
        "If-Match: *",
        "If-Match: W/\"datetime'2020-01-01T00%3A00%3A00Z'\"",
        "If-Match: junk",
        "X-HTTP-Method: MERGE",
        "X-HTTP-Method: BOGUS",
        "Prefer: return-no-content",
        "x-ms-version: 2019-02-02",
        "x-ms-version: junk",
        "DataServiceVersion: 3.0;NetFx",
        "Content-Length: 3",
        "Content-Type: multipart/mixed; boundary=b",
        "Content-Type: multipart/mixed; boundary=b",
        "Content-Type: multipart/mixed",
    ];
    let bodies = [
        "",
        r#"{"TableName":"nt"}"#,
        r#"{"TableName":5}"#,
        r#"{"PartitionKey":"p","RowKey":"n","V":2}"#,
        r#"{"PartitionKey":"p","RowKey":"r","V":2}"#,
        r#"{"V@odata.type":"Edm.Int64","V":"7"}"#,
        r#"{"V@odata.type":"Edm.Int64","V":7}"#,
        "[[[[[[[[[[",
        r#"{"PartitionKey":"p","#,
        BATCH_BODY,
        "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n\r\n",
    ];
    let (mut answered, mut past_auth) = (0, 0);
    for _ in 0..3000 {
        // Mostly signed; some unsigned (`!`) or signed with a wrong key (`~`).
        let credentials = *rng.pick(&["", "", "", "", "", "", "", "", "!", "~"]);
        let mut data = format!(
            "{credentials}{} {}\n",
            rng.pick(&methods),
            rng.pick(&targets)
        )
        .into_bytes();
        for _ in 0..rng.below(4) {
            data.extend_from_slice(rng.pick(&headers).as_bytes());
            data.push(b'\n');
        }
        data.push(b'\n');
        data.extend_from_slice(rng.pick(&bodies).as_bytes());
        if rng.chance(30) {
            data = mutate(&data, &mut rng);
        }
        match request_oracle::run(&data) {
            Ok(Some(answer)) => {
                answered += 1;
                if answer.error_code.as_deref() != Some("AuthenticationFailed") {
                    past_auth += 1;
                }
            }
            Ok(None) => {}
            Err(problem) => panic!("{problem}\ninput: {:?}", String::from_utf8_lossy(&data)),
        }
    }
    assert!(answered > 2000, "only {answered} inputs reached the router");
    // The signed ones get past authorization to the handlers.
    assert!(
        past_auth > 1500,
        "only {past_auth} inputs got past authorization"
    );
}

/// A reply's helper check, so the judging itself can fail.
#[test]
fn service_error_check_rejects_non_errors() {
    let ok = Reply {
        status: 200,
        headers: vec![],
        body: b"{}".to_vec(),
    };
    assert!(ok.service_error_problem().is_some());
    let bare = Reply {
        status: 400,
        headers: vec![],
        body: Vec::new(),
    };
    assert!(bare.service_error_problem().is_some());
    let good = Reply {
        status: 404,
        headers: vec![("x-ms-error-code".into(), "TableNotFound".into())],
        body: br#"{"odata.error":{"code":"TableNotFound","message":{"lang":"en-US","value":"x"}}}"#
            .to_vec(),
    };
    assert_eq!(good.service_error_problem(), None);
}
