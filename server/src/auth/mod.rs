//! Authorization (layer 3): the checks every request passes after its path is parsed and
//! before any handler runs. The accounts it checks against are shared state
//! (`crate::state::accounts`).
//!
//! * `tableq_client::sign` — account keys, SharedKey / SharedKeyLite strings to sign, SAS
//!   fields: what the server verifies with, and what clients sign with;
//! * `authorize` — the path's account must be hosted (`{account}-secondary` names the
//!   account's read-only secondary endpoint); then (unless [`AuthMode::Off`]) the request
//!   must carry either an `Authorization: SharedKey|SharedKeyLite {account}:{sig}` header
//!   whose signature matches, with an `x-ms-date` (or `Date`) within 15 minutes of now, or a
//!   SAS token (`sig=` in the query) that verifies (module `sas`), or — over HTTPS — an
//!   `Authorization: Bearer <JWT>` that [`crate::state::token::Bearer`] accepts (module `bearer`:
//!   its refusals are 401 `InvalidAuthenticationInfo` / 403 with a `WWW-Authenticate` hint). A table SAS that names a
//!   stored access policy (`si=`) is completed from the table's policies, read from the
//!   store on every request, so a changed or removed policy takes effect at once;
//! * `admit` — once the operation is known (method, target, `If-Match`): whether a bearer
//!   token's principal has the table role it needs, and what a SAS token allows — permissions, its table, its key range. A key-ranged token limits
//!   queries by a typed predicate over PartitionKey/RowKey ([`QueryParams::restriction`],
//!   joined to the parsed `$filter` when the query is planned: never text, never counted
//!   against the comparison limit), and inserts by the keys in the body.
//!
//! Every failure is a 403 before any handler runs, so nothing is written: a request that
//! cannot be authenticated (no or a bad signature, an unknown account, a token out of its
//! time window) is `AuthenticationFailed`; what a valid SAS does not allow has the codes
//! listed in module `sas`. An unknown account is never answered with the accounts this
//! server hosts (they are logged at `info` instead). Each account has its own store
//! (`Hosted`): the store and configuration a request works with are chosen here, by its
//! account.
//!
//! ```text
//! GET /devstoreaccount1/Tables   Authorization: SharedKeyLite devstoreaccount1:<good sig>  → passes
//! GET /devstoreaccount1/Tables   (no Authorization, no sig)                               → 403
//! GET /someoneelse/Tables        (any credentials)                                        → 403
//! ```

pub(crate) use tableq_client::sign;

mod bearer;
mod sas;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Method, request::Parts};
use std::net::SocketAddr;
use std::sync::Arc;
use tableq_model::{CmpOp, Value};
use tableq_planner::Predicate;
use tableq_store::StoreError;

use crate::protocol::context::short_read;
use crate::protocol::error::ApiError;
use crate::protocol::query_options::QueryParams;
use crate::protocol::resource::{Resource, Target};
pub use crate::state::accounts::SECONDARY_SUFFIX;
use crate::state::accounts::{AppState, Hosted};
use crate::state::config::AuthMode;
use crate::state::scope::Secure;
pub(crate) use sas::SasGrant;
use sas::{EntityOp, Operation, unauthenticated};
use sign::{AccountKey, Scheme, SignedParts, string_to_sign};

/// How far `x-ms-date` / `Date` may be from the server's clock (the service's 15 minutes).
const MAX_CLOCK_SKEW: chrono::Duration = chrono::Duration::minutes(15);

/// What an authorized request may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Anything in its account (a valid account-key signature, or authorization off).
    Full,
    /// What a verified SAS token allows.
    Sas(Arc<SasGrant>),
    /// What a verified bearer token's principal may do (by its role).
    Bearer(Arc<bearer::BearerGrant>),
}

