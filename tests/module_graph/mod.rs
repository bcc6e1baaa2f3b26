//! The arrows between modules inside each crate: the graph the "no module circles" rule is
//! checked on.
//!
//! A *module* here is one source file (`a.rs` or `a/mod.rs`), found by following `mod x;`
//! declarations from each crate root (`lib.rs`, `main.rs`, `bin/*.rs`). An *arrow* runs
//! from a file to the file a path names: every `use` (groups and globs expanded) and every
//! path in code that starts with `crate::`, `super::`, `self::` or a child module's name.
//! A path resolves to the deepest file module it names, and through re-exports to the module
//! that defines the item: `crate::auth::Hosted` points at `auth/registry.rs` when
//! `auth/mod.rs` only says `pub use registry::Hosted`, and at `auth/mod.rs` when `Hosted` is
//! defined there. A re-export (`pub use`, `pub(crate) use`) is a module's face, not an arrow
//! of its own, and a `mod x;` declaration is not an arrow either (a parent owns its children
//! without depending on them). Paths inside `#[cfg(test)]` items are not arrows (test code
//! may look anywhere).
//!
//! A *circle* is a strongly connected component of two or more files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One crate's module files and the arrows between them.
#[derive(Debug, Default)]
pub struct Graph {
    /// File → the files it imports.
    pub arrows: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

/// The module graph of the crate whose roots are `roots` (files in the same `src/`).
pub fn crate_graph(roots: &[PathBuf]) -> Result<Graph, String> {
    let mut graph = Graph::default();
    let mut parsed: Vec<(Vec<String>, PathBuf, syn::File)> = Vec::new();
    for root in roots {
        // Each root is its own crate namespace; `main.rs` and `lib.rs` sharing `src/` do not
        // share modules (the binary reaches the library through its name, not `crate::`).
        let mut modules: BTreeMap<Vec<String>, PathBuf> = BTreeMap::new();
        let mut stack = vec![(Vec::<String>::new(), root.clone())];
        while let Some((path, file)) = stack.pop() {
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            for child in declared_children(&ast.items) {
                let dir = module_dir(&file, path.is_empty());
                let flat = dir.join(format!("{}.rs", child.name));
                let nested = dir.join(&child.name).join("mod.rs");
                let target = match child.path_attr {
                    Some(p) => file.parent().unwrap_or(Path::new(".")).join(p),
                    None if flat.exists() => flat,
                    None if nested.exists() => nested,
                    None => {
                        return Err(format!(
                            "{}: `mod {};` has no file",
                            file.display(),
                            child.name
                        ));
                    }
                };
                if child.is_test {
                    continue;
                }
                let mut child_path = path.clone();
                child_path.push(child.name.clone());
                stack.push((child_path, target));
            }
            modules.insert(path.clone(), file.clone());
            parsed.push((path, file, ast));
        }
        let faces: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = parsed
            .iter()
            .map(|(path, _, ast)| (path.clone(), re_exports(path, ast)))
            .collect();
        for (path, file, ast) in parsed.drain(..) {
            let mut collector = Collector {
                here: path.clone(),
                children: declared_children(&ast.items)
                    .into_iter()
                    .map(|c| c.name)
                    .collect(),
                scope: Vec::new(),
                paths: Vec::new(),
            };
            collector.visit_file(&ast);
            let mut targets = BTreeSet::new();
            for named in collector.paths {
                if let Some(target) = resolve(&modules, &faces, named)
                    && *target != file
                {
                    targets.insert(target.clone());
                }
            }
            graph.arrows.insert(file, targets);
        }
    }
    Ok(graph)
}

/// A module's re-exports (non-private `use`): exported name → the absolute path it names.
fn re_exports(here: &[String], file: &syn::File) -> BTreeMap<String, Vec<String>> {
    fn walk(
        prefix: &mut Vec<String>,
        tree: &syn::UseTree,
        out: &mut BTreeMap<String, Vec<String>>,
    ) {
        let mut leaf = |name: String, alias: String, prefix: &Vec<String>| {
            let mut path = prefix.clone();
            path.push(name);
            out.insert(alias, path);
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(prefix, &p.tree, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => leaf(n.ident.to_string(), n.ident.to_string(), prefix),
            syn::UseTree::Rename(r) => leaf(r.ident.to_string(), r.rename.to_string(), prefix),
            syn::UseTree::Glob(_) => {}
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    walk(prefix, item, out);
                }
            }
        }
    }
    let mut relative = BTreeMap::new();
    for item in &file.items {
        if let syn::Item::Use(u) = item
            && is_re_export(u)
        {
            walk(&mut Vec::new(), &u.tree, &mut relative);
        }
    }
    let children: BTreeSet<String> = declared_children(&file.items)
        .into_iter()
        .map(|c| c.name)
        .collect();
    relative
        .into_iter()
        .filter_map(|(alias, path)| {
            let collector = Collector {
                here: here.to_vec(),
                children: children.clone(),
                scope: Vec::new(),
                paths: Vec::new(),
            };
            collector.absolute(&path).map(|p| (alias, p))
        })
        .collect()
}

