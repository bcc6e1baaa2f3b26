//! `tableq serve --ready-file PATH` / `--ready-json`: the started server described in one
//! JSON object, for the programs that start it (test fixtures, scripts) — typically with
//! `--port 0`, where the port is known only once it is bound.
//!
//! The object is written only once the server answers requests: after the accept loop
//! runs, a `GET /health/ready` on the bound address (HTTP) has been answered — over
//! HTTPS alone, once a TCP connection to the port has been accepted. `--ready-file` is
//! removed first thing at start (a file left by an earlier run must not announce this one),
//! written to a temporary file beside PATH and renamed onto it (a reader never sees a half
//! object), and removed when the server stops cleanly; `--ready-json` prints the object as
//! one line on stdout, and the start-up banner then goes to stderr so that stdout holds
//! that line alone.
//!
//! ```text
//! $ tableq serve --in-memory --port 0 --ready-json 2>/dev/null
//! {"endpoint":"http://127.0.0.1:41733/devstoreaccount1","connectionString":"…","accounts":[…],…}
//! ```
//!
//! The fields ([`Ready`]): `endpoint` and `connectionString` (the development account's,
//! HTTP when served, else HTTPS), `endpoints` {`http`, `https`} and `ports` {`http`,
//! `https`} (absent when not served), `accounts` — for every hosted account `name`, `key`,
//! `endpoint`, `httpsEndpoint` when HTTPS is served, `connectionString` —, `pid`, `data`
//! (the data directory, `"in-memory"` or `"postgres"`) and `store` (the banner's
//! description).

use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the server may take to answer its own first request.
const PROBE_DEADLINE: Duration = Duration::from_secs(10);

/// The readiness flags of `tableq serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReadyArgs {
    /// Once the server answers requests, write one JSON object describing it (endpoints,
    /// ports, accounts with keys and connection strings, pid, data directory) to PATH
    /// (atomically: a temporary file renamed onto PATH); removed on a clean stop.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// Once the server answers requests, print that JSON object as one line on stdout; the
    /// start-up banner then goes to stderr.
    #[arg(long)]
    pub ready_json: bool,
}

/// One hosted account in the ready object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadyAccount {
    /// The account name.
    pub name: String,
    /// Its base64 key.
    pub key: String,
    /// Its table endpoint (HTTP when served, else HTTPS).
    pub endpoint: String,
    /// Its HTTPS table endpoint, when HTTPS is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_endpoint: Option<String>,
    /// Its connection string (for `endpoint`).
    pub connection_string: String,
}

/// Endpoints or ports by scheme.
#[derive(Debug, Clone, Serialize)]
pub struct ByScheme<T> {
    /// Plain HTTP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<T>,
    /// HTTPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https: Option<T>,
}

/// The ready object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ready {
    /// The development account's table endpoint.
    pub endpoint: String,
    /// The development account's connection string.
    pub connection_string: String,
    /// The table endpoints of the development account by scheme.
    pub endpoints: ByScheme<String>,
    /// The ports by scheme.
    pub ports: ByScheme<u16>,
    /// Every hosted account, the development account first.
    pub accounts: Vec<ReadyAccount>,
    /// The server's process id.
    pub pid: u32,
    /// The data directory, `"in-memory"` or `"postgres"`.
    pub data: String,
    /// The store as the banner describes it.
    pub store: String,
}

impl Ready {
    /// Describes a server bound to `http` and/or `https` hosting `accounts` (name, key),
    /// the development account first.
    pub fn new(
        http: Option<SocketAddr>,
        https: Option<SocketAddr>,
        accounts: &[(String, String)],
        data: String,
        store: String,
    ) -> Ready {
        let origin = |scheme: &str, addr: SocketAddr| format!("{scheme}://{}", shown(addr));
        let accounts: Vec<ReadyAccount> = accounts
            .iter()
            .map(|(name, key)| {
                let http_endpoint = http.map(|a| format!("{}/{name}", origin("http", a)));
                let https_endpoint = https.map(|a| format!("{}/{name}", origin("https", a)));
                let (scheme, endpoint) = match (&http_endpoint, &https_endpoint) {
                    (Some(e), _) => ("http", e.clone()),
                    (None, Some(e)) => ("https", e.clone()),
                    (None, None) => ("http", String::new()),
                };
                ReadyAccount {
                    name: name.clone(),
                    key: key.clone(),
                    connection_string: format!(
                        "DefaultEndpointsProtocol={scheme};AccountName={name};AccountKey={key};\
                         TableEndpoint={endpoint};"
                    ),
                    endpoint,
                    https_endpoint,
                }
            })
            .collect();
        let first = accounts.first();
        Ready {
            endpoint: first.map(|a| a.endpoint.clone()).unwrap_or_default(),
            connection_string: first
                .map(|a| a.connection_string.clone())
                .unwrap_or_default(),
            endpoints: ByScheme {
                http: http.and(first).map(|a| a.endpoint.clone()),
                https: first.and_then(|a| a.https_endpoint.clone()),
            },
            ports: ByScheme {
                http: http.map(|a| a.port()),
                https: https.map(|a| a.port()),
            },
            accounts,
            pid: std::process::id(),
            data,
            store,
        }
    }

