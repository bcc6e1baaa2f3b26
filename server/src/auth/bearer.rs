//! `Authorization: Bearer <JWT>`: authentication by a token ([`crate::state::token::Bearer`]) and
//! authorization by the principal's table role.
//!
//! | case | answer |
//! |---|---|
//! | a bearer token over plain HTTP | 403 `AuthenticationFailed` |
//! | `x-ms-version` before 2019-02-02 (or none) | 403 `AuthenticationFailed` |
//! | a server that trusts no issuer | 403 `AuthenticationFailed` |
//! | a token that fails a check (signature, `alg`, `iss`, `aud`, `exp`/`nbf`, `tid`) | 401 `InvalidAuthenticationInfo` |
//! | a valid token whose principal lacks the role | 403 `AuthorizationPermissionMismatch` |
//!
//! Every one carries the service's hint
//! `WWW-Authenticate: Bearer authorization_uri=https://{authority}/{tenant}/oauth2/authorize,
//! resource_id=https://storage.azure.com` (the tenant is the token's, else `common`; the
//! authority is the local issuer's configured origin when the server runs it, else Entra
//! ID's `login.microsoftonline.com` — never the request's `Host`).
//! Reading needs Storage Table Data Reader; writing entities, creating and deleting tables,
//! `$batch`, setting service properties and ACLs need Storage Table Data Contributor.

use axum::http::request::Parts;
use std::sync::Arc;
use tableq_model::ErrorCode;

use super::sas::{EntityOp, Operation};
use crate::protocol::error::ApiError;
use crate::state::accounts::BearerSetup;
use crate::state::token::{Principal, Role, STORAGE_AUDIENCE};

/// The first `x-ms-version` that may carry a bearer token.
const FIRST_BEARER_VERSION: &str = "2019-02-02";

/// A verified token's principal, for one account.
#[derive(Debug, Clone)]
pub(crate) struct BearerGrant {
    setup: Arc<BearerSetup>,
    principal: Principal,
    account: String,
    challenge: String,
}

impl PartialEq for BearerGrant {
    fn eq(&self, other: &BearerGrant) -> bool {
        Arc::ptr_eq(&self.setup, &other.setup)
            && self.principal == other.principal
            && self.account == other.account
    }
}

impl Eq for BearerGrant {}

/// The `WWW-Authenticate` value for a request: the authorization URI of the local issuer
/// when the server runs one (at the origin the request reached), else Entra ID's.
fn challenge(setup: Option<&Arc<BearerSetup>>, parts: &Parts, tenant: Option<&str>) -> String {
    let authority = match setup {
        Some(setup) if setup.bearer.local.is_some() => setup.origin_for(parts),
        _ => "https://login.microsoftonline.com",
    };
    let tenant = tenant
        .filter(|t| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        })
        .unwrap_or("common");
    format!(
        "Bearer authorization_uri={authority}/{tenant}/oauth2/authorize, \
         resource_id={STORAGE_AUDIENCE}"
    )
}

/// The tenant a token names, read without verifying it (only for the challenge's hint).
fn unverified_tenant(token: &str) -> Option<String> {
    jsonwebtoken::dangerous::insecure_decode_claims::<serde_json::Value>(token)
        .ok()?
        .get("tid")?
        .as_str()
        .map(str::to_owned)
}

/// Authenticates `Authorization: Bearer {token}` (see the module docs).
pub(crate) fn authenticate(
    setup: Option<&Arc<BearerSetup>>,
    parts: &Parts,
    token: &str,
    account: &str,
    secure: bool,
) -> Result<BearerGrant, ApiError> {
    let token = token.trim();
    let tenant = unverified_tenant(token);
    let hint = challenge(setup, parts, tenant.as_deref());
    let failed = |code, detail: String| ApiError::new(code, detail).with_challenge(hint.clone());
    if !secure {
        return Err(failed(
            ErrorCode::AuthenticationFailed,
            "bearer tokens are accepted over HTTPS only, as the service requires: use the \
             https:// endpoint (tableq serve --tls …)"
                .into(),
        ));
    }
    let version = parts
        .headers
        .get("x-ms-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if version < FIRST_BEARER_VERSION {
        return Err(failed(
            ErrorCode::AuthenticationFailed,
            format!(
                "bearer tokens need x-ms-version {FIRST_BEARER_VERSION} or later (the request \
                 has {})",
                if version.is_empty() { "none" } else { version }
            ),
        ));
    }
    let Some(setup) = setup else {
        return Err(failed(
            ErrorCode::AuthenticationFailed,
            "this server trusts no token issuer (tableq serve runs its own with --local-issuer, \
             or trusts another with --trust-issuer)"
                .into(),
        ));
    };
    let principal = setup
        .bearer
        .verify(token, account, &setup.origins)
        .map_err(|e| failed(ErrorCode::InvalidAuthenticationInfo, e.to_string()))?;
    Ok(BearerGrant {
        setup: setup.clone(),
        principal,
        account: account.to_owned(),
        challenge: hint,
    })
}

/// The role an operation needs, and the table it acts on (for table-scoped assignments).
fn needs<'a>(op: &Operation<'a>) -> (Role, Option<&'a str>) {
    match op {
        Operation::QueryTables | Operation::ServiceStats => (Role::Reader, None),
        Operation::ServiceProperties { write } => (
            if *write {
                Role::Contributor
            } else {
                Role::Reader
            },
            None,
        ),
        Operation::CreateTable | Operation::Batch => (Role::Contributor, None),
        Operation::DeleteTable => (Role::Contributor, None),
        Operation::TableAcl { table } => (Role::Contributor, Some(table)),
        Operation::Entity { table, kind, .. } => (
            if *kind == EntityOp::Read {
                Role::Reader
            } else {
                Role::Contributor
            },
            Some(table),
        ),
    }
}

/// Whether the grant's principal may do `op` (see the module docs).
pub(crate) fn allows(
    grant: &BearerGrant,
    op: &Operation,
    table_of_request: Option<&str>,
) -> Result<(), ApiError> {
    let (needed, table) = needs(op);
    let table = table.or(table_of_request);
    let role = grant
        .setup
        .bearer
        .role(&grant.principal, &grant.account, table);
    if role.is_some_and(|r| r >= needed) {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::AuthorizationPermissionMismatch,
        format!(
            "principal `{}` has {} here; this operation needs {}",
            grant.principal.id,
            match role {
                Some(r) => format!("the role {}", r.azure_name()),
                None => "no table role".into(),
            },
            needed.azure_name()
        ),
    )
    .with_challenge(grant.challenge.clone()))
}
