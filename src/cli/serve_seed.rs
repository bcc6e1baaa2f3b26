//! `tableq serve --seed PATH`: tables loaded into the development account before the
//! server opens its port, for test suites that start from known data.
//!
//! * PATH is a JSON-lines file — its stem is the table's name (`people.jsonl` → table
//!   `people`) — or a directory, whose `*.jsonl` and `*.ndjson` files are each loaded that
//!   way, in name order (other files are ignored; a directory without one is refused).
//!   `--seed` is repeatable.
//! * Lines are read as `tableq import` reads them ([`super::input`]: LF/CRLF, BOM, blank
//!   lines skipped but counted) and judged as the service judges an insert
//!   (`DecodeOptions::SERVICE`).
//! * The table is created when missing; entities are written with *Insert Or Replace*, up
//!   to 100 of one partition per batch, so a restart over the same data directory with the
//!   same seed succeeds and a key given twice keeps its later line.
//! * Any problem — an unreadable file, a table name the service refuses, a line that is
//!   not a valid entity, a write the store refuses — stops the start: the message names
//!   the file and the line (`seed/people.jsonl:3: InvalidInput: …`) and `serve` exits 2
//!   without listening. Tables loaded before the problem stay in a durable store.
//!
//! ```text
//! $ tableq serve --in-memory --port 0 --seed tests/fixtures/seed/
//! seeded people: 3 entities from tests/fixtures/seed/people.jsonl
//! ```

use super::input::{self, JsonLines, Line, Unreadable};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tableq::model::json::{DecodeOptions, decode_entity};
use tableq::model::{Entity, validate};
use tableq_store::{Backend, StoreError, WriteOp};

/// The most operations in one batch (the service's batch limit).
const BATCH_OPS: usize = 100;

/// The seed flag of `tableq serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SeedArgs {
    /// Load entities into the development account before the server is ready: a JSON-lines
    /// file whose stem names the table (people.jsonl → table people), or a directory of
    /// *.jsonl / *.ndjson files; repeatable. Written as Insert Or Replace; a bad line stops
    /// the start with its file and line.
    #[arg(long = "seed", value_name = "PATH")]
    pub seeds: Vec<PathBuf>,
}

/// One file to load and the table it goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SeedFile {
    path: PathBuf,
    table: String,
}

/// Loads every seed into `backend` (blocking); returns one line per table loaded, for the
/// start-up log. The error is a message for people naming the file (and line).
pub fn load(args: &SeedArgs, backend: &dyn Backend) -> Result<Vec<String>, String> {
    let mut report = Vec::new();
    for seed in &args.seeds {
        for file in files(seed)? {
            let n = load_file(&file, backend)?;
            report.push(format!(
                "seeded {}: {n} {} from {}",
                file.table,
                if n == 1 { "entity" } else { "entities" },
                file.path.display()
            ));
        }
    }
    Ok(report)
}

/// The files of one `--seed PATH`, each with its table (name checked).
fn files(seed: &Path) -> Result<Vec<SeedFile>, String> {
    let paths = if seed.is_dir() {
        let entries = std::fs::read_dir(seed)
            .map_err(|e| format!("--seed {}: cannot list the directory: {e}", seed.display()))?;
        let mut paths = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|e| format!("--seed {}: cannot list the directory: {e}", seed.display()))?
                .path();
            let lines = matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("jsonl" | "ndjson")
            );
            if lines && path.is_file() {
                paths.push(path);
            }
        }
        if paths.is_empty() {
            return Err(format!(
                "--seed {}: the directory has no *.jsonl or *.ndjson file (one file per table, \
                 named after it)",
                seed.display()
            ));
        }
        paths.sort();
        paths
    } else {
        vec![seed.to_path_buf()]
    };
    paths
        .into_iter()
        .map(|path| {
            let table = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_owned();
            if let Err(e) = validate::table_name(&table) {
                let at = path.display().to_string();
                return Err(format!(
                    "--seed {}",
                    input::problem(&format!("{at}: table name {table:?} (the file's stem)"), &e)
                ));
            }
            Ok(SeedFile { path, table })
        })
        .collect()
}

