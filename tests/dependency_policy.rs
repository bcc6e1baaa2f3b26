//! The arrows between the crates (the style guide's practice 7 and "a thin binary over
//! library crates"):
//!
//! * the query crates — tableq-model, -parser, -planner and -exec — do no I/O and are not
//!   async: none of them may depend, directly or through any chain of normal dependencies,
//!   on an async runtime, an HTTP crate or a storage engine;
//! * tableq-store (the storage engines) has no HTTP dependency;
//! * tableq-client (the REST client) depends on tableq-model alone among the workspace's
//!   crates, and on no storage engine: it speaks HTTP, nothing else;
//! * tableq-server (HTTP) names no storage engine: it holds `Arc<dyn Backend>` and leaves
//!   the choice to its callers (checked on its source, outside doc comments and tests);
//!   it may use tableq-client (the strings to sign, resource links).
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
    chains(meta, QUERY_CRATES, FORBIDDEN)
}

/// Packages of an HTTP stack (clients, servers, their types and middleware).
fn http_packages() -> Vec<(&'static str, &'static str)> {
    FORBIDDEN
        .iter()
        .copied()
        .filter(|(_, why)| why.contains("HTTP") || *why == "RPC")
        .collect()
}

/// Packages of storage engines and database clients.
fn storage_packages() -> Vec<(&'static str, &'static str)> {
    FORBIDDEN
        .iter()
        .copied()
        .filter(|(_, why)| *why == "storage engine" || *why == "database client")
        .collect()
}

/// Every chain from one of `roots` to a `forbidden` package, through normal dependencies
/// (any platform). Errors when the metadata lacks a root.
fn chains(meta: &Json, roots: &[&str], forbidden: &[(&str, &str)]) -> Result<Vec<String>, String> {
    let (names, graph) = graph(meta)?;
    let forbidden: BTreeMap<&str, &str> = forbidden.iter().copied().collect();
    let mut found = Vec::new();
    for krate in roots {
        let root = package_id(&names, krate)?;
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

/// Package id → name, and id → ids of its normal dependencies (any platform).
type Graph<'m> = (BTreeMap<&'m str, &'m str>, BTreeMap<&'m str, Vec<&'m str>>);

fn graph(meta: &Json) -> Result<Graph<'_>, String> {
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .ok_or("no packages in the metadata")?
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
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
    Ok((names, graph))
}

fn package_id<'m>(names: &BTreeMap<&'m str, &'m str>, krate: &str) -> Result<&'m str, String> {
    names
        .iter()
        .find(|(_, name)| **name == krate)
        .map(|(id, _)| *id)
        .ok_or_else(|| format!("{krate} is not in the workspace metadata"))
}

/// The workspace crates (`tableq*`) `krate` depends on directly (normal dependencies).
fn direct_workspace_dependencies(meta: &Json, krate: &str) -> Result<Vec<String>, String> {
    let (names, graph) = graph(meta)?;
    let root = package_id(&names, krate)?;
    let mut deps: Vec<String> = graph
        .get(root)
        .into_iter()
        .flatten()
        .filter_map(|id| names.get(id))
        .filter(|name| name.starts_with("tableq"))
        .map(|name| (*name).to_owned())
        .collect();
    deps.sort();
    Ok(deps)
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

#[test]
fn the_store_has_no_http_dependency() {
    let meta = metadata();
    let found =
        chains(&meta, &["tableq-store"], &http_packages()).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        found.is_empty(),
        "tableq-store must not depend on HTTP (that is tableq-server's and tableq-client's):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_client_depends_on_the_model_alone_and_on_no_engine() {
    let meta = metadata();
    assert_eq!(
        direct_workspace_dependencies(&meta, "tableq-client"),
        Ok(vec!["tableq-model".to_owned()])
    );
    let found =
        chains(&meta, &["tableq-client"], &storage_packages()).unwrap_or_else(|e| panic!("{e}"));
    assert!(found.is_empty(), "{}", found.join("\n  "));
    // The server may use the client (signing, links); never the other way round.
    let server = direct_workspace_dependencies(&meta, "tableq-server").unwrap();
    assert!(server.contains(&"tableq-client".to_owned()), "{server:?}");
    assert!(!server.contains(&"tableq".to_owned()), "{server:?}");
}

/// Names of storage engines that the server's code must not use.
const ENGINE_NAMES: &[&str] = &[
    "MemoryBackend",
    "MemoryTable",
    "DurableBackend",
    "DurableOptions",
    "PostgresBackend",
    "PostgresConfig",
    "tableq_store::memory",
    "tableq_store::durable",
    "tableq_store::postgres",
    "redb",
    "postgres::",
];

/// The lines of Rust source that are code: doc and line comments are left out, and so is
/// everything from a `#[cfg(test)]` line on (the test module ends each file).
fn code_lines(source: &str) -> impl Iterator<Item = (usize, &str)> {
    source
        .lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
}

fn engine_mentions(dir: &std::path::Path, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            engine_mentions(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path).unwrap_or_default();
            for (line, text) in code_lines(&source) {
                for name in ENGINE_NAMES {
                    if text.contains(name) {
                        found.push(format!("{}:{line}: {name}", path.display()));
                    }
                }
            }
        }
    }
}

