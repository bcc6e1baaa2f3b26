//! Microsoft Entra ID bearer tokens: which issuers are trusted, how a token is checked,
//! and which role its principal has.
//!
//! * [`LocalIssuer`] (module `issuer`) — the server's own issuer: an RSA signing key kept
//!   in the keys directory, the OpenID discovery document, the JWKS and the OAuth 2.0
//!   client-credentials token endpoint, so that `ClientSecretCredential` gets tokens from
//!   the emulator itself;
//! * [`TrustedKeys`] — an external issuer's keys from a JWKS file (`--trust-issuer FILE`),
//!   usable offline;
//! * [`RoleAssignments`] (module `roles`) — `--role-assignments FILE`: principal → role
//!   (and scope);
//! * [`Bearer`] — all of the above, and [`Bearer::verify`]: a token is accepted when its
//!   header says RS256 (`alg: none`, HS256 and the rest are refused), its signature
//!   verifies with a key of a trusted issuer, its `iss` is that issuer's, its `aud` is
//!   `https://storage.azure.com`, `https://storage.azure.com/` or the account's table
//!   endpoint, `exp` / `nbf` hold within five minutes of skew, and it names a tenant
//!   (`tid`). Its principal's role is what the role assignments decide for it, whichever
//!   issuer vouched for it ([`RoleAssignments::decide`]).
//!
//! Signing keys never leave the keys directory: they are not logged, and no error says
//! more than which file could not be used.

mod error;
mod issuer;
mod roles;

pub use error::TokenError;
pub use issuer::{
    CLIENT_FILE, GeneratedClient, ISSUER_ORIGIN_FILE, LocalIssuer, SIGNING_KEY_FILE,
    STORAGE_AUDIENCE, TOKEN_LIFETIME_SECONDS, TokenRequest,
};
pub(crate) use issuer::{Route as IssuerRoute, answer as issuer_answer, route as issuer_route};
pub use roles::{Role, RoleAssignments, Scope};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::path::Path;

/// How far `exp` / `nbf` may be from the server's clock.
pub const MAX_SKEW_SECONDS: u64 = 300;

/// The claims tableq reads from an access token.
#[derive(Debug, Clone, Deserialize)]
pub struct Claims {
    /// Issuer.
    #[serde(default)]
    pub iss: String,
    /// Audience (a string or a list).
    #[serde(default)]
    pub aud: Audience,
    /// Expiry (unix seconds).
    pub exp: Option<u64>,
    /// Not before (unix seconds).
    pub nbf: Option<u64>,
    /// Tenant.
    pub tid: Option<String>,
    /// Object id of the principal.
    pub oid: Option<String>,
    /// Subject.
    pub sub: Option<String>,
    /// App roles.
    #[serde(default)]
    pub roles: Vec<String>,
}

/// `aud`: one string or several.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// No audience.
    #[default]
    None,
    /// One audience.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Audience {
    fn values(&self) -> Vec<&str> {
        match self {
            Audience::None => Vec::new(),
            Audience::One(a) => vec![a.as_str()],
            Audience::Many(a) => a.iter().map(String::as_str).collect(),
        }
    }
}

/// A verified token's principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `oid` (else `sub`).
    pub id: String,
    /// `tid`.
    pub tenant: String,
    /// The `roles` claim's table roles.
    pub claimed: Vec<Role>,
}

/// An external issuer trusted through its keys: a JWKS file (`{"keys": [...]}` with an
/// `"issuer"` member naming the `iss` its tokens carry), or the keys and issuer an OpenID
/// discovery document names ([`TrustedKeys::from_jwks`]).
///
/// The issuer is **pinned to one tenant**: Entra ID signs the tokens of every tenant with
/// the same keys, so keys alone would let any tenant's application in. A JWKS without an
/// issuer, and a multi-tenant issuer (`{tenantid}` in it, or Entra ID's `common`,
/// `organizations` and `consumers`), are refused. An issuer of Entra ID
/// (`https://login.microsoftonline.com/{tenant}/v2.0`) also accepts the v1
/// `https://sts.windows.net/{tenant}/` of the storage access tokens it issues, for its own
/// tenant only.
pub struct TrustedKeys {
    source: String,
    issuer: String,
    keys: Vec<(Option<String>, DecodingKey)>,
}

