//! A closed standard output or error ends every command quietly (`tableq … | head -1`,
//! `tableq import … 2>&1 | head -1`): exit 0 or 141 (128 + SIGPIPE, `src/cli/pipe.rs`; a
//! usage error keeps its 2),
//! never a panic (101). Each command runs with stdout and stderr on a pipe whose reading
//! end is already closed, so that its first write fails with `BrokenPipe`.

use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn tableq() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tableq"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Runs `args` with stdout and stderr on a closed pipe (and `stdin` as given); waits at most
/// 60 s (then kills it by its pid and fails).
fn run_closed(args: &[&str], stdin: Stdio) -> ExitStatus {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut child = tableq()
        .args(args)
        .stdin(stdin)
        .stdout(writer.try_clone().expect("clone"))
        .stderr(writer)
        .spawn()
        .expect("spawn");
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("tableq {args:?} did not end with a closed stdout/stderr");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_quiet(args: &[&str], status: ExitStatus, allowed: &[i32]) {
    let code = status.code();
    assert_ne!(code, Some(101), "tableq {args:?} panicked");
    assert!(
        code.is_some_and(|c| c == 0 || c == 141 || allowed.contains(&c)),
        "tableq {args:?} ended with {status}"
    );
}

#[test]
fn every_command_ends_quietly_on_a_closed_stdout_and_stderr() {
    let dir = std::env::temp_dir().join(format!("tableq-closed-pipes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    let data = data.to_str().expect("a UTF-8 path");
    let cases: &[(&[&str], &[i32])] = &[
        (&["--help"], &[0]),
        (&["import", "--help"], &[0]),
        (&["validate", "samples/invalid.jsonl"], &[]),
        (&["eval", "samples/entities.jsonl"], &[]),
        (
            &[
                "eval",
                "--filter",
                "Price lt 20",
                "--stats",
                "samples/entities.jsonl",
            ],
            &[],
        ),
        (
            &["explain", "--filter", "PartitionKey eq 'a' and Age gt 3"],
            &[],
        ),
        (&["debug", "tokens", "--filter", "A eq 1"], &[]),
        // An invalid filter keeps its status 2 (the diagnostic is written fallibly).
        (&["debug", "ast", "--filter", "A EQ 1"], &[2]),
        (&["debug", "plan", "--filter", "A eq 1"], &[]),
        (&["gen", "--entities", "20000"], &[0]),
        (
            &[
                "import",
                "--table",
                "people",
                "--data",
                data,
                "samples/entities.jsonl",
            ],
            &[],
        ),
        (
            &[
                "import",
                "--table",
                "people",
                "--data",
                data,
                "samples/invalid.jsonl",
            ],
            &[],
        ),
        (&["bench-http", "--data", data, "--only", "nothing"], &[]),
        // A usage error keeps its status (clap swallows the broken pipe).
        (&["nonsense"], &[2]),
    ];
    for (args, allowed) in cases {
        let status = run_closed(args, Stdio::null());
        assert_quiet(args, status, allowed);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gen_into_a_pipe_closed_after_the_first_line_stops_quietly() {
    // `tableq gen … | head -1`, with the reader closing after one line.
    let mut child = tableq()
        .args(["gen", "--entities", "200000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 64];
    let n = std::io::Read::read(&mut stdout, &mut first).expect("read");
    assert!(n > 0);
    drop(stdout);
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        matches!(out.status.code(), Some(0 | 141)),
        "{}: {stderr}",
        out.status
    );
}
