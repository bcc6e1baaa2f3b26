//! The explorer's server side (issue 21) over HTTP: its embedded files under `/_explorer/`
//! (content types, CSP, ETag revalidation, served before any account like `/health`, off
//! with `ServerConfig::explorer = false`), and the `x-tableq-explain` extension of entity
//! queries it uses — the plan or the parser's diagnostic (`plan`), the executor's statistics
//! of a page (`analyze`) — behind the same authorization as the query itself.

use crate::server_support;

use serde_json::{Value, json};
use server_support::{NOMETA, TestServer, query_path};
use tableq_client::sign::{AccountKey, SasBuilder};
use tableq_server::ServerConfig;

async fn raw_get(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}{path}", s.origin));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn the_files_are_embedded_typed_revalidated_and_locked_down() {
    let s = TestServer::start().await;
    let index = raw_get(&s, "/_explorer/", &[]).await;
    assert_eq!(index.status(), 200);
    let headers = index.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "no-cache");
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let html = index.text().await.unwrap();
    assert!(
        html.contains(r#"<script type="module" src="js/main.js">"#),
        "{html}"
    );
    assert!(!html.contains("<script>"), "no inline script");

    // Revalidation: 304 while the binary is the same.
    let again = raw_get(&s, "/_explorer/", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);

    let module = raw_get(&s, "/_explorer/js/api.js", &[]).await;
    assert_eq!(module.status(), 200);
    assert_eq!(
        module.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_ne!(module.headers()["etag"].to_str().unwrap(), etag);
    let css = raw_get(&s, "/_explorer/explorer.css", &[]).await;
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");

    // /_explorer redirects to the index (relative module URLs need the slash).
    let root = raw_get(&s, "/_explorer", &[]).await;
    assert_eq!(root.status(), 308);
    assert_eq!(root.headers()["location"], "/_explorer/");

    // Nothing else is served: no file outside the embedded set, no other method.
    for path in [
        "/_explorer/nope.js",
        "/_explorer/Cargo.toml",
        "/_explorer/js/",
    ] {
        assert_eq!(raw_get(&s, path, &[]).await.status(), 404, "{path}");
    }
    let post = reqwest::Client::new()
        .post(format!("{}/_explorer/", s.origin))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 405);
    assert_eq!(post.headers()["allow"], "GET, HEAD");

    // config.json names the first account and whether requests are signed; no key.
    let config = raw_get(&s, "/_explorer/config.json", &[]).await;
    let config: Value = serde_json::from_str(&config.text().await.unwrap()).unwrap();
    assert_eq!(config["account"], "devstoreaccount1");
    assert_eq!(config["auth"], "required");
    assert!(!config.to_string().contains("Eby8"), "{config}");
}

#[tokio::test]
async fn turned_off_the_path_is_an_unknown_account() {
    let s = TestServer::start_with(ServerConfig {
        explorer: false,
        ..ServerConfig::default()
    })
    .await;
    let r = raw_get(&s, "/_explorer/", &[]).await;
    assert_ne!(r.status(), 200);
    assert!(r.headers().get("content-security-policy").is_none());
    assert_eq!(
        raw_get(&s, "/_explorer/js/main.js", &[])
            .await
            .status()
            .as_u16()
            / 100,
        4
    );
}

