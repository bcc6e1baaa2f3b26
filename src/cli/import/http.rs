//! `import --endpoint URL`: sends the entities to a running server as entity group
//! transactions (`$batch`) over several concurrent connections, and the small Table REST
//! client it uses ([`Endpoint`], shared with `tableq bench-http`).
//!
//! * Lines are grouped by PartitionKey into changesets of at most [`BATCH_OPS`] operations
//!   (and at most [`BATCH_BYTES`] of bodies, under the server's 4 MiB request limit): each
//!   operation is the service's *Insert Entity* (`POST {endpoint}/{table}` with
//!   `Prefer: return-no-content`) or, with `--upsert`, *Insert Or Replace Entity* (`PUT
//!   {endpoint}/{table}(PartitionKey=…,RowKey=…)` without `If-Match`); its body is the
//!   input line as it was read (the server judges it as this command did).
//! * A group is sent when it is full, when it would hold the same RowKey twice (the second
//!   goes to the next changeset, so it meets the first as an existing entity, as
//!   sequential inserts would), and every group is sent when [`MAX_PENDING`] lines wait.
//!   A partition's changesets always go to the same connection (chosen by PartitionKey), so
//!   the lines of one partition are written in input order.
//! * A changeset is all or nothing. When the reply names a failed operation (its message
//!   starts with `<index>:`) with a code about that entity (`EntityAlreadyExists`, a
//!   validation code), that line is rejected and the rest of the changeset is sent again.
//!   An answer about the whole run (`TableNotFound`, `AuthenticationFailed`, any 5xx, a
//!   reply without an index) or a connection failure stops the run.
//! * Every request is made by [`Endpoint::request`] and sent by [`Endpoint::send`], which
//!   signs it (SharedKey, [`Endpoint::sign`]) when the endpoint has an account key.
//!
//! The multipart framing needs no unique boundary: an input line holds no line break, and
//! a delimiter is only recognised at the start of a line.
//!
//! ```text
//! tableq import --table people --endpoint http://127.0.0.1:10002/devstoreaccount1 people.jsonl
//! ```

use super::{Item, Loader, Mode, Outcome, worker_for};
use reqwest::header::HeaderValue;
use reqwest::{Client, Method, RequestBuilder, Response, StatusCode};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tableq::model::ErrorCode;
use tableq_server::auth::sign::{AccountKey, Scheme, SharedKeySigner};
use tableq_server::resource::entity_link;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The protocol version sent (the SDKs' current one).
pub const VERSION: &str = "2019-02-02";
/// The most operations in one changeset (the service's limit).
pub const BATCH_OPS: usize = 100;
/// The most body bytes in one changeset (the server refuses requests over 4 MiB).
pub const BATCH_BYTES: usize = 3 << 20;
/// Lines waiting in groups before every group is sent.
const MAX_PENDING: usize = 4096;

/// A table endpoint of a running server, e.g. `http://127.0.0.1:10002/devstoreaccount1`.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The endpoint without a trailing `/`.
    base: String,
    /// The endpoint with a trailing `/`, parsed once: request URLs are resolved against it,
    /// which skips re-parsing (and IDNA-checking) the host on every request.
    base_url: reqwest::Url,
    client: Client,
    /// Signs every request (SharedKey).
    signer: SharedKeySigner,
}

/// How the server answered one write.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Written.
    Written,
    /// Refused for this entity: the service's code and message.
    Rejected(ErrorCode, String),
}

/// How the server answered one changeset.
#[derive(Debug, PartialEq, Eq)]
pub enum BatchAnswer {
    /// Every operation was written.
    Written,
    /// Operation `index` was refused (nothing was written): the service's code and message
    /// (without the `index:` prefix).
    Rejected(usize, ErrorCode, String),
}

/// One write of a changeset: keys and JSON body.
#[derive(Debug, Clone, Copy)]
pub struct BatchWrite<'a> {
    /// PartitionKey.
    pub partition_key: &'a str,
    /// RowKey.
    pub row_key: &'a str,
    /// The entity as JSON (one line).
    pub body: &'a str,
}

