//! The conformance corpus (`tests/conformance/`, format in its README) run over HTTP: one
//! more engine, next to the naive evaluator, the executor and `tableq eval`
//! (`tests/conformance.rs`).
//!
//! Every set is loaded into its own table of an in-process `tableq-server` (one server per
//! comparison limit the cases use), over the in-memory store, the durable store and the
//! PostgreSQL store (skipped, with a `SKIPPED` message, where PostgreSQL is not installed), with `PUT` (insert or replace: a later line with the
//! same keys wins, as in `tableq eval`). Each case is a `GET /{table}()` with its
//! `$filter`/`$select`/`$top`, following continuation headers like the executor test does;
//! the keys, and with `$select` the rows (minus `odata.*` members, and for `$select=*`
//! minus the Timestamp the server assigned), must be the expected ones. Error cases must
//! answer 400 `InvalidInput`, name the option that failed, point at the expected byte
//! offset, and contain every `message:` of the case.
//!
//! Cases whose outcome depends on *stored* Timestamps (a `$filter` or `$select` that names
//! `Timestamp`) cannot run over HTTP, where the server assigns every Timestamp and ignores
//! the one in the payload; they are counted and reported, and their number is pinned so
//! that no other case can be skipped silently.

use crate::corpus;
use crate::pg;
use crate::server_support;

use corpus::{Case, Expect, Limit};
use serde_json::Value;
use server_support::SendSigned;
use std::collections::BTreeMap;
use std::sync::Arc;
use tableq::parser::FilterOptions;
use tableq_server::{Server, ServerConfig};
use tableq_store::postgres::PostgresBackend;
use tableq_store::{Backend, DurableBackend, MemoryBackend};

/// Cases that name `Timestamp` in a filter or select of a data case (see the module docs).
const TIMESTAMP_CASES: usize = 10;
/// Cases whose URL would be longer than an HTTP URI may be (64 KiB: the `http` crate's
/// limit, which both the client and the server use; a 32 KiB filter of non-ASCII text
/// percent-encodes to up to 96 KiB). The parser tests run them.
const LONG_URL_CASES: usize = 1;
/// The longest URI the `http` crate accepts.
const MAX_URI: usize = 65_534;

/// Every byte but unreserved characters percent-encoded.
fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn table_of(set: &str) -> String {
    format!(
        "set{}",
        set.replace(|c: char| !c.is_ascii_alphanumeric(), "")
    )
}

struct Engine {
    base: String,
    client: reqwest::Client,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), tableq_server::ServerError>>,
}

