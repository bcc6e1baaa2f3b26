//! Entity queries over real HTTP: `$filter`/`$select`/`$top`, continuation headers over
//! several pages with writes between and during them, the work budget, query errors.

use crate::server_support;

use serde_json::{Value, json};
use server_support::{NOMETA, SendSigned, TestServer, query_path};
use std::time::Duration;
use tableq_model::{Entity, Value as EdmValue};
use tableq_server::ServerConfig;
use tableq_store::{Backend, WriteOp};

/// Inserts `PartitionKey = p{i}`, `RowKey = r{j}`, `V = 10 i + j` for i, j < n.
async fn grid(s: &TestServer, table: &str, n: usize) {
    for i in 0..n {
        for j in 0..n {
            s.insert(
                table,
                &json!({"PartitionKey": format!("p{i}"), "RowKey": format!("r{j}"), "V": 10 * i + j}),
            )
            .await;
        }
    }
}

fn keys(body: &Value) -> Vec<String> {
    body["value"]
        .as_array()
        .unwrap_or_else(|| panic!("no value array: {body}"))
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["PartitionKey"].as_str().unwrap(),
                e["RowKey"].as_str().unwrap()
            )
        })
        .collect()
}

/// Follows continuations from `params`; returns (keys of every page, number of pages).
/// `between` runs after each page that has a continuation.
async fn page_all(
    s: &TestServer,
    table: &str,
    params: &[(&str, &str)],
    mut between: impl AsyncFnMut(usize),
) -> (Vec<String>, usize) {
    let mut all = Vec::new();
    let mut next: Option<(String, String)> = None;
    let mut pages = 0;
    loop {
        let mut p: Vec<(&str, &str)> = params.to_vec();
        if let Some((pk, rk)) = &next {
            p.push(("NextPartitionKey", pk));
            p.push(("NextRowKey", rk));
        }
        let r = s.get(&query_path(table, &p)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        pages += 1;
        all.extend(keys(&r.json()));
        let pk = r
            .header("x-ms-continuation-nextpartitionkey")
            .map(str::to_owned);
        let rk = r.header("x-ms-continuation-nextrowkey").map(str::to_owned);
        assert_eq!(
            pk.is_some(),
            rk.is_some(),
            "both continuation headers or neither"
        );
        match (pk, rk) {
            (Some(pk), Some(rk)) => {
                assert!(pk.is_ascii() && rk.is_ascii());
                next = Some((pk, rk));
                between(pages).await;
            }
            _ => break,
        }
        assert!(pages < 10_000, "paging does not end");
    }
    (all, pages)
}

#[tokio::test]
async fn filter_select_top_and_the_collection_shape() {
    let s = TestServer::start().await;
    s.create_table("grid").await;
    grid(&s, "grid", 3).await;
    let r = s
        .get(&query_path(
            "grid",
            &[
                ("$filter", "PartitionKey eq 'p1' and V ge 11"),
                ("$select", "V,Nope"),
            ],
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let body = r.json();
    assert_eq!(
        body["odata.metadata"],
        format!(
            "{}/devstoreaccount1/$metadata#grid&$select=V,Nope",
            s.origin
        )
    );
    let rows = body["value"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, v) in rows.iter().zip([11, 12]) {
        let obj = row.as_object().unwrap();
        let names: Vec<&str> = obj.keys().map(String::as_str).collect();
        assert_eq!(names, ["Nope", "V", "odata.etag"], "{row}");
        assert_eq!(
            (row["V"].clone(), row["Nope"].clone()),
            (json!(v), Value::Null)
        );
    }
    assert_eq!(r.header("x-ms-continuation-nextpartitionkey"), None);
    // `t` and `t()` are the same collection; $top caps a page.
    let r = s.get("grid?$top=4").await;
    assert_eq!(keys(&r.json()), ["p0/r0", "p0/r1", "p0/r2", "p1/r0"]);
    assert!(r.header("x-ms-continuation-nextpartitionkey").is_some());
    // No metadata: no odata.metadata, no etags, no annotations.
    let r = s
        .send("GET", "grid()?$top=1", &[("Accept", NOMETA)], None)
        .await;
    assert!(!r.body.contains("odata"), "{}", r.body);
    let row = r.json()["value"][0].clone();
    let names: Vec<&str> = row
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["PartitionKey", "RowKey", "Timestamp", "V"]);
}

#[tokio::test]
async fn paging_over_several_pages_with_writes_between_them() {
    let s = TestServer::start().await;
    s.create_table("grid").await;
    grid(&s, "grid", 5).await;
    let expected_before: Vec<String> = (0..5)
        .flat_map(|i| (0..5).map(move |j| format!("p{i}/r{j}")))
        .collect();
    let (got, pages) = page_all(&s, "grid", &[("$top", "7")], async |page| {
        match page {
            // Behind the cursor (page 1 ended inside p1): never revisited.
            1 => {
                s.insert("grid", &json!({"PartitionKey":"p0","RowKey":"r00"}))
                    .await;
            }
            // Ahead of the cursor: a new entity is found, a deleted one is not.
            2 => {
                s.insert("grid", &json!({"PartitionKey":"p4","RowKey":"r9"}))
                    .await;
                let r = s
                    .send(
                        "DELETE",
                        "grid(PartitionKey='p4',RowKey='r0')",
                        &[("If-Match", "*")],
                        None,
                    )
                    .await;
                assert_eq!(r.status, 204);
            }
            _ => {}
        }
    })
    .await;
    assert_eq!(pages, 4);
    let mut expected: Vec<String> = expected_before
        .into_iter()
        .filter(|k| k != "p4/r0")
        .collect();
    expected.push("p4/r9".into());
    assert_eq!(got, expected);
}

#[tokio::test]
async fn filtered_paging_with_keys_selected() {
    let s = TestServer::start().await;
    s.create_table("grid").await;
    grid(&s, "grid", 6).await;
    let (got, pages) = page_all(
        &s,
        "grid",
        &[
            ("$filter", "V ge 12 and RowKey ne 'r3'"),
            ("$top", "5"),
            ("$select", "PartitionKey,RowKey"),
        ],
        async |_| {},
    )
    .await;
    let expected: Vec<String> = (0..6)
        .flat_map(|i| (0..6).map(move |j| (i, j)))
        .filter(|(i, j)| 10 * i + j >= 12 && *j != 3)
        .map(|(i, j)| format!("p{i}/r{j}"))
        .collect();
    assert_eq!(got, expected);
    assert!(pages >= 4, "{pages} pages");
}

#[tokio::test]
async fn paging_is_stable_under_concurrent_writes() {
    let s = TestServer::start().await;
    s.create_table("churn").await;
    for i in 0..120 {
        s.insert(
            "churn",
            &json!({"PartitionKey":"s","RowKey": format!("{i:03}")}),
        )
        .await;
    }
    // A writer inserts and deletes other entities between the stable ones while pages run.
    let origin = s.url("");
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let writer = tokio::spawn(async move {
        let client = reqwest::Client::new();
        let mut n = 0u32;
        loop {
            if stop_rx.try_recv().is_ok() {
                return n;
            }
            let rk = format!("{:03}x{n}", n % 120);
            let body = json!({"PartitionKey":"s","RowKey": rk}).to_string();
            let r = client
                .post(format!("{origin}churn"))
                .header("Content-Type", "application/json")
                .body(body)
                .send_signed()
                .await
                .unwrap();
            assert_eq!(r.status(), 201);
            if n.is_multiple_of(2) {
                let r = client
                    .delete(format!("{origin}churn(PartitionKey='s',RowKey='{rk}')"))
                    .header("If-Match", "*")
                    .send_signed()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 204);
            }
            n += 1;
        }
    });
    let (got, pages) = page_all(&s, "churn", &[("$top", "9")], async |_| {
        tokio::time::sleep(Duration::from_millis(2)).await;
    })
    .await;
    let _ = stop_tx.send(());
    let writes = writer.await.unwrap();
    assert!(writes > 0);
    assert!(pages >= 14, "{pages} pages");
    // Strictly increasing: no entity twice, key order.
    assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
    // Every entity present for the whole paging, exactly once.
    let stable: Vec<String> = got.iter().filter(|k| !k.contains('x')).cloned().collect();
    let expected: Vec<String> = (0..120).map(|i| format!("s/{i:03}")).collect();
    assert_eq!(stable, expected);
}

#[tokio::test]
async fn an_exhausted_budget_ends_pages_early_but_paging_completes() {
    let config = ServerConfig {
        page_budget: Duration::ZERO,
        ..ServerConfig::default()
    };
    let s = TestServer::start_with(config).await;
    s.create_table("grid").await;
    // The executor checks its budget between waves of several thousand entities: load
    // 20,000 straight into the store (the HTTP query path is what is tested here).
    for i in 0..200 {
        let ops = (0..100)
            .map(|j| {
                let mut e = Entity::new(format!("p{i:03}"), format!("r{j:03}"));
                e.set("V", EdmValue::Int32(i * 100 + j));
                WriteOp::Insert { entity: e }
            })
            .collect();
        s.backend.write_batch("grid", ops).unwrap();
    }
    let filter = "V lt 50 or V ge 19950";
    let (got, pages) = page_all(&s, "grid", &[("$filter", filter)], async |_| {}).await;
    let expected: Vec<String> = (0..50)
        .map(|j| format!("p000/r{j:03}"))
        .chain((50..100).map(|j| format!("p199/r{j:03}")))
        .collect();
    assert_eq!(got, expected);
    assert!(pages > 1, "a zero budget must end pages early");
    // Pages that found nothing still carry a continuation until the end.
    let (got, pages) = page_all(&s, "grid", &[("$filter", "V lt 0")], async |_| {}).await;
    assert!(got.is_empty());
    assert!(pages > 1, "{pages}");
}

#[tokio::test]
async fn unicode_keys_travel_as_ascii_tokens() {
    let s = TestServer::start().await;
    s.create_table("uni").await;
    let pks = ["ä", "😀", "\u{e000}", "日本"];
    for pk in pks {
        for rk in ["ü1", "😀2"] {
            s.insert("uni", &json!({"PartitionKey": pk, "RowKey": rk}))
                .await;
        }
    }
    let (got, pages) = page_all(&s, "uni", &[("$top", "3")], async |_| {}).await;
    assert_eq!(pages, 3);
    assert_eq!(got.len(), 8);
    // UTF-16 order: U+E000 sorts after the supplementary-plane emoji.
    let order: Vec<&str> = got
        .iter()
        .step_by(2)
        .map(|k| k.split('/').next().unwrap())
        .collect();
    assert_eq!(order, ["ä", "日本", "😀", "\u{e000}"]);
}

#[tokio::test]
async fn continuation_parameters() {
    let s = TestServer::start().await;
    s.create_table("grid").await;
    grid(&s, "grid", 3).await;
    let token = |k: &str| tableq_server::continuation::encode_token(k);
    // NextPartitionKey alone resumes at the start of that partition.
    let r = s
        .get(&query_path("grid", &[("NextPartitionKey", &token("p1"))]))
        .await;
    assert_eq!(keys(&r.json())[0], "p1/r0");
    let r = s
        .get(&query_path(
            "grid",
            &[
                ("NextPartitionKey", &token("p1")),
                ("NextRowKey", &token("r2")),
            ],
        ))
        .await;
    assert_eq!(keys(&r.json()), ["p1/r2", "p2/r0", "p2/r1", "p2/r2"]);
    // NextRowKey alone, and tokens that do not decode.
    let m = s
        .get(&query_path("grid", &[("NextRowKey", &token("r1"))]))
        .await
        .expect_error(400, "InvalidInput");
    assert!(m.contains("NextRowKey without NextPartitionKey"), "{m}");
    for bad in ["p1", "1!2!cDE!", "1!9!cDE", "2!3!cDE"] {
        let m = s
            .get(&query_path(
                "grid",
                &[("NextPartitionKey", bad), ("NextRowKey", &token("r"))],
            ))
            .await
            .expect_error(400, "InvalidInput");
        assert!(m.contains("NextPartitionKey"), "{m}");
    }
}

#[tokio::test]
async fn query_errors_carry_the_services_sentence_and_tableqs_diagnostic() {
    let s = TestServer::start().await;
    s.create_table("grid").await;
    let r = s
        .get(&query_path("grid", &[("$filter", "PartitionKey EQ 'a'")]))
        .await;
    let m = r.expect_error(400, "InvalidInput");
    let lines: Vec<&str> = m.lines().collect();
    assert_eq!(lines[0], "One of the request inputs is not valid.");
    assert_eq!(
        lines[1],
        "$filter: unknown operator `EQ` at byte 13 (column 14): keywords are lowercase: did you mean `eq`?"
    );
    assert!(m.contains("1 | PartitionKey EQ 'a'"), "{m}");
    assert!(m.contains("^^"), "{m}");
    for (params, needle) in [
        (vec![("$filter", "Age eq null")], "$filter:"),
        (vec![("$filter", "startswith(Name,'a')")], "$filter:"),
        (vec![("$select", "A,,B")], "$select:"),
        (vec![("$top", "0")], "$top:"),
        (vec![("$top", "1001")], "$top:"),
        (vec![("$top", "ten")], "$top:"),
        (vec![("$orderby", "RowKey")], "`$orderby` is not supported"),
        (vec![("$skip", "1")], "`$skip` is not supported"),
        (vec![("$top", "1"), ("$top", "2")], "more than once"),
    ] {
        let m = s
            .get(&query_path("grid", &params))
            .await
            .expect_error(400, "InvalidInput");
        assert!(
            m.starts_with("One of the request inputs is not valid.\n"),
            "{m}"
        );
        assert!(m.contains(needle), "{params:?}: {m}");
    }
}

#[tokio::test]
async fn the_comparison_limit_is_the_services_unless_configured() {
    let filter = vec!["V eq 1"; 16].join(" or ");
    let s = TestServer::start().await;
    s.create_table("grid").await;
    let m = s
        .get(&query_path("grid", &[("$filter", &filter)]))
        .await
        .expect_error(400, "InvalidInput");
    assert!(m.contains("15"), "{m}");
    let lifted = TestServer::start_with(ServerConfig {
        filter_options: tableq_parser::FilterOptions::unlimited(),
        ..ServerConfig::default()
    })
    .await;
    lifted.create_table("grid").await;
    let r = lifted
        .get(&query_path("grid", &[("$filter", &filter)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Point queries run inline on a local engine when they name at most 16 keys and their
/// filter is short, on the blocking pool otherwise: the answers are the same either way.
#[tokio::test]
async fn point_queries_answer_alike_inline_and_on_the_blocking_pool() {
    let s = TestServer::start_with(ServerConfig {
        filter_options: tableq_parser::FilterOptions::unlimited(),
        ..ServerConfig::default()
    })
    .await;
    s.create_table("grid").await;
    grid(&s, "grid", 5).await;
    let points = |n: usize| {
        (0..n)
            .map(|k| format!("(PartitionKey eq 'p{}' and RowKey eq 'r{}')", k % 5, k / 5))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let expected = |n: usize| {
        let mut keys: Vec<String> = (0..n).map(|k| format!("p{}/r{}", k % 5, k / 5)).collect();
        keys.sort();
        keys
    };
    // 3 and 16 points: short reads; 20 points: more than a short read.
    for n in [1, 3, 16, 20] {
        let r = s.get(&query_path("grid", &[("$filter", &points(n))])).await;
        assert_eq!(r.status, 200, "{n} points: {}", r.body);
        assert_eq!(keys(&r.json()), expected(n), "{n} points");
    }
    // A point query whose filter is longer than the server plans inline (2 KiB).
    let long = "x".repeat(2100);
    let filter =
        format!("PartitionKey eq 'p1' and RowKey eq 'r2' and (V eq 12 or Name eq '{long}')");
    let r = s.get(&query_path("grid", &[("$filter", &filter)])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(keys(&r.json()), vec!["p1/r2"]);
    // Its errors still point at the column.
    let typo = format!("Name ne '{long}' and PartitionKey EQ 'p1'");
    let m = s
        .get(&query_path("grid", &[("$filter", &typo)]))
        .await
        .expect_error(400, "InvalidInput");
    assert!(
        m.contains("unknown operator `EQ` at byte 2128 (column 2129)"),
        "{m}"
    );
    // A point on a missing table is 404 whichever way it runs.
    let r = s
        .get(&query_path("nosuch", &[("$filter", &points(1))]))
        .await;
    r.expect_error(404, "TableNotFound");
    // The same through a $select and $top: projected, limited.
    let r = s
        .get(&query_path(
            "grid",
            &[("$filter", &points(3)), ("$select", "V"), ("$top", "2")],
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = r.json()["value"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter()
            .all(|e| e.get("PartitionKey").is_none() && e.get("V").is_some())
    );
    assert!(r.header("x-ms-continuation-NextPartitionKey").is_some());
}

/// Sends `GET {target}` as raw HTTP/1.1 text (signed with the development key), exactly as
/// written: the request target is not re-encoded by any client. Returns the status and the
/// body.
async fn raw_get(s: &TestServer, target: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .expect("connect");
    let request = server_support::sign_raw(&format!(
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {NOMETA}\r\n\
         Connection: close\r\n\r\n"
    ));
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .expect("read the response");
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
    let body = response
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    (status, body)
}

#[tokio::test]
async fn boolean_literals_are_whole_conditions_in_any_letter_case() {
    let s = TestServer::start().await;
    s.create_table("grid").await;
    grid(&s, "grid", 2).await;
    let all = ["p0/r0", "p0/r1", "p1/r0", "p1/r1"];
    for (query, expected) in [
        ("$filter=true", &all[..]),
        ("$filter=FALSE", &[][..]),
        ("$filter=not%20false", &all[..]),
        ("$filter=True&$top=1", &all[..1]),
        (
            "$filter=PartitionKey%20eq%20%27p1%27%20and%20True",
            &all[2..],
        ),
        (
            "$filter=PartitionKey%20eq%20%27p1%27%20and%20false",
            &[][..],
        ),
        ("$filter=V%20gt%2010%20or%20tRuE", &all[..]),
        ("$filter=(false%20or%20V%20eq%201)%20and%20true", &all[1..2]),
    ] {
        let (status, body) = raw_get(&s, &format!("/devstoreaccount1/grid()?{query}")).await;
        assert_eq!(status, 200, "{query}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(keys(&body), expected, "{query}");
    }
    // Still literals inside comparisons; two literals are no comparison.
    s.insert(
        "grid",
        &json!({"PartitionKey": "b", "RowKey": "1", "On": true}),
    )
    .await;
    let (status, body) = raw_get(&s, "/devstoreaccount1/grid()?$filter=On%20eq%20True").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(keys(&serde_json::from_str(&body).unwrap()), ["b/1"]);
    let (status, body) = raw_get(&s, "/devstoreaccount1/grid()?$filter=FALSE%20ne%20On").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(keys(&serde_json::from_str(&body).unwrap()), ["b/1"]);
    let (status, body) = raw_get(&s, "/devstoreaccount1/grid()?$filter=true%20eq%20false").await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("InvalidInput"), "{body}");
    // Query Tables takes them too.
    let (status, body) = raw_get(&s, "/devstoreaccount1/Tables?$filter=TRUE").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"grid\""), "{body}");
    let (status, body) = raw_get(&s, "/devstoreaccount1/Tables?$filter=false").await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("\"grid\""), "{body}");
}

/// A SAS token's key range is a typed restriction joined to the parsed `$filter`: the
/// user's filter keeps the whole comparison limit, and a diagnostic points into the text
/// the user wrote — exactly as for the same request signed with SharedKey.
#[tokio::test]
async fn a_sas_key_range_is_not_part_of_the_filter_text() {
    use tableq_client::sign::{AccountKey, SasBuilder};
    let s = TestServer::start().await;
    s.create_table("grid").await;
    grid(&s, "grid", 4).await;
    // From (p1, r2) to (p2, r1), inclusive: the range of the issue, six comparisons as text.
    let token = SasBuilder::table("grid")
        .permissions("r")
        .window_from_now(None, 3600)
        .start_key("p1", Some("r2"))
        .end_key("p2", Some("r1"))
        .sign(&AccountKey::development());
    let with_token = |params: &[(&str, &str)]| format!("{}&{token}", query_path("grid", params));

    // Twelve comparisons of the user's own (V = 10 i + j) work under the token…
    let twelve = (0..12)
        .map(|k| format!("V eq {}", [10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 0, 1][k]))
        .collect::<Vec<_>>()
        .join(" or ");
    let r = s
        .send_unsigned("GET", &with_token(&[("$filter", &twelve)]), &[], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(keys(&r.json()), ["p1/r2", "p1/r3", "p2/r0", "p2/r1"]);
    // …as do fifteen, the service's limit; sixteen are refused as the user's sixteen.
    let fifteen = vec!["V eq 12"; 15].join(" or ");
    let r = s
        .send_unsigned("GET", &with_token(&[("$filter", &fifteen)]), &[], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(keys(&r.json()), ["p1/r2"]);
    let sixteen = vec!["V eq 12"; 16].join(" or ");
    let m = s
        .send_unsigned("GET", &with_token(&[("$filter", &sixteen)]), &[], None)
        .await
        .expect_error(400, "InvalidInput");
    assert!(
        m.contains("the filter has 16 comparisons; at most 15"),
        "{m}"
    );

    // A typo's diagnostic is the one the same filter gets under SharedKey: the caret
    // points into the user's own text, which is all the diagnostic shows.
    for typo in ["V eq", "V EQ 3 and RowKey ge 'r1'", "(V eq 1"] {
        let under_sas = s
            .send_unsigned("GET", &with_token(&[("$filter", typo)]), &[], None)
            .await
            .expect_error(400, "InvalidInput");
        let under_key = s
            .get(&query_path("grid", &[("$filter", typo)]))
            .await
            .expect_error(400, "InvalidInput");
        let diagnostic = |m: &str| -> Vec<String> {
            // Drop the RequestId and Time lines.
            let lines: Vec<&str> = m.lines().collect();
            lines[..lines.len().saturating_sub(2)]
                .iter()
                .map(|l| l.to_string())
                .collect()
        };
        assert_eq!(diagnostic(&under_sas), diagnostic(&under_key), "{typo}");
        assert!(under_sas.contains(&format!("1 | {typo}")), "{under_sas}");
        assert!(!under_sas.contains("PartitionKey"), "{under_sas}");
    }
}