impl Endpoint {
    /// Checks the URL's form (`http://host:port/account`) and makes a client that signs
    /// with `key` (SharedKey); `key` must be the URL's account's.
    pub fn new(url: &str, key: AccountKey) -> Result<Endpoint, String> {
        let base = url.trim_end_matches('/');
        let Some(rest) = base.strip_prefix("http://") else {
            return Err(format!(
                "--endpoint {url}: expected http://HOST:PORT/ACCOUNT, the table endpoint \
                 `tableq serve` prints (https is not served)"
            ));
        };
        let Some((_, account)) = rest.split_once('/') else {
            return Err(format!(
                "--endpoint {url}: the account is missing (e.g. {base}/devstoreaccount1)"
            ));
        };
        if account != key.name() {
            return Err(format!(
                "--endpoint {url} names account {account:?}, but requests are signed for \
                 {:?}: give --account {account}:KEY",
                key.name()
            ));
        }
        // The emulator never redirects and is reached directly: without a redirect policy
        // and proxy matching, reqwest does not re-parse every request's URL.
        let client = Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        let base_url = reqwest::Url::parse(&format!("{base}/"))
            .map_err(|e| format!("--endpoint {url}: not a URL: {e}"))?;
        Ok(Endpoint {
            base: base.to_owned(),
            base_url,
            client,
            signer: SharedKeySigner::new(key, Scheme::SharedKey),
        })
    }