impl Engine {
    /// A server over `backend` with this comparison limit, every set loaded.
    async fn start(limit: Limit, backend: Arc<dyn Backend>) -> Engine {
        let filter_options = match limit {
            Limit::Default => FilterOptions::default(),
            Limit::Unlimited => FilterOptions::unlimited(),
            Limit::Max(n) => FilterOptions {
                max_comparisons: Some(n),
                ..FilterOptions::default()
            },
        };
        let config = ServerConfig {
            filter_options,
            ..ServerConfig::default()
        };
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), backend, config)
            .await
            .unwrap();
        let base = server.table_endpoint();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run_until(async move {
            let _ = stopped.await;
        }));
        let engine = Engine {
            base,
            client: reqwest::Client::new(),
            stop,
            task,
        };
        for (set, lines) in corpus::sets() {
            let table = table_of(&set);
            let r = engine
                .client
                .post(format!("{}/Tables", engine.base))
                .header("Content-Type", "application/json")
                .body(format!(r#"{{"TableName":"{table}"}}"#))
                .send_signed()
                .await
                .unwrap();
            assert_eq!(r.status(), 201, "create {table}");
            for (n, line) in lines {
                let entity: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("sets/{set}.jsonl:{n}: {e}"));
                let key = |k: &str| encode(&entity[k].as_str().unwrap().replace('\'', "''"));
                let url = format!(
                    "{}/{table}(PartitionKey='{}',RowKey='{}')",
                    engine.base,
                    key("PartitionKey"),
                    key("RowKey")
                );
                let r = engine
                    .client
                    .put(url)
                    .header("Content-Type", "application/json")
                    .body(line.clone())
                    .send_signed()
                    .await
                    .unwrap();
                let status = r.status();
                let body = r.text().await.unwrap();
                assert_eq!(status, 204, "sets/{set}.jsonl:{n}: {body}");
            }
        }
        engine
    }

    /// Stops the server (which closes and releases its store on the blocking pool).
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().expect("clean shutdown");
    }

    /// The query URL of a case.
    fn url(&self, case: &Case, with_select: bool, next: Option<&(String, String)>) -> String {
        let mut params = Vec::new();
        if let Some(f) = &case.filter {
            params.push(format!("$filter={}", encode(f)));
        }
        if let Some(s) = case.select.as_ref().filter(|_| with_select) {
            params.push(format!("$select={}", encode(s)));
        }
        if let Some(t) = &case.top {
            params.push(format!("$top={}", encode(t)));
        }
        if let Some((pk, rk)) = next {
            params.push(format!("NextPartitionKey={}", encode(pk)));
            params.push(format!("NextRowKey={}", encode(rk)));
        }
        format!(
            "{}/{}()?{}",
            self.base,
            table_of(&case.set),
            params.join("&")
        )
    }

    /// One page: status, continuation (raw header values), body.
    async fn page(
        &self,
        case: &Case,
        with_select: bool,
        next: Option<&(String, String)>,
    ) -> (u16, Option<(String, String)>, String) {
        let url = self.url(case, with_select, next);
        let r = self
            .client
            .get(url)
            .header("Accept", "application/json;odata=minimalmetadata")
            .send_signed()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let header = |name: &str| {
            r.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let next = match (
            header("x-ms-continuation-nextpartitionkey"),
            header("x-ms-continuation-nextrowkey"),
        ) {
            (Some(pk), Some(rk)) => Some((pk, rk)),
            _ => None,
        };
        (status, next, r.text().await.unwrap())
    }

    /// Checks one case; `None` when it conforms.
    async fn check(&self, case: &Case) -> Option<String> {
        match &case.expect {
            Expect::Error {
                kinds,
                at,
                messages,
            } => {
                let (status, _, body) = self.page(case, true, None).await;
                let json: Value = match serde_json::from_str(&body) {
                    Ok(v) => v,
                    Err(_) => return Some(format!("status {status}, body {body:?}")),
                };
                let code = json["odata.error"]["code"].as_str().unwrap_or("");
                let message = json["odata.error"]["message"]["value"]
                    .as_str()
                    .unwrap_or("");
                let mut problems = Vec::new();
                if (status, code) != (400, "InvalidInput") {
                    problems.push(format!("status {status} {code}, expected 400 InvalidInput"));
                }
                let mut lines = message.lines();
                if lines.next() != Some("One of the request inputs is not valid.") {
                    problems.push(format!("first line of {message:?}"));
                }
                let diagnostic = lines.next().unwrap_or("");
                let option = match kinds.first().map(String::as_str) {
                    Some("select") => "$select: ",
                    Some("top") => "$top: ",
                    _ => "$filter: ",
                };
                if !diagnostic.starts_with(option) {
                    problems.push(format!(
                        "diagnostic {diagnostic:?} does not start with {option:?}"
                    ));
                }
                if let Some((start, end)) = at {
                    let offset = diagnostic
                        .split(" at byte ")
                        .nth(1)
                        .and_then(|r| r.split(' ').next())
                        .and_then(|n| n.parse::<usize>().ok());
                    if !offset.is_some_and(|o| (*start..*end).contains(&o)) {
                        problems.push(format!(
                            "error at byte {offset:?}, expected {start}..{end}: {diagnostic}"
                        ));
                    }
                }
                for m in messages {
                    if !message.contains(m.as_str()) {
                        problems.push(format!("message lacks {m:?}: {message}"));
                    }
                }
                (!problems.is_empty()).then(|| problems.join("; "))
            }
            Expect::Matches { keys, rows } => {
                // Keys from a run without $select; rows from a run with it.
                let all = match self.run(case, false).await {
                    Ok(rows) => rows,
                    Err(e) => return Some(e),
                };
                let got_keys: Vec<(String, String)> = all
                    .iter()
                    .map(|e| {
                        (
                            e["PartitionKey"].as_str().unwrap_or("?").to_owned(),
                            e["RowKey"].as_str().unwrap_or("?").to_owned(),
                        )
                    })
                    .collect();
                if got_keys != *keys {
                    return Some(format!("got {}, expected {}", show(&got_keys), show(keys)));
                }
                case.select.as_ref()?;
                let projected = match self.run(case, true).await {
                    Ok(rows) => rows,
                    Err(e) => return Some(format!("with $select: {e}")),
                };
                // `*` selects the server-assigned Timestamp too, which the set's lines lack.
                let stripped: Vec<Value> = projected
                    .iter()
                    .map(|row| {
                        let mut m = row.as_object().cloned().unwrap_or_default();
                        let star = case.select.as_deref().map(str::trim) == Some("*");
                        m.retain(|k, _| {
                            !(k.starts_with("odata.") || star && k.starts_with("Timestamp"))
                        });
                        Value::Object(m)
                    })
                    .collect();
                if stripped.len() != keys.len() {
                    return Some(format!(
                        "with $select: {} rows, expected {}",
                        stripped.len(),
                        keys.len()
                    ));
                }
                (!rows.is_empty() && stripped != *rows)
                    .then(|| format!("rows {stripped:?}, expected {rows:?}"))
            }
        }
    }

    /// Every result of a data case, following continuations until the end or `$top`.
    async fn run(&self, case: &Case, with_select: bool) -> Result<Vec<Value>, String> {
        let top = case
            .top
            .as_deref()
            .and_then(|t| t.trim().parse::<usize>().ok());
        let mut got: Vec<Value> = Vec::new();
        let mut next = None;
        loop {
            let (status, after, body) = self.page(case, with_select, next.as_ref()).await;
            if status != 200 {
                return Err(format!("status {status}: {body}"));
            }
            let json: Value = serde_json::from_str(&body)
                .map_err(|e| format!("body is not JSON ({e}): {body}"))?;
            got.extend(json["value"].as_array().cloned().unwrap_or_default());
            next = after;
            if next.is_none() || top.is_some_and(|t| got.len() >= t) || got.len() > 100_000 {
                return Ok(got);
            }
        }
    }
}

