//! [`TableServiceClient`]: one account's table endpoint — how requests are addressed,
//! signed ([`Credential`]) and sent, and the table operations (create, delete, get, list).
//! Entity operations go through the [`TableClient`](crate::TableClient) of one table
//! ([`TableServiceClient::table`], defined with it in `table.rs`: the entities are built on
//! the service, not the other way round).
//!
//! Every request carries the protocol headers the SDKs send (`x-ms-version` [`VERSION`],
//! `DataServiceVersion: 3.0`, `Accept: application/json;odata=minimalmetadata` unless
//! [`TableServiceClient::with_metadata`] says otherwise) and is
//! signed last, over exactly what is sent ([`TableServiceClient::prepare`]): SharedKey or
//! SharedKeyLite with a fresh `x-ms-date`, or a SAS token appended to the query.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tableq_client::ClientError> {
//! use tableq_client::TableServiceClient;
//! let service = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?;
//! service.create_table("People").await?;
//! let names = service.list_tables().await?;
//! assert!(names.contains(&"People".to_owned()));
//! # Ok(()) }
//! ```

use crate::account::{DEFAULT_PORT, DEV_ACCOUNT};
use crate::error::{ClientError, service_error};
use crate::path;
use crate::sign::{AccountKey, Scheme, SharedKeySigner};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Method, RequestBuilder, Response};
use std::sync::Arc;
use tableq_model::json::MetadataLevel;

/// The protocol version sent (the SDKs' current one).
pub const VERSION: &str = "2019-02-02";

/// How requests are authorized.
#[derive(Debug, Clone)]
pub enum Credential {
    /// `Authorization: SharedKey {account}:{signature}` (the Python SDK's scheme).
    SharedKey(AccountKey),
    /// `Authorization: SharedKeyLite {account}:{signature}` (the JavaScript SDK's scheme).
    SharedKeyLite(AccountKey),
    /// A shared access signature: the token's query string (without `?`), appended to every
    /// request URL (e.g. from [`SasBuilder::sign`](crate::sign::SasBuilder::sign)).
    Sas(String),
    /// Nothing: for a server started with `tableq serve --no-auth`.
    Anonymous,
}

impl Credential {
    /// The account a key credential signs for.
    fn account(&self) -> Option<&str> {
        match self {
            Credential::SharedKey(k) | Credential::SharedKeyLite(k) => Some(k.name()),
            Credential::Sas(_) | Credential::Anonymous => None,
        }
    }
}

/// A client of one account's table endpoint. Cheap to clone (clones share connections).
#[derive(Clone, Debug)]
pub struct TableServiceClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The endpoint without a trailing `/`.
    base: String,
    /// The endpoint with a trailing `/`, parsed once: request URLs are resolved against it.
    base_url: reqwest::Url,
    /// The account (the path's first segment).
    account: String,
    http: reqwest::Client,
    credential: Credential,
    /// The signer of a key credential.
    signer: Option<SharedKeySigner>,
    /// The `Accept` header: the metadata level answers are asked in.
    accept: &'static str,
}

