//! Authorization: the accounts a server hosts, and the checks every request passes after
//! its path is parsed and before any handler runs.
//!
//! * [`sign`] (public) — account keys, SharedKey / SharedKeyLite strings to sign and
//!   signers, SAS builders: what the server verifies with, and what tests and tools sign
//!   with;
//! * `authorize` — the path's account must be hosted; then (unless [`AuthMode::Off`]) the
//!   request must carry either an `Authorization: SharedKey|SharedKeyLite {account}:{sig}`
//!   header whose signature matches, with an `x-ms-date` (or `Date`) within 15 minutes of
//!   now, or a SAS token (`sig=` in the query) that verifies (module `sas`);
//! * `admit` — once the operation is known (method, resource, `If-Match`): what a SAS
//!   token allows — permissions, its table, its key range. A key-ranged token limits
//!   queries by adding the range to `$filter`, and inserts by the keys in the body.
//!
//! Every failure is 403 `AuthenticationFailed`, before any handler runs, so nothing is
//! written. Each account has its own store (`Hosted`): the store and configuration a
//! request works with are chosen here, by its account.
//!
//! ```text
//! GET /devstoreaccount1/Tables   Authorization: SharedKeyLite devstoreaccount1:<good sig>  → passes
//! GET /devstoreaccount1/Tables   (no Authorization, no sig)                               → 403
//! GET /someoneelse/Tables        (any credentials)                                        → 403
//! ```

pub mod sign;

mod sas;

use axum::body::Body;
use axum::http::{HeaderMap, Method, request::Parts};
use std::sync::Arc;
use tableq_model::ErrorCode;
use tableq_store::Backend;

use crate::config::{Account, AuthMode, ServerConfig};
use crate::context::AppState;
use crate::error::ApiError;
use crate::query::QueryParams;
use crate::resource::Resource;
pub(crate) use sas::SasGrant;
use sas::{EntityOp, Operation};
use sign::{AccountKey, Scheme, SignedParts, string_to_sign};

/// How far `x-ms-date` / `Date` may be from the server's clock (the service's 15 minutes).
const MAX_CLOCK_SKEW: chrono::Duration = chrono::Duration::minutes(15);

/// One hosted account: its key and its state (store + configuration).
struct HostedAccount {
    key: AccountKey,
    state: Arc<AppState>,
}

/// The accounts a server hosts (the first is the configuration's account) and whether
/// requests must be signed.
pub(crate) struct Hosted {
    accounts: Vec<HostedAccount>,
    mode: AuthMode,
}

impl Hosted {
    /// The configuration's account, served from `backend`.
    pub(crate) fn new(backend: Arc<dyn Backend>, config: ServerConfig) -> Result<Hosted, String> {
        let key = AccountKey::new(&config.account.name, &config.account.key)
            .map_err(|e| e.to_string())?;
        let mode = config.auth;
        Ok(Hosted {
            accounts: vec![HostedAccount {
                key,
                state: Arc::new(AppState { backend, config }),
            }],
            mode,
        })
    }

    /// Adds an account with its own store (same limits as the first account).
    pub(crate) fn add(
        &mut self,
        account: Account,
        backend: Arc<dyn Backend>,
    ) -> Result<(), String> {
        let key = AccountKey::new(&account.name, &account.key).map_err(|e| e.to_string())?;
        if self.find(&account.name).is_some() {
            return Err(format!("account {:?} is already hosted", account.name));
        }
        let config = ServerConfig {
            account,
            ..self.primary().config.clone()
        };
        self.accounts.push(HostedAccount {
            key,
            state: Arc::new(AppState { backend, config }),
        });
        Ok(())
    }

    /// The first account's state.
    pub(crate) fn primary(&self) -> &Arc<AppState> {
        // `new` creates the first account and nothing removes accounts.
        &self.accounts[0].state
    }

    /// Every account's state, the first first.
    pub(crate) fn states(&self) -> impl Iterator<Item = &Arc<AppState>> {
        self.accounts.iter().map(|a| &a.state)
    }

    /// The names of the hosted accounts.
    pub(crate) fn names(&self) -> Vec<String> {
        self.accounts
            .iter()
            .map(|a| a.key.name().to_owned())
            .collect()
    }

    fn find(&self, name: &str) -> Option<&HostedAccount> {
        self.accounts.iter().find(|a| a.key.name() == name)
    }
}

/// What an authorized request may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Anything in its account (a valid account-key signature, or authorization off).
    Full,
    /// What a verified SAS token allows.
    Sas(Arc<SasGrant>),
}

