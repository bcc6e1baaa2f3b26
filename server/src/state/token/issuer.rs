//! The local token issuer: an RSA signing key kept in the keys directory
//! (`signing-key.pem`, mode 0600, made on first use), tokens signed with it, and the three
//! OpenID Connect / OAuth 2.0 endpoints clients ask for tokens at.
//!
//! The endpoints live under a tenant — a GUID or a name — as Entra ID's do:
//!
//! | request | answer |
//! |---|---|
//! | `GET /{tenant}/v2.0/.well-known/openid-configuration` | the discovery document (`issuer` `https://{host}/{tenant}/v2.0`, `token_endpoint`, `jwks_uri`, …) |
//! | `GET /{tenant}/discovery/v2.0/keys` | the JWKS: the signing key's public half |
//! | `POST /{tenant}/oauth2/v2.0/token` | a client-credentials grant → `{"token_type":"Bearer","expires_in":3599,"access_token":"…"}` |
//!
//! These paths have three or more segments, and every Table-service path has at most two
//! (`/{account}/{resource}`), so no tenant name, not even an account's, can collide with
//! an account's resources. They are served over HTTPS only (as the SDKs require), and only
//! when the server runs the issuer (`tableq serve --local-issuer`).
//!
//! Any tenant is accepted, but only **registered clients whose secret matches** get a
//! token: the role-assignments file's principals with a `clientSecret`, or, without a file,
//! the client generated on the first start ([`GeneratedClient`]).
//! Any other client id, or a wrong secret, is answered `401 invalid_client` with Entra ID's
//! `AADSTS7000215` — the same answer for both, so the endpoint does not tell which client
//! ids exist. The token's `oid` and `sub` are the client id, and its `roles` claim holds the
//! role the role assignments give that principal
//! ([`RoleAssignments::issued_role`](super::RoleAssignments::issued_role)).
//!
//! The issuer's URL (in discovery and in every token's `iss`) is one of the server's own
//! HTTPS origins, from its configuration: the one the request's `Host` names when that is
//! one of them, else the first (the bound address, or `--public-url`). A `Host` header is
//! never copied into a document.

use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;
use serde_json::json;
use std::path::{Path, PathBuf};

use super::error::TokenError;
use super::roles::{Role, RoleAssignments};

/// The audience of tokens for Azure Storage.
pub const STORAGE_AUDIENCE: &str = "https://storage.azure.com";
/// The lifetime of tokens from the token endpoint, in seconds.
pub const TOKEN_LIFETIME_SECONDS: u64 = 3599;
/// The signing key's file in the keys directory.
pub const SIGNING_KEY_FILE: &str = "signing-key.pem";

/// The local issuer's signing key (see the module docs).
pub struct LocalIssuer {
    pub(crate) encoding: EncodingKey,
    decoding: DecodingKey,
    key_id: String,
    modulus: String,
    exponent: String,
    path: PathBuf,
}

impl std::fmt::Debug for LocalIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("LocalIssuer")
            .field("key_id", &self.key_id)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// What goes into one token of the local issuer.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// `https://host:port`: the issuer is `{origin}/{tenant}/v2.0`.
    pub origin: String,
    /// The tenant (`tid`).
    pub tenant: String,
    /// The principal (`oid`, `sub`).
    pub principal: String,
    /// The role put in the `roles` claim, if any.
    pub role: Option<Role>,
    /// `aud` (default: `https://storage.azure.com`).
    pub audience: String,
    /// Seconds from now to `exp`.
    pub lifetime_seconds: u64,
}

impl LocalIssuer {
    /// The issuer whose key is kept in `dir` (made, 2048-bit RSA, when there is none;
    /// a key file that cannot be read is an error rather than silently replaced, since
    /// tokens and trust already issued depend on it).
    pub fn open(dir: &Path) -> Result<LocalIssuer, TokenError> {
        let path = dir.join(SIGNING_KEY_FILE);
        let file_error = |what: String| TokenError::File {
            path: path.clone(),
            what,
        };
        if dir.is_dir() {
            crate::state::tls::check_private_dir(dir).map_err(|e| file_error(e.to_string()))?;
        }
        if path.exists() {
            crate::state::tls::check_private_file(&path).map_err(|e| file_error(e.to_string()))?;
        }
        let key = match std::fs::read_to_string(&path) {
            Ok(pem) => rsa::RsaPrivateKey::from_pkcs8_pem(&pem)
                .map_err(|_| file_error("not a PKCS#8 PEM RSA private key".into()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut rng = rsa::rand_core::OsRng;
                let key = rsa::RsaPrivateKey::new(&mut rng, 2048)
                    .map_err(|e| file_error(format!("cannot make a key: {e}")))?;
                let pem = key
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| file_error(format!("cannot encode the key: {e}")))?;
                crate::state::tls::create_private_dir(dir)
                    .and_then(|()| crate::state::tls::write_private(&path, pem.as_bytes()))
                    .map_err(|e| file_error(e.to_string()))?;
                key
            }
            Err(e) => return Err(file_error(e.to_string())),
        };
        LocalIssuer::from_key(&key, path)
    }

