//! Golden tests of `tableq eval`: output form and order, paging (`--top`, continuations),
//! limits, `--stats`, invalid and duplicate input lines, `--strict`, stdin, exit codes.
//! (The query semantics themselves are checked by the conformance corpus.)

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A temporary input file, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, content: &[u8]) -> TempFile {
        let dir = std::env::temp_dir().join(format!("tableq-eval-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        // Removed by the last file of this test process (fails while others remain).
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

fn tableq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(args)
        .output()
        .expect("run tableq")
}

fn tableq_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tableq");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// (PartitionKey, RowKey) of every printed line.
fn keys(o: &Output) -> Vec<String> {
    stdout(o)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{}/{}",
                v["PartitionKey"].as_str().unwrap(),
                v["RowKey"].as_str().unwrap()
            )
        })
        .collect()
}

fn generated(entities: u32, partitions: u32) -> TempFile {
    let out = tableq(&[
        "gen",
        "--entities",
        &entities.to_string(),
        "--partitions",
        &partitions.to_string(),
        "--seed",
        "3",
    ]);
    assert!(out.status.success());
    TempFile::new(&format!("gen-{entities}-{partitions}.jsonl"), &out.stdout)
}

const PEOPLE: &str = r#"{"PartitionKey":"b","RowKey":"1","Name":"Dee","Age":30}
{"PartitionKey":"a","RowKey":"2","Name":"Bob","Age":45,"Timestamp":"2024-05-01T10:00:00.5Z"}
{"PartitionKey":"a","RowKey":"1","Name":"Ann","Age":30}
"#;