impl TableServiceClient {
    /// A client of the table endpoint `endpoint` — path-style, as the emulator serves it:
    /// `http://HOST:PORT/ACCOUNT`. A key credential must be the account's.
    pub fn new(endpoint: &str, credential: Credential) -> Result<TableServiceClient, ClientError> {
        let base = endpoint.trim_end_matches('/');
        let Some(rest) = base.strip_prefix("http://") else {
            return Err(ClientError::Config(format!(
                "endpoint {endpoint}: expected http://HOST:PORT/ACCOUNT, a table endpoint such \
                 as the one `tableq serve` prints (this client speaks plain HTTP)"
            )));
        };
        let account = match rest.split_once('/') {
            Some((_, account)) if !account.is_empty() && !account.contains('/') => account,
            _ => {
                return Err(ClientError::Config(format!(
                    "endpoint {endpoint}: the account is missing (e.g. {base}/{DEV_ACCOUNT})"
                )));
            }
        };
        if let Some(key_account) = credential.account().filter(|a| *a != account) {
            return Err(ClientError::AccountMismatch {
                endpoint: endpoint.to_owned(),
                endpoint_account: account.to_owned(),
                key_account: key_account.to_owned(),
            });
        }
        let base_url = reqwest::Url::parse(&format!("{base}/"))
            .map_err(|e| ClientError::Config(format!("endpoint {endpoint}: not a URL: {e}")))?;
        // The emulator never redirects and is reached directly: without a redirect policy
        // and proxy matching, reqwest does not re-parse every request's URL.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| ClientError::Config(format!("cannot make an HTTP client: {e}")))?;
        let signer = match &credential {
            Credential::SharedKey(k) => Some(SharedKeySigner::new(k.clone(), Scheme::SharedKey)),
            Credential::SharedKeyLite(k) => {
                Some(SharedKeySigner::new(k.clone(), Scheme::SharedKeyLite))
            }
            Credential::Sas(_) | Credential::Anonymous => None,
        };
        Ok(TableServiceClient {
            inner: Arc::new(Inner {
                base: base.to_owned(),
                base_url,
                account: account.to_owned(),
                http,
                credential,
                signer,
                accept: accept(MetadataLevel::MinimalMetadata),
            }),
        })
    }

    /// The same client asking for answers at `level` (default: minimal metadata, which
    /// carries the types that JSON cannot show; at `NoMetadata` entities read back infer
    /// their types from JSON, so only load generators that count rows should use it).
    pub fn with_metadata(&self, level: MetadataLevel) -> TableServiceClient {
        let i = &self.inner;
        TableServiceClient {
            inner: Arc::new(Inner {
                base: i.base.clone(),
                base_url: i.base_url.clone(),
                account: i.account.clone(),
                http: i.http.clone(),
                credential: i.credential.clone(),
                signer: i.signer.clone(),
                accept: accept(level),
            }),
        }
    }