impl std::fmt::Debug for TrustedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustedKeys")
            .field("source", &self.source)
            .field("issuer", &self.issuer)
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl TrustedKeys {
    /// Reads a JWKS file (RSA keys; others are skipped).
    pub fn from_file(path: &Path) -> Result<TrustedKeys, TokenError> {
        let file_error = |what: String| TokenError::File {
            path: path.to_owned(),
            what,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        TrustedKeys::from_jwks(None, &text, &path.display().to_string()).map_err(file_error)
    }

    /// The RSA keys of a JWKS document (`source` names where it came from). `issuer` is the
    /// `iss` their tokens carry (else the document's `"issuer"` member; one of them must
    /// name a single tenant's issuer).
    pub fn from_jwks(
        issuer: Option<String>,
        jwks: &str,
        source: &str,
    ) -> Result<TrustedKeys, String> {
        #[derive(Deserialize)]
        struct File {
            issuer: Option<String>,
            keys: Vec<serde_json::Value>,
        }
        let file: File =
            serde_json::from_str(jwks).map_err(|e| format!("not a JWKS document ({e})"))?;
        let mut keys = Vec::new();
        for key in file.keys {
            let Ok(jwk) = serde_json::from_value::<jsonwebtoken::jwk::Jwk>(key) else {
                continue;
            };
            if !matches!(
                jwk.algorithm,
                jsonwebtoken::jwk::AlgorithmParameters::RSA(_)
            ) {
                continue;
            }
            if let Ok(decoding) = DecodingKey::from_jwk(&jwk) {
                keys.push((jwk.common.key_id.clone(), decoding));
            }
        }
        if keys.is_empty() {
            return Err("holds no RSA key".into());
        }
        let Some(issuer) = issuer.or(file.issuer) else {
            return Err(
                "names no \"issuer\": add the `iss` its tokens carry, e.g. \"issuer\": \
                 \"https://login.microsoftonline.com/<tenant-id>/v2.0\" (Entra ID signs every \
                 tenant's tokens with the same keys, so keys alone would trust every tenant)"
                    .into(),
            );
        };
        if let Some(why) = multi_tenant(&issuer) {
            return Err(format!(
                "the issuer {issuer} {why}: trust one tenant's issuer instead, e.g. \
                 https://login.microsoftonline.com/<tenant-id>/v2.0"
            ));
        }
        Ok(TrustedKeys {
            source: source.to_owned(),
            issuer,
            keys,
        })
    }

    /// Where the keys came from (a file or a URL).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The `iss` its tokens carry.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    fn accepts_issuer(&self, iss: &str, tid: &str) -> bool {
        if self.issuer == iss {
            return true;
        }
        // Entra ID's discovery names its v2.0 issuer; storage tokens are v1.
        self.issuer == format!("https://login.microsoftonline.com/{tid}/v2.0")
            && iss == format!("https://sts.windows.net/{tid}/")
    }
}

/// Why `issuer` stands for more than one tenant, if it does.
fn multi_tenant(issuer: &str) -> Option<&'static str> {
    if issuer.contains("{tenantid}") || issuer.contains("{tenant}") {
        return Some("stands for any tenant (`{tenantid}`)");
    }
    let tenant = issuer
        .split('/')
        .filter(|s| !s.is_empty())
        .nth(2)
        .unwrap_or("");
    ["common", "organizations", "consumers"]
        .iter()
        .any(|t| tenant.eq_ignore_ascii_case(t))
        .then_some("is Entra ID's multi-tenant endpoint")
}

/// Everything bearer-token checking needs (see the module docs).
#[derive(Debug, Default)]
pub struct Bearer {
    /// The local issuer, when the server runs one.
    pub local: Option<LocalIssuer>,
    /// External issuers' keys.
    pub trusted: Vec<TrustedKeys>,
    /// Role assignments.
    pub assignments: RoleAssignments,
}