    fn from_key(key: &rsa::RsaPrivateKey, path: PathBuf) -> Result<LocalIssuer, TokenError> {
        use base64::Engine;
        let file_error = |what: String| TokenError::File {
            path: path.clone(),
            what,
        };
        let encoding = EncodingKey::from_rsa_der(&rsa_pkcs1_der(key).map_err(file_error)?);
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let n = key.n().to_bytes_be();
        let e = key.e().to_bytes_be();
        let decoding = DecodingKey::from_rsa_raw_components(&n, &e);
        let modulus = b64.encode(&n);
        let exponent = b64.encode(&e);
        // The key id: the JWK thumbprint (RFC 7638) of the public key.
        let thumbprint_input = format!(r#"{{"e":"{exponent}","kty":"RSA","n":"{modulus}"}}"#);
        let digest = ring::digest::digest(&ring::digest::SHA256, thumbprint_input.as_bytes());
        let key_id = b64.encode(digest.as_ref());
        Ok(LocalIssuer {
            encoding,
            decoding,
            key_id,
            modulus,
            exponent,
            path,
        })
    }

    /// The signing key's id (`kid` of its tokens and its JWKS entry).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The key file.
    pub fn key_file(&self) -> &Path {
        &self.path
    }

    pub(crate) fn decoding_key(&self) -> &DecodingKey {
        &self.decoding
    }

    /// The JWKS document (the public key only).
    pub fn jwks(&self) -> serde_json::Value {
        json!({"keys": [{
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": self.key_id,
            "n": self.modulus,
            "e": self.exponent,
        }]})
    }

    /// A signed token (RS256) for `request`.
    pub fn issue(&self, request: &TokenRequest) -> Result<String, TokenError> {
        let now = jsonwebtoken::get_current_timestamp();
        let mut claims = json!({
            "aud": request.audience,
            "iss": format!("{}/{}/v2.0", request.origin, request.tenant),
            "iat": now,
            "nbf": now,
            "exp": now + request.lifetime_seconds,
            "tid": request.tenant,
            "oid": request.principal,
            "sub": request.principal,
            "appid": request.principal,
            "azp": request.principal,
            "idtyp": "app",
            "ver": "2.0",
        });
        if let (Some(role), Some(object)) = (request.role, claims.as_object_mut()) {
            object.insert("roles".into(), json!([role.azure_name()]));
        }
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding)
            .map_err(|e| TokenError::Malformed(format!("cannot sign a token: {e}")))
    }
}

/// The file in the keys directory where a server running the local issuer writes the HTTPS
/// origin it names itself by (one line, e.g. `https://127.0.0.1:10443`): `tableq token`'s
/// default `--endpoint`.
pub const ISSUER_ORIGIN_FILE: &str = "local-issuer-origin";

/// The local issuer's client file in the keys directory.
pub const CLIENT_FILE: &str = "local-client.json";

/// The client of the local issuer made on the first start of a server that runs the issuer
/// without a role-assignments file: a client id (a GUID) and a secret (32 random bytes,
/// base64url), kept in `local-client.json` of the keys directory (mode 0600) and printed in
/// the banner, as the account key is. It has the role Storage Table Data Contributor.
#[derive(Clone, PartialEq, Eq)]
pub struct GeneratedClient {
    /// The client id (`client_id`; the tokens' `oid` and `sub`).
    pub id: String,
    /// The secret (`client_secret`).
    pub secret: String,
    /// Whether it was made now (else read from the file).
    pub made_now: bool,
    /// The file.
    pub path: PathBuf,
}

