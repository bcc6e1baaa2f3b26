//! `tableq bench-http` end to end, running the built binary: a short run against a server it
//! starts itself (load, the chosen scenarios, every answer checked, the Markdown table, the
//! server's memory), `--only` choosing scenarios, a second run finding the data set loaded,
//! `--no-auth`, and the errors a person gets for an unreachable endpoint or a wrong account.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A directory removed at the end of the test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "tableq-bench-http-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bench_http(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tableq"))
        .arg("bench-http")
        .args(args)
        .output()
        .expect("tableq runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The scenario names of the result table's rows, in order.
fn table_rows(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| scenario"))
        .map(|l| l.split('|').nth(1).unwrap_or("").trim().to_owned())
        .collect()
}

#[test]
fn a_short_run_loads_checks_and_reports_the_chosen_scenarios() {
    let dir = TempDir::new("run");
    let data = dir.0.to_str().unwrap();
    let args = [
        "--data",
        data,
        "--entities",
        "1000",
        "--seconds",
        "0.2",
        "--only",
        "point",
        "--only",
        "PARTITION",
    ];
    let out = bench_http(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("loaded 1000 entities"), "{stdout}");
    // Each chosen scenario with 1 and 4 clients, nothing else.
    assert_eq!(
        table_rows(&stdout),
        [
            "point get",
            "point get",
            "point as $filter",
            "point as $filter",
            "partition query (1 000 rows)",
            "partition query (1 000 rows)",
            "OR of 5 points",
            "OR of 5 points",
        ],
        "{stdout}"
    );
    // Every row measured something: requests > 0 and a p50.
    for line in stdout.lines().filter(|l| l.starts_with("| point get")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let requests: u64 = cells[4].parse().unwrap_or(0);
        assert!(requests > 0, "{line}");
        assert!(
            cells[6].ends_with("µs") || cells[6].ends_with("ms"),
            "{line}"
        );
    }
    assert!(
        stdout.contains("server memory at the end: peak RSS"),
        "{stdout}"
    );

    // The data set is there now: a second run (server restarted on the directory, without
    // authorization) does not load it again.
    let again = bench_http(&[
        "--data",
        data,
        "--entities",
        "1000",
        "--seconds",
        "0.1",
        "--only",
        "point get",
        "--no-auth",
    ]);
    let stdout = text(&again.stdout);
    assert!(again.status.success(), "{stdout}\n{}", text(&again.stderr));
    assert!(
        stdout.contains("table bench already holds the data set: not loaded again"),
        "{stdout}"
    );
    assert_eq!(table_rows(&stdout), ["point get", "point get"], "{stdout}");
}

#[test]
fn unreachable_endpoints_and_wrong_accounts_are_explained() {
    // A port nobody listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let out = bench_http(&[
        "--endpoint",
        &format!("http://127.0.0.1:{port}/devstoreaccount1"),
        "--entities",
        "1000",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "error: cannot reach http://127.0.0.1:{port}/devstoreaccount1"
        )),
        "{stderr}"
    );

    let out = bench_http(&[
        "--endpoint",
        "http://127.0.0.1:10002/someoneelse",
        "--entities",
        "1000",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("--account someoneelse:KEY"), "{stderr}");
}

#[test]
fn an_only_that_names_no_scenario_is_refused_before_anything_starts() {
    let dir = TempDir::new("only");
    let out = bench_http(&["--data", dir.0.to_str().unwrap(), "--only", "pont get"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--only \"pont get\" matches no scenario; the scenarios are: point get;"),
        "{stderr}"
    );
    assert!(!dir.0.exists(), "no server was started on the directory");
}
