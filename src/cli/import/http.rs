//! `import --endpoint URL`: sends the entities to a running server, one request per entity
//! over several concurrent connections, and the small Table REST client it uses
//! ([`Endpoint`], shared with `tableq bench-http`).
//!
//! Each request is the service's: `POST {endpoint}/{table}` (*Insert Entity*, with
//! `Prefer: return-no-content`) or, with `--upsert`, `PUT {endpoint}/{table}(PartitionKey=…,
//! RowKey=…)` without `If-Match` (*Insert Or Replace Entity*); the body is the input line
//! as it was read (the server judges it as this command did). An error answer with a code
//! about the entity (`EntityAlreadyExists`, a validation code) rejects that line; an answer
//! about the whole run (`TableNotFound`, `AuthenticationFailed`, any 5xx) or a connection
//! failure stops the run.

use super::{Item, Loader, Mode, Outcome};
use reqwest::{Client, Method, RequestBuilder, StatusCode};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use tableq::model::ErrorCode;
use tableq_server::resource::entity_link;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The protocol version sent (the SDKs' current one).
pub const VERSION: &str = "2019-02-02";

/// A table endpoint of a running server, e.g. `http://127.0.0.1:10002/devstoreaccount1`.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The endpoint without a trailing `/`.
    base: String,
    client: Client,
}

/// How the server answered one write.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Written.
    Written,
    /// Refused for this entity: the service's code and message.
    Rejected(ErrorCode, String),
}

impl Endpoint {
    /// Checks the URL's form (`http://host:port/account`) and makes a client.
    pub fn new(url: &str) -> Result<Endpoint, String> {
        let base = url.trim_end_matches('/');
        let Some(rest) = base.strip_prefix("http://") else {
            return Err(format!(
                "--endpoint {url}: expected http://HOST:PORT/ACCOUNT, the table endpoint \
                 `tableq serve` prints (https is not served)"
            ));
        };
        if !rest.contains('/') {
            return Err(format!(
                "--endpoint {url}: the account is missing (e.g. {base}/devstoreaccount1)"
            ));
        }
        let client = Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Endpoint {
            base: base.to_owned(),
            client,
        })
    }

    /// A request to `{endpoint}/{path}` with the protocol headers every request carries.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}/{path}", self.base))
            .header("x-ms-version", VERSION)
            .header("DataServiceVersion", "3.0")
            .header("Accept", "application/json;odata=nometadata")
    }

    /// Creates the table; `Ok(false)` when it exists already.
    pub async fn create_table(&self, table: &str) -> Result<bool, String> {
        let body = serde_json::json!({ "TableName": table }).to_string();
        let response = self
            .request(Method::POST, "Tables")
            .header("Content-Type", "application/json")
            .header("Prefer", "return-no-content")
            .body(body)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        match classify(response).await? {
            Answer::Written => Ok(true),
            Answer::Rejected(ErrorCode::TableAlreadyExists, _) => Ok(false),
            Answer::Rejected(code, message) => {
                Err(format!("cannot create table {table}: {code}: {message}"))
            }
        }
    }

    /// Writes one entity (`body` is its JSON) with `mode`'s operation.
    pub async fn write(
        &self,
        table: &str,
        mode: Mode,
        keys: (&str, &str),
        body: String,
    ) -> Result<Answer, String> {
        let request = match mode {
            Mode::Insert => self
                .request(Method::POST, table)
                .header("Prefer", "return-no-content"),
            Mode::Upsert => self.request(Method::PUT, &entity_link(table, keys.0, keys.1)),
        };
        let response = request
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        classify(response).await
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

/// Success, an entity's rejection, or (`Err`) a failure of the whole run.
async fn classify(response: reqwest::Response) -> Result<Answer, String> {
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
    ) || StatusCode::from_u16(code.http_status()).is_ok_and(|s| s.is_server_error())
}

/// One entity on its way: line, keys, body.
struct Job {
    line: u64,
    partition_key: String,
    row_key: String,
    body: String,
}

/// Loads through a running server.
pub struct HttpLoader {
    runtime: Runtime,
    /// One queue per connection; an entity's keys choose its queue, so that two lines with
    /// the same keys are sent in input order.
    senders: Vec<mpsc::Sender<Job>>,
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
        outcome: &Arc<Outcome>,
    ) -> Result<(HttpLoader, bool), String> {
        let endpoint = Endpoint::new(url)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let created = runtime.block_on(endpoint.create_table(table))?;
        let mut senders = Vec::with_capacity(connections);
        let mut tasks = Vec::with_capacity(connections);
        for _ in 0..connections.max(1) {
            let (sender, mut receiver) = mpsc::channel::<Job>(64);
            let (endpoint, outcome) = (endpoint.clone(), outcome.clone());
            let table = table.to_owned();
            tasks.push(runtime.spawn(async move {
                while let Some(job) = receiver.recv().await {
                    if outcome.failure().is_some() {
                        continue; // drain the queue
                    }
                    let keys = (job.partition_key.as_str(), job.row_key.as_str());
                    match endpoint.write(&table, mode, keys, job.body).await {
                        Ok(Answer::Written) => outcome.loaded(1),
                        Ok(Answer::Rejected(code, message)) => {
                            outcome.reject(job.line, code, message)
                        }
                        Err(why) => outcome.fail(why),
                    }
                }
            }));
            senders.push(sender);
        }
        Ok((
            HttpLoader {
                runtime,
                senders,
                tasks,
                outcome: outcome.clone(),
            },
            created,
        ))
    }
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
        let mut hasher = DefaultHasher::new();
        (&job.partition_key, &job.row_key).hash(&mut hasher);
        let index = (hasher.finish() % self.senders.len().max(1) as u64) as usize;
        let Some(sender) = self.senders.get(index) else {
            return Err("the import is finished".into());
        };
        sender
            .blocking_send(job)
            .map_err(|_| "the HTTP senders stopped".to_owned())
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
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
        match self.outcome.failure() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}