impl std::fmt::Debug for GeneratedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("GeneratedClient")
            .field("id", &self.id)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl GeneratedClient {
    /// The client kept in `dir`, made (and written 0600) when there is none. A file that
    /// cannot be read, is not the client file's JSON or is open to others is an error,
    /// never silently replaced: applications already hold its secret.
    pub fn open(dir: &Path) -> Result<GeneratedClient, TokenError> {
        use base64::Engine;
        let path = dir.join(CLIENT_FILE);
        let file_error = |what: String| TokenError::File {
            path: path.clone(),
            what,
        };
        #[derive(serde::Deserialize, serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Stored {
            client_id: String,
            client_secret: String,
        }
        if dir.is_dir() {
            crate::state::tls::check_private_dir(dir).map_err(|e| file_error(e.to_string()))?;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                crate::state::tls::check_private_file(&path)
                    .map_err(|e| file_error(e.to_string()))?;
                let stored: Stored = serde_json::from_str(&text).map_err(|e| {
                    file_error(format!(
                        "not a client file ({e}): want {{\"clientId\": \"…\", \"clientSecret\": \"…\"}}"
                    ))
                })?;
                if stored.client_id.is_empty() || stored.client_secret.is_empty() {
                    return Err(file_error("an empty client id or secret".into()));
                }
                Ok(GeneratedClient {
                    id: stored.client_id,
                    secret: stored.client_secret,
                    made_now: false,
                    path,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut bytes = [0u8; 32];
                ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
                    .map_err(|_| file_error("no random bytes for a secret".into()))?;
                let stored = Stored {
                    client_id: uuid::Uuid::new_v4().to_string(),
                    client_secret: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
                };
                let text =
                    serde_json::to_string_pretty(&stored).map_err(|e| file_error(e.to_string()))?;
                crate::state::tls::create_private_dir(dir)
                    .and_then(|()| crate::state::tls::write_private(&path, text.as_bytes()))
                    .map_err(|e| file_error(e.to_string()))?;
                Ok(GeneratedClient {
                    id: stored.client_id,
                    secret: stored.client_secret,
                    made_now: true,
                    path,
                })
            }
            Err(e) => Err(file_error(e.to_string())),
        }
    }
}

/// PKCS#1 DER of an RSA key (what jsonwebtoken signs with).
fn rsa_pkcs1_der(key: &rsa::RsaPrivateKey) -> Result<Vec<u8>, String> {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    key.to_pkcs1_der()
        .map(|d| d.as_bytes().to_vec())
        .map_err(|e| format!("cannot encode the key: {e}"))
}

/// The issuer's endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Discovery,
    Keys,
    Token,
}

/// The tenant and endpoint a path names, if it is one of the issuer's (see the module docs).
pub(crate) fn route(path: &str) -> Option<(&str, Route)> {
    let mut segments = path.strip_prefix('/')?.split('/');
    let tenant = segments.next().filter(|t| !t.is_empty())?;
    let rest: Vec<&str> = segments.collect();
    let route = match rest.as_slice() {
        ["v2.0", ".well-known", "openid-configuration"] => Route::Discovery,
        ["discovery", "v2.0", "keys"] => Route::Keys,
        ["oauth2", "v2.0", "token"] => Route::Token,
        _ => return None,
    };
    Some((tenant, route))
}

/// Entra ID's answer to an unknown client or a wrong secret (one answer for both).
fn invalid_client(client_id: &str) -> Response {
    let trace = uuid::Uuid::new_v4();
    let correlation = uuid::Uuid::new_v4();
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%SZ");
    // The client id is echoed only when it is a plain identifier (it comes from the request).
    let shown = if !client_id.is_empty()
        && client_id.len() <= 128
        && client_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    {
        client_id
    } else {
        "(not shown)"
    };
    json_response(
        StatusCode::UNAUTHORIZED,
        &json!({
            "error": "invalid_client",
            "error_description": format!(
                "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in \
                 the request is the client secret value, not the client secret ID, for a secret \
                 added to app '{shown}'. (tableq's local issuer: the client is not registered \
                 or its secret does not match — see the role-assignments file or the client \
                 printed at start-up.) Trace ID: {trace} Correlation ID: {correlation} \
                 Timestamp: {now}"
            ),
            "error_codes": [7000215],
            "timestamp": now.to_string(),
            "trace_id": trace.to_string(),
            "correlation_id": correlation.to_string(),
            "error_uri": "https://login.microsoftonline.com/error?code=7000215",
        }),
    )
}

