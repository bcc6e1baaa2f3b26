//! Signing requests the way the Table service checks them — the one home of the strings to
//! sign: clients sign with it, and the emulator (`tableq-server`) verifies with it. Account
//! keys ([`AccountKey`]), SharedKey and
//! SharedKeyLite signatures ([`SharedKeySigner`], [`string_to_sign`]) and shared access
//! signatures ([`SasBuilder`], [`SasFields`]).
//!
//! The strings to sign (rest.md, "Authorization"; the official SDKs build exactly these):
//!
//! ```text
//! SharedKey      VERB\nContent-MD5\nContent-Type\nDate\nCanonicalizedResource
//! SharedKeyLite  Date\nCanonicalizedResource
//! CanonicalizedResource = /{account}{raw request path}[?comp={value}]
//! table SAS      sp\nst\nse\n/table/{account}/{tn, lower case}\nsi\nsip\nspr\nsv\nspk\nsrk\nepk\nerk
//!   before sv 2015-04-05:  sp\nst\nse\n/{account}/{tn, lower case}\nsi\nsv\nspk\nsrk\nepk\nerk
//! account SAS    {account}\nsp\nss\nsrt\nst\nse\nsip\nspr\nsv\n   (+ ses\n from sv 2020-12-06)
//! ```
//!
//! `Date` is the `x-ms-date` header when present, else `Date`. With path-style URLs the path
//! itself starts with the account, so the account appears twice:
//! `/devstoreaccount1/devstoreaccount1/Tables`. The signature is the base64 HMAC-SHA256 of
//! the string with the base64-decoded account key.
//!
//! ```
//! use tableq_client::sign::{AccountKey, Scheme, SharedKeySigner, SasBuilder};
//! let key = AccountKey::development();
//! let signer = SharedKeySigner::new(key.clone(), Scheme::SharedKeyLite);
//! let auth = signer.authorization("GET", "/devstoreaccount1/Tables", None,
//!                                 "Mon, 23 Nov 2026 16:00:00 GMT");
//! assert!(auth.starts_with("SharedKeyLite devstoreaccount1:"));
//!
//! // A table SAS for reading one partition until the end of 2030.
//! let token = SasBuilder::table("orders")
//!     .permissions("r")
//!     .expiry("2030-12-31T00:00:00Z")
//!     .start_key("p1", None)
//!     .end_key("p1", None)
//!     .sign(&key);
//! assert!(token.contains("tn=orders") && token.contains("&sig="));
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use sha2::Sha256;

use crate::account::{DEV_ACCOUNT, DEV_ACCOUNT_KEY};

/// Why an account name or key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The name is not 3–24 lower-case letters and digits (the service's rule).
    #[error("account name {0:?}: want 3 to 24 lower-case letters and digits")]
    InvalidName(String),
    /// The key is not base64, or empty.
    #[error("the key of account {0:?} is not base64 (an account key looks like `Eby8vdM0…==`)")]
    InvalidKey(String),
}

/// An account name with its decoded key: what signs and verifies.
///
/// `Debug` never shows the key. Two keys are equal when their names and key bytes are.
#[derive(Clone)]
pub struct AccountKey {
    name: String,
    key: Vec<u8>,
    /// The HMAC state once the key is absorbed (its inner and outer pads hashed): every
    /// signature starts from a copy, instead of hashing the two pad blocks again.
    keyed: Hmac<Sha256>,
}

impl PartialEq for AccountKey {
    fn eq(&self, other: &AccountKey) -> bool {
        self.name == other.name && self.key == other.key
    }
}

impl Eq for AccountKey {}

/// The raw HMAC-SHA256 of a string to sign (the MAC tag): a signature before base64.
pub type MacTag = [u8; 32];

