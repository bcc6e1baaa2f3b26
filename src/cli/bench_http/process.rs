//! The benchmark's own server: `tableq serve --data DIR --port 0` (this binary) started as
//! a child process, its endpoint read from the banner's first line, and stopped by its pid
//! with SIGTERM (a clean shutdown: the store is closed).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Starts `tableq serve --data DIR --port 0` logging at `log` (`--no-auth` when asked);
/// returns it and its table endpoint.
pub fn start_server(dir: &Path, log: &str, no_auth: bool) -> Result<(Child, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut command = Command::new(exe);
    command.args(["serve", "--port", "0", "--data"]).arg(dir);
    if no_auth {
        command.arg("--no-auth");
    }
    let mut child = command
        .env("RUST_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start tableq serve: {e}"))?;
    let Some(stdout) = child.stdout.take() else {
        return Err("tableq serve has no stdout".into());
    };
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    // Keep reading the rest of the banner on a thread so that the pipe never fills.
    std::thread::spawn(move || lines.for_each(drop));
    match first.split_once(" on ") {
        Some((_, url)) if url.starts_with("http://") => Ok((child, url.trim().to_owned())),
        _ => {
            stop_server(child);
            Err(format!(
                "tableq serve did not start (its first line: {first:?})"
            ))
        }
    }
}

/// SIGTERM by pid (a clean shutdown: the store is closed), then wait.
pub fn stop_server(mut child: Child) {
    let terminated = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    if !terminated {
        let _ = child.kill();
    }
    let _ = child.wait();
}