fn show(keys: &[(String, String)]) -> String {
    if keys.is_empty() {
        return "none".into();
    }
    keys.iter()
        .map(|(p, r)| format!("{}/{}", p.escape_debug(), r.escape_debug()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn depends_on_stored_timestamps(case: &Case) -> bool {
    matches!(case.expect, Expect::Matches { .. })
        && [&case.filter, &case.select]
            .into_iter()
            .flatten()
            .any(|t| t.contains("Timestamp"))
}

/// Runs the corpus against servers over the stores `open` makes (one per comparison limit).
async fn conforms<F, Fut>(engine_name: &str, mut open: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Arc<dyn Backend>>,
{
    let cases = corpus::cases();
    let mut engines: BTreeMap<String, Engine> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut too_long = Vec::new();
    for case in &cases {
        if depends_on_stored_timestamps(case) {
            skipped.push(case.name.clone());
            continue;
        }
        let key = format!("{:?}", case.limit);
        if !engines.contains_key(&key) {
            engines.insert(key.clone(), Engine::start(case.limit, open().await).await);
        }
        let engine = &engines[&key];
        if engine.url(case, true, None).len() > MAX_URI {
            too_long.push(case.name.clone());
            continue;
        }
        if let Some(problem) = engine.check(case).await {
            failures.push(format!("  {}\n      {problem}", case.describe()));
        }
    }
    for (_, engine) in engines {
        engine.stop().await;
    }
    assert!(
        failures.is_empty(),
        "{engine_name}: {} of {} conformance cases fail:\n{}",
        failures.len(),
        cases.len() - skipped.len() - too_long.len(),
        failures.join("\n")
    );
    assert_eq!(
        too_long.len(),
        LONG_URL_CASES,
        "cases skipped for URLs over {MAX_URI} bytes: {too_long:?}"
    );
    assert_eq!(
        skipped.len(),
        TIMESTAMP_CASES,
        "cases skipped for depending on stored Timestamps: {skipped:?}"
    );
    eprintln!(
        "{engine_name}: {} cases conform; skipped: {} that filter or select on stored \
         Timestamps (the server assigns its own): {}; {} whose URL is over {MAX_URI} bytes: {}",
        cases.len() - skipped.len() - too_long.len(),
        skipped.len(),
        skipped.join(", "),
        too_long.len(),
        too_long.join(", ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_conforms() {
    conforms("HTTP server (in-memory store)", || async {
        Arc::new(MemoryBackend::new()) as Arc<dyn Backend>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_on_postgres_conforms() {
    if pg::server_url("http_server_on_postgres_conforms").is_none() {
        return;
    }
    conforms("HTTP server (PostgreSQL store)", || async {
        let url = pg::server_url("http_server_on_postgres_conforms").expect("a server");
        // The engine's client blocks on its own runtime: open it off the async workers.
        let backend = tokio::task::spawn_blocking(move || PostgresBackend::open(&url))
            .await
            .unwrap()
            .expect("open the PostgreSQL store");
        Arc::new(backend) as Arc<dyn Backend>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_on_the_durable_store_conforms() {
    let root = std::env::temp_dir().join(format!("tableq-conformance-http-{}", std::process::id()));
    let mut n = 0;
    conforms("HTTP server (durable store)", || {
        n += 1;
        let dir = root.join(n.to_string());
        async move {
            let backend = tokio::task::spawn_blocking(move || DurableBackend::open(&dir))
                .await
                .unwrap()
                .expect("open the durable store");
            Arc::new(backend) as Arc<dyn Backend>
        }
    })
    .await;
    let _ = std::fs::remove_dir_all(&root);
}