/// Whether `signature` (base64, as sent) encodes `tag`, compared in constant time. A
/// signature that is not base64, or not 32 bytes long, matches nothing.
pub fn signature_matches(tag: &MacTag, signature: &str) -> bool {
    // 44 characters encode 32 bytes; the buffer takes anything up to 84 characters, and
    // a longer text decodes to more than 32 bytes (or not at all): no match either way.
    let mut decoded = [0u8; 64];
    let Ok(len) = BASE64.decode_slice(signature, &mut decoded) else {
        return false;
    };
    let mut given = MacTag::default();
    if len != given.len() {
        return false;
    }
    given.copy_from_slice(&decoded[..len]);
    let ct = |tag: MacTag| hmac::digest::CtOutput::<Hmac<Sha256>>::new(tag.into());
    ct(*tag) == ct(given)
}

impl std::fmt::Debug for AccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountKey")
            .field("name", &self.name)
            .field("key", &"<hidden>")
            .finish()
    }
}

impl AccountKey {
    /// An account from its name and base64 key.
    pub fn new(name: &str, base64_key: &str) -> Result<AccountKey, KeyError> {
        let name_ok = (3..=24).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if !name_ok {
            return Err(KeyError::InvalidName(name.to_owned()));
        }
        let key = BASE64
            .decode(base64_key.trim())
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| KeyError::InvalidKey(name.to_owned()))?;
        Ok(AccountKey::from_bytes(name.to_owned(), key))
    }

    fn from_bytes(name: String, key: Vec<u8>) -> AccountKey {
        // HMAC accepts keys of any length: this never fails.
        let keyed = <Hmac<Sha256> as KeyInit>::new_from_slice(&key)
            .unwrap_or_else(|_| <Hmac<Sha256> as KeyInit>::new(&Default::default()));
        AccountKey { name, key, keyed }
    }

    /// The development account `devstoreaccount1` with its well-known key.
    pub fn development() -> AccountKey {
        AccountKey::from_bytes(
            DEV_ACCOUNT.to_owned(),
            BASE64.decode(DEV_ACCOUNT_KEY).unwrap_or_default(),
        )
    }

    /// The account name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw HMAC-SHA256 of `string_to_sign` with this key ([`AccountKey::sign`] is its
    /// base64).
    pub fn mac(&self, string_to_sign: &str) -> MacTag {
        let mut mac = self.keyed.clone();
        mac.update(string_to_sign.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The base64 HMAC-SHA256 of `string_to_sign` with this key.
    pub fn sign(&self, string_to_sign: &str) -> String {
        BASE64.encode(self.mac(string_to_sign))
    }

    /// Whether `signature` (base64) is the signature of `string_to_sign`, compared in
    /// constant time ([`signature_matches`] of [`AccountKey::mac`]).
    pub fn verify(&self, string_to_sign: &str, signature: &str) -> bool {
        signature_matches(&self.mac(string_to_sign), signature)
    }
}

/// The two `Authorization` schemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `SharedKey` (the Python SDK's).
    SharedKey,
    /// `SharedKeyLite` (the JavaScript SDK's).
    SharedKeyLite,
}

impl Scheme {
    /// The scheme's name in the `Authorization` header.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::SharedKey => "SharedKey",
            Scheme::SharedKeyLite => "SharedKeyLite",
        }
    }
}

/// The parts of a request that a SharedKey signature covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SignedParts<'a> {
    /// The method, e.g. `GET` (only SharedKey signs it).
    pub method: &'a str,
    /// The request path exactly as sent (percent-encoded), e.g.
    /// `/devstoreaccount1/t(PartitionKey='a',RowKey='b')`.
    pub path: &'a str,
    /// The raw query string without `?` (only its `comp` parameter is signed).
    pub query: Option<&'a str>,
    /// The `Content-MD5` header, or empty (only SharedKey signs it).
    pub content_md5: &'a str,
    /// The `Content-Type` header, or empty (only SharedKey signs it).
    pub content_type: &'a str,
    /// The `x-ms-date` header if present, else the `Date` header.
    pub date: &'a str,
}