impl Grant {
    /// The SAS token behind the grant, if any.
    pub(crate) fn sas(&self) -> Option<Arc<SasGrant>> {
        match self {
            Grant::Full | Grant::Bearer(_) => None,
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
    let op = resource_operation(method, resource, headers);
    sas.allows(&op)?;
    if !sas.has_key_range() {
        return Ok(());
    }
    if let Some((pk, rk)) = keys
        && !sas.covers(pk, rk)
    {
        return Err(SasGrant::outside_range(pk, rk));
    }
    if let Operation::Entity {
        kind: EntityOp::Read,
        keys: None,
        ..
    } = op
    {
        query.restriction = Some(key_range(sas));
    }
    Ok(())
}

fn denied(detail: impl Into<String>) -> ApiError {
    unauthenticated(detail)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Checks the request's account and credentials; returns the account's state, whether
/// the path named its secondary endpoint, and what the request may do (see the module
/// docs). `target` is what the request names, for `si=` tokens (the policy's table).
pub(crate) async fn authorize(
    hosted: &Hosted,
    parts: &Parts,
    account: &str,
    target: &Target,
) -> Result<(Arc<AppState>, bool, Grant), ApiError> {
    let Some((hosted_account, secondary)) = hosted.account(account) else {
        tracing::info!(
            target: "tableq_server::auth",
            "refused a request for account `{account}`, which is not hosted here (hosted: {})",
            hosted.names().join(", ")
        );
        return Err(denied(format!(
            "the account `{account}` is not served here (or the request's credentials are not \
             its own)"
        )));
    };
    let state = hosted_account.state.clone();
    if hosted.mode == AuthMode::Off {
        return Ok((state, secondary, Grant::Full));
    }
    let memo = &hosted_account.key;
    let key = memo.key();
    let secure = parts.extensions.get::<Secure>().is_some();
    if let Some(value) = parts.headers.get(axum::http::header::AUTHORIZATION) {
        let value = value
            .to_str()
            .map_err(|_| denied("the Authorization header is not ASCII"))?;
        if let Some(token) = value
            .trim_start()
            .strip_prefix("Bearer ")
            .or_else(|| value.trim_start().strip_prefix("bearer "))
        {
            let grant = bearer::authenticate(hosted.bearer(), parts, token, account, secure)?;
            return Ok((state, secondary, Grant::Bearer(Arc::new(grant))));
        }
        check_shared_key(key, parts, value, chrono::Utc::now())?;
        return Ok((state, secondary, Grant::Full));
    }
    match sas::read_token(parts.uri.query()).map_err(denied)? {
        Some((fields, signature)) => {
            let token = sas::verify_signature(memo, fields, &signature, url_table(target))?;
            let policy = match (token.policy_id(), token.table()) {
                (Some(id), Some(table)) => Some(stored_policy(&state, table, id).await?),
                _ => None,
            };
            let client = parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip());
            let grant = token.grant(policy.as_ref(), chrono::Utc::now(), client, secure)?;
            Ok((state, secondary, Grant::Sas(Arc::new(grant))))
        }
        None => Err(denied(format!(
            "the request is not signed: send `Authorization: SharedKey {account}:<signature>` \
             (or SharedKeyLite) with x-ms-date, or a SAS token in the query string — the SDKs do \
             this from a connection string with AccountKey (UseDevelopmentStorage=true for \
             devstoreaccount1); `tableq serve --no-auth` turns checking off"
        ))),
    }
}

/// The table a request's URL names (its entities, the table itself or its ACL), which a
/// table SAS without `tn` is checked against.
fn url_table(target: &Target) -> Option<&str> {
    match target {
        Target::TableAcl { table } => Some(table),
        Target::Resource(
            Resource::Table { table }
            | Resource::Entities { table }
            | Resource::Entity { table, .. },
        ) => Some(&table.name),
        _ => None,
    }
}

/// The stored access policy `id` of `table`, read from the store now (so a changed or
/// removed policy changes or revokes every token that names it at once).
async fn stored_policy(
    state: &Arc<AppState>,
    table: &str,
    id: &str,
) -> Result<tableq_store::AccessPolicy, ApiError> {
    let backend = state.backend.clone();
    let name = table.to_owned();
    let policies = short_read(&*state.backend, move || match backend.table_acl(&name) {
        Ok(p) => Ok(Some(p)),
        Err(StoreError::TableNotFound(_)) => Ok(None),
        Err(e) => Err(ApiError::store(e)),
    })
    .await?;
    policies
        .and_then(|p| p.into_iter().find(|s| s.id == id))
        .map(|s| s.policy)
        .ok_or_else(|| {
            denied(format!(
                "the SAS names the stored access policy `{id}`, which table `{table}` does not \
                 have (removed, or never set)"
            ))
        })
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
        return Ok(());
    }
    // Signed over the path without one trailing `/` (hand-written REST helpers sign
    // `/acct/Tables` and send `/acct/Tables/`; both name the same resource).
    if let Some(path) = signed.path.strip_suffix('/')
        && key.verify(
            &string_to_sign(scheme, key.name(), &SignedParts { path, ..signed }),
            signature,
        )
    {
        return Ok(());
    }
    // A request to the secondary endpoint may be signed over the primary path, as the
    // service signs host-style secondaries (the canonicalized resource names the account, not
    // the secondary host). For path-style URLs: the Python SDK sends `/{acct}-secondary/{acct}/…`
    // signed as `/{acct}/…`; the JS SDK (pointed at the secondary after signing) sends
    // `/{acct}-secondary/…` signed as `/{acct}/…`.
    let secondary_prefix = format!("/{}{SECONDARY_SUFFIX}", key.name());
    if let Some(tail) = parts.uri.path().strip_prefix(&secondary_prefix) {
        let account_prefix = format!("/{}", key.name());
        let as_primary = format!("{account_prefix}{tail}");
        let mut candidates = vec![as_primary.as_str()];
        if tail.starts_with(&account_prefix) {
            candidates.push(tail);
        }
        for path in candidates {
            let primary = string_to_sign(scheme, key.name(), &SignedParts { path, ..signed });
            if key.verify(&primary, signature) {
                return Ok(());
            }
        }
    }
    Err(denied(format!(
        "the {scheme_text} signature does not match the string to sign {text:?} with the key \
         of account `{}`",
        key.name()
    )))
}

/// What `method` on `target` is, for SAS permissions.
fn operation<'a>(method: &Method, target: &'a Target, headers: &HeaderMap) -> Operation<'a> {
    match target {
        Target::ServiceProperties => Operation::ServiceProperties {
            write: method != Method::GET,
        },
        Target::ServiceStats => Operation::ServiceStats,
        // tableq's own: a SAS or bearer token never reaches them (the pipeline refuses
        // it first); as a write of the service's settings otherwise.
        Target::Faults | Target::Reset => Operation::ServiceProperties { write: true },
        Target::TableAcl { table } => Operation::TableAcl { table },
        Target::Resource(resource) => resource_operation(method, resource, headers),
    }
}