/// A `use` another module can name through this one.
fn is_re_export(u: &syn::ItemUse) -> bool {
    !matches!(u.vis, syn::Visibility::Inherited)
}

/// The directory a file's `mod x;` children live in.
fn module_dir(file: &Path, is_root: bool) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if is_root || stem == "mod" {
        parent
    } else {
        parent.join(stem)
    }
}

struct Child {
    name: String,
    path_attr: Option<String>,
    is_test: bool,
}

/// The `mod x;` declarations (without a body) among `items`.
fn declared_children(items: &[syn::Item]) -> Vec<Child> {
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.content.is_none() => Some(Child {
                name: m.ident.to_string(),
                path_attr: m.attrs.iter().find_map(path_attribute),
                is_test: m.attrs.iter().any(is_cfg_test),
            }),
            _ => None,
        })
        .collect()
}

fn path_attribute(attr: &syn::Attribute) -> Option<String> {
    if !attr.path().is_ident("path") {
        return None;
    }
    match &attr.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

/// `#[cfg(test)]` (also inside `all(…)`/`any(…)`).
fn is_cfg_test(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("cfg")
        && attr
            .meta
            .require_list()
            .map(|l| {
                l.tokens
                    .to_string()
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == "test")
            })
            .unwrap_or(false)
}

/// The module file that defines what a path (absolute, from the crate root) names: the
/// deepest file module on the path, followed through re-exports.
fn resolve<'g>(
    modules: &'g BTreeMap<Vec<String>, PathBuf>,
    faces: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    mut named: Vec<String>,
) -> Option<&'g PathBuf> {
    // Re-exports can chain (`lib.rs` → `a/mod.rs` → `a/b.rs`) but not loop forever.
    for _ in 0..16 {
        let n = (0..=named.len())
            .rev()
            .find(|n| modules.contains_key(&named[..*n]))?;
        let through = named
            .get(n)
            .and_then(|next| faces.get(&named[..n])?.get(next));
        match through {
            Some(target) if *target != named[..=n] => {
                let rest = named.split_off(n + 1);
                named = target.iter().cloned().chain(rest).collect();
            }
            _ => return modules.get(&named[..n]),
        }
    }
    None
}

/// Collects the absolute module paths named in one file.
struct Collector {
    /// The file's module path.
    here: Vec<String>,
    /// Its `mod x;` children (reachable by bare name).
    children: BTreeSet<String>,
    /// Inline modules entered inside the file (`mod inner { … }`).
    scope: Vec<String>,
    paths: Vec<Vec<String>>,
}

impl Collector {
    /// An absolute path for `segments`, or none when it does not start inside the crate.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let mut current: Vec<String> = self.here.iter().chain(&self.scope).cloned().collect();
        let first = segments.first()?;
        let rest = match first.as_str() {
            "crate" => {
                current.clear();
                &segments[1..]
            }
            "self" => &segments[1..],
            "super" => {
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    current.pop()?;
                    rest = &rest[1..];
                }
                rest
            }
            name if self.scope.is_empty() && self.children.contains(name) => segments,
            _ => return None,
        };
        current.extend(rest.iter().cloned());
        Some(current)
    }

    fn record(&mut self, segments: &[String]) {
        if let Some(path) = self.absolute(segments) {
            self.paths.push(path);
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.record(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.record(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.record(&prefix.clone()),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.attrs.iter().any(is_cfg_test) {
            return;
        }
        if let Some((_, items)) = &m.content {
            self.scope.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.scope.pop();
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if f.attrs.iter().any(is_cfg_test) {
            return;
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.attrs.iter().any(is_cfg_test) || (self.scope.is_empty() && is_re_export(u)) {
            return;
        }
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    /// `pub(crate)`, `pub(super)`, `pub(in path)` say who may see an item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.record(&segments);
        }
        syn::visit::visit_path(self, p);
    }
}

/// The circles (strongly connected components of ≥ 2 files), each sorted, largest first.
pub fn circles(graph: &Graph) -> Vec<Vec<PathBuf>> {
    // Tarjan's algorithm, iterative enough for a few hundred files (recursion is fine).
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        on_stack: BTreeSet<&'g PathBuf>,
        stack: Vec<&'g PathBuf>,
        next: usize,
        found: Vec<Vec<PathBuf>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g PathBuf) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.graph.arrows.get(v) {
            for w in targets {
                if !s.index.contains_key(w) {
                    connect(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.arrows.keys() {
        if !state.index.contains_key(v) {
            connect(&mut state, v);
        }
    }
    let mut found = state.found;
    found.sort_by_key(|c| std::cmp::Reverse(c.len()));
    found
}
