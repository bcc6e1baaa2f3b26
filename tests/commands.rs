//! One test binary for the built `tableq` command and the repository as a whole: the CLI's
//! golden tests, the conformance corpus (AST evaluator, executor, `tableq eval`), the
//! documentation's examples, the fuzz regressions, and the architecture's arrows.
//!
//! The root's tests are grouped into three binaries (`commands`, `servers`, `clients`;
//! `autotests = false` in `Cargo.toml`) rather than one per file: every test binary links
//! the whole workspace, and three links instead of thirty-eight keep the clean-clone test
//! run short. Each file stays one module with its own docs; its tests are named
//! `<file>::<test>` (`cargo test --test commands eval_cli::`).

#[path = "conformance/corpus.rs"]
#[allow(dead_code)]
mod corpus;
mod module_graph;
#[path = "plan_exec/harness.rs"]
mod plan_exec_harness;
mod robust_support;

mod bench_http_cli;
mod check_cli;
mod closed_pipes;
mod conformance;
mod debug_cli;
mod dependency_policy;
mod doc_examples;
mod embed_example;
mod eval_cli;
mod explain_cli;
mod gen_cli;
mod import_cli;
mod plan_exec_regressions;
mod server_layers;
mod validate_cli;

/// Every file under a `tests/` directory with `autotests = false` runs: it is a harness
/// named in its `Cargo.toml`, or a `mod` of one. (Cargo no longer finds them by itself, so
/// a file added without its `mod` line would compile nowhere and test nothing.)
#[test]
fn every_test_file_belongs_to_a_test_binary() {
    use std::path::Path;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in [".", "server", "store"] {
        let crate_dir = root.join(dir);
        let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
        assert!(manifest.contains("autotests = false"), "{dir}/Cargo.toml");
        let harnesses: Vec<String> = manifest
            .lines()
            .filter_map(|l| l.strip_prefix("path = \"tests/"))
            .filter_map(|l| l.strip_suffix('"'))
            .map(str::to_owned)
            .collect();
        assert!(!harnesses.is_empty(), "{dir}/Cargo.toml names no [[test]]");
        let declared: String = harnesses
            .iter()
            .map(|h| std::fs::read_to_string(crate_dir.join("tests").join(h)).unwrap())
            .collect();
        let mut files: Vec<_> = std::fs::read_dir(crate_dir.join("tests"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".rs"))
            .collect();
        files.sort();
        for file in files {
            let stem = file.trim_end_matches(".rs");
            let in_harness = declared.lines().any(|l| l == format!("mod {stem};"));
            assert!(
                harnesses.contains(&file) || in_harness,
                "{dir}/tests/{file} is in no test binary: add `mod {stem};` to one of {harnesses:?}"
            );
        }
    }
}