#[test]
fn the_server_names_no_storage_engine() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("server/src");
    assert!(
        src.join("lib.rs").is_file(),
        "{} is not the server's source",
        src.display()
    );
    let mut found = Vec::new();
    engine_mentions(&src, &mut found);
    assert!(
        found.is_empty(),
        "tableq-server holds `Arc<dyn Backend>` and names no engine (its callers choose):\n  {}",
        found.join("\n  ")
    );
    // The scan itself sees a name in code, and not in comments or tests.
    let sample = "use x;\n/// MemoryBackend in a doc\nlet b = DurableBackend::open();\n#[cfg(test)]\nMemoryBackend";
    let hits: Vec<usize> = code_lines(sample)
        .filter(|(_, l)| ENGINE_NAMES.iter().any(|n| l.contains(n)))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits, [3]);
}

use crate::module_graph;

/// The source roots of every crate of the workspace: `(crate directory, its roots)`.
fn crate_roots() -> Vec<(std::path::PathBuf, Vec<std::path::PathBuf>)> {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![workspace.to_path_buf()];
    for member in [
        "model", "parser", "planner", "exec", "store", "client", "server",
    ] {
        crates.push(workspace.join(member));
    }
    crates
        .into_iter()
        .map(|dir| {
            let src = dir.join("src");
            let mut roots: Vec<_> = ["lib.rs", "main.rs"]
                .iter()
                .map(|f| src.join(f))
                .filter(|p| p.exists())
                .collect();
            if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
                let mut bins: Vec<_> = bins.flatten().map(|e| e.path()).collect();
                bins.sort();
                roots.extend(
                    bins.into_iter()
                        .filter(|p| p.extension().is_some_and(|e| e == "rs")),
                );
            }
            (dir, roots)
        })
        .collect()
}

/// The style guide's "no two modules import each other": in every crate, the arrows between
/// module files (see `module_graph`) form no circle, however long.
#[test]
fn no_module_imports_itself_through_a_circle() {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    let mut files = 0;
    for (dir, roots) in crate_roots() {
        assert!(!roots.is_empty(), "{} has no crate root", dir.display());
        let graph = module_graph::crate_graph(&roots).unwrap_or_else(|e| panic!("{e}"));
        files += graph.arrows.len();
        let name =
            |p: &std::path::PathBuf| p.strip_prefix(workspace).unwrap_or(p).display().to_string();
        for circle in module_graph::circles(&graph) {
            // The arrows inside the circle, so the report says which import to cut.
            let arrows: Vec<String> = circle
                .iter()
                .flat_map(|from| {
                    graph.arrows[from]
                        .iter()
                        .filter(|to| circle.contains(to))
                        .map(move |to| format!("{} → {}", name(from), name(to)))
                })
                .collect();
            report.push(format!(
                "{} modules: {}\n    {}",
                circle.len(),
                circle.iter().map(name).collect::<Vec<_>>().join(", "),
                arrows.join("\n    ")
            ));
        }
    }
    assert!(
        files > 100,
        "only {files} module files found: the walk is broken"
    );
    assert!(
        report.is_empty(),
        "{} import circle(s) between modules:\n  {}",
        report.len(),
        report.join("\n  ")
    );
}

/// The walk itself: a circle made on purpose is found; a child importing its parent's item
/// while the parent re-exports the child's is not one (re-exports resolve to definitions);
/// an arrow from test code does not count.
#[test]
fn the_circle_finder_finds_a_made_circle_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("tableq-module-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\npub struct Root;\n#[cfg(test)]\nmod tests { use crate::d::Z; }\n",
    );
    write(
        "a/mod.rs",
        "mod inner;\npub use inner::Thing;\npub struct Home;\n",
    );
    write("a/inner.rs", "use super::Home;\npub struct Thing(Home);\n");
    write("b.rs", "pub struct X;\nfn f() -> crate::c::Y { todo!() }\n");
    write("c.rs", "pub struct Y;\npub fn g(_: super::b::X) {}\n");
    write("d.rs", "pub struct Z;\nfn h(_: crate::Root) {}\n");
    let graph = module_graph::crate_graph(&[dir.join("lib.rs")]).unwrap();
    let circles = module_graph::circles(&graph);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(circles, vec![vec![dir.join("b.rs"), dir.join("c.rs")]]);
    assert!(graph.arrows[&dir.join("a/inner.rs")].contains(&dir.join("a/mod.rs")));
    assert!(graph.arrows[&dir.join("d.rs")].contains(&dir.join("lib.rs")));
}