/// An OAuth 2.0 error response.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    json_response(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    let mut response = (status, value.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Answers one request to the issuer's endpoints: `origin` is the server's HTTPS origin the
/// request reached (from the configuration, never its `Host`), `secure` whether it came over
/// HTTPS, `form` the body of a token request.
pub(crate) fn answer(
    issuer: &LocalIssuer,
    assignments: &RoleAssignments,
    method: &Method,
    (tenant, route): (&str, Route),
    origin: &str,
    secure: bool,
    form: &[u8],
) -> Response {
    if !secure {
        return oauth_error(
            StatusCode::FORBIDDEN,
            "invalid_request",
            "the token issuer is served over HTTPS only (start tableq serve with --tls)",
        );
    }
    let base = format!("{origin}/{tenant}");
    match (route, method) {
        (Route::Discovery, &Method::GET) => json_response(
            StatusCode::OK,
            &json!({
                "issuer": format!("{base}/v2.0"),
                "authorization_endpoint": format!("{base}/oauth2/v2.0/authorize"),
                "token_endpoint": format!("{base}/oauth2/v2.0/token"),
                "jwks_uri": format!("{base}/discovery/v2.0/keys"),
                "response_types_supported": ["token"],
                "grant_types_supported": ["client_credentials"],
                "subject_types_supported": ["pairwise"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
                "scopes_supported": [format!("{STORAGE_AUDIENCE}/.default")],
                "tenant_region_scope": null,
            }),
        ),
        (Route::Keys, &Method::GET) => json_response(StatusCode::OK, &issuer.jwks()),
        (Route::Token, &Method::POST) => token(issuer, assignments, tenant, origin, form),
        _ => oauth_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request",
            "the discovery document and keys take GET, the token endpoint POST",
        ),
    }
}

/// The client-credentials grant.
fn token(
    issuer: &LocalIssuer,
    assignments: &RoleAssignments,
    tenant: &str,
    origin: &str,
    form: &[u8],
) -> Response {
    let mut grant_type = None;
    let mut client_id = None;
    let mut secret = None;
    let mut assertion = false;
    let mut scope = None;
    for (k, v) in form_urlencoded::parse(form) {
        match k.as_ref() {
            "grant_type" => grant_type = Some(v.into_owned()),
            "client_id" => client_id = Some(v.into_owned()),
            "client_secret" => secret = Some(v.into_owned()),
            "client_assertion" => assertion = true,
            "scope" => scope = Some(v.into_owned()),
            _ => {}
        }
    }
    if grant_type.as_deref() != Some("client_credentials") {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "only grant_type=client_credentials is supported",
        );
    }
    let Some(client_id) = client_id.filter(|c| !c.is_empty()) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client_id is missing",
        );
    };
    let Some(secret) = secret.filter(|s| !s.is_empty()) else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            if assertion {
                "AADSTS700027: the local issuer takes client secrets only \
                 (client_secret), not certificate assertions"
            } else {
                "AADSTS7000216: 'client_assertion', 'client_secret' or 'request' is required \
                 for the 'client_credentials' grant type."
            },
        );
    };
    if !assignments.client_matches(&client_id, &secret) {
        return invalid_client(&client_id);
    }
    // `https://storage.azure.com/.default` (or a table endpoint's `…/.default`).
    let audience = scope.as_deref().unwrap_or("").split(' ').find_map(|s| {
        let resource = s.strip_suffix("/.default")?;
        let resource = resource.strip_suffix('/').unwrap_or(resource);
        (!resource.is_empty()).then(|| resource.to_owned())
    });
    let Some(audience) = audience else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            "scope must be https://storage.azure.com/.default",
        );
    };
    let request = TokenRequest {
        origin: origin.to_owned(),
        tenant: tenant.to_owned(),
        role: assignments.issued_role(&client_id),
        principal: client_id,
        audience,
        lifetime_seconds: TOKEN_LIFETIME_SECONDS,
    };
    match issuer.issue(&request) {
        Ok(access_token) => json_response(
            StatusCode::OK,
            &json!({
                "token_type": "Bearer",
                "expires_in": TOKEN_LIFETIME_SECONDS,
                "ext_expires_in": TOKEN_LIFETIME_SECONDS,
                "access_token": access_token,
            }),
        ),
        Err(e) => oauth_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            &e.to_string(),
        ),
    }
}
