//! The query crates — tableq-model, -parser, -planner and -exec — do no I/O and are not
//! async (the style guide's practice 7): none of them may depend, directly or through any
//! chain of normal dependencies, on an async runtime, an HTTP crate or a storage engine.
//! Storage engines belong to tableq-store, HTTP to tableq-server.
//!
//! The test reads the resolved dependency graph from `cargo metadata` (offline first, so it
//! passes without a network when the registry cache is warm; online only if that fails) and
//! walks the normal dependencies of each query crate on every platform (dev-dependencies
//! are not shipped and are not checked). A violation names the whole chain, e.g.
//! `tableq-exec → foo → tokio (async runtime)`. Plain future combinators (`futures-util`,
//! reached through `uuid → js-sys` on wasm) are not on the list: they do no I/O and run
//! nothing by themselves; executors and runtimes are.

use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::process::Command;

/// The crates that must stay free of I/O and async.
const QUERY_CRATES: &[&str] = &[
    "tableq-model",
    "tableq-parser",
    "tableq-planner",
    "tableq-exec",
];

/// Packages the query crates must not reach, and why.
const FORBIDDEN: &[(&str, &str)] = &[
    // Async runtimes and async plumbing.
    ("tokio", "async runtime"),
    ("tokio-util", "async runtime"),
    ("async-std", "async runtime"),
    ("smol", "async runtime"),
    ("async-executor", "async runtime"),
    ("async-io", "async runtime"),
    ("mio", "async I/O"),
    ("futures-executor", "async runtime"),
    // HTTP clients, servers and their types.
    ("http", "HTTP"),
    ("http-body", "HTTP"),
    ("h2", "HTTP"),
    ("hyper", "HTTP"),
    ("hyper-util", "HTTP"),
    ("axum", "HTTP server"),
    ("actix-web", "HTTP server"),
    ("warp", "HTTP server"),
    ("rocket", "HTTP server"),
    ("tiny_http", "HTTP server"),
    ("tower", "HTTP middleware"),
    ("tower-http", "HTTP middleware"),
    ("tonic", "RPC"),
    ("reqwest", "HTTP client"),
    ("ureq", "HTTP client"),
    ("isahc", "HTTP client"),
    ("curl", "HTTP client"),
    ("surf", "HTTP client"),
    ("attohttpc", "HTTP client"),
    ("minreq", "HTTP client"),
    // Storage engines and database clients.
    ("redb", "storage engine"),
    ("sled", "storage engine"),
    ("rocksdb", "storage engine"),
    ("librocksdb-sys", "storage engine"),
    ("lmdb", "storage engine"),
    ("lmdb-rkv", "storage engine"),
    ("heed", "storage engine"),
    ("fjall", "storage engine"),
    ("rusqlite", "storage engine"),
    ("libsqlite3-sys", "storage engine"),
    ("duckdb", "storage engine"),
    ("sqlx", "database client"),
    ("postgres", "database client"),
    ("tokio-postgres", "database client"),
    ("diesel", "database client"),
    ("mysql", "database client"),
    ("redis", "database client"),
    ("mongodb", "database client"),
];

/// `cargo metadata` of this workspace, offline if the cache allows.
fn metadata() -> Json {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let run = |offline: bool| -> Result<Json, String> {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "metadata",
            "--format-version",
            "1",
            "--manifest-path",
            manifest,
        ]);
        if offline {
            cmd.arg("--offline");
        }
        let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("bad cargo metadata JSON: {e}"))
    };
    run(true)
        .or_else(|offline| {
            run(false).map_err(|online| format!("offline: {offline}\nonline: {online}"))
        })
        .unwrap_or_else(|e| panic!("`cargo metadata` failed:\n{e}"))
}

/// Every chain from a query crate to a forbidden package, through normal dependencies.
/// Errors when the metadata lacks a query crate (the check would pass vacuously).
fn violations(meta: &Json) -> Result<Vec<String>, String> {
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .ok_or("no packages in the metadata")?
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    // id -> ids of its normal dependencies (any platform).
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"]
        .as_array()
        .ok_or("no resolved dependency graph in the metadata")?
    {
        let Some(id) = node["id"].as_str() else {
            continue;
        };
        let normal = node["deps"].as_array().into_iter().flatten().filter(|d| {
            d["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null())
        });
        graph.insert(id, normal.filter_map(|d| d["pkg"].as_str()).collect());
    }
    let forbidden: BTreeMap<&str, &str> = FORBIDDEN.iter().copied().collect();
    let mut found = Vec::new();
    for krate in QUERY_CRATES {
        let root = names
            .iter()
            .find(|(_, name)| *name == krate)
            .map(|(id, _)| *id)
            .ok_or_else(|| format!("{krate} is not in the workspace metadata"))?;
        // Breadth-first, remembering how each package was reached.
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut seen: BTreeSet<&str> = BTreeSet::from([root]);
        let mut queue = VecDeque::from([root]);
        while let Some(id) = queue.pop_front() {
            for &dep in graph.get(id).into_iter().flatten() {
                if !seen.insert(dep) {
                    continue;
                }
                parent.insert(dep, id);
                queue.push_back(dep);
                let name = names.get(dep).copied().unwrap_or(dep);
                if let Some(why) = forbidden.get(name) {
                    let mut chain = vec![name];
                    let mut at = id;
                    while let Some(&up) = parent.get(at) {
                        chain.push(names.get(at).copied().unwrap_or(at));
                        at = up;
                    }
                    chain.push(krate);
                    chain.reverse();
                    found.push(format!("{} ({why})", chain.join(" → ")));
                }
            }
        }
    }
    Ok(found)
}

#[test]
fn query_crates_have_no_io_async_or_storage_dependencies() {
    let meta = metadata();
    let found = violations(&meta).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        found.is_empty(),
        "query crates must not depend on async runtimes, HTTP or storage engines \
         (they belong to tableq-store / tableq-server):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn a_forbidden_package_deep_in_the_graph_is_reported_with_its_chain() {
    let pkg = |name: &str| serde_json::json!({"id": format!("{name}-id"), "name": name});
    let dep = |name: &str, kind: Option<&str>| serde_json::json!({"pkg": format!("{name}-id"), "dep_kinds": [{"kind": kind, "target": null}]});
    let node =
        |name: &str, deps: Vec<Json>| serde_json::json!({"id": format!("{name}-id"), "deps": deps});
    let meta = serde_json::json!({
        "packages": [pkg("tableq-model"), pkg("tableq-parser"), pkg("tableq-planner"), pkg("tableq-exec"),
                     pkg("rayon"), pkg("helper"), pkg("tokio"), pkg("redb")],
        "resolve": {"nodes": [
            node("tableq-model", vec![]),
            node("tableq-parser", vec![dep("tableq-model", None)]),
            node("tableq-planner", vec![dep("tableq-parser", None), dep("redb", Some("dev"))]),
            node("tableq-exec", vec![dep("tableq-planner", None), dep("rayon", None)]),
            node("rayon", vec![dep("helper", None)]),
            node("helper", vec![dep("tokio", None)]),
            node("tokio", vec![]),
            node("redb", vec![]),
        ]},
    });
    // The dev-dependency on redb is allowed; tokio three hops down is not.
    assert_eq!(
        violations(&meta),
        Ok(vec![
            "tableq-exec → rayon → helper → tokio (async runtime)".to_owned()
        ])
    );
    let incomplete =
        serde_json::json!({"packages": [pkg("tableq-model")], "resolve": {"nodes": []}});
    assert!(violations(&incomplete).is_err());
}
