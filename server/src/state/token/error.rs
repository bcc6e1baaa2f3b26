//! [`TokenError`]: why a bearer token, a key file or an assignment file could not be used.

use std::path::PathBuf;

/// Why a token, a key file or an assignment file could not be used. Messages name files
/// and claims, never key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a JWS in compact form, or a header or claims that are not JSON.
    #[error("the bearer token is not a signed JWT: {0}")]
    Malformed(String),
    /// A signing algorithm other than RS256 (`none`, HS256, …).
    #[error("the bearer token is signed with `{0}`; only RS256 is accepted")]
    Algorithm(String),
    /// No trusted issuer has the key, or the signature does not verify.
    #[error("signature validation failed: {0}")]
    Signature(String),
    /// `iss` is not the issuer whose key signed it: the token's `iss`, and the issuer that
    /// key belongs to.
    #[error(
        "issuer validation failed: `{0}` is not a trusted issuer of this server (the key \
         that signed the token is {1}'s)"
    )]
    Issuer(String, String),
    /// `aud` is not storage's.
    #[error(
        "audience validation failed: the token is for {0}, not https://storage.azure.com or \
         this account's table endpoint"
    )]
    Audience(String),
    /// Past `exp`.
    #[error("lifetime validation failed: the token expired at {0} (unix time)")]
    Expired(u64),
    /// Before `nbf`.
    #[error("lifetime validation failed: the token is not valid before {0} (unix time)")]
    NotYetValid(u64),
    /// A claim the service needs is missing (`exp`, `tid`).
    #[error("the bearer token has no `{0}` claim")]
    MissingClaim(&'static str),
    /// A key or assignment file that cannot be used.
    #[error("{}: {what}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
}