/// `/{account}{path}[?comp=…]`.
pub fn canonicalized_resource(account: &str, path: &str, query: Option<&str>) -> String {
    let mut out = format!("/{account}{path}");
    if let Some(comp) = query.and_then(comp_parameter) {
        out.push_str("?comp=");
        out.push_str(&comp);
    }
    out
}

/// The decoded value of the first `comp` query parameter.
fn comp_parameter(query: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        (name == "comp").then(|| {
            percent_encoding::percent_decode_str(&value.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// The string a SharedKey or SharedKeyLite signature signs (see the module docs).
pub fn string_to_sign(scheme: Scheme, account: &str, parts: &SignedParts<'_>) -> String {
    let resource = canonicalized_resource(account, parts.path, parts.query);
    match scheme {
        Scheme::SharedKey => format!(
            "{}\n{}\n{}\n{}\n{resource}",
            parts.method, parts.content_md5, parts.content_type, parts.date
        ),
        Scheme::SharedKeyLite => format!("{}\n{resource}", parts.date),
    }
}

/// A date in the form of `Date` / `x-ms-date` (RFC 1123): `Mon, 23 Nov 2026 16:00:00 GMT`.
pub fn http_date(time: chrono::DateTime<chrono::Utc>) -> String {
    if time.timestamp() >= 0 {
        // `httpdate` (hyper's formatter) is several times cheaper than a chrono format
        // string; it covers 1970 onwards.
        httpdate::fmt_http_date(std::time::SystemTime::from(time))
    } else {
        time.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
    }
}

/// The current time as [`http_date`] writes it.
pub fn http_date_now() -> String {
    http_date(chrono::Utc::now())
}

/// Signs requests with SharedKey or SharedKeyLite, as the SDKs do.
#[derive(Debug, Clone)]
pub struct SharedKeySigner {
    key: AccountKey,
    scheme: Scheme,
}

impl SharedKeySigner {
    /// A signer for `key`'s account.
    pub fn new(key: AccountKey, scheme: Scheme) -> SharedKeySigner {
        SharedKeySigner { key, scheme }
    }

    /// The account's key.
    pub fn key(&self) -> &AccountKey {
        &self.key
    }

    /// The `Authorization` value for a request: `path_and_query` exactly as sent (e.g.
    /// `/devstoreaccount1/t()?$filter=...`), `date` the `x-ms-date` value sent with it.
    pub fn authorization(
        &self,
        method: &str,
        path_and_query: &str,
        content_type: Option<&str>,
        date: &str,
    ) -> String {
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        let parts = SignedParts {
            method,
            path,
            query,
            content_md5: "",
            content_type: content_type.unwrap_or(""),
            date,
        };
        let signature = self
            .key
            .sign(&string_to_sign(self.scheme, &self.key.name, &parts));
        format!("{} {}:{signature}", self.scheme.as_str(), self.key.name)
    }

    /// The two headers that sign a request now: `x-ms-date` (the current time) and
    /// `Authorization`. `content_type` must be the `Content-Type` header sent (if any).
    pub fn headers(
        &self,
        method: &str,
        path_and_query: &str,
        content_type: Option<&str>,
    ) -> [(&'static str, String); 2] {
        let date = http_date(chrono::Utc::now());
        let authorization = self.authorization(method, path_and_query, content_type, &date);
        [("x-ms-date", date), ("Authorization", authorization)]
    }
}

/// The default `sv` of tokens built here (the SDKs' version).
pub const SAS_VERSION: &str = "2019-02-02";

/// The first `sv` whose table SAS signs `/table/{account}/{table}` and `sip`/`spr`.
const TABLE_SAS_2015: &str = "2015-04-05";

/// The fields of a shared access signature (query parameter names in brackets); absent
/// fields are `None`. A token with `ss` is an account SAS, otherwise a table SAS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SasFields {
    /// `sv`: the signed version.
    pub version: Option<String>,
    /// `ss`: the services of an account SAS (must contain `t`).
    pub services: Option<String>,
    /// `srt`: the resource types of an account SAS (`s` service, `c` tables, `o` entities).
    pub resource_types: Option<String>,
    /// `sp`: the permissions (table SAS: `raud`; account SAS: `rwdlacup`).
    pub permissions: Option<String>,
    /// `st`: the start (ISO 8601, UTC).
    pub start: Option<String>,
    /// `se`: the expiry (ISO 8601, UTC).
    pub expiry: Option<String>,
    /// `sip`: the allowed client addresses.
    pub ip: Option<String>,
    /// `spr`: the allowed protocols (`https` or `https,http`).
    pub protocol: Option<String>,
    /// `si`: a stored access policy.
    pub identifier: Option<String>,
    /// `tn`: the table of a table SAS.
    pub table: Option<String>,
    /// `spk`: the first partition key.
    pub start_pk: Option<String>,
    /// `srk`: the first row key (with `spk`).
    pub start_rk: Option<String>,
    /// `epk`: the last partition key.
    pub end_pk: Option<String>,
    /// `erk`: the last row key (with `epk`).
    pub end_rk: Option<String>,
    /// `ses`: the encryption scope (signed from version 2020-12-06 on).
    pub encryption_scope: Option<String>,
}

/// Query parameter names in the order tokens list them.
const NAMES: [&str; 15] = [
    "sv", "ss", "srt", "sp", "st", "se", "sip", "spr", "si", "tn", "spk", "srk", "epk", "erk",
    "ses",
];

/// Characters escaped in SAS values: everything but unreserved characters.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl SasFields {
    /// Whether this is an account SAS (it has `ss`).
    pub fn is_account_sas(&self) -> bool {
        self.services.is_some()
    }

    fn slots(&self) -> [&Option<String>; 15] {
        [
            &self.version,
            &self.services,
            &self.resource_types,
            &self.permissions,
            &self.start,
            &self.expiry,
            &self.ip,
            &self.protocol,
            &self.identifier,
            &self.table,
            &self.start_pk,
            &self.start_rk,
            &self.end_pk,
            &self.end_rk,
            &self.encryption_scope,
        ]
    }

    /// The field named by a query parameter, if it is one.
    pub fn slot_mut(&mut self, name: &str) -> Option<&mut Option<String>> {
        Some(match name {
            "sv" => &mut self.version,
            "ss" => &mut self.services,
            "srt" => &mut self.resource_types,
            "sp" => &mut self.permissions,
            "st" => &mut self.start,
            "se" => &mut self.expiry,
            "sip" => &mut self.ip,
            "spr" => &mut self.protocol,
            "si" => &mut self.identifier,
            "tn" => &mut self.table,
            "spk" => &mut self.start_pk,
            "srk" => &mut self.start_rk,
            "epk" => &mut self.end_pk,
            "erk" => &mut self.end_rk,
            "ses" => &mut self.encryption_scope,
            _ => return None,
        })
    }

    /// The string the token's `sig` signs for `account` (see the module docs).
    pub fn string_to_sign(&self, account: &str) -> String {
        let mut out = String::with_capacity(160);
        self.write_string_to_sign(account, &mut out);
        out
    }

    /// Appends [`SasFields::string_to_sign`] to `out` (a verifier reuses one buffer).
    pub fn write_string_to_sign(&self, account: &str, out: &mut String) {
        fn v(field: &Option<String>) -> &str {
            field.as_deref().unwrap_or("")
        }
        let mut line = |text: &str| {
            out.push_str(text);
            out.push('\n');
        };
        if self.is_account_sas() {
            for text in [
                account,
                v(&self.permissions),
                v(&self.services),
                v(&self.resource_types),
                v(&self.start),
                v(&self.expiry),
                v(&self.ip),
                v(&self.protocol),
                v(&self.version),
            ] {
                line(text);
            }
            if v(&self.version) >= "2020-12-06" {
                line(v(&self.encryption_scope));
            }
        } else {
            for text in [v(&self.permissions), v(&self.start), v(&self.expiry)] {
                line(text);
            }
            // Before 2015-04-05 the resource has no `/table` prefix and the string has no
            // `sip` / `spr` lines (the form third-party clients still sign with `sv=2013-08-15`).
            let modern = v(&self.version) >= TABLE_SAS_2015;
            if modern {
                out.push_str("/table");
            }
            out.push('/');
            out.push_str(account);
            out.push('/');
            let table = v(&self.table);
            if table.is_ascii() {
                out.extend(table.bytes().map(|b| char::from(b.to_ascii_lowercase())));
            } else {
                // Full Unicode lower-casing (context-dependent: a final sigma).
                out.push_str(&table.to_lowercase());
            }
            out.push('\n');
            out.push_str(v(&self.identifier));
            if modern {
                for text in [v(&self.ip), v(&self.protocol)] {
                    out.push('\n');
                    out.push_str(text);
                }
            }
            for text in [
                v(&self.version),
                v(&self.start_pk),
                v(&self.start_rk),
                v(&self.end_pk),
            ] {
                out.push('\n');
                out.push_str(text);
            }
            out.push('\n');
            out.push_str(v(&self.end_rk));
        }
    }

    /// The token as a query string (without `?`), `sig` last, values percent-encoded.
    pub fn to_query(&self, signature: &str) -> String {
        let mut pairs: Vec<String> = NAMES
            .iter()
            .zip(self.slots())
            .filter_map(|(name, value)| {
                value
                    .as_deref()
                    .map(|v| format!("{name}={}", utf8_percent_encode(v, QUERY_VALUE)))
            })
            .collect();
        pairs.push(format!(
            "sig={}",
            utf8_percent_encode(signature, QUERY_VALUE)
        ));
        pairs.join("&")
    }
}

/// Builds and signs a table SAS or an account SAS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SasBuilder {
    fields: SasFields,
}

impl SasBuilder {
    /// A table SAS for `table` (no permissions yet, version [`SAS_VERSION`]).
    pub fn table(table: &str) -> SasBuilder {
        SasBuilder {
            fields: SasFields {
                version: Some(SAS_VERSION.into()),
                table: Some(table.into()),
                ..SasFields::default()
            },
        }
    }

    /// An account SAS for the table service (`ss=t`) on `resource_types` (`s`, `c`, `o`).
    pub fn account(resource_types: &str) -> SasBuilder {
        SasBuilder {
            fields: SasFields {
                version: Some(SAS_VERSION.into()),
                services: Some("t".into()),
                resource_types: Some(resource_types.into()),
                ..SasFields::default()
            },
        }
    }

    /// `sp`.
    pub fn permissions(mut self, permissions: &str) -> SasBuilder {
        self.fields.permissions = Some(permissions.into());
        self
    }

    /// `st`, as text (e.g. `2026-01-01T00:00:00Z`).
    pub fn start(mut self, start: &str) -> SasBuilder {
        self.fields.start = Some(start.into());
        self
    }

    /// `se`, as text.
    pub fn expiry(mut self, expiry: &str) -> SasBuilder {
        self.fields.expiry = Some(expiry.into());
        self
    }

    /// `st` and `se` from times (`%Y-%m-%dT%H:%M:%SZ`, as the SDKs write them).
    pub fn window(
        self,
        start: Option<chrono::DateTime<chrono::Utc>>,
        expiry: chrono::DateTime<chrono::Utc>,
    ) -> SasBuilder {
        let text = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let builder = self.expiry(&text(expiry));
        match start {
            Some(s) => builder.start(&text(s)),
            None => builder,
        }
    }

    /// `st` and `se` relative to now, in seconds (negative: in the past); no `st` when
    /// `start_offset` is `None`.
    pub fn window_from_now(self, start_offset: Option<i64>, expiry_offset: i64) -> SasBuilder {
        let now = chrono::Utc::now();
        let at = |secs: i64| now + chrono::Duration::seconds(secs);
        self.window(start_offset.map(at), at(expiry_offset))
    }

    /// `spk` and (optionally) `srk`: the first key the token covers.
    pub fn start_key(mut self, partition_key: &str, row_key: Option<&str>) -> SasBuilder {
        self.fields.start_pk = Some(partition_key.into());
        self.fields.start_rk = row_key.map(Into::into);
        self
    }

    /// `epk` and (optionally) `erk`: the last key the token covers.
    pub fn end_key(mut self, partition_key: &str, row_key: Option<&str>) -> SasBuilder {
        self.fields.end_pk = Some(partition_key.into());
        self.fields.end_rk = row_key.map(Into::into);
        self
    }

    /// `sv`.
    pub fn version(mut self, version: &str) -> SasBuilder {
        self.fields.version = Some(version.into());
        self
    }

    /// `si`: the table's stored access policy of this Id gives what the token does not
    /// (`st`, `se`, `sp`).
    pub fn policy(mut self, identifier: &str) -> SasBuilder {
        self.fields.identifier = Some(identifier.into());
        self
    }

    /// `sip`: the client addresses allowed (`a.b.c.d` or `a.b.c.d-e.f.g.h`).
    pub fn ip(mut self, range: &str) -> SasBuilder {
        self.fields.ip = Some(range.into());
        self
    }

    /// `spr` (`https` or `https,http`).
    pub fn protocol(mut self, protocol: &str) -> SasBuilder {
        self.fields.protocol = Some(protocol.into());
        self
    }

    /// The fields so far.
    pub fn fields(&self) -> &SasFields {
        &self.fields
    }

    /// The signed token as a query string (without `?`), to append to request URLs.
    pub fn sign(&self, key: &AccountKey) -> String {
        let signature = key.sign(&self.fields.string_to_sign(key.name()));
        self.fields.to_query(&signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `http_date` writes exactly what the RFC 1123 chrono format writes, before and
        /// after 1970, whatever the fraction of the second.
        #[test]
        fn http_date_is_rfc_1123(secs in -11_644_473_600i64..253_402_300_799, nanos in 0u32..1_000_000_000) {
            let Some(time) = chrono::DateTime::from_timestamp(secs, nanos) else {
                return Ok(());
            };
            prop_assert_eq!(http_date(time), time.format("%a, %d %b %Y %H:%M:%S GMT").to_string());
        }
    }

    #[test]
    fn shared_key_string_to_sign_doubles_the_account_of_path_style_urls() {
        let parts = SignedParts {
            method: "POST",
            path: "/devstoreaccount1/Tables",
            query: None,
            content_md5: "",
            content_type: "application/json",
            date: "Mon, 23 Nov 2026 16:00:00 GMT",
        };
        assert_eq!(
            string_to_sign(Scheme::SharedKey, "devstoreaccount1", &parts),
            "POST\n\napplication/json\nMon, 23 Nov 2026 16:00:00 GMT\n\
             /devstoreaccount1/devstoreaccount1/Tables"
        );
        assert_eq!(
            string_to_sign(Scheme::SharedKeyLite, "devstoreaccount1", &parts),
            "Mon, 23 Nov 2026 16:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables"
        );
    }

    #[test]
    fn only_comp_of_the_query_is_signed() {
        assert_eq!(
            canonicalized_resource("a1c", "/a1c/t()", Some("$filter=x&comp=list&timeout=3")),
            "/a1c/a1c/t()?comp=list"
        );
        assert_eq!(
            canonicalized_resource("a1c", "/a1c/", Some("restype=service&comp=properties")),
            "/a1c/a1c/?comp=properties"
        );
        assert_eq!(
            canonicalized_resource("a1c", "/a1c/t()", Some("$top=1")),
            "/a1c/a1c/t()"
        );
        // The path is signed as sent, percent-encoding included.
        assert_eq!(
            canonicalized_resource("a1c", "/a1c/t(PartitionKey='a%20b',RowKey='')", None),
            "/a1c/a1c/t(PartitionKey='a%20b',RowKey='')"
        );
    }

    /// A signature computed independently (Python's hmac/hashlib with the development key)
    /// for the SharedKeyLite string of `GET /devstoreaccount1/Tables`.
    #[test]
    fn signature_matches_an_independent_hmac() {
        let key = AccountKey::development();
        let s = "Mon, 23 Nov 2026 16:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables";
        assert_eq!(key.sign(s), "zKxB/RORiMIHnPEBjPD4l+LDfMvO+T+oy3Ff4rn/Hus=");
        assert!(key.verify(s, &key.sign(s)));
        assert!(!key.verify(s, &key.sign("other")));
        assert!(!key.verify(s, "not base64!"));
        assert!(!key.verify(s, ""));
    }

    #[test]
    fn sas_strings_to_sign_follow_the_sdks() {
        let table = SasBuilder::table("MyTable")
            .permissions("raud")
            .start("2026-01-01T00:00:00Z")
            .expiry("2026-01-02T00:00:00Z")
            .start_key("a", Some("1"))
            .end_key("b", None);
        assert_eq!(
            table.fields().string_to_sign("acct"),
            "raud\n2026-01-01T00:00:00Z\n2026-01-02T00:00:00Z\n/table/acct/mytable\n\n\n\n\
             2019-02-02\na\n1\nb\n"
        );
        // Before 2015-04-05: no `/table` prefix, no `sip`/`spr` lines.
        assert_eq!(
            table
                .clone()
                .version("2013-08-15")
                .fields()
                .string_to_sign("acct"),
            "raud\n2026-01-01T00:00:00Z\n2026-01-02T00:00:00Z\n/acct/mytable\n\n\
             2013-08-15\na\n1\nb\n"
        );
        let account = SasBuilder::account("sco")
            .permissions("rwdlacu")
            .expiry("2026-01-02T00:00:00Z");
        assert_eq!(
            account.fields().string_to_sign("acct"),
            "acct\nrwdlacu\nt\nsco\n\n2026-01-02T00:00:00Z\n\n\n2019-02-02\n"
        );
        let newer = account.clone().version("2021-06-08");
        assert_eq!(
            newer.fields().string_to_sign("acct"),
            "acct\nrwdlacu\nt\nsco\n\n2026-01-02T00:00:00Z\n\n\n2021-06-08\n\n"
        );
        let token = table.sign(&AccountKey::development());
        assert!(
            token.starts_with(
                "sv=2019-02-02&sp=raud&st=2026-01-01T00%3A00%3A00Z&se=2026-01-02T00%3A00%3A00Z\
                 &tn=MyTable&spk=a&srk=1&epk=b&sig="
            ),
            "{token}"
        );
    }

    /// The strings to sign as the SDKs define them, built the plain way (`join`), to check
    /// the buffer-writing version against.
    fn joined_string_to_sign(f: &SasFields, account: &str) -> String {
        let v = |f: &Option<String>| f.clone().unwrap_or_default();
        if f.is_account_sas() {
            let mut s = [
                account.to_owned(),
                v(&f.permissions),
                v(&f.services),
                v(&f.resource_types),
                v(&f.start),
                v(&f.expiry),
                v(&f.ip),
                v(&f.protocol),
                v(&f.version),
            ]
            .join("\n");
            s.push('\n');
            if f.version.as_deref().unwrap_or("") >= "2020-12-06" {
                s.push_str(&v(&f.encryption_scope));
                s.push('\n');
            }
            s
        } else if f.version.as_deref().unwrap_or("") < "2015-04-05" {
            let resource = format!("/{account}/{}", v(&f.table).to_lowercase());
            [
                v(&f.permissions),
                v(&f.start),
                v(&f.expiry),
                resource,
                v(&f.identifier),
                v(&f.version),
                v(&f.start_pk),
                v(&f.start_rk),
                v(&f.end_pk),
                v(&f.end_rk),
            ]
            .join("\n")
        } else {
            let resource = format!("/table/{account}/{}", v(&f.table).to_lowercase());
            [
                v(&f.permissions),
                v(&f.start),
                v(&f.expiry),
                resource,
                v(&f.identifier),
                v(&f.ip),
                v(&f.protocol),
                v(&f.version),
                v(&f.start_pk),
                v(&f.start_rk),
                v(&f.end_pk),
                v(&f.end_rk),
            ]
            .join("\n")
        }
    }

    proptest! {
        /// Writing the string to sign into a buffer gives exactly the joined lines, for
        /// every field present or absent, table names in any script included.
        #[test]
        fn written_strings_to_sign_are_the_joined_lines(
            values in proptest::collection::vec(proptest::option::of("[a-zA-Z0-9:,.\\-ΣσİßÆ😀 ]{0,12}"), 15),
            version in proptest::option::of(proptest::sample::select(vec!["2019-02-02", "2020-12-06", "2021-06-08", ""])),
            account in "[a-z0-9]{3,8}",
        ) {
            let mut fields = SasFields::default();
            for (name, value) in NAMES.iter().zip(values) {
                if let Some(slot) = fields.slot_mut(name) {
                    *slot = value;
                }
            }
            fields.version = version.map(str::to_owned);
            let mut out = String::from("kept:");
            fields.write_string_to_sign(&account, &mut out);
            prop_assert_eq!(&out[5..], joined_string_to_sign(&fields, &account));
            prop_assert_eq!(fields.string_to_sign(&account), joined_string_to_sign(&fields, &account));
        }
    }

    #[test]
    fn table_names_are_lower_cased_as_unicode_text() {
        for table in ["MyTable", "ΟΔΟΣ", "İx", "MASSE", ""] {
            let fields = SasBuilder::table(table).permissions("r").fields().clone();
            assert_eq!(
                fields.string_to_sign("acct"),
                joined_string_to_sign(&fields, "acct"),
                "{table}"
            );
        }
    }

    #[test]
    fn signatures_match_only_their_exact_mac() {
        let key = AccountKey::development();
        let text = "r\n\n2030-01-01\n/table/devstoreaccount1/t\n\n\n\n2019-02-02\n\n\n\n";
        let tag = key.mac(text);
        let good = key.sign(text);
        assert_eq!(good.len(), 44);
        assert!(signature_matches(&tag, &good));
        assert!(key.verify(text, &good));
        let mut flipped = tag;
        flipped[31] ^= 1;
        assert!(!signature_matches(&flipped, &good));
        let short = BASE64.encode(&tag[..31]);
        let long = BASE64.encode([tag.as_slice(), &[0]].concat());
        let huge = BASE64.encode([0u8; 200]);
        let unpadded = good.trim_end_matches('=').to_owned();
        for bad in [
            "",
            "not base64!",
            short.as_str(),
            long.as_str(),
            huge.as_str(),
            unpadded.as_str(),
            &good[1..],
        ] {
            assert!(!signature_matches(&tag, bad), "{bad:?}");
            assert!(!key.verify(text, bad), "{bad:?}");
        }
        // Keys compare by name and key bytes (the cached HMAC state is derived from them).
        assert_eq!(key, AccountKey::new(DEV_ACCOUNT, DEV_ACCOUNT_KEY).unwrap());
        assert_ne!(key, AccountKey::new(DEV_ACCOUNT, "AAAA").unwrap());
    }

    #[test]
    fn account_names_and_keys_are_checked() {
        assert!(AccountKey::new("devstoreaccount1", DEV_ACCOUNT_KEY).is_ok());
        assert!(matches!(
            AccountKey::new("Dev", DEV_ACCOUNT_KEY),
            Err(KeyError::InvalidName(_))
        ));
        assert!(matches!(
            AccountKey::new("abc", "not base64"),
            Err(KeyError::InvalidKey(_))
        ));
        assert!(matches!(
            AccountKey::new("abc", ""),
            Err(KeyError::InvalidKey(_))
        ));
        assert!(!format!("{:?}", AccountKey::development()).contains("Eby8"));
    }
}