impl Bearer {
    /// Checks `token` for a request to `account` whose HTTPS origins (`https://host:port`,
    /// as clients may name the server) are `origins`; returns its principal.
    pub fn verify(
        &self,
        token: &str,
        account: &str,
        origins: &[String],
    ) -> Result<Principal, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| {
            // `alg: none` and other names jsonwebtoken does not know fail here.
            let alg = alg_of(token);
            match alg {
                Some(alg) if alg != "RS256" => TokenError::Algorithm(alg),
                _ => TokenError::Malformed(e.to_string()),
            }
        })?;
        if header.alg != Algorithm::RS256 {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
        }
        let mut audiences = vec![
            STORAGE_AUDIENCE.to_owned(),
            format!("{STORAGE_AUDIENCE}/"),
            format!("https://{account}.table.core.windows.net"),
            format!("https://{account}.table.core.windows.net/"),
        ];
        audiences.extend(origins.iter().map(|o| format!("{o}/{account}")));
        let mut validation = Validation::new(Algorithm::RS256);
        validation.leeway = MAX_SKEW_SECONDS;
        validation.validate_nbf = true;
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp"]);
        let kid = header.kid.as_deref();
        let candidates = self.candidates(kid);
        if candidates.is_empty() {
            return Err(TokenError::Signature(match kid {
                Some(kid) => format!("no trusted issuer has the key `{kid}`"),
                None => "no trusted issuer's key verifies it".into(),
            }));
        }
        let mut last = TokenError::Signature("no trusted issuer's key verifies it".into());
        for (key, issuer) in candidates {
            let claims = match jsonwebtoken::decode::<Claims>(token, key, &validation) {
                Ok(data) => data.claims,
                Err(e) => {
                    last = map_error(e, token);
                    if matches!(last, TokenError::Signature(_)) {
                        continue;
                    }
                    return Err(last);
                }
            };
            let tid = claims.tid.clone().ok_or(TokenError::MissingClaim("tid"))?;
            let issuer_ok = match issuer {
                IssuerRef::Local => origins
                    .iter()
                    .any(|o| claims.iss == format!("{o}/{tid}/v2.0")),
                IssuerRef::Trusted(t) => t.accepts_issuer(&claims.iss, &tid),
            };
            if !issuer_ok {
                let expected = match issuer {
                    IssuerRef::Local => format!(
                        "the local issuer {}/{tid}/v2.0",
                        origins.first().map_or("https://127.0.0.1", String::as_str)
                    ),
                    IssuerRef::Trusted(t) => t.issuer.clone(),
                };
                return Err(TokenError::Issuer(claims.iss, expected));
            }
            let aud = claims.aud.values();
            if !aud.iter().any(|a| audiences.iter().any(|x| x == a)) {
                return Err(TokenError::Audience(if aud.is_empty() {
                    "no audience".into()
                } else {
                    aud.join(", ")
                }));
            }
            let id = claims
                .oid
                .clone()
                .or_else(|| claims.sub.clone())
                .unwrap_or_default();
            let claimed = claims.roles.iter().filter_map(|r| Role::parse(r)).collect();
            return Ok(Principal {
                id,
                tenant: tid,
                claimed,
            });
        }
        Err(last)
    }

    /// The keys that may have signed a token with key id `kid` (all keys without one).
    fn candidates(&self, kid: Option<&str>) -> Vec<(&DecodingKey, IssuerRef<'_>)> {
        let mut out = Vec::new();
        if let Some(local) = &self.local
            && kid.is_none_or(|k| k == local.key_id())
        {
            out.push((local.decoding_key(), IssuerRef::Local));
        }
        for trusted in &self.trusted {
            for (key_id, key) in &trusted.keys {
                if kid.is_none() || key_id.as_deref() == kid {
                    out.push((key, IssuerRef::Trusted(trusted)));
                }
            }
        }
        out
    }

    /// The role `principal` has on `table` of `account` (`None`: the account itself): the
    /// role assignments decide, for every issuer alike ([`RoleAssignments::decide`]).
    pub fn role(&self, principal: &Principal, account: &str, table: Option<&str>) -> Option<Role> {
        self.assignments
            .decide(&principal.id, &principal.claimed, account, table)
    }
}

#[derive(Clone, Copy)]
enum IssuerRef<'a> {
    Local,
    Trusted(&'a TrustedKeys),
}

/// The `alg` of a token's header, read without verifying anything.
fn alg_of(token: &str) -> Option<String> {
    use base64::Engine;
    let header = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header.trim_end_matches('='))
        .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value.get("alg")?.as_str().map(str::to_owned)
}

fn map_error(e: jsonwebtoken::errors::Error, token: &str) -> TokenError {
    use jsonwebtoken::errors::ErrorKind;
    let unverified = || jsonwebtoken::dangerous::insecure_decode_claims::<Claims>(token).ok();
    match e.kind() {
        ErrorKind::InvalidSignature => {
            TokenError::Signature("the signature does not verify with the issuer's key".into())
        }
        ErrorKind::ExpiredSignature => {
            TokenError::Expired(unverified().and_then(|c| c.exp).unwrap_or_default())
        }
        ErrorKind::ImmatureSignature => {
            TokenError::NotYetValid(unverified().and_then(|c| c.nbf).unwrap_or_default())
        }
        ErrorKind::MissingRequiredClaim(_) => TokenError::MissingClaim("exp"),
        ErrorKind::InvalidAlgorithm => TokenError::Algorithm("another algorithm".into()),
        _ => TokenError::Malformed(e.to_string()),
    }
}

#[cfg(test)]
mod tests;