    /// A client from a connection string: `UseDevelopmentStorage=true` (the emulator on
    /// `127.0.0.1:10002` with the development account), or
    /// `AccountName=…;AccountKey=…;TableEndpoint=…` (SharedKey), or
    /// `TableEndpoint=…;SharedAccessSignature=…` — the forms `tableq serve` prints and the
    /// SDKs read.
    ///
    /// ```
    /// use tableq_client::TableServiceClient;
    /// let c = TableServiceClient::from_connection_string("UseDevelopmentStorage=true").unwrap();
    /// assert_eq!(c.endpoint(), "http://127.0.0.1:10002/devstoreaccount1");
    /// ```
    pub fn from_connection_string(text: &str) -> Result<TableServiceClient, ClientError> {
        let mut fields = std::collections::HashMap::new();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = part.split_once('=') else {
                return Err(ClientError::Config(format!(
                    "connection string: `{part}` is not NAME=VALUE"
                )));
            };
            fields.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
        let get = |name: &str| fields.get(name).map(String::as_str);
        if get("usedevelopmentstorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return TableServiceClient::new(
                &format!("http://127.0.0.1:{DEFAULT_PORT}/{DEV_ACCOUNT}"),
                Credential::SharedKey(AccountKey::development()),
            );
        }
        let endpoint = match (get("tableendpoint"), get("accountname")) {
            (Some(e), _) => e.to_owned(),
            (None, Some(name)) => {
                let protocol = get("defaultendpointsprotocol").unwrap_or("http");
                format!("{protocol}://127.0.0.1:{DEFAULT_PORT}/{name}")
            }
            (None, None) => {
                return Err(ClientError::Config(
                    "connection string: give TableEndpoint or AccountName".into(),
                ));
            }
        };
        let credential = match (get("sharedaccesssignature"), get("accountkey")) {
            (Some(sas), _) => Credential::Sas(sas.trim_start_matches('?').to_owned()),
            (None, Some(key)) => {
                let name = match get("accountname") {
                    Some(n) => n.to_owned(),
                    None => endpoint
                        .trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                };
                Credential::SharedKey(
                    AccountKey::new(&name, key)
                        .map_err(|e| ClientError::Config(format!("connection string: {e}")))?,
                )
            }
            (None, None) => Credential::Anonymous,
        };
        TableServiceClient::new(&endpoint, credential)
    }

    /// The endpoint, without a trailing `/` (e.g. `http://127.0.0.1:10002/devstoreaccount1`).
    pub fn endpoint(&self) -> &str {
        &self.inner.base
    }

    /// The account of the endpoint.
    pub fn account(&self) -> &str {
        &self.inner.account
    }

    /// The credential requests are authorized with.
    pub fn credential(&self) -> &Credential {
        &self.inner.credential
    }

    /// `host:port` of the endpoint (for raw connections, [`crate::conn::Connection`]).
    pub fn authority(&self) -> String {
        let url = &self.inner.base_url;
        let host = url.host_str().unwrap_or("localhost");
        match url.port_or_known_default() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }

    /// A request to `{endpoint}/{path}` (`path` relative to the account, already
    /// percent-encoded, e.g. from [`crate::path`]) with the protocol headers every request
    /// carries; send it with [`send`](Self::send) or build it with
    /// [`prepare`](Self::prepare).
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        // `./` keeps a path such as `t(PartitionKey='a:b',…)` from reading as a scheme.
        let request = match self.inner.base_url.join(&format!("./{path}")) {
            Ok(url) => self.inner.http.request(method, url),
            // Let `prepare` report the bad URL.
            Err(_) => self
                .inner
                .http
                .request(method, format!("{}/{path}", self.inner.base)),
        };
        request
            .header("x-ms-version", VERSION)
            .header("DataServiceVersion", "3.0")
            .header("Accept", self.inner.accept)
    }

    /// Builds a request made by [`request`](Self::request) and authorizes it (the one place
    /// where `Authorization` or a SAS token is added), for sending by this client or by other
    /// means ([`crate::conn::Connection`]).
    pub fn prepare(&self, request: RequestBuilder) -> Result<reqwest::Request, ClientError> {
        let mut request = request
            .build()
            .map_err(|e| ClientError::Request(e.to_string()))?;
        match &self.inner.credential {
            Credential::Sas(token) => {
                let url = request.url_mut();
                let query = match url.query() {
                    Some(q) if !q.is_empty() => format!("{q}&{token}"),
                    _ => token.clone(),
                };
                url.set_query(Some(&query));
            }
            Credential::SharedKey(_) | Credential::SharedKeyLite(_) => {
                let Some(signer) = &self.inner.signer else {
                    return Ok(request);
                };
                let url = request.url();
                let path_and_query = match url.query() {
                    Some(query) => format!("{}?{query}", url.path()),
                    None => url.path().to_owned(),
                };
                let content_type = request
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok());
                let headers =
                    signer.headers(request.method().as_str(), &path_and_query, content_type);
                for (name, value) in headers {
                    let value = HeaderValue::from_str(&value)
                        .map_err(|e| ClientError::Request(format!("cannot sign: {e}")))?;
                    request.headers_mut().insert(name, value);
                }
            }
            Credential::Anonymous => {}
        }
        Ok(request)
    }

    /// Prepares ([`prepare`](Self::prepare)) and sends a request; any answer, success or
    /// not, is `Ok` (see [`send_ok`](Self::send_ok)).
    pub async fn send(&self, request: RequestBuilder) -> Result<Response, ClientError> {
        let request = self.prepare(request)?;
        self.inner
            .http
            .execute(request)
            .await
            .map_err(|e| ClientError::unreachable(&self.inner.base, &e))
    }

    /// Sends a request and turns an error status into [`ClientError::Service`].
    pub async fn send_ok(&self, request: RequestBuilder) -> Result<Response, ClientError> {
        let response = self.send(request).await?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(self.refusal(response).await)
        }
    }

    /// The [`ClientError::Service`] of an error answer (its body is read).
    pub async fn refusal(&self, response: Response) -> ClientError {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (code, request_id) = (header("x-ms-error-code"), header("x-ms-request-id"));
        match response.bytes().await {
            Ok(body) => ClientError::Service(service_error(
                status,
                code.as_deref(),
                request_id.as_deref(),
                &body,
            )),
            Err(e) => ClientError::unreachable(&self.inner.base, &e),
        }
    }

    /// Reads a whole answer's body.
    pub(crate) async fn body(&self, response: Response) -> Result<Vec<u8>, ClientError> {
        response
            .bytes()
            .await
            .map(|b| b.to_vec())
            .map_err(|e| ClientError::unreachable(&self.inner.base, &e))
    }

    /// Creates a table (`POST Tables`); a taken name is `TableAlreadyExists` (409).
    pub async fn create_table(&self, name: &str) -> Result<(), ClientError> {
        let body = serde_json::json!({ "TableName": name }).to_string();
        let request = self
            .request(Method::POST, "Tables")
            .header(CONTENT_TYPE, "application/json")
            .header("Prefer", "return-no-content")
            .body(body);
        let response = self.send_ok(request).await?;
        self.body(response).await?;
        Ok(())
    }

    /// Creates a table unless it exists: `true` when this call created it.
    pub async fn create_table_if_missing(&self, name: &str) -> Result<bool, ClientError> {
        match self.create_table(name).await {
            Ok(()) => Ok(true),
            Err(e) if e.code() == Some(tableq_model::ErrorCode::TableAlreadyExists) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes a table and its entities (`DELETE Tables('t')`).
    pub async fn delete_table(&self, name: &str) -> Result<(), ClientError> {
        let response = self
            .send_ok(self.request(Method::DELETE, &path::table_link(name)))
            .await?;
        self.body(response).await?;
        Ok(())
    }

    /// The table's name in the case it was created with (`GET Tables('t')`); a missing
    /// table is `ResourceNotFound` (404).
    pub async fn get_table(&self, name: &str) -> Result<String, ClientError> {
        let response = self
            .send_ok(self.request(Method::GET, &path::table_link(name)))
            .await?;
        let body = self.body(response).await?;
        let json: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ClientError::Protocol(format!("a table is not JSON: {e}")))?;
        json["TableName"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ClientError::Protocol("a table without TableName".into()))
    }

    /// One page of tables (`GET Tables`, optionally with a `$filter` on `TableName` and
    /// `$top`), from `next` (a `NextTableName` token of an earlier page).
    pub async fn query_tables(
        &self,
        filter: Option<&str>,
        top: Option<u32>,
        next: Option<&str>,
    ) -> Result<TablesPage, ClientError> {
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(f) = filter {
            query.push(("$filter", f.to_owned()));
        }
        if let Some(t) = top {
            query.push(("$top", t.to_string()));
        }
        if let Some(n) = next {
            query.push(("NextTableName", n.to_owned()));
        }
        let mut request = self.request(Method::GET, "Tables");
        if !query.is_empty() {
            request = request.query(&query);
        }
        let response = self.send_ok(request).await?;
        let next = response
            .headers()
            .get("x-ms-continuation-nexttablename")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned);
        let body = self.body(response).await?;
        let json: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ClientError::Protocol(format!("a table list is not JSON: {e}")))?;
        let names = json["value"]
            .as_array()
            .ok_or_else(|| ClientError::Protocol("a table list without `value`".into()))?
            .iter()
            .filter_map(|t| t["TableName"].as_str().map(str::to_owned))
            .collect();
        Ok(TablesPage { names, next })
    }

    /// Every table's name, following continuations.
    pub async fn list_tables(&self) -> Result<Vec<String>, ClientError> {
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let page = self.query_tables(None, None, next.as_deref()).await?;
            out.extend(page.names);
            match page.next {
                Some(n) => next = Some(n),
                None => return Ok(out),
            }
        }
    }
}

