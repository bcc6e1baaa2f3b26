//! Raw HTTP/1.1 requests to a [`tableq::testing::TestServer`], signed with its account's
//! key (SharedKey) — shared by `tests/testing_server.rs` and `tests/testing_cycles.rs`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use tableq_client::sign::{AccountKey, Scheme, SharedKeySigner};

/// One request; `signed` with `account`'s key (name, base64 key). Returns (status, body).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    account: Option<(&str, &str)>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let content_type = (!body.is_empty()).then_some("application/json");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nx-ms-version: 2019-02-02\r\n\
         Accept: application/json;odata=nometadata\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if let Some(content_type) = content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    if let Some((name, key)) = account {
        let key = AccountKey::new(name, key).expect("a valid account key");
        let signer = SharedKeySigner::new(key, Scheme::SharedKey);
        for (name, value) in signer.headers(method, path, content_type) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    stream.write_all(format!("{head}\r\n{body}").as_bytes())?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let status = reply
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP reply: {reply:?}")))?;
    let body = reply
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// The number of threads of this process (`Threads:` of /proc/self/status).
pub fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|n| n.trim().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

pub fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status")
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("a Threads: line")
}