/// What `method` on `resource` is, for SAS permissions.
fn resource_operation<'a>(
    method: &Method,
    resource: &'a Resource,
    headers: &HeaderMap,
) -> Operation<'a> {
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
            table: &table.name,
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
            let keys = Some((partition_key.value.as_str(), row_key.value.as_str()));
            let (kind, keys) = match method.as_str() {
                "GET" => (EntityOp::Read, keys),
                "DELETE" => (EntityOp::Delete, keys),
                "PUT" | "MERGE" | "PATCH" => writes(keys),
                // Anything else is answered 405 by the dispatcher; ask for the most.
                _ => (EntityOp::Upsert, keys),
            };
            Operation::Entity {
                table: &table.name,
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
    target: &Target,
    headers: &HeaderMap,
    query: &mut QueryParams,
    body: Body,
    max_body_bytes: usize,
) -> Result<Body, ApiError> {
    let sas = match grant {
        Grant::Full => return Ok(body),
        Grant::Sas(sas) => sas,
        Grant::Bearer(bearer) => {
            let op = operation(method, target, headers);
            let table = match target {
                Target::Resource(Resource::Table { table }) => Some(table.name.as_str()),
                _ => None,
            };
            bearer::allows(bearer, &op, table)?;
            return Ok(body);
        }
    };
    let op = operation(method, target, headers);
    sas.allows(&op)?;
    if !sas.has_key_range() {
        return Ok(body);
    }
    match op {
        Operation::Entity {
            kind: EntityOp::Read,
            keys: None,
            ..
        } => {
            query.restriction = Some(key_range(sas));
            Ok(body)
        }
        Operation::Entity {
            kind: EntityOp::Insert,
            ..
        } => check_insert_keys(sas, body, headers, max_body_bytes).await,
        _ => Ok(body),
    }
}