    /// A request to `{endpoint}/{path}` with the protocol headers every request carries;
    /// send it with [`Endpoint::send`].
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        // `./` keeps a path such as `t(PartitionKey='a:b',…)` from reading as a scheme.
        let request = match self.base_url.join(&format!("./{path}")) {
            Ok(url) => self.client.request(method, url),
            // Let `send` report the bad URL.
            Err(_) => self.client.request(method, format!("{}/{path}", self.base)),
        };
        request
            .header("x-ms-version", VERSION)
            .header("DataServiceVersion", "3.0")
            .header("Accept", "application/json;odata=nometadata")
    }

    /// Builds `request` (made by [`Endpoint::request`]), signs it ([`Endpoint::sign`]) and
    /// sends it; `Err` is a message for people (the server could not be reached).
    pub async fn send(&self, request: RequestBuilder) -> Result<Response, String> {
        let request = self.signed(request)?;
        self.client
            .execute(request)
            .await
            .map_err(|e| self.unreachable(e))
    }

    /// Builds `request` (made by [`Endpoint::request`]) and signs it, for sending by other
    /// means than this endpoint's client (`bench-http`'s connections).
    pub fn signed(&self, request: RequestBuilder) -> Result<reqwest::Request, String> {
        let mut request = request
            .build()
            .map_err(|e| format!("cannot build a request: {e}"))?;
        self.sign(&mut request)?;
        Ok(request)
    }

    /// `host:port` of the endpoint.
    pub fn authority(&self) -> String {
        let host = self.base_url.host_str().unwrap_or("localhost");
        match self.base_url.port_or_known_default() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }

    /// Signs a built request (SharedKey over its method, `Content-Type`, a fresh
    /// `x-ms-date` and its path and query as sent): the one place where `Authorization` is
    /// added. A server started with `--no-auth` ignores the headers.
    fn sign(&self, request: &mut reqwest::Request) -> Result<(), String> {
        let url = request.url();
        let path_and_query = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let content_type = request
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let headers = self
            .signer
            .headers(request.method().as_str(), &path_and_query, content_type);
        for (name, value) in headers {
            let value =
                HeaderValue::from_str(&value).map_err(|e| format!("cannot sign a request: {e}"))?;
            request.headers_mut().insert(name, value);
        }
        Ok(())
    }

    /// Creates the table; `Ok(false)` when it exists already.
    pub async fn create_table(&self, table: &str) -> Result<bool, String> {
        let body = serde_json::json!({ "TableName": table }).to_string();
        let request = self
            .request(Method::POST, "Tables")
            .header("Content-Type", "application/json")
            .header("Prefer", "return-no-content")
            .body(body);
        match classify(self.send(request).await?).await? {
            Answer::Written => Ok(true),
            Answer::Rejected(ErrorCode::TableAlreadyExists, _) => Ok(false),
            Answer::Rejected(code, message) => {
                Err(format!("cannot create table {table}: {code}: {message}"))
            }
        }
    }

    /// The request of one changeset of `writes` (1 to [`BATCH_OPS`], one PartitionKey) with
    /// `mode`'s operation: `POST {endpoint}/$batch`.
    pub fn batch_request(
        &self,
        table: &str,
        mode: Mode,
        writes: &[BatchWrite<'_>],
    ) -> RequestBuilder {
        let body = changeset_body(&self.base, table, mode, writes);
        self.request(Method::POST, "$batch")
            .header(
                "Content-Type",
                format!("multipart/mixed; boundary={BATCH_BOUNDARY}"),
            )
            .body(body)
    }

    /// Writes one changeset (see [`Endpoint::batch_request`]).
    pub async fn write_batch(
        &self,
        table: &str,
        mode: Mode,
        writes: &[BatchWrite<'_>],
    ) -> Result<BatchAnswer, String> {
        let response = self.send(self.batch_request(table, mode, writes)).await?;
        if response.status() != StatusCode::ACCEPTED {
            return match classify(response).await? {
                // A 2xx other than 202 is not a batch answer.
                Answer::Written => Err("the server did not answer the $batch with 202".into()),
                Answer::Rejected(code, message) => {
                    Err(format!("the server refused a $batch: {code}: {message}"))
                }
            };
        }
        let body = response.text().await.map_err(|e| self.unreachable(e))?;
        batch_answer(&body, writes.len())
    }

    /// The message for a request that got no answer, with the error's causes.
    pub fn unreachable(&self, e: reqwest::Error) -> String {
        let mut message = format!("cannot reach {}: {e}", self.base);
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        message
    }
}

const BATCH_BOUNDARY: &str = "batch_tableq_import";
const CHANGESET_BOUNDARY: &str = "changeset_tableq_import";

/// The `multipart/mixed` body of one changeset.
fn changeset_body(base: &str, table: &str, mode: Mode, writes: &[BatchWrite<'_>]) -> String {
    let size: usize = writes.iter().map(|w| w.body.len() + 300).sum();
    let mut out = String::with_capacity(size + 200);
    out.push_str(&format!(
        "--{BATCH_BOUNDARY}\r\nContent-Type: multipart/mixed; boundary={CHANGESET_BOUNDARY}\r\n\r\n"
    ));
    for (i, w) in writes.iter().enumerate() {
        out.push_str(&format!(
            "--{CHANGESET_BOUNDARY}\r\nContent-Type: application/http\r\n\
             Content-Transfer-Encoding: binary\r\nContent-ID: {i}\r\n\r\n"
        ));
        match mode {
            // A table name is letters and digits: nothing to encode.
            Mode::Insert => out.push_str(&format!(
                "POST {base}/{table} HTTP/1.1\r\nPrefer: return-no-content\r\n"
            )),
            Mode::Upsert => out.push_str(&format!(
                "PUT {base}/{} HTTP/1.1\r\n",
                entity_link(table, w.partition_key, w.row_key)
            )),
        }
        out.push_str(
            "Content-Type: application/json\r\nAccept: application/json;odata=nometadata\r\n\r\n",
        );
        out.push_str(w.body);
        out.push_str("\r\n");
    }
    out.push_str(&format!(
        "--{CHANGESET_BOUNDARY}--\r\n--{BATCH_BOUNDARY}--\r\n"
    ));
    out
}

/// Reads a `$batch` reply of a changeset of `count` operations: every operation's status,
/// or the single failure part (its status, and the `odata.error` whose message starts with
/// the failed operation's index).
fn batch_answer(body: &str, count: usize) -> Result<BatchAnswer, String> {
    let statuses: Vec<(u16, usize)> = body
        .match_indices("HTTP/1.1 ")
        .filter_map(|(at, _)| {
            let code = body.get(at + 9..at + 12)?.parse().ok()?;
            Some((code, at))
        })
        .collect();
    let failed = statuses.iter().find(|(status, _)| *status >= 300);
    let Some(&(status, at)) = failed else {
        return if statuses.len() == count {
            Ok(BatchAnswer::Written)
        } else {
            Err(format!(
                "the $batch reply holds {} answers for {count} operations",
                statuses.len()
            ))
        };
    };
    let error = body[at..]
        .lines()
        .find(|l| l.starts_with("{\"odata.error\""))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    let code = error
        .as_ref()
        .and_then(|e| e["odata.error"]["code"].as_str())
        .and_then(ErrorCode::from_name);
    let message = error
        .as_ref()
        .and_then(|e| e["odata.error"]["message"]["value"].as_str())
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .to_owned();
    let indexed = message
        .split_once(':')
        .and_then(|(i, rest)| Some((i.parse::<usize>().ok()?, rest.to_owned())));
    match (code, indexed) {
        (Some(code), Some((index, message)))
            if index < count && (400..500).contains(&status) && !stops_the_run(code) =>
        {
            Ok(BatchAnswer::Rejected(index, code, message))
        }
        (Some(code), _) => Err(format!(
            "the server answered a $batch operation with {status} {code}: {message}"
        )),
        (None, _) => Err(format!(
            "the server answered a $batch operation with {status}: {message}"
        )),
    }
}

/// Success, an entity's rejection, or (`Err`) a failure of the whole run.
async fn classify(response: Response) -> Result<Answer, String> {
    let status = response.status();
    if status.is_success() {
        // Read the (empty) body so that the connection goes back to the pool.
        let _ = response.bytes().await;
        return Ok(Answer::Written);
    }
    let code = response
        .headers()
        .get("x-ms-error-code")
        .and_then(|v| v.to_str().ok())
        .and_then(ErrorCode::from_name);
    let body = response.text().await.unwrap_or_default();
    let message = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v["odata.error"]["message"]["value"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or(body);
    let message = message.lines().next().unwrap_or("").to_owned();
    match code {
        Some(code) if status.is_client_error() && !stops_the_run(code) => {
            Ok(Answer::Rejected(code, message))
        }
        Some(code) => Err(format!("the server answered {status} {code}: {message}")),
        None => Err(format!("the server answered {status}: {message}")),
    }
}

/// Error codes that would fail every request alike.
fn stops_the_run(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::TableNotFound
            | ErrorCode::AuthenticationFailed
            | ErrorCode::InvalidUri
            | ErrorCode::MethodNotAllowed
            | ErrorCode::InvalidHeaderValue
            | ErrorCode::InvalidContentType
            | ErrorCode::UnsupportedMediaType
            | ErrorCode::ResourceNotFound
            | ErrorCode::InvalidBatchRequest
            | ErrorCode::CommandsInBatchActOnDifferentPartitions
            | ErrorCode::RequestBodyTooLarge
    ) || StatusCode::from_u16(code.http_status()).is_ok_and(|s| s.is_server_error())
}

/// `--account NAME:BASE64KEY` → the account's key (name and key checked).
pub fn parse_account(text: &str) -> Result<AccountKey, String> {
    let (name, key) = text
        .split_once(':')
        .ok_or_else(|| format!("--account {text}: want NAME:BASE64KEY"))?;
    AccountKey::new(name, key).map_err(|e| format!("--account: {e}"))
}

/// The key requests are signed with: `--account`'s, else the development account's.
pub fn signing_key(account: Option<&str>) -> Result<AccountKey, String> {
    account.map_or_else(|| Ok(AccountKey::development()), parse_account)
}

/// One line on its way: line number, keys, body.
struct Job {
    line: u64,
    partition_key: String,
    row_key: String,
    body: String,
}

/// One changeset's lines (one PartitionKey).
type Changeset = Vec<Job>;

/// One partition's pending lines.
#[derive(Default)]
struct Group {
    jobs: Changeset,
    rows: BTreeSet<String>,
    bytes: usize,
}

/// Loads through a running server.
pub struct HttpLoader {
    runtime: Runtime,
    groups: HashMap<String, Group>,
    pending: usize,
    /// One queue per connection; a PartitionKey chooses its queue, so that the changesets
    /// of one partition are sent in input order.
    senders: Vec<mpsc::Sender<Changeset>>,
    tasks: Vec<JoinHandle<()>>,
    outcome: Arc<Outcome>,
}

impl HttpLoader {
    /// Checks the endpoint, creates the table when missing (`true`), and starts
    /// `connections` senders.
    pub fn connect(
        url: &str,
        table: &str,
        mode: Mode,
        connections: usize,
        key: AccountKey,
        outcome: &Arc<Outcome>,
    ) -> Result<(HttpLoader, bool), String> {
        let endpoint = Endpoint::new(url, key)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let created = runtime.block_on(endpoint.create_table(table))?;
        let mut senders = Vec::with_capacity(connections);
        let mut tasks = Vec::with_capacity(connections);
        for _ in 0..connections.max(1) {
            let (sender, mut receiver) = mpsc::channel::<Changeset>(2);
            let (endpoint, outcome) = (endpoint.clone(), outcome.clone());
            let table = table.to_owned();
            tasks.push(runtime.spawn(async move {
                while let Some(changeset) = receiver.recv().await {
                    if outcome.failure().is_some() {
                        continue; // drain the queue
                    }
                    if let Err(why) =
                        send_changeset(&endpoint, &table, mode, changeset, &outcome).await
                    {
                        outcome.fail(why);
                    }
                }
            }));
            senders.push(sender);
        }
        Ok((
            HttpLoader {
                runtime,
                groups: HashMap::new(),
                pending: 0,
                senders,
                tasks,
                outcome: outcome.clone(),
            },
            created,
        ))
    }

    /// Sends one partition's lines to its connection.
    fn send(&mut self, partition_key: &str, jobs: Changeset) -> Result<(), String> {
        if jobs.is_empty() {
            return Ok(());
        }
        self.pending -= jobs.len();
        let index = worker_for(partition_key, self.senders.len());
        let Some(sender) = self.senders.get(index) else {
            return Err("the import is finished".into());
        };
        sender
            .blocking_send(jobs)
            .map_err(|_| "the HTTP senders stopped".to_owned())
    }

    fn send_all(&mut self) -> Result<(), String> {
        let groups = std::mem::take(&mut self.groups);
        for (pk, group) in groups {
            self.send(&pk, group.jobs)?;
        }
        Ok(())
    }
}

/// Sends one changeset: when the server rejects one of its lines, rejects that line and
/// sends the rest again.
async fn send_changeset(
    endpoint: &Endpoint,
    table: &str,
    mode: Mode,
    mut jobs: Changeset,
    outcome: &Outcome,
) -> Result<(), String> {
    while !jobs.is_empty() {
        let writes: Vec<BatchWrite<'_>> = jobs
            .iter()
            .map(|j| BatchWrite {
                partition_key: &j.partition_key,
                row_key: &j.row_key,
                body: &j.body,
            })
            .collect();
        match endpoint.write_batch(table, mode, &writes).await? {
            BatchAnswer::Written => {
                outcome.loaded(jobs.len() as u64);
                return Ok(());
            }
            BatchAnswer::Rejected(index, code, message) => {
                let job = jobs.remove(index);
                outcome.reject(job.line, code, message);
            }
        }
    }
    Ok(())
}

impl Loader for HttpLoader {
    fn push(&mut self, item: Item) -> Result<(), String> {
        if let Some(why) = self.outcome.failure() {
            return Err(why);
        }
        let job = Job {
            line: item.line,
            partition_key: item.entity.partition_key().to_owned(),
            row_key: item.entity.row_key().to_owned(),
            body: item.text,
        };
        let group = self.groups.entry(job.partition_key.clone()).or_default();
        let full = group.jobs.len() >= BATCH_OPS || group.bytes + job.body.len() > BATCH_BYTES;
        if full || group.rows.contains(&job.row_key) {
            let jobs = std::mem::take(&mut group.jobs);
            group.rows.clear();
            group.bytes = 0;
            self.send(&job.partition_key.clone(), jobs)?;
        }
        let group = self.groups.entry(job.partition_key.clone()).or_default();
        group.rows.insert(job.row_key.clone());
        group.bytes += job.body.len();
        group.jobs.push(job);
        self.pending += 1;
        if self.pending >= MAX_PENDING {
            self.send_all()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
        let sent = self.send_all();
        self.senders.clear();
        let tasks = std::mem::take(&mut self.tasks);
        let joined = self.runtime.block_on(async {
            let mut ok = true;
            for task in tasks {
                ok &= task.await.is_ok();
            }
            ok
        });
        if !joined {
            self.outcome.fail("an HTTP sender failed".into());
        }
        sent?;
        match self.outcome.failure() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changeset_body_frames_every_write() {
        let writes = [
            BatchWrite {
                partition_key: "p",
                row_key: "a",
                body: r#"{"PartitionKey":"p","RowKey":"a"}"#,
            },
            BatchWrite {
                partition_key: "p",
                row_key: "b c",
                body: r#"{"PartitionKey":"p","RowKey":"b c"}"#,
            },
        ];
        let insert = changeset_body("http://h:1/acct", "t", Mode::Insert, &writes);
        assert_eq!(
            insert
                .matches("POST http://h:1/acct/t HTTP/1.1\r\n")
                .count(),
            2
        );
        assert!(insert.ends_with("--changeset_tableq_import--\r\n--batch_tableq_import--\r\n"));
        let upsert = changeset_body("http://h:1/acct", "t", Mode::Upsert, &writes);
        assert!(upsert.contains("PUT http://h:1/acct/t(PartitionKey='p',RowKey='b%20c') HTTP/1.1"));
    }

    #[test]
    fn batch_replies_are_read() {
        let ok =
            "--r\r\nHTTP/1.1 204 No Content\r\n\r\n--r\r\nHTTP/1.1 204 No Content\r\n\r\n--r--";
        assert_eq!(batch_answer(ok, 2), Ok(BatchAnswer::Written));
        assert!(batch_answer(ok, 3).is_err());
        let failed = "--r\r\nHTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n\r\n\
             {\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\",\
             \"value\":\"1:The specified entity already exists.\\nRequestId:x\"}}}\r\n--r--";
        assert_eq!(
            batch_answer(failed, 2),
            Ok(BatchAnswer::Rejected(
                1,
                ErrorCode::EntityAlreadyExists,
                "The specified entity already exists.".into()
            ))
        );
        // An index outside the changeset, or a code about the whole run, stops the run.
        assert!(batch_answer(failed, 1).is_err());
        let missing = failed
            .replace("409 Conflict", "404 Not Found")
            .replace("EntityAlreadyExists", "TableNotFound");
        assert!(batch_answer(&missing, 2).is_err());
    }
}