/// The `Accept` header of a metadata level.
fn accept(level: MetadataLevel) -> &'static str {
    match level {
        MetadataLevel::NoMetadata => "application/json;odata=nometadata",
        MetadataLevel::MinimalMetadata => "application/json;odata=minimalmetadata",
        MetadataLevel::FullMetadata => "application/json;odata=fullmetadata",
    }
}

/// One page of a table listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablesPage {
    /// The tables' names, in the case they were created with.
    pub names: Vec<String>,
    /// The `NextTableName` token of the next page, `None` on the last page.
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked() {
        let dev = || Credential::SharedKey(AccountKey::development());
        let ok = TableServiceClient::new("http://127.0.0.1:1/devstoreaccount1/", dev()).unwrap();
        assert_eq!(ok.endpoint(), "http://127.0.0.1:1/devstoreaccount1");
        assert_eq!(ok.account(), "devstoreaccount1");
        assert_eq!(ok.authority(), "127.0.0.1:1");
        for bad in [
            "https://h/a",
            "http://h:1",
            "http://h:1/",
            "http://h/a/b",
            "h:1/a",
        ] {
            assert!(
                matches!(
                    TableServiceClient::new(bad, dev()),
                    Err(ClientError::Config(_))
                ),
                "{bad}"
            );
        }
        let e = TableServiceClient::new("http://h:1/other", dev()).unwrap_err();
        assert!(
            matches!(&e, ClientError::AccountMismatch { endpoint_account, key_account, .. }
                if endpoint_account == "other" && key_account == "devstoreaccount1"),
            "{e}"
        );
        // A SAS names no account: any endpoint goes.
        assert!(
            TableServiceClient::new("http://h:1/other", Credential::Sas("sv=x".into())).is_ok()
        );
    }

    #[test]
    fn connection_strings_are_read() {
        let c = TableServiceClient::from_connection_string(&format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={};\
             TableEndpoint=http://127.0.0.1:4242/devstoreaccount1;",
            crate::DEV_ACCOUNT_KEY
        ))
        .unwrap();
        assert_eq!(c.endpoint(), "http://127.0.0.1:4242/devstoreaccount1");
        assert!(matches!(c.credential(), Credential::SharedKey(_)));
        let c = TableServiceClient::from_connection_string(
            "TableEndpoint=http://h:1/acct;SharedAccessSignature=?sv=2019-02-02&sig=x",
        )
        .unwrap();
        assert!(matches!(c.credential(), Credential::Sas(t) if t == "sv=2019-02-02&sig=x"));
        assert!(TableServiceClient::from_connection_string("nonsense").is_err());
        assert!(TableServiceClient::from_connection_string("AccountKey=abc").is_err());
    }

    #[test]
    fn requests_are_signed_over_what_is_sent() {
        let key = AccountKey::development();
        let c = TableServiceClient::new(
            "http://127.0.0.1:1/devstoreaccount1",
            Credential::SharedKeyLite(key.clone()),
        )
        .unwrap();
        let r = c
            .prepare(
                c.request(Method::GET, "t()")
                    .query(&[("$filter", "A eq 'x y'")]),
            )
            .unwrap();
        let date = r.headers()["x-ms-date"].to_str().unwrap().to_owned();
        let expected = SharedKeySigner::new(key, Scheme::SharedKeyLite).authorization(
            "GET",
            &format!("/devstoreaccount1/t()?{}", r.url().query().unwrap()),
            None,
            &date,
        );
        assert_eq!(r.headers()["authorization"], expected.as_str());
        assert_eq!(r.headers()["x-ms-version"], VERSION);

        let sas = TableServiceClient::new(
            "http://127.0.0.1:1/devstoreaccount1",
            Credential::Sas("sv=1&sig=abc".into()),
        )
        .unwrap();
        let r = sas
            .prepare(sas.request(Method::GET, "t()").query(&[("$top", "1")]))
            .unwrap();
        assert_eq!(r.url().query(), Some("%24top=1&sv=1&sig=abc"));
        assert!(r.headers().get("authorization").is_none());
    }
}
