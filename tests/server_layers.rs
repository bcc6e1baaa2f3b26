//! The server's layers, as its crate docs write them down (`server/src/lib.rs`, "Layers"),
//! against its imports: every module file belongs to exactly one layer, and every arrow of
//! the module graph (`module_graph`: a `use` or path naming another file's item) runs from
//! a layer to the same layer or a lower one. No import circle inside a layer is the
//! business of `dependency_policy`'s circle test.

use crate::module_graph;

use std::path::{Path, PathBuf};

/// The layers bottom-up: a name and the files under `server/src/` it holds (a directory
/// `x/` holds every file below it). The crate docs list the same, in the same order.
const LAYERS: &[(&str, &str)] = &[
    ("state", "state/"),
    ("protocol", "protocol/"),
    ("auth", "auth/"),
    ("ops", "ops/"),
    ("routing", "app.rs"),
    ("serve", "serve/"),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("server/src")
}

/// `file`'s path under `server/src/`, with `/` separators.
fn relative(file: &Path) -> String {
    file.strip_prefix(src())
        .unwrap_or(file)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The layer (index into [`LAYERS`]) of a file under `server/src/`; `None` for `lib.rs`.
fn layer_of(file: &str) -> Option<usize> {
    if file == "lib.rs" {
        return None;
    }
    let found: Vec<usize> = LAYERS
        .iter()
        .enumerate()
        .filter(|(_, (_, home))| match home.strip_suffix('/') {
            Some(_) => file.starts_with(home),
            None => file == *home,
        })
        .map(|(i, _)| i)
        .collect();
    match found.as_slice() {
        [one] => Some(*one),
        [] => panic!(
            "{file} is in no layer of the list: give it a home in LAYERS and in the crate docs"
        ),
        _ => panic!("{file} is in more than one layer"),
    }
}

/// `lib.rs` is the crate's face: module declarations and re-exports only, so that no path
/// into it names an item of its own. (The graph counts `pub(crate)` as a path naming the
/// crate root, so arrows into `lib.rs` are visibilities, not imports, and are skipped.)
#[test]
fn lib_rs_declares_and_re_exports_only() {
    let text = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let file = syn::parse_file(&text).unwrap();
    for item in &file.items {
        let ok = match item {
            syn::Item::Mod(m) => m.content.is_none(),
            syn::Item::Use(u) => !matches!(u.vis, syn::Visibility::Inherited),
            _ => false,
        };
        assert!(
            ok,
            "server/src/lib.rs holds more than module declarations and re-exports: {}",
            quote_item(item)
        );
    }
}

fn quote_item(item: &syn::Item) -> String {
    match item {
        syn::Item::Fn(f) => format!("fn {}", f.sig.ident),
        syn::Item::Struct(s) => format!("struct {}", s.ident),
        syn::Item::Enum(e) => format!("enum {}", e.ident),
        syn::Item::Const(c) => format!("const {}", c.ident),
        syn::Item::Static(s) => format!("static {}", s.ident),
        syn::Item::Use(_) => "a private `use`".into(),
        syn::Item::Mod(m) => format!("an inline `mod {}`", m.ident),
        _ => "an item".into(),
    }
}

/// Every arrow goes down (or stays in its layer); `lib.rs` imports nothing.
#[test]
fn every_server_import_goes_to_its_own_layer_or_a_lower_one() {
    let graph =
        module_graph::crate_graph(&[src().join("lib.rs")]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        graph.arrows.len() > 30,
        "only {} server files found",
        graph.arrows.len()
    );
    let mut upward = Vec::new();
    for (from, targets) in &graph.arrows {
        let from_name = relative(from);
        let from_layer = layer_of(&from_name);
        for to in targets {
            let to_name = relative(to);
            match (from_layer, layer_of(&to_name)) {
                (None, _) => {
                    upward.push(format!("{from_name} → {to_name} (lib.rs imports nothing)"))
                }
                (Some(_), None) => {} // `pub(crate)`: see lib_rs_declares_and_re_exports_only
                (Some(f), Some(t)) if t > f => upward.push(format!(
                    "{from_name} ({}) → {to_name} ({})",
                    LAYERS[f].0, LAYERS[t].0
                )),
                _ => {}
            }
        }
    }
    assert!(
        upward.is_empty(),
        "{} import(s) run up the server's layers (bottom-up: {}):\n  {}",
        upward.len(),
        LAYERS.iter().map(|l| l.0).collect::<Vec<_>>().join(" → "),
        upward.join("\n  ")
    );
}

/// The layer list of the crate docs is this test's: rows `| n | \`home\` | …` in order.
#[test]
fn the_crate_docs_list_the_same_layers() {
    let text = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let written: Vec<(String, String)> = text
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .strip_prefix("//! |")?
                .split('|')
                .map(str::trim)
                .collect();
            let _: usize = cells.first()?.parse().ok()?;
            let name = cells.get(1)?.to_string();
            let home = cells.get(2)?.split('`').nth(1)?.to_owned();
            Some((name, home))
        })
        .collect();
    let expected: Vec<(String, String)> = LAYERS
        .iter()
        .map(|(name, home)| (format!("**{name}**"), (*home).to_owned()))
        .collect();
    assert_eq!(
        written, expected,
        "the layers in server/src/lib.rs's docs drifted from this test's list"
    );
}
