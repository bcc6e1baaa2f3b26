//! Authorization: the one check every request passes after its path is parsed and before
//! any handler runs ([`authorize`]).
//!
//! Today it checks that the path's account is the account this server hosts (else 403
//! `AuthenticationFailed`, as the service answers for an unknown account); requests are
//! not yet authenticated. SharedKey / SharedKeyLite signatures and SAS tokens slot in
//! here: they need the method, the raw path and query, and the headers, all of which
//! [`authorize`] receives.
//!
//! ```text
//! GET /devstoreaccount1/Tables   → passes (the hosted account)
//! GET /someoneelse/Tables        → 403 AuthenticationFailed
//! ```

use axum::http::request::Parts;
use tableq_model::ErrorCode;

use crate::config::ServerConfig;
use crate::error::ApiError;

/// Checks that the request may act on `account`.
pub(crate) fn authorize(
    config: &ServerConfig,
    parts: &Parts,
    account: &str,
) -> Result<(), ApiError> {
    let _ = parts;
    if account != config.account.name {
        return Err(ApiError::new(
            ErrorCode::AuthenticationFailed,
            format!(
                "no account named `{account}` on this server: it hosts `{}` (URLs are \
                 /{}/Tables, /{}/{{table}}()...)",
                config.account.name, config.account.name, config.account.name
            ),
        ));
    }
    Ok(())
}