/// The `--stats` object (the last stderr line), checking its exact shape.
fn stats(o: &Output) -> serde_json::Map<String, serde_json::Value> {
    let err = stderr(o);
    let last = err.lines().last().expect("a stats line");
    let v: serde_json::Value = serde_json::from_str(last).expect("the last line is JSON");
    let map = v.as_object().expect("an object").clone();
    let names: Vec<&str> = map.keys().map(String::as_str).collect();
    let mut expected = [
        "engine", "loaded", "ranges", "examined", "matched", "next", "load_ms", "parse_us",
        "plan_us", "exec_us",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected, "{last}");
    // The keys are printed in the documented order.
    let order: Vec<usize> = [
        "\"engine\"",
        "\"loaded\"",
        "\"ranges\"",
        "\"examined\"",
        "\"matched\"",
        "\"next\"",
        "\"load_ms\"",
        "\"parse_us\"",
        "\"plan_us\"",
        "\"exec_us\"",
    ]
    .iter()
    .map(|k| last.find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{last}");
    for k in ["loaded", "ranges", "examined", "matched"] {
        assert!(map[k].is_u64(), "{k} in {last}");
    }
    for k in ["load_ms", "parse_us", "plan_us", "exec_us"] {
        assert!(map[k].as_f64().is_some_and(|f| f >= 0.0), "{k} in {last}");
    }
    assert!(
        map["engine"] == "stream" || map["engine"] == "table",
        "{last}"
    );
    assert!(
        map["next"].is_null() || map["next"]["PartitionKey"].is_string(),
        "{last}"
    );
    map
}

/// Both engines.
const ENGINES: [&str; 2] = ["stream", "table"];

/// `tableq eval --engine <engine> <args…>`.
fn eval_with(engine: &str, args: &[&str]) -> Output {
    let mut all = vec!["eval", "--engine", engine];
    all.extend_from_slice(args);
    tableq(&all)
}

#[test]
fn prints_every_entity_in_key_order_without_a_filter() {
    let f = TempFile::new("people.jsonl", PEOPLE.as_bytes());
    let out = tableq(&["eval", f.path()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&out), ["a/1", "a/2", "b/1"]);
    // A blank filter is no filter.
    let out = tableq(&["eval", "--filter", "   ", f.path()]);
    assert_eq!(keys(&out), ["a/1", "a/2", "b/1"]);
}

#[test]
fn output_form_keeps_timestamp_and_annotates_what_json_cannot_show() {
    let line = r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2024-05-01T10:00:00.5000000Z","S":"x","I":7,"D":2.0,"B":true,"L@odata.type":"Edm.Int64","L":"9007199254740993","T@odata.type":"Edm.DateTime","T":"2013-08-02T17:37:43.9004348Z","G@odata.type":"Edm.Guid","G":"A455C695-DF98-5678-AAAA-81D3367E5A34","X@odata.type":"Edm.Binary","X":"AAE=","N@odata.type":"Edm.Double","N":"NaN"}"#;
    let f = TempFile::new("typed.jsonl", line.as_bytes());
    let out = tableq(&[
        "eval",
        "--filter",
        "Timestamp eq datetime'2024-05-01T10:00:00.5Z'",
        f.path(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        concat!(
            r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2024-05-01T10:00:00.5Z","#,
            r#""B":true,"D":2.0,"G@odata.type":"Edm.Guid","G":"a455c695-df98-5678-aaaa-81d3367e5a34","I":7,"#,
            r#""L@odata.type":"Edm.Int64","L":"9007199254740993","N@odata.type":"Edm.Double","N":"NaN","S":"x","#,
            r#""T@odata.type":"Edm.DateTime","T":"2013-08-02T17:37:43.9004348Z","X@odata.type":"Edm.Binary","X":"AAE="}"#,
            "\n"
        )
    );
}

#[test]
fn select_prints_exactly_the_selection_with_nulls() {
    let f = TempFile::new("people-select.jsonl", PEOPLE.as_bytes());
    let out = tableq(&["eval", "--select", "Age, Missing,RowKey,Age", f.path()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\"Age\":30,\"Missing\":null,\"RowKey\":\"1\"}\n\
         {\"Age\":45,\"Missing\":null,\"RowKey\":\"2\"}\n\
         {\"Age\":30,\"Missing\":null,\"RowKey\":\"1\"}\n"
    );
}

#[test]
fn without_top_all_pages_are_printed_with_top_only_the_first() {
    let f = generated(2500, 3);
    let all = tableq(&["eval", "--stats", f.path()]);
    assert!(all.status.success(), "{}", stderr(&all));
    assert_eq!(stdout(&all).lines().count(), 2500);
    let s = stats(&all);
    assert_eq!(
        (s["loaded"].as_u64(), s["matched"].as_u64()),
        (Some(2500), Some(2500))
    );
    assert_eq!(s["examined"].as_u64(), Some(2500));
    assert_eq!(s["ranges"].as_u64(), Some(1));

    let top = tableq(&["eval", "--top", "1000", f.path()]);
    assert_eq!(stdout(&top).lines().count(), 1000);
    let top = tableq(&[
        "eval",
        "--top",
        "7",
        "--filter",
        "PartitionKey ge 'p001'",
        f.path(),
    ]);
    let k = keys(&top);
    assert_eq!(k.len(), 7);
    assert_eq!(k[0], "p001/r00000000");
    // The first page of the full result, in the same order.
    let head: Vec<String> = keys(&all).into_iter().take(1000).collect();
    assert_eq!(keys(&tableq(&["eval", "--top", "1000", f.path()])), head);
}

#[test]
fn threads_do_not_change_the_output() {
    let f = generated(3000, 10);
    let filter = "Age lt 50 and Active or PartitionKey eq 'p003' and RowKey lt 'r00000100'";
    let one = tableq(&["eval", "--threads", "1", "--filter", filter, f.path()]);
    let two = tableq(&["eval", "--threads", "2", "--filter", filter, f.path()]);
    assert!(one.status.success() && two.status.success());
    assert!(!one.stdout.is_empty());
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(
        tableq(&["eval", "--threads", "0", f.path()]).status.code(),
        Some(2)
    );
}

#[test]
fn stats_counts_ranges_and_examined() {
    let f = generated(1000, 10);
    let point = tableq(&[
        "eval",
        "--engine",
        "table",
        "--stats",
        "--filter",
        "PartitionKey eq 'p004' and RowKey eq 'r00000042'",
        f.path(),
    ]);
    assert_eq!(keys(&point), ["p004/r00000042"]);
    let s = stats(&point);
    assert_eq!(s["ranges"].as_u64(), Some(1));
    assert_eq!(s["matched"].as_u64(), Some(1));
    assert!(s["examined"].as_u64().unwrap() <= 1, "{s:?}");

    let none = tableq(&[
        "eval",
        "--engine",
        "table",
        "--stats",
        "--filter",
        "PartitionKey eq 'a' and PartitionKey eq 'b'",
        f.path(),
    ]);
    let s = stats(&none);
    assert_eq!(
        (
            s["ranges"].as_u64(),
            s["examined"].as_u64(),
            s["matched"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );

    let two = tableq(&[
        "eval",
        "--engine",
        "table",
        "--stats",
        "--filter",
        "PartitionKey eq 'p001' or PartitionKey eq 'p007'",
        f.path(),
    ]);
    let s = stats(&two);
    assert_eq!(s["engine"], "table");
    assert_eq!(s["ranges"].as_u64(), Some(2));
    assert_eq!(s["matched"].as_u64(), Some(200));
    assert_eq!(s["examined"].as_u64(), Some(200));
    assert_eq!(s["loaded"].as_u64(), Some(1000));
    // The stream engine tests every entity of the input against the plan.
    let streamed = tableq(&[
        "eval",
        "--stats",
        "--filter",
        "PartitionKey eq 'p001' or PartitionKey eq 'p007'",
        f.path(),
    ]);
    assert_eq!(keys(&streamed), keys(&two));
    let s = stats(&streamed);
    assert_eq!(s["engine"], "stream");
    assert_eq!(
        (
            s["ranges"].as_u64(),
            s["matched"].as_u64(),
            s["examined"].as_u64(),
            s["loaded"].as_u64()
        ),
        (Some(2), Some(200), Some(1000), Some(1000))
    );
}

#[test]
fn invalid_lines_are_skipped_with_a_warning() {
    let input = "{\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"Age\":1}\n\
                 not json\n\
                 \n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"Bad-Name\":1}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"3\",\"Age\":3}\n";
    let f = TempFile::new("invalid.jsonl", input.as_bytes());
    let out = tableq(&["eval", "--stats", f.path()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(keys(&out), ["a/1", "a/3"]);
    let err = stderr(&out);
    assert!(err.contains("line 2: InvalidInput: "), "{err}");
    assert!(err.contains("line 4: PropertyNameInvalid: "), "{err}");
    assert!(err.contains("skipped 2 invalid lines"), "{err}");
    assert_eq!(stats(&out)["loaded"].as_u64(), Some(2));
}

#[test]
fn strict_makes_an_invalid_line_fatal() {
    let input =
        "{\"PartitionKey\":\"a\",\"RowKey\":\"1\"}\n{\"PartitionKey\":\"a/b\",\"RowKey\":\"2\"}\n";
    let f = TempFile::new("strict.jsonl", input.as_bytes());
    let out = tableq(&["eval", "--strict", f.path()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("error: line 2: InvalidInput: "),
        "{}",
        stderr(&out)
    );
    // Without --strict the valid line is still evaluated.
    assert_eq!(keys(&tableq(&["eval", f.path()])), ["a/1"]);
}

#[test]
fn repeated_keys_later_line_wins_or_strict_fails() {
    let input = "{\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"V\":1}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"V\":2}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"V\":3}\n";
    let f = TempFile::new("dupes.jsonl", input.as_bytes());
    let out = tableq(&["eval", f.path()]);
    assert!(out.status.success());
    assert_eq!(
        stdout(&out),
        "{\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"V\":3}\n{\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"V\":2}\n"
    );
    assert!(
        stderr(&out).contains("1 line repeats the keys of an earlier line"),
        "{}",
        stderr(&out)
    );
    let strict = tableq(&["eval", "--strict", f.path()]);
    assert_eq!(strict.status.code(), Some(2));
    assert!(strict.stdout.is_empty());
    assert!(
        stderr(&strict)
            .contains("line 3 repeats the keys of line 1 (PartitionKey \"a\", RowKey \"1\")"),
        "{}",
        stderr(&strict)
    );
}

#[test]
fn reads_stdin_with_dash_or_no_file() {
    let with_dash = tableq_stdin(&["eval", "--filter", "Age eq 30", "-"], PEOPLE.as_bytes());
    assert_eq!(keys(&with_dash), ["a/1", "b/1"]);
    let without = tableq_stdin(&["eval", "--filter", "Age eq 30"], PEOPLE.as_bytes());
    assert_eq!(keys(&without), ["a/1", "b/1"]);
}

#[test]
fn bom_crlf_and_blank_lines_are_accepted() {
    let input = "\u{FEFF}{\"PartitionKey\":\"a\",\"RowKey\":\"1\"}\r\n\r\n   \r\n{\"PartitionKey\":\"a\",\"RowKey\":\"0\"}\r\n";
    let out = tableq_stdin(&["eval"], input.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&out), ["a/0", "a/1"]);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn unreadable_input_exits_2() {
    let out = tableq(&["eval", "/nonexistent/tableq/input.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
    let out = tableq_stdin(&["eval"], b"{\"PartitionKey\":\"a\",\"RowKey\":\"\xff\"}\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not valid UTF-8"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

#[test]
fn invalid_query_prints_a_diagnostic_and_exits_2_before_reading_input() {
    // The file does not exist: the query is checked first.
    let missing = "/nonexistent/tableq/input.jsonl";
    let out = tableq(&["eval", "--filter", "Age EQ 30", missing]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown operator `EQ`"), "{err}");
    assert!(err.contains("^^"), "{err}");
    assert!(err.contains("did you mean `eq`?"), "{err}");
    for args in [
        &["eval", "--select", "Name,,Age", missing][..],
        &["eval", "--top", "0", missing],
        &["eval", "--top", "1001", missing],
        &["eval", "--top", "-3", missing],
        &["eval", "--filter", "Age eq null", missing],
    ] {
        let out = tableq(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(
            !stderr(&out).contains("cannot read"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn comparison_limit_defaults_to_15_and_is_adjustable() {
    let f = TempFile::new("limits.jsonl", PEOPLE.as_bytes());
    let sixteen = vec!["Age eq 30"; 16].join(" or ");
    let fifteen = vec!["Age eq 30"; 15].join(" or ");
    let run = |extra: &[&str], filter: &str| {
        let mut args = vec!["eval", "--filter", filter];
        args.extend_from_slice(extra);
        args.push(f.path());
        tableq(&args)
    };
    assert_eq!(keys(&run(&[], &fifteen)), ["a/1", "b/1"]);
    let out = run(&[], &sixteen);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the filter has 16 comparisons; at most 15 are allowed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(keys(&run(&["--no-limits"], &sixteen)), ["a/1", "b/1"]);
    assert_eq!(
        keys(&run(&["--max-comparisons", "16"], &sixteen)),
        ["a/1", "b/1"]
    );
    // --max-comparisons wins over --no-limits.
    let out = run(
        &["--no-limits", "--max-comparisons", "2"],
        "Age eq 1 or Age eq 2 or Age eq 3",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("at most 2"), "{}", stderr(&out));
}

#[test]
fn stats_is_the_last_stderr_line_even_after_warnings() {
    let input = format!("{PEOPLE}oops\n");
    let out = tableq_stdin(
        &["eval", "--stats", "--filter", "Name eq 'Bob'"],
        input.as_bytes(),
    );
    assert!(out.status.success());
    assert!(stderr(&out).contains("line 4: InvalidInput"));
    let s = stats(&out);
    assert_eq!(
        (s["loaded"].as_u64(), s["matched"].as_u64()),
        (Some(3), Some(1))
    );
}

#[test]
fn agrees_with_the_naive_evaluator_on_generated_data() {
    use tableq::datagen::{GenOptions, Generator};
    use tableq::parser::{FilterOptions, parse_filter};
    // Enough entities for many parallel chunks and waves of the executor.
    let options = GenOptions {
        entities: 70_000,
        partitions: 9,
        seed: 21,
        timestamps: true,
    };
    let out = tableq(&[
        "gen",
        "--entities",
        "70000",
        "--partitions",
        "9",
        "--seed",
        "21",
        "--timestamps",
    ]);
    assert!(out.status.success());
    let f = TempFile::new("naive.jsonl", &out.stdout);
    let entities: Vec<_> = Generator::new(options).collect();
    for filter in [
        "",
        "Age lt 3 and Active",
        "PartitionKey eq 'p004' and RowKey ge 'r00001000' and RowKey lt 'r00001020'",
        "PartitionKey ge 'p007' or Age eq 42 and City eq 'Zürich'",
        "not (Name eq 'Ada') and Score gt 999.5",
        "Big lt 0L and Born ge datetime'2005-01-01T00:00:00Z' and PartitionKey lt 'p002'",
        "Timestamp lt datetime'2026-01-01T00:00:01Z'",
        "(PartitionKey eq 'p000' and RowKey eq 'r00000005') or (PartitionKey eq 'p008' and RowKey eq 'r00007776')",
        "Blob eq X'' or Id lt guid'00100000-0000-0000-0000-000000000000'",
    ] {
        let parsed = parse_filter(filter, &FilterOptions::default()).unwrap();
        let expected: Vec<String> = entities
            .iter()
            .filter(|e| tableq::planner::ast_eval::matches(&parsed, *e))
            .map(|e| format!("{}/{}", e.partition_key(), e.row_key()))
            .collect();
        assert!(
            !expected.is_empty(),
            "{filter}: pick a filter that matches something"
        );
        for engine in ENGINES {
            let out = eval_with(engine, &["--stats", "--filter", filter, f.path()]);
            assert!(out.status.success(), "{filter}: {}", stderr(&out));
            let s = stats(&out);
            assert_eq!(
                s["matched"].as_u64(),
                Some(expected.len() as u64),
                "{filter}"
            );
            // One pass: no entity is read twice, so a full scan examines each entity once.
            let examined = s["examined"].as_u64().unwrap_or(u64::MAX);
            assert!(examined <= 70_000, "{filter}: examined {examined}");
            if s["ranges"].as_u64() == Some(1) && filter.is_empty() {
                assert_eq!(examined, 70_000, "{filter}");
            }
            let got = keys(&out);
            assert_eq!(got.len(), expected.len(), "{filter}");
            assert!(got == expected, "{engine} {filter}: results differ");
        }
    }
}

#[test]
fn a_later_line_that_does_not_match_removes_an_earlier_match() {
    // a/1 matches on line 1, but line 3 (the later one, which wins) does not.
    let input = "{\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"V\":1}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"V\":1}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"V\":2}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"3\",\"V\":1}\n";
    let f = TempFile::new("later-wins.jsonl", input.as_bytes());
    for engine in ENGINES {
        for top in [None, Some("1"), Some("5")] {
            let mut args = vec!["--filter", "V eq 1"];
            if let Some(t) = top {
                args.extend_from_slice(&["--top", t]);
            }
            let expected: &[&str] = match top {
                Some("1") => &["a/2"],
                _ => &["a/2", "a/3"],
            };
            let mut with_file = args.clone();
            with_file.push(f.path());
            let out = eval_with(engine, &with_file);
            assert!(out.status.success(), "{engine} {top:?}: {}", stderr(&out));
            assert_eq!(keys(&out), expected, "{engine} {top:?} file");
            let err = stderr(&out);
            assert!(
                err.contains(
                    "warning: line 3 repeats the keys of line 1 (PartitionKey \"a\", RowKey \"1\"); the later line wins"
                ),
                "{engine}: {err}"
            );
            let mut all = vec!["eval", "--engine", engine];
            all.extend_from_slice(&args);
            let out = tableq_stdin(&all, input.as_bytes());
            assert!(out.status.success(), "{engine} {top:?}: {}", stderr(&out));
            assert_eq!(keys(&out), expected, "{engine} {top:?} stdin");
        }
    }
}

#[test]
fn unsorted_input_is_printed_in_key_order_on_both_engines() {
    let f = generated(3000, 7);
    let text = std::fs::read_to_string(f.path()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.reverse();
    let reversed = TempFile::new("reversed.jsonl", (lines.join("\n") + "\n").as_bytes());
    let filter = "Age lt 20 or PartitionKey eq 'p003'";
    let sorted = keys(&tableq(&["eval", "--filter", filter, f.path()]));
    assert!(sorted.len() > 100);
    for engine in ENGINES {
        let out = eval_with(engine, &["--filter", filter, reversed.path()]);
        assert_eq!(keys(&out), sorted, "{engine}");
        let out = eval_with(engine, &["--top", "3", "--filter", filter, reversed.path()]);
        assert_eq!(keys(&out), sorted[..3], "{engine}");
    }
    let out = tableq_stdin(
        &["eval", "--filter", filter],
        (lines.join("\n") + "\n").as_bytes(),
    );
    assert_eq!(keys(&out), sorted);
}

#[test]
fn stdin_top_that_cannot_be_completed_is_an_error_not_wrong_rows() {
    // In key order up to line 3 (so --top 1 keeps only a/1 and drops a/2), then a/1 again
    // without a match: the answer (a/2) was dropped and stdin cannot be read again.
    let input = "{\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"V\":1}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"V\":1}\n\
                 {\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"V\":2}\n";
    let out = tableq_stdin(
        &["eval", "--top", "1", "--filter", "V eq 1"],
        input.as_bytes(),
    );
    if out.status.success() {
        // Only acceptable with the right answer.
        assert_eq!(keys(&out), ["a/2"]);
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        assert!(stderr(&out).contains("--engine table"), "{}", stderr(&out));
    }
    let table = tableq_stdin(
        &[
            "eval", "--engine", "table", "--top", "1", "--filter", "V eq 1",
        ],
        input.as_bytes(),
    );
    assert_eq!(keys(&table), ["a/2"]);
}

#[test]
fn warnings_are_capped_with_a_count() {
    let mut input = String::new();
    for i in 0..30 {
        input.push_str(&format!(
            "{{\"PartitionKey\":\"a\",\"RowKey\":\"{i:02}\",\"bad-{i}\":1}}\n"
        ));
    }
    input.push_str("{\"PartitionKey\":\"a\",\"RowKey\":\"ok\"}\n");
    let f = TempFile::new("many-invalid.jsonl", input.as_bytes());
    for engine in ENGINES {
        let out = eval_with(engine, &[f.path()]);
        assert!(out.status.success());
        assert_eq!(keys(&out), ["a/ok"]);
        let err = stderr(&out);
        assert_eq!(err.matches(": PropertyNameInvalid: ").count(), 20, "{err}");
        assert!(
            err.contains("warning: line 20: PropertyNameInvalid"),
            "{err}"
        );
        assert!(!err.contains("line 21: "), "{err}");
        assert!(err.contains("warning: 10 more warnings not shown"), "{err}");
        assert!(err.contains("skipped 30 invalid lines"), "{err}");
    }
}

#[test]
fn top_tells_that_more_entities_match_and_where_to_continue() {
    let f = generated(500, 5);
    for engine in ENGINES {
        let out = eval_with(
            engine,
            &[
                "--stats",
                "--top",
                "3",
                "--filter",
                "PartitionKey eq 'p002'",
                f.path(),
            ],
        );
        assert_eq!(
            keys(&out),
            ["p002/r00000000", "p002/r00000001", "p002/r00000002"]
        );
        let err = stderr(&out);
        assert!(
            err.contains("note: more entities match than the 3 printed (--top 3); the next is at NextPartitionKey \"p002\", NextRowKey \"r00000003\""),
            "{engine}: {err}"
        );
        let s = stats(&out);
        assert_eq!(s["next"]["PartitionKey"], "p002");
        assert_eq!(s["next"]["RowKey"], "r00000003");
        // The last page: no note, `next` null.
        let out = eval_with(
            engine,
            &[
                "--stats",
                "--top",
                "100",
                "--filter",
                "PartitionKey eq 'p002'",
                f.path(),
            ],
        );
        assert_eq!(keys(&out).len(), 100);
        assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
        assert!(stats(&out)["next"].is_null());
    }
}

#[test]
fn queries_file_runs_many_queries_against_one_table() {
    let data = TempFile::new("people-queries.jsonl", PEOPLE.as_bytes());
    let queries = TempFile::new(
        "queries.txt",
        b"# people\nAge eq 30\n\n{\"filter\":\"Name eq 'Bob'\",\"select\":\"Name\"}\n{\"top\":1}\n",
    );
    let out = tableq(&["eval", "--stats", "--queries", queries.path(), data.path()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "# query 1 (line 2): Age eq 30\n\
         {\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"Age\":30,\"Name\":\"Ann\"}\n\
         {\"PartitionKey\":\"b\",\"RowKey\":\"1\",\"Age\":30,\"Name\":\"Dee\"}\n\
         # query 2 (line 4): Name eq 'Bob' | select Name\n\
         {\"Name\":\"Bob\"}\n\
         # query 3 (line 5):  | top 1\n\
         {\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"Age\":30,\"Name\":\"Ann\"}\n"
    );
    let err = stderr(&out);
    let stats: Vec<serde_json::Value> = err
        .lines()
        .filter(|l| l.starts_with("{\"engine\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stats.len(), 3, "{err}");
    for (i, s) in stats.iter().enumerate() {
        assert_eq!(s["engine"], "table");
        assert_eq!(s["query"], i + 1);
        assert_eq!(s["loaded"], 3);
    }
    assert!(err.contains("note: query 3: more entities match"), "{err}");
    // The stream engine gives the same output (reading the file once per query).
    let streamed = tableq(&[
        "eval",
        "--engine",
        "stream",
        "--queries",
        queries.path(),
        data.path(),
    ]);
    assert_eq!(streamed.stdout, out.stdout);
    // But not from standard input.
    let out = tableq_stdin(
        &["eval", "--engine", "stream", "--queries", queries.path()],
        PEOPLE.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("give a FILE"), "{}", stderr(&out));
}

#[test]
fn every_invalid_query_of_a_queries_file_is_reported_before_reading() {
    let queries = TempFile::new(
        "bad-queries.txt",
        b"Age eq 1\nAge EQ 2\n{\"filter\":\"A eq\"}\n{\"where\":1}\n",
    );
    let out = tableq(&[
        "eval",
        "--queries",
        queries.path(),
        "/nonexistent/tableq/input.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("bad-queries.txt:2: $filter"), "{err}");
    assert!(err.contains("bad-queries.txt:3: $filter"), "{err}");
    assert!(
        err.contains("bad-queries.txt:4: unknown key \"where\""),
        "{err}"
    );
    assert!(!err.contains("cannot read"), "{err}");
}

#[test]
fn a_line_over_4_mib_is_skipped_unread() {
    let mut input = b"{\"PartitionKey\":\"a\",\"RowKey\":\"1\"}\n".to_vec();
    let start = b"{\"PartitionKey\":\"a\",\"RowKey\":\"2\",\"S\":\"";
    input.extend_from_slice(start);
    input.extend(std::iter::repeat_n(b'x', 5 << 20));
    let long = format!("the line is {} bytes long", start.len() + (5 << 20) + 2);
    input.extend_from_slice(b"\"}\n{\"PartitionKey\":\"a\",\"RowKey\":\"3\"}\n");
    let f = TempFile::new("long-line.jsonl", &input);
    for engine in ENGINES {
        let out = eval_with(engine, &[f.path()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(keys(&out), ["a/1", "a/3"], "{engine}");
        assert!(
            stderr(&out).contains(&format!("warning: line 2: RequestBodyTooLarge: {long}")),
            "{engine}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn limit_flags_reject_nonsense_values() {
    for args in [
        &["eval", "--max-comparisons", "0"][..],
        &["eval", "--max-ranges", "0"],
        &["eval", "--threads", "0"],
        &["explain", "--max-ranges", "0"],
        &[
            "debug",
            "ast",
            "--filter",
            "A eq 1",
            "--max-comparisons",
            "many",
        ],
        &["eval", "--engine", "fast"],
        &["eval", "--color", "sometimes"],
    ] {
        let out = tableq(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("error: invalid value"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // The same limit flags on every command that parses a filter, with one precedence.
    let filter = "A eq 1 or A eq 2 or A eq 3";
    for command in [
        &["explain"][..],
        &["debug", "plan"],
        &["debug", "ast"],
        &["debug", "tokens"],
    ] {
        let mut args = command.to_vec();
        args.extend_from_slice(&[
            "--filter",
            filter,
            "--no-limits",
            "--max-comparisons",
            "2",
            "--max-ranges",
            "8",
        ]);
        let out = tableq(&args);
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        assert!(
            stderr(&out).contains("at most 2"),
            "{command:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn help_lists_every_command_with_examples_output_and_exit_status() {
    let main = tableq(&["--help"]);
    let text = stdout(&main);
    for command in ["validate", "eval", "explain", "gen", "serve"] {
        assert!(
            text.contains(command),
            "top-level help misses `{command}`: {text}"
        );
    }
    for command in ["validate", "eval", "explain", "gen"] {
        let out = tableq(&[command, "--help"]);
        let text = stdout(&out);
        assert!(text.contains("EXAMPLES:"), "{command}: {text}");
        assert!(text.contains("EXIT STATUS:"), "{command}: {text}");
        assert!(text.contains("--color <WHEN>"), "{command}: {text}");
    }
    assert!(stdout(&tableq(&["eval", "--help"])).contains("OUTPUT:"));
}

#[test]
fn a_url_encoded_filter_gets_a_hint() {
    let out = tableq(&[
        "eval",
        "--color",
        "never",
        "--filter",
        "Age%20eq%2030",
        "/nonexistent",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("help: the text looks URL-encoded (`%20`)"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "{err}");
    let out = tableq(&[
        "eval",
        "--color",
        "always",
        "--filter",
        "Age eq",
        "/nonexistent",
    ]);
    assert!(stderr(&out).contains('\u{1b}'));
}

#[test]
fn an_early_disorder_in_a_large_file_restarts_or_stops_without_hanging() {
    // Many more blocks than the reader's channel holds, with the disorder on line 2: the
    // first pass stops early (and must stop its reader) before the file is read again.
    let f = generated(60_000, 4);
    let text = std::fs::read_to_string(f.path()).unwrap();
    let last = text.lines().last().unwrap();
    let unsorted = TempFile::new("early-disorder.jsonl", format!("{last}\n{text}").as_bytes());
    let filter = "Age eq 42 and Active";
    let expected = keys(&tableq(&["eval", "--filter", filter, f.path()]));
    let out = tableq(&["eval", "--stats", "--filter", filter, unsorted.path()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&out), expected);
    assert!(
        stderr(&out).contains("line 60001 repeats the keys of line 1"),
        "{}",
        stderr(&out)
    );
    let s = stats(&out);
    assert_eq!(
        (s["loaded"].as_u64(), s["examined"].as_u64()),
        (Some(60_000), Some(60_001))
    );
    // --strict stops at the repeat; an invalid second line stops the first pass.
    let out = tableq(&["eval", "--strict", unsorted.path()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let broken = TempFile::new(
        "early-invalid.jsonl",
        format!("{last}\nbad\n{text}").as_bytes(),
    );
    let out = tableq(&["eval", "--strict", broken.path()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("error: line 2: InvalidInput"),
        "{}",
        stderr(&out)
    );
}
