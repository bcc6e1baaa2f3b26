//! `tableq serve` on a full disk (issue 28, item 6), on a small file system this test
//! mounts (a 20 MiB tmpfs; as root, as CI runs): a refused write's 503 `ServerBusy` names
//! the disk — the data directory's file on it — and a burst of refused writes logs one
//! warning, not one per write (later lines carry a count).
//!
//! Where mounting is not permitted the test prints `SKIPPED: <reason>` and passes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A directory removed at the end of the test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Result<TempDir, String> {
        let path = std::env::temp_dir().join(format!(
            "tableq-disk-full-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A tmpfs mounted for the test, unmounted when dropped (before its mount point is removed).
struct Tmpfs {
    path: PathBuf,
    _dir: TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = TempDir::new("mnt")?;
        let path = dir.0.join("mnt");
        std::fs::create_dir(&path).map_err(|e| format!("cannot create the mount point: {e}"))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mounting a tmpfs is not permitted here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { path, _dir: dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

/// The server, killed (by its pid) when dropped without [`Serve::stop`].
struct Serve(Child);

impl Serve {
    /// Stops the server with SIGTERM (by its pid) and waits for it, so that its buffered
    /// log is written out.
    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if let Ok(Some(status)) = self.0.try_wait() {
                assert!(status.success(), "tableq serve exited with {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("tableq serve did not stop within 30 s of SIGTERM");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Fills the file system holding `filler` with it, then frees `leave` bytes of it.
fn fill(filler: &Path, leave: u64) {
    let mut f = std::fs::File::create(filler).expect("filler");
    let block = vec![0x5Au8; 1 << 20];
    while f.write_all(&block).is_ok() {}
    let len = f.metadata().expect("filler length").len();
    f.set_len(len.saturating_sub(leave))
        .expect("free some space");
}

/// One request on its own connection: the status and the whole response.
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response");
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response)
}

#[test]
fn refused_writes_name_the_full_disk_and_are_logged_once_a_period_with_a_count() {
    let fs = match Tmpfs::mount("20m") {
        Ok(fs) => fs,
        Err(reason) => {
            println!("SKIPPED: {reason}");
            return;
        }
    };
    let data = fs.path.join("tableq-data");
    let log_dir = TempDir::new("log").expect("a directory for the log");
    let log_path = log_dir.0.join("stderr");
    let log = std::fs::File::create(&log_path).expect("the log file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["serve", "--no-auth", "--port", "0", "--data"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("start tableq serve");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the banner");
    let server = Serve(child);
    let port: u16 = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    let (status, response) = http(
        port,
        "POST",
        "/devstoreaccount1/Tables",
        r#"{"TableName":"full"}"#,
    );
    assert_eq!(status, 201, "{response}");
    fill(&fs.path.join("filler"), 2 << 20);

    // Insert until the disk is full.
    let pad = "x".repeat(2000);
    let entity = |i: usize| format!(r#"{{"PartitionKey":"p","RowKey":"r{i:06}","Pad":"{pad}"}}"#);
    let mut i = 0;
    let refused = loop {
        assert!(i < 20_000, "the disk never filled up");
        let (status, response) = http(port, "POST", "/devstoreaccount1/full", &entity(i));
        i += 1;
        match status {
            201 => {}
            503 => break response,
            _ => panic!("an insert got {status}: {response}"),
        }
    };
    // The message names the disk: the file of the data directory that could not grow.
    let dir = data.display().to_string();
    assert!(refused.contains("ServerBusy"), "{refused}");
    assert!(
        refused.contains("the disk holding") && refused.contains(&dir),
        "the message does not name the disk holding {dir}: {refused}"
    );
    // Many more refused writes within the period.
    let started = Instant::now();
    for k in 0..40 {
        let (status, response) = http(port, "POST", "/devstoreaccount1/full", &entity(i + k));
        assert_eq!(status, 503, "{response}");
        assert!(response.contains(&dir), "{response}");
    }
    let burst = started.elapsed();
    // Free the disk, so that the store closes cleanly, and stop the server.
    std::fs::remove_file(fs.path.join("filler")).expect("free the disk");
    server.stop();

    let mut log = String::new();
    std::fs::File::open(&log_path)
        .and_then(|mut f| f.read_to_string(&mut log))
        .expect("the server's log");
    let refusals: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("is full"))
        .collect();
    println!("refused-write lines of the log:\n{}", refusals.join("\n"));
    if burst < Duration::from_secs(9) {
        // 41 refused writes within one 10 s period: the first is logged, the rest counted.
        assert_eq!(refusals.len(), 1, "{log}");
        assert!(
            refusals[0].contains("further refused writes are counted"),
            "{log}"
        );
    } else {
        // A very slow machine: the burst spans periods, but each line counts the others.
        assert!(refusals.len() <= 1 + burst.as_secs() as usize / 10, "{log}");
        assert!(
            refusals[1..]
                .iter()
                .all(|l| l.contains("writes refused in the last"))
        );
    }
}