/// The token's key range as a predicate over the keys: from its start (PartitionKey, and
/// RowKey when given) to its end, both inclusive, in key order.
fn key_range(sas: &SasGrant) -> Predicate {
    let key = |name: &str, op, value: &str| Predicate::compare(name, op, Value::from(value));
    let mut range = Vec::new();
    // (operator without a RowKey bound, PartitionKey operator past the bound's partition,
    // RowKey operator inside it)
    let ends = [
        (sas.start(), (CmpOp::Ge, CmpOp::Gt, CmpOp::Ge)),
        (sas.end(), (CmpOp::Le, CmpOp::Lt, CmpOp::Le)),
    ];
    for (bound, (inclusive, pk_op, rk_op)) in ends {
        let Some(bound) = bound else { continue };
        let pk = bound.partition_key.as_str();
        range.push(match &bound.row_key {
            None => key("PartitionKey", inclusive, pk),
            Some(rk) => Predicate::or([
                key("PartitionKey", pk_op, pk),
                Predicate::and([key("PartitionKey", CmpOp::Eq, pk), key("RowKey", rk_op, rk)]),
            ]),
        });
    }
    Predicate::and(range)
}

/// Reads an insert's body, checks its keys against the token's range, and puts it back.
/// A body that is not JSON or has no string keys passes: the handler rejects it.
async fn check_insert_keys(
    sas: &SasGrant,
    body: Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<Body, ApiError> {
    let bytes = crate::protocol::context::read_bytes(body, headers, limit).await?;
    if let Ok(serde_json::Value::Object(entity)) = serde_json::from_slice(&bytes)
        && let (Some(pk), Some(rk)) = (
            entity.get("PartitionKey").and_then(|v| v.as_str()),
            entity.get("RowKey").and_then(|v| v.as_str()),
        )
        && !sas.covers(pk, rk)
    {
        return Err(SasGrant::outside_range(pk, rk));
    }
    Ok(Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::sign::{SasBuilder, SharedKeySigner};
    use crate::state::key_memo::MacMemo;
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
    fn key_ranges_are_predicates_over_the_keys() {
        let key = AccountKey::development();
        let token = SasBuilder::table("t")
            .permissions("r")
            .expiry("2099-01-01")
            .start_key("a'1", Some("r"))
            .end_key("b", None)
            .sign(&key);
        let (fields, sig) = sas::read_token(Some(&token)).unwrap().unwrap();
        let grant = sas::verify(&MacMemo::new(key), fields, &sig, chrono::Utc::now()).unwrap();
        let range = key_range(&grant);
        assert_eq!(
            range.to_string(),
            "(PartitionKey gt 'a''1' or PartitionKey eq 'a''1' and RowKey ge 'r') and \
             PartitionKey le 'b'"
        );
        // The predicate holds exactly where the token covers the keys.
        let keys = ["", "a", "a'1", "a'10", "b", "b\0", "c", "q", "r", "s"];
        for pk in keys {
            for rk in keys {
                let entity = tableq_model::Entity::new(pk, rk);
                assert_eq!(range.eval(&entity), grant.covers(pk, rk), "{pk:?}/{rk:?}");
            }
        }
        // Planned alone, the range is exact: no residual to evaluate.
        let plan = tableq_planner::Planner::new().plan_predicate(range, None, None);
        assert!(plan.is_exact(), "{plan}");
        assert_eq!(plan.ranges.len(), 2);
    }
}
