//! `tableq serve` as a child process for end-to-end tests: started on a free loopback port
//! (`--port 0`, the port read from its banner), stopped by its pid (SIGTERM, then SIGKILL
//! after a few seconds), also when the test panics (`Drop`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `tableq serve`.
pub struct Serve {
    child: Option<Child>,
    /// The table endpoint it printed, e.g. `http://127.0.0.1:40123/devstoreaccount1`.
    pub endpoint: String,
    /// Its port.
    pub port: u16,
    /// The banner lines read so far (stdout).
    banner: Arc<Mutex<Vec<String>>>,
    /// What it wrote on stderr so far.
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts `tableq serve --port 0 <args>` (logging at `warn`) and waits for its banner.
    pub fn start(args: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
            .args(["serve", "--port", "0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tableq serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr_pipe = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr_pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut s) = stderr.lock() {
                        s.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            });
        }
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let banner = Arc::new(Mutex::new(vec![first.clone()]));
        {
            // Keep reading so that the pipe never fills.
            let banner = banner.clone();
            std::thread::spawn(move || {
                for line in lines.map_while(Result::ok) {
                    if let Ok(mut b) = banner.lock() {
                        b.push(line);
                    }
                }
            });
        }
        let mut serve = Serve {
            child: Some(child),
            endpoint: String::new(),
            port: 0,
            banner,
            stderr,
        };
        let Some(endpoint) = first
            .split_once(" on ")
            .map(|(_, url)| url.trim().to_owned())
            .filter(|url| url.starts_with("http://"))
        else {
            let stderr = serve.stop();
            panic!("tableq serve did not start: first line {first:?}, stderr {stderr}");
        };
        serve.port = endpoint
            .trim_start_matches("http://")
            .split(['/', ':'])
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {endpoint}"));
        serve.endpoint = endpoint;
        serve
    }

    /// The banner's lines, waiting until at least `count` were printed (or 10 s passed).
    pub fn banner(&self, count: usize) -> Vec<String> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = self.banner.lock().map(|b| b.clone()).unwrap_or_default();
            if lines.len() >= count || Instant::now() > until {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the server by its pid (SIGTERM: a clean shutdown; SIGKILL after 10 s) and
    /// returns its stderr.
    pub fn stop(&mut self) -> String {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let until = Instant::now() + Duration::from_secs(10);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
            // Let the reader thread see the end of the pipe.
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.stop();
    }
}