/// Loads one file; returns how many entities it wrote.
fn load_file(file: &SeedFile, backend: &dyn Backend) -> Result<u64, String> {
    let label = file.path.display().to_string();
    let opened = input::open(Some(&file.path), "serve").map_err(|e| format!("--seed: {e}"))?;
    let options = DecodeOptions::SERVICE;
    let mut lines = JsonLines::new(opened.reader);
    let mut text = String::new();
    let mut entities: Vec<(u64, Entity)> = Vec::new();
    loop {
        match lines.next_line(&mut text) {
            Ok(None) => break,
            Ok(Some(Line::Text(line))) => match decode_entity(&text, &options) {
                Ok(entity) => entities.push((line, entity)),
                Err(e) => return Err(input::problem(&format!("{label}:{line}"), &e)),
            },
            Ok(Some(Line::TooLong(line, bytes))) => {
                return Err(input::problem(
                    &format!("{label}:{line}"),
                    &tableq::exec::lines::line_too_long(bytes),
                ));
            }
            Err(Unreadable(why)) => return Err(format!("cannot read {label}: {why}")),
        }
    }
    match backend.table(&file.table) {
        Ok(_) => {}
        Err(StoreError::TableNotFound(_)) => {
            backend
                .create_table(&file.table)
                .map_err(|e| format!("{label}: cannot create table {}: {e}", file.table))?;
        }
        Err(e) => return Err(format!("{label}: cannot open table {}: {e}", file.table)),
    }
    let written = entities.len() as u64;
    for batch in batches(entities) {
        let lines: Vec<u64> = batch.iter().map(|(line, _)| *line).collect();
        let ops = batch
            .into_iter()
            .map(|(_, entity)| WriteOp::InsertOrReplace { entity })
            .collect();
        if let Err(e) = backend.write_batch(&file.table, ops) {
            let at = match e.index.and_then(|i| lines.get(i)) {
                Some(line) => format!("{label}:{line}"),
                None => label.clone(),
            };
            return Err(format!("{at}: {}: {}", e.error.code(), e.error));
        }
    }
    Ok(written)
}

/// Splits entities, in input order, into batches the service would take: one partition,
/// at most [`BATCH_OPS`], no RowKey twice (a repeated key starts the next batch, so the
/// later line wins).
fn batches(entities: Vec<(u64, Entity)>) -> Vec<Vec<(u64, Entity)>> {
    let mut out: Vec<Vec<(u64, Entity)>> = Vec::new();
    let mut rows = BTreeSet::new();
    for (line, entity) in entities {
        let fits = out.last().is_some_and(|batch| {
            batch.len() < BATCH_OPS
                && batch[0].1.partition_key() == entity.partition_key()
                && !rows.contains(entity.row_key())
        });
        if !fits {
            out.push(Vec::new());
            rows.clear();
        }
        rows.insert(entity.row_key().to_owned());
        out.last_mut()
            .expect("a batch was pushed")
            .push((line, entity));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(pk: &str, rk: &str) -> (u64, Entity) {
        (0, Entity::new(pk, rk))
    }

    fn shape(batches: &[Vec<(u64, Entity)>]) -> Vec<Vec<String>> {
        batches
            .iter()
            .map(|b| {
                b.iter()
                    .map(|(_, e)| format!("{}/{}", e.partition_key(), e.row_key()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn batches_hold_one_partition_and_no_row_twice() {
        let input = vec![
            entity("a", "1"),
            entity("a", "2"),
            entity("b", "1"),
            entity("b", "1"),
            entity("a", "3"),
        ];
        assert_eq!(
            shape(&batches(input)),
            [vec!["a/1", "a/2"], vec!["b/1"], vec!["b/1"], vec!["a/3"]]
        );
        let many: Vec<_> = (0..250).map(|i| entity("p", &i.to_string())).collect();
        let sizes: Vec<usize> = batches(many).iter().map(Vec::len).collect();
        assert_eq!(sizes, [100, 100, 50]);
    }

    #[test]
    fn a_directory_is_its_jsonl_files_in_name_order() {
        let dir = std::env::temp_dir().join(format!("tableq-seed-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("zeta.jsonl"), "").unwrap();
        std::fs::write(dir.join("alpha.ndjson"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        let found = files(&dir).unwrap();
        let tables: Vec<&str> = found.iter().map(|f| f.table.as_str()).collect();
        assert_eq!(tables, ["alpha", "zeta"]);
        std::fs::write(dir.join("bad-name.jsonl"), "").unwrap();
        let refused = files(&dir).unwrap_err();
        assert!(refused.contains("bad-name.jsonl"), "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let empty = files(&dir).unwrap_err();
        assert!(empty.contains("no *.jsonl"), "{empty}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