    /// The object as one line of JSON.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// An address as clients should use it: a wildcard bind address is the loopback address
/// of its family.
fn shown(mut addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        IpAddr::V6(ip) if ip.is_unspecified() => addr.set_ip(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        _ => {}
    }
    addr
}

/// Waits until the server answers on `http` (a `GET /health/ready` gets an HTTP reply) or,
/// without HTTP, accepts a connection on `https`.
pub async fn wait_until_answering(
    http: Option<SocketAddr>,
    https: Option<SocketAddr>,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let probed = match (http, https) {
            (Some(addr), _) => probe_http(shown(addr)).await,
            (None, Some(addr)) => tokio::net::TcpStream::connect(shown(addr))
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            (None, None) => return Err("the server listens on no port".into()),
        };
        let Err(last) = probed else {
            return Ok(());
        };
        if started.elapsed() > PROBE_DEADLINE {
            return Err(format!(
                "the server did not answer its own readiness request within {PROBE_DEADLINE:?} \
                 ({last})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One `GET /health/ready`: Ok once any HTTP status line comes back.
async fn probe_http(addr: SocketAddr) -> Result<(), String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let request =
        format!("GET /health/ready HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut head = [0u8; 12];
    stream
        .read_exact(&mut head)
        .await
        .map_err(|e| e.to_string())?;
    if head.starts_with(b"HTTP/1.") {
        Ok(())
    } else {
        Err(format!(
            "not an HTTP reply: {:?}",
            String::from_utf8_lossy(&head)
        ))
    }
}

/// Writes `ready` to `path` atomically: a temporary file in the same directory, then a
/// rename onto `path`.
pub fn write_file(path: &Path, ready: &Ready) -> Result<(), String> {
    let name = path
        .file_name()
        .ok_or_else(|| format!("--ready-file {}: not a file name", path.display()))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = path.with_file_name(temp_name);
    let text = format!("{}\n", ready.to_line());
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            format!("--ready-file {}: {e}", path.display())
        })
}

/// Announces readiness as the flags ask: the file, the stdout line.
pub fn announce(args: &ReadyArgs, ready: &Ready) -> Result<(), String> {
    if let Some(path) = &args.ready_file {
        write_file(path, ready)?;
    }
    if args.ready_json {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        // A closed stdout must not stop the server (as for the banner).
        let _ = writeln!(out, "{}", ready.to_line()).and_then(|()| out.flush());
    }
    Ok(())
}

/// Removes the ready file: at start (one left by an earlier run must not announce this one)
/// and after a clean stop (a stale file would describe a dead server).
pub fn withdraw(args: &ReadyArgs) {
    if let Some(path) = &args.ready_file {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_names_every_account_and_both_schemes() {
        let http = "0.0.0.0:4000".parse().ok();
        let https = "127.0.0.1:4001".parse().ok();
        let accounts = vec![
            ("devstoreaccount1".to_owned(), "a2V5".to_owned()),
            ("other".to_owned(), "b3RoZXI=".to_owned()),
        ];
        let ready = Ready::new(http, https, &accounts, "in-memory".into(), "memory".into());
        let json: serde_json::Value = serde_json::from_str(&ready.to_line()).unwrap();
        assert_eq!(json["endpoint"], "http://127.0.0.1:4000/devstoreaccount1");
        assert_eq!(
            json["endpoints"]["http"],
            "http://127.0.0.1:4000/devstoreaccount1"
        );
        assert_eq!(
            json["endpoints"]["https"],
            "https://127.0.0.1:4001/devstoreaccount1"
        );
        assert_eq!(json["ports"]["http"], 4000);
        assert_eq!(json["ports"]["https"], 4001);
        assert_eq!(json["accounts"][1]["name"], "other");
        assert_eq!(
            json["accounts"][1]["connectionString"],
            "DefaultEndpointsProtocol=http;AccountName=other;AccountKey=b3RoZXI=;\
             TableEndpoint=http://127.0.0.1:4000/other;"
        );
        assert_eq!(json["pid"], std::process::id());
        assert_eq!(json["data"], "in-memory");

        let https_only = Ready::new(None, https, &accounts[..1], "/d".into(), "s".into());
        let json: serde_json::Value = serde_json::from_str(&https_only.to_line()).unwrap();
        assert_eq!(json["endpoint"], "https://127.0.0.1:4001/devstoreaccount1");
        assert!(json["endpoints"].get("http").is_none());
        assert!(json["ports"].get("http").is_none());
        assert!(
            json["connectionString"]
                .as_str()
                .unwrap()
                .starts_with("DefaultEndpointsProtocol=https;")
        );
    }

    #[test]
    fn the_file_is_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("tableq-ready-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ready.json");
        std::fs::write(&path, "old").unwrap();
        let ready = Ready::new(
            "127.0.0.1:1".parse().ok(),
            None,
            &[("a".into(), "k".into())],
            "in-memory".into(),
            "memory".into(),
        );
        write_file(&path, &ready).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n") && text.starts_with('{'), "{text}");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
        withdraw(&ReadyArgs {
            ready_file: Some(path.clone()),
            ready_json: false,
        });
        assert!(!path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