impl Grant {
    /// The SAS token behind the grant, if any.
    pub(crate) fn sas(&self) -> Option<Arc<SasGrant>> {
        match self {
            Grant::Full => None,
            Grant::Sas(sas) => Some(Arc::clone(sas)),
        }
    }
}

/// Checks one operation of a `$batch` against the SAS token the batch was sent with: its
/// permissions and table as [`admit`] checks a single request, and the key range on the
/// operation's keys (`keys`: the URL's, or an insert's body's once decoded). A range read
/// is limited to the range as a single query is.
pub(crate) fn admit_operation(
    sas: &SasGrant,
    method: &Method,
    resource: &Resource,
    headers: &HeaderMap,
    query: &mut QueryParams,
    keys: Option<(&str, &str)>,
) -> Result<(), ApiError> {
    let op = operation(method, resource, headers);
    sas.allows(&op).map_err(denied)?;
    if !sas.has_key_range() {
        return Ok(());
    }
    if let Some((pk, rk)) = keys
        && !sas.covers(pk, rk)
    {
        return Err(denied(format!(
            "the entity (PartitionKey '{pk}', RowKey '{rk}') is outside the SAS's key range"
        )));
    }
    if let Operation::Entity {
        kind: EntityOp::Read,
        keys: None,
        ..
    } = op
    {
        query.filter = Some(restrict_filter(query.filter.as_deref(), sas));
    }
    Ok(())
}