fn explain_headers(mode: &str) -> [(&'static str, &str); 2] {
    [("Accept", NOMETA), ("x-tableq-explain", mode)]
}

async fn seed(s: &TestServer) {
    s.create_table("people").await;
    for pk in ["a", "b"] {
        for rk in 0..10 {
            s.insert(
                "people",
                &json!({"PartitionKey": pk, "RowKey": format!("{rk:02}"), "Age": rk}),
            )
            .await;
        }
    }
}

#[tokio::test]
async fn explain_gives_the_query_paths_plan_or_its_caret_diagnostic() {
    let s = TestServer::start().await;
    seed(&s).await;
    let path = query_path(
        "people",
        &[
            ("$filter", "PartitionKey eq 'a' and Age gt 3"),
            ("$top", "5"),
        ],
    );
    let r = s.send("GET", &path, &explain_headers("plan"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    let plan = r.json();
    assert_eq!(plan["valid"], true);
    assert_eq!(plan["shape"], "partition");
    assert_eq!(plan["exact"], false);
    assert_eq!(plan["residual"], "Age gt 3");
    assert_eq!(plan["top"], 5);
    assert_eq!(plan["ranges"][0]["partition_key"], "= 'a'");
    let engine = plan["engine"]["name"].as_str().unwrap_or_default();
    assert!(
        engine.starts_with("in-memory"),
        "the account key sees the engine: {plan}"
    );

    for (filter, shape) in [
        ("PartitionKey eq 'a' and RowKey eq '01'", "point"),
        (
            "(PartitionKey eq 'a' and RowKey eq '01') or (PartitionKey eq 'b' and RowKey eq '02')",
            "points",
        ),
        ("PartitionKey eq 'a' and PartitionKey eq 'b'", "empty"),
        ("PartitionKey ge 'a' and PartitionKey lt 'b'", "ranges"),
        ("Age gt 3", "full"),
    ] {
        let r = s
            .send(
                "GET",
                &query_path("people", &[("$filter", filter)]),
                &explain_headers("plan"),
                None,
            )
            .await;
        assert_eq!(r.json()["shape"], shape, "{filter}: {}", r.body);
    }

    // A typo: still 200 (the explain worked), with the CLI's caret diagnostic.
    let typo = query_path("people", &[("$filter", "Age gt 3 adn Age lt 9")]);
    let r = s.send("GET", &typo, &explain_headers("plan"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = &r.json()["diagnostic"];
    assert_eq!(r.json()["valid"], false);
    assert_eq!(d["option"], "$filter");
    assert_eq!(
        (d["start"].as_u64(), d["end"].as_u64()),
        (Some(9), Some(12))
    );
    assert!(
        d["expected"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "`and`"),
        "{d}"
    );
    assert!(d["rendered"].as_str().unwrap().contains("^^^"), "{d}");
    // The query itself is refused with the same diagnostic.
    let refused = s.send("GET", &typo, &[("Accept", NOMETA)], None).await;
    assert_eq!(refused.status, 400);

    // A missing table is 404 as for the query; a bad mode is a 400.
    let r = s
        .send("GET", "missing()", &explain_headers("plan"), None)
        .await;
    r.expect_error(404, "TableNotFound");
    let r = s
        .send("GET", "people()", &explain_headers("rows"), None)
        .await;
    r.expect_error(400, "InvalidHeaderValue");
}

#[tokio::test]
async fn analyze_adds_the_executors_statistics_to_an_ordinary_page() {
    let s = TestServer::start().await;
    seed(&s).await;
    let path = query_path(
        "people",
        &[
            ("$filter", "PartitionKey eq 'a' and Age gt 3"),
            ("$top", "2"),
        ],
    );
    let r = s
        .send("GET", &path, &explain_headers("analyze"), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let plain = s.send("GET", &path, &[("Accept", NOMETA)], None).await;
    assert_eq!(
        r.json(),
        plain.json(),
        "the same rows as without the header"
    );
    assert!(plain.header("x-tableq-stats").is_none());
    assert_eq!(
        r.header("x-ms-continuation-nextpartitionkey"),
        plain.header("x-ms-continuation-nextpartitionkey")
    );
    let stats: Value = serde_json::from_str(r.header("x-tableq-stats").unwrap()).unwrap();
    // Partition `a` read in key order until the page is full: 00…05, 00–03 filtered out.
    assert_eq!(stats["examined"], 6, "{stats}");
    assert_eq!(stats["matched"], 2, "{stats}");
    assert_eq!(stats["ranges"], 1, "{stats}");
    assert!(stats["ms"].as_f64().unwrap() >= 0.0);
}

#[tokio::test]
async fn explain_is_authorized_like_the_query() {
    let s = TestServer::start().await;
    seed(&s).await;
    let path = query_path("people", &[("$filter", "Age gt 3")]);
    // Unsigned: refused before anything is parsed.
    let r = s
        .send_unsigned("GET", &path, &explain_headers("plan"), None)
        .await;
    assert_eq!(r.status, 403, "{}", r.body);

    // A SAS for partition `b` only: its key range is joined to the plan; no engine details.
    let key = AccountKey::development();
    let token = SasBuilder::table("people")
        .permissions("r")
        .window_from_now(Some(-60), 3600)
        .start_key("b", None)
        .end_key("b", None)
        .sign(&key);
    let r = s
        .send_unsigned(
            "GET",
            &format!("{path}&{token}"),
            &explain_headers("plan"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let plan = r.json();
    assert_eq!(plan["restricted"], true);
    assert_eq!(plan["shape"], "partition", "{plan}");
    assert_eq!(plan["ranges"][0]["partition_key"], "= 'b'");
    assert_eq!(
        plan["engine"],
        Value::Null,
        "a SAS holder is not told about files"
    );

    // A SAS for another table: refused like the query.
    let other = SasBuilder::table("other")
        .permissions("r")
        .window_from_now(Some(-60), 3600)
        .sign(&key);
    let r = s
        .send_unsigned(
            "GET",
            &format!("{path}&{other}"),
            &explain_headers("plan"),
            None,
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
}

/// Runs `tableq serve --in-memory --port 0` with `extra` flags: returns its whole banner and
/// the status of `GET /_explorer/` while it ran (the server is stopped by its pid).
async fn serve_cli(extra: &[&str]) -> (String, u16) {
    use std::io::{BufRead, Read};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["serve", "--in-memory", "--port", "0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("authorization:") {
        assert_ne!(stdout.read_line(&mut banner).unwrap(), 0, "{banner}");
    }
    let origin = banner
        .split_whitespace()
        .find_map(|w| w.strip_suffix("/devstoreaccount1"))
        .expect("the endpoint")
        .to_owned();
    let status = reqwest::get(format!("{origin}/_explorer/"))
        .await
        .unwrap()
        .status()
        .as_u16();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    stdout.read_to_string(&mut banner).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    (banner.replace(&origin, "ORIGIN"), status)
}

#[tokio::test]
async fn the_banner_prints_the_explorer_url_unless_it_is_off() {
    let (banner, status) = serve_cli(&[]).await;
    assert!(
        banner.contains("explorer: ORIGIN/_explorer/ (browse, query and edit in a browser)\n"),
        "{banner}"
    );
    assert_eq!(status, 200);
    let (banner, status) = serve_cli(&["--no-explorer"]).await;
    assert!(!banner.contains("explorer"), "{banner}");
    assert_ne!(status, 200);
}