fn denied(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::AuthenticationFailed, detail)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Checks the request's account and credentials; returns the account's state and what the
/// request may do (see the module docs).
pub(crate) fn authorize(
    hosted: &Hosted,
    parts: &Parts,
    account: &str,
) -> Result<(Arc<AppState>, Grant), ApiError> {
    let Some(hosted_account) = hosted.find(account) else {
        return Err(denied(format!(
            "no account named `{account}` on this server: it hosts {} (URLs are \
             /{{account}}/Tables, /{{account}}/{{table}}()...)",
            hosted
                .names()
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let state = hosted_account.state.clone();
    if hosted.mode == AuthMode::Off {
        return Ok((state, Grant::Full));
    }
    let key = &hosted_account.key;
    if let Some(value) = parts.headers.get(axum::http::header::AUTHORIZATION) {
        let value = value
            .to_str()
            .map_err(|_| denied("the Authorization header is not ASCII"))?;
        check_shared_key(key, parts, value, chrono::Utc::now())?;
        return Ok((state, Grant::Full));
    }
    match sas::read_token(parts.uri.query()).map_err(denied)? {
        Some((fields, signature)) => {
            let grant = sas::verify(key, fields, &signature, chrono::Utc::now()).map_err(denied)?;
            Ok((state, Grant::Sas(Arc::new(grant))))
        }
        None => Err(denied(format!(
            "the request is not signed: send `Authorization: SharedKey {account}:<signature>` \
             (or SharedKeyLite) with x-ms-date, or a SAS token in the query string — the SDKs do \
             this from a connection string with AccountKey (UseDevelopmentStorage=true for \
             devstoreaccount1); `tableq serve --no-auth` turns checking off"
        ))),
    }
}

/// Verifies an `Authorization` header against `key` at time `now`.
fn check_shared_key(
    key: &AccountKey,
    parts: &Parts,
    value: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), ApiError> {
    let (scheme_text, credential) = value.trim().split_once(' ').ok_or_else(|| {
        denied("the Authorization header is not `SharedKey <account>:<signature>`")
    })?;
    let scheme = match scheme_text {
        "SharedKey" => Scheme::SharedKey,
        "SharedKeyLite" => Scheme::SharedKeyLite,
        other => {
            return Err(denied(format!(
                "the Authorization scheme `{other}` is not supported: use SharedKey or \
                 SharedKeyLite"
            )));
        }
    };
    let (name, signature) = credential.trim().split_once(':').ok_or_else(|| {
        denied(format!(
            "the Authorization header is not `{scheme_text} <account>:<signature>`"
        ))
    })?;
    if name != key.name() {
        return Err(denied(format!(
            "the request is signed for account `{name}`, but its URL names account `{}`",
            key.name()
        )));
    }
    let headers = &parts.headers;
    let (date_header, date) = match headers.get("x-ms-date") {
        Some(_) => ("x-ms-date", header(headers, "x-ms-date")),
        None => ("Date", header(headers, "date")),
    };
    if date.is_empty() {
        return Err(denied(
            "the request has no x-ms-date or Date header: a signed request must say when it \
             was signed",
        ));
    }
    let sent = chrono::DateTime::parse_from_rfc2822(date).map_err(|_| {
        denied(format!(
            "the {date_header} header `{date}` is not an RFC 1123 date such as `Mon, 23 Nov \
             2026 16:00:00 GMT`"
        ))
    })?;
    let skew = now.signed_duration_since(sent);
    if skew > MAX_CLOCK_SKEW || -skew > MAX_CLOCK_SKEW {
        return Err(denied(format!(
            "the {date_header} header `{date}` is more than 15 minutes from the server's \
             clock ({})",
            sign::http_date(now)
        )));
    }
    let signed = SignedParts {
        method: parts.method.as_str(),
        path: parts.uri.path(),
        query: parts.uri.query(),
        content_md5: header(headers, "content-md5"),
        content_type: header(headers, "content-type"),
        date,
    };
    let text = string_to_sign(scheme, key.name(), &signed);
    if key.verify(&text, signature) {
        Ok(())
    } else {
        Err(denied(format!(
            "the {scheme_text} signature does not match the string to sign {text:?} with the \
             key of account `{}`",
            key.name()
        )))
    }
}

/// What `method` on `resource` is, for SAS permissions.
fn operation(method: &Method, resource: &Resource, headers: &HeaderMap) -> Operation {
    let writes = |keys| {
        let conditional = headers.contains_key(axum::http::header::IF_MATCH);
        (
            if conditional {
                EntityOp::Update
            } else {
                EntityOp::Upsert
            },
            keys,
        )
    };
    match resource {
        Resource::Tables { .. } if method == Method::POST => Operation::CreateTable,
        Resource::Tables { .. } => Operation::QueryTables,
        Resource::Table { .. } if method == Method::DELETE => Operation::DeleteTable,
        Resource::Table { .. } => Operation::QueryTables,
        Resource::Batch { .. } => Operation::Batch,
        Resource::Entities { table } => Operation::Entity {
            table: table.name.clone(),
            kind: if method == Method::POST {
                EntityOp::Insert
            } else {
                EntityOp::Read
            },
            keys: None,
        },
        Resource::Entity {
            table,
            partition_key,
            row_key,
        } => {
            let keys = Some((partition_key.value.clone(), row_key.value.clone()));
            let (kind, keys) = match method.as_str() {
                "GET" => (EntityOp::Read, keys),
                "DELETE" => (EntityOp::Delete, keys),
                "PUT" | "MERGE" | "PATCH" => writes(keys),
                // Anything else is answered 405 by the dispatcher; ask for the most.
                _ => (EntityOp::Upsert, keys),
            };
            Operation::Entity {
                table: table.name.clone(),
                kind,
                keys,
            }
        }
    }
}

/// Applies a grant to a request whose operation is now known: a SAS token's permissions,
/// table and key range (see the module docs). Returns the body, read and put back when an
/// insert's keys had to be checked.
pub(crate) async fn admit(
    grant: &Grant,
    method: &Method,
    resource: &Resource,
    headers: &HeaderMap,
    query: &mut QueryParams,
    body: Body,
    max_body_bytes: usize,
) -> Result<Body, ApiError> {
    let Grant::Sas(sas) = grant else {
        return Ok(body);
    };
    let op = operation(method, resource, headers);
    sas.allows(&op).map_err(denied)?;
    if !sas.has_key_range() {
        return Ok(body);
    }
    match op {
        Operation::Entity {
            kind: EntityOp::Read,
            keys: None,
            ..
        } => {
            query.filter = Some(restrict_filter(query.filter.as_deref(), sas));
            Ok(body)
        }
        Operation::Entity {
            kind: EntityOp::Insert,
            ..
        } => check_insert_keys(sas, body, headers, max_body_bytes).await,
        _ => Ok(body),
    }
}

/// An OData string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `filter` limited to the token's key range.
fn restrict_filter(filter: Option<&str>, sas: &SasGrant) -> String {
    let mut range = Vec::new();
    // (comparison without a row key bound, strict comparison, row key comparison)
    let ends = [
        (sas.start(), ("ge", "gt", "ge")),
        (sas.end(), ("le", "lt", "le")),
    ];
    for (bound, (inclusive, pk_op, rk_op)) in ends {
        let Some(bound) = bound else { continue };
        let pk = literal(&bound.partition_key);
        range.push(match &bound.row_key {
            None => format!("PartitionKey {inclusive} {pk}"),
            Some(rk) => format!(
                "(PartitionKey {pk_op} {pk} or (PartitionKey eq {pk} and RowKey {rk_op} {}))",
                literal(rk)
            ),
        });
    }
    let range = range.join(" and ");
    match filter.map(str::trim).filter(|f| !f.is_empty()) {
        Some(f) => format!("({f}) and {range}"),
        None => range,
    }
}

/// Reads an insert's body, checks its keys against the token's range, and puts it back.
/// A body that is not JSON or has no string keys passes: the handler rejects it.
async fn check_insert_keys(
    sas: &SasGrant,
    body: Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<Body, ApiError> {
    let bytes = crate::context::read_bytes(body, headers, limit).await?;
    if let Ok(serde_json::Value::Object(entity)) = serde_json::from_slice(&bytes)
        && let (Some(pk), Some(rk)) = (
            entity.get("PartitionKey").and_then(|v| v.as_str()),
            entity.get("RowKey").and_then(|v| v.as_str()),
        )
        && !sas.covers(pk, rk)
    {
        return Err(denied(format!(
            "the entity (PartitionKey '{pk}', RowKey '{rk}') is outside the SAS's key range"
        )));
    }
    Ok(Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::sign::{SasBuilder, SharedKeySigner};
    use axum::http::Request;

    fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn shared_key_signatures_verify_and_fail_as_they_should() {
        let key = AccountKey::development();
        let now = chrono::Utc::now();
        let date = sign::http_date(now);
        for scheme in [Scheme::SharedKey, Scheme::SharedKeyLite] {
            let signer = SharedKeySigner::new(key.clone(), scheme);
            let path = "/devstoreaccount1/t()?$filter=a%20eq%201";
            let auth = signer.authorization("GET", path, None, &date);
            let ok = parts(
                "GET",
                path,
                &[("x-ms-date", &date), ("authorization", &auth)],
            );
            check_shared_key(&key, &ok, &auth, now).unwrap();
            // The Date header is used when there is no x-ms-date.
            let with_date = parts("GET", path, &[("date", &date)]);
            check_shared_key(&key, &with_date, &auth, now).unwrap();
            // Another path, another method (SharedKey only), a stale date, no date.
            let other = parts("GET", "/devstoreaccount1/u()", &[("x-ms-date", &date)]);
            assert!(check_shared_key(&key, &other, &auth, now).is_err());
            let stale = now + chrono::Duration::minutes(16);
            assert!(check_shared_key(&key, &ok, &auth, stale).is_err());
            let undated = parts("GET", path, &[]);
            assert!(check_shared_key(&key, &undated, &auth, now).is_err());
        }
        let signer = SharedKeySigner::new(key.clone(), Scheme::SharedKey);
        let auth = signer.authorization("GET", "/devstoreaccount1/Tables", None, &date);
        let delete = parts(
            "DELETE",
            "/devstoreaccount1/Tables",
            &[("x-ms-date", &date)],
        );
        assert!(check_shared_key(&key, &delete, &auth, now).is_err());
        let bad_date = parts(
            "GET",
            "/devstoreaccount1/Tables",
            &[("x-ms-date", "2026-11-23T16:00:00Z")],
        );
        let e = check_shared_key(&key, &bad_date, &auth, now).unwrap_err();
        assert!(e.detail().unwrap().contains("RFC 1123"), "{e:?}");
        for bad in [
            "SharedKey",
            "Bearer abc",
            "SharedKey devstoreaccount1",
            "SharedKey other:abc",
        ] {
            let p = parts("GET", "/devstoreaccount1/Tables", &[("x-ms-date", &date)]);
            let e = check_shared_key(&key, &p, bad, now).unwrap_err();
            assert_eq!(e.code(), "AuthenticationFailed");
        }
    }

    #[test]
    fn key_ranges_restrict_query_filters() {
        let key = AccountKey::development();
        let token = SasBuilder::table("t")
            .permissions("r")
            .expiry("2099-01-01")
            .start_key("a'1", Some("r"))
            .end_key("b", None)
            .sign(&key);
        let (fields, sig) = sas::read_token(Some(&token)).unwrap().unwrap();
        let grant = sas::verify(&key, fields, &sig, chrono::Utc::now()).unwrap();
        assert_eq!(
            restrict_filter(Some("Age gt 3 or X"), &grant),
            "(Age gt 3 or X) and (PartitionKey gt 'a''1' or (PartitionKey eq 'a''1' and \
             RowKey ge 'r')) and PartitionKey le 'b'"
        );
        assert_eq!(
            restrict_filter(Some("  "), &grant),
            "(PartitionKey gt 'a''1' or (PartitionKey eq 'a''1' and RowKey ge 'r')) and \
             PartitionKey le 'b'"
        );
    }
}
