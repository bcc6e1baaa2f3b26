//! Shared access signatures: reading a token from the query string ([`read_token`]),
//! checking it ([`verify_signature`], then [`SignedToken::grant`]: the stored access policy
//! it names, protocol, client address, time window) and what it then allows
//! ([`SasGrant`]: which operations on which tables and keys).
//!
//! Refusals carry the service's codes (all 403): a token that does not verify, has expired
//! or is not valid yet, or names an unknown policy → `AuthenticationFailed`; a field given
//! both in the token and in its stored policy → `AuthenticationFailed`; a valid token
//! without the permission → `AuthorizationPermissionMismatch`; an account SAS without the
//! resource type → `AuthorizationResourceTypeMismatch`; another table, keys outside the
//! range, or an operation no SAS may do (ACLs) → `AuthorizationFailure`; `sip` / `spr` not
//! satisfied → `AuthorizationSourceIPMismatch` / `AuthorizationProtocolMismatch`.
//!
//! What each token allows (the service's rules):
//!
//! | operation | table SAS (`sp` ⊆ `raud`, table `tn`) | account SAS (`ss` ∋ `t`) |
//! |---|---|---|
//! | query / get entities | `r` | `srt` ∋ `o`, `r` |
//! | insert entity | `a` | `o`, `a` |
//! | update / merge (with `If-Match`) | `u` | `o`, `u` |
//! | insert-or-replace / insert-or-merge | `a` and `u` | `o`, `a` and `u` |
//! | delete entity | `d` | `o`, `d` |
//! | query tables | — | `srt` ∋ `c`, `l` |
//! | create table | — | `c`, one of `a c w` |
//! | delete table | — | `c`, `d` |
//! | `$batch` | — (each operation is checked) | `o` (each operation is checked) |
//! | get / set service properties, service stats | — | `srt` ∋ `s`, `r` / `w` |
//! | get / set table ACL | — | — (account key only) |
//!
//! A table SAS's key range (`spk`/`srk` … `epk`/`erk`, inclusive, in (PartitionKey, RowKey)
//! order) limits the entities it reaches: single-entity operations outside it fail, and
//! queries only see entities inside it.
//!
//! ```text
//! ?sv=2019-02-02&sp=r&se=2030-01-01T00:00:00Z&tn=orders&spk=p1&epk=p1&sig=…
//!   GET /acct/orders()                              → only PartitionKey 'p1'
//!   GET /acct/orders(PartitionKey='p2',RowKey='x')  → 403 AuthenticationFailed
//!   POST /acct/orders                               → 403 (no `a`)
//! ```

use chrono::{DateTime, Utc};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::net::IpAddr;
use tableq_model::ErrorCode;
use tableq_model::order::compare_str;
use tableq_store::AccessPolicy;

use crate::protocol::error::ApiError;
use crate::protocol::formats::parse_sas_time as parse_time;
use crate::state::key_memo::MacMemo;
use tableq_client::sign::SasFields;

/// A request's operation, as far as permissions go (borrowing the names from the request's
/// parsed path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Operation<'a> {
    /// `GET Tables`, `GET Tables('t')`.
    QueryTables,
    /// `POST Tables`.
    CreateTable,
    /// `DELETE Tables('t')`.
    DeleteTable,
    /// `POST $batch`.
    Batch,
    /// Get (`write: false`) or set service properties.
    ServiceProperties {
        /// Set rather than get.
        write: bool,
    },
    /// Get service stats.
    ServiceStats,
    /// Get or set a table's ACL.
    TableAcl {
        /// The table.
        table: &'a str,
    },
    /// An operation on entities of `table`.
    Entity {
        /// The table.
        table: &'a str,
        /// What is done.
        kind: EntityOp,
        /// The entity's keys, when the URL names one entity.
        keys: Option<(&'a str, &'a str)>,
    },
}

/// What an operation does to entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntityOp {
    /// Query or get.
    Read,
    /// Insert.
    Insert,
    /// Update or merge of an existing entity (`If-Match` given).
    Update,
    /// Insert-or-replace or insert-or-merge.
    Upsert,
    /// Delete.
    Delete,
}

impl EntityOp {
    fn name(self) -> &'static str {
        match self {
            EntityOp::Read => "reading entities",
            EntityOp::Insert => "inserting entities",
            EntityOp::Update => "updating entities",
            EntityOp::Upsert => "insert-or-replace / insert-or-merge",
            EntityOp::Delete => "deleting entities",
        }
    }

    fn letters(self) -> &'static str {
        match self {
            EntityOp::Read => "r",
            EntityOp::Insert => "a",
            EntityOp::Update => "u",
            EntityOp::Upsert => "au",
            EntityOp::Delete => "d",
        }
    }
}

/// 403 `AuthenticationFailed` with a diagnostic.
pub(crate) fn unauthenticated(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::AuthenticationFailed, detail)
}

fn refused(code: ErrorCode, detail: impl Into<String>) -> ApiError {
    ApiError::new(code, detail)
}

/// A token whose signature verified: what it grants still depends on its stored access
/// policy (if it names one), the connection and the time ([`SignedToken::grant`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignedToken {
    fields: SasFields,
}

/// A verified token: what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SasGrant {
    fields: SasFields,
}

/// One end of a key range: a PartitionKey and maybe a RowKey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyBound {
    pub partition_key: String,
    pub row_key: Option<String>,
}

/// Reads the SAS parameters of a raw query string; `None` when it has no `sig`. The
/// signature is borrowed from the query string when it needs no decoding.
pub(crate) fn read_token(query: Option<&str>) -> Result<Option<(SasFields, Cow<'_, str>)>, String> {
    let Some(query) = query else {
        return Ok(None);
    };
    let mut fields = SasFields::default();
    let mut signature = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s| {
            crate::protocol::query_options::decode_component(s)
                .ok_or_else(|| format!("the SAS parameter `{name}` is not UTF-8"))
        };
        let name_text = decode(name)?;
        if name_text == "sig" {
            if signature.replace(decode(value)?).is_some() {
                return Err("the SAS parameter `sig` is given more than once".into());
            }
        } else if let Some(slot) = fields.slot_mut(&name_text)
            && slot.replace(decode(value)?.into_owned()).is_some()
        {
            return Err(format!(
                "the SAS parameter `{name_text}` is given more than once"
            ));
        }
    }
    Ok(signature.map(|s| (fields, s)))
}

/// Checks a token's signature with an account's key (through its memo of verified strings
/// to sign, [`MacMemo`]), and that it is a token of the table service at all.
///
/// A table SAS without `tn` is checked against `url_table`, the table the request's URL
/// names (Azurite accepts such tokens; the signature still binds the table, so the token
/// reaches that table only).
pub(crate) fn verify_signature(
    memo: &MacMemo,
    mut fields: SasFields,
    signature: &str,
    url_table: Option<&str>,
) -> Result<SignedToken, ApiError> {
    let key = memo.key();
    if fields.version.is_none() {
        return Err(unauthenticated("the SAS has no signed version (sv)"));
    }
    if !fields.is_account_sas()
        && fields.table.as_deref().unwrap_or("").is_empty()
        && let Some(table) = url_table
    {
        fields.table = Some(table.to_owned());
    }
    let mut text = String::with_capacity(192);
    fields.write_string_to_sign(key.name(), &mut text);
    if !memo.verify(&text, signature) {
        return Err(unauthenticated(format!(
            "the SAS signature (sig) does not match: the token was not signed with the key of \
             account `{}`, or one of its fields was changed",
            key.name()
        )));
    }
    if fields.is_account_sas() {
        if !fields.services.as_deref().unwrap_or("").contains('t') {
            return Err(unauthenticated(
                "the account SAS does not cover the table service (ss has no `t`)",
            ));
        }
    } else if fields.table.as_deref().unwrap_or("").is_empty() {
        return Err(unauthenticated(
            "the SAS names no table (tn) and no services (ss)",
        ));
    }
    Ok(SignedToken { fields })
}

/// Checks a token for `account` at time `now` as [`verify_signature`] and
/// [`SignedToken::grant`] do, for a token without a stored policy, over plain HTTP from
/// `client`.
#[cfg(test)]
pub(crate) fn verify(
    memo: &MacMemo,
    fields: SasFields,
    signature: &str,
    now: DateTime<Utc>,
) -> Result<SasGrant, ApiError> {
    verify_signature(memo, fields, signature, None)?.grant(
        None,
        now,
        Some([127, 0, 0, 1].into()),
        false,
    )
}

/// Whether `client` is inside a `sip` value: one address, or an inclusive range `a-b`.
fn ip_allowed(range: &str, client: IpAddr) -> Result<bool, ApiError> {
    let parse = |text: &str| {
        text.trim().parse::<IpAddr>().map_err(|_| {
            unauthenticated(format!(
                "the SAS address range (sip) `{range}` is not an address or a range a-b"
            ))
        })
    };
    let (low, high) = match range.split_once('-') {
        Some((a, b)) => (parse(a)?, parse(b)?),
        None => {
            let a = parse(range)?;
            (a, a)
        }
    };
    Ok(low <= client && client <= high)
}

impl SignedToken {
    /// The stored access policy the token names (`si`), for a table SAS.
    pub(crate) fn policy_id(&self) -> Option<&str> {
        if self.fields.is_account_sas() {
            None
        } else {
            self.fields.identifier.as_deref()
        }
    }

    /// The table of a table SAS.
    pub(crate) fn table(&self) -> Option<&str> {
        if self.fields.is_account_sas() {
            None
        } else {
            self.fields.table.as_deref()
        }
    }

    /// What the token grants at `now` to `client` over plain HTTP, with its stored policy
    /// (`policy`: `None` when it names none; a token that names one it does not find was
    /// refused by the caller). Each of `st`, `se`, `sp` comes from the token or from the
    /// policy — never from both.
    pub(crate) fn grant(
        self,
        policy: Option<&AccessPolicy>,
        now: DateTime<Utc>,
        client: Option<IpAddr>,
        secure: bool,
    ) -> Result<SasGrant, ApiError> {
        let mut fields = self.fields;
        let mut start = None;
        let mut expiry = None;
        if let Some(policy) = policy {
            let id = fields.identifier.clone().unwrap_or_default();
            for (name, in_token, in_policy) in [
                ("start (st)", fields.start.is_some(), policy.start.is_some()),
                (
                    "expiry (se)",
                    fields.expiry.is_some(),
                    policy.expiry.is_some(),
                ),
                (
                    "permissions (sp)",
                    fields.permissions.is_some(),
                    policy.permission.is_some(),
                ),
            ] {
                if in_token && in_policy {
                    return Err(unauthenticated(format!(
                        "the SAS gives its {name} and so does its stored access policy `{id}`: \
                         a field may be given in only one of them"
                    )));
                }
            }
            start = policy.start.map(|t| t.to_chrono());
            expiry = policy.expiry.map(|t| t.to_chrono());
            if let Some(p) = &policy.permission {
                fields.permissions = Some(p.clone());
            }
        }
        let time =
            |name: &str, value: &Option<String>| -> Result<Option<DateTime<Utc>>, ApiError> {
                value
                    .as_deref()
                    .map(|v| {
                        parse_time(v).ok_or_else(|| {
                        unauthenticated(format!(
                            "the SAS {name} `{v}` is not a UTC time such as 2030-01-01T00:00:00Z"
                        ))
                    })
                    })
                    .transpose()
            };
        if let Some(t) = time("start (st)", &fields.start)? {
            start = Some(t);
        }
        if let Some(t) = time("expiry (se)", &fields.expiry)? {
            expiry = Some(t);
        }
        let Some(expiry) = expiry else {
            return Err(unauthenticated(match policy {
                Some(_) => "neither the SAS nor its stored access policy gives an expiry (se)",
                None => "the SAS has no expiry (se)",
            }));
        };
        if let Some(start) = start
            && now < start
        {
            return Err(unauthenticated(format!(
                "the SAS is not valid yet: it starts at {} (now {})",
                start.to_rfc3339(),
                now.to_rfc3339()
            )));
        }
        if now > expiry {
            return Err(unauthenticated(format!(
                "the SAS expired at {} (now {})",
                expiry.to_rfc3339(),
                now.to_rfc3339()
            )));
        }
        if let Some(protocol) = &fields.protocol
            && !secure
            && !protocol.split(',').any(|p| p.trim() == "http")
        {
            return Err(refused(
                ErrorCode::AuthorizationProtocolMismatch,
                format!("the SAS allows only `{protocol}`, and this request came over plain http"),
            ));
        }
        if let Some(range) = &fields.ip {
            let allowed = match client {
                Some(c) => ip_allowed(range, c)?,
                None => false,
            };
            if !allowed {
                return Err(refused(
                    ErrorCode::AuthorizationSourceIPMismatch,
                    format!(
                        "the SAS allows client addresses `{range}`; this request came from {}",
                        client.map_or_else(|| "an unknown address".to_owned(), |c| c.to_string())
                    ),
                ));
            }
        }
        if (fields.start_rk.is_some() && fields.start_pk.is_none())
            || (fields.end_rk.is_some() && fields.end_pk.is_none())
        {
            return Err(unauthenticated(
                "the SAS has a row key bound (srk/erk) without its partition key",
            ));
        }
        Ok(SasGrant { fields })
    }
}

impl SasGrant {
    fn permits(&self, letter: char) -> bool {
        self.fields
            .permissions
            .as_deref()
            .unwrap_or("")
            .contains(letter)
    }

    fn resource_type(&self, letter: char) -> bool {
        self.fields
            .resource_types
            .as_deref()
            .unwrap_or("")
            .contains(letter)
    }

    fn need(&self, letters: &str, what: &str) -> Result<(), ApiError> {
        match letters.chars().find(|&c| !self.permits(c)) {
            None => Ok(()),
            Some(c) => Err(refused(
                ErrorCode::AuthorizationPermissionMismatch,
                format!(
                    "the SAS does not permit {what}: it needs permission `{c}` (sp={})",
                    self.fields.permissions.as_deref().unwrap_or("")
                ),
            )),
        }
    }

    /// The first key covered, if bounded.
    pub(crate) fn start(&self) -> Option<KeyBound> {
        self.fields.start_pk.as_ref().map(|pk| KeyBound {
            partition_key: pk.clone(),
            row_key: self.fields.start_rk.clone(),
        })
    }

    /// The last key covered, if bounded.
    pub(crate) fn end(&self) -> Option<KeyBound> {
        self.fields.end_pk.as_ref().map(|pk| KeyBound {
            partition_key: pk.clone(),
            row_key: self.fields.end_rk.clone(),
        })
    }

    /// Whether the token limits keys at all.
    pub(crate) fn has_key_range(&self) -> bool {
        !self.fields.is_account_sas()
            && (self.fields.start_pk.is_some() || self.fields.end_pk.is_some())
    }

    /// Whether (`pk`, `rk`) is inside the token's key range.
    pub(crate) fn covers(&self, pk: &str, rk: &str) -> bool {
        if self.fields.is_account_sas() {
            return true;
        }
        let after_start = match self.start() {
            None => true,
            Some(b) => match compare_str(pk, &b.partition_key) {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => b
                    .row_key
                    .as_deref()
                    .is_none_or(|r| compare_str(rk, r) != Ordering::Less),
            },
        };
        let before_end = match self.end() {
            None => true,
            Some(b) => match compare_str(pk, &b.partition_key) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => b
                    .row_key
                    .as_deref()
                    .is_none_or(|r| compare_str(rk, r) != Ordering::Greater),
            },
        };
        after_start && before_end
    }

    /// 403 `AuthorizationFailure`: (`pk`, `rk`) is outside the token's key range.
    pub(crate) fn outside_range(pk: &str, rk: &str) -> ApiError {
        refused(
            ErrorCode::AuthorizationFailure,
            format!(
                "the entity (PartitionKey '{pk}', RowKey '{rk}') is outside the SAS's key range"
            ),
        )
    }

    /// Whether the token allows `operation` (key ranges of inserts are checked apart, once
    /// the body's keys are known).
    pub(crate) fn allows(&self, operation: &Operation<'_>) -> Result<(), ApiError> {
        if self.fields.is_account_sas() {
            return self.allows_as_account_sas(operation);
        }
        let tn = self.fields.table.as_deref().unwrap_or("");
        match operation {
            Operation::Entity { table, kind, keys } => {
                if !table.eq_ignore_ascii_case(tn) {
                    return Err(refused(
                        ErrorCode::AuthorizationFailure,
                        format!("the SAS is for table `{tn}`, not `{table}`"),
                    ));
                }
                self.need(kind.letters(), kind.name())?;
                if let Some((pk, rk)) = keys
                    && !self.covers(pk, rk)
                {
                    return Err(SasGrant::outside_range(pk, rk));
                }
                Ok(())
            }
            Operation::QueryTables | Operation::CreateTable | Operation::DeleteTable => {
                Err(refused(
                    ErrorCode::AuthorizationFailure,
                    format!(
                        "a table SAS (tn={tn}) reaches the entities of its table, not the table \
                         list"
                    ),
                ))
            }
            Operation::ServiceProperties { .. } | Operation::ServiceStats => Err(refused(
                ErrorCode::AuthorizationFailure,
                format!("a table SAS (tn={tn}) does not reach the account's service settings"),
            )),
            Operation::TableAcl { .. } => Err(refused(
                ErrorCode::AuthorizationFailure,
                "a table's access policies are read and set with the account key only",
            )),
            // Each operation of the batch is checked on its own (`auth::admit_operation`):
            // the outer request only says "a batch".
            Operation::Batch => Ok(()),
        }
    }

    fn allows_as_account_sas(&self, operation: &Operation<'_>) -> Result<(), ApiError> {
        let needs_type = |t: char, what: &str| {
            if self.resource_type(t) {
                Ok(())
            } else {
                Err(refused(
                    ErrorCode::AuthorizationResourceTypeMismatch,
                    format!(
                        "the account SAS does not reach {what}: it needs resource type `{t}` \
                         (srt={})",
                        self.fields.resource_types.as_deref().unwrap_or("")
                    ),
                ))
            }
        };
        match operation {
            Operation::QueryTables => {
                needs_type('c', "tables")?;
                self.need("l", "listing tables")
            }
            Operation::CreateTable => {
                needs_type('c', "tables")?;
                if ['a', 'c', 'w'].iter().any(|&c| self.permits(c)) {
                    Ok(())
                } else {
                    Err(refused(
                        ErrorCode::AuthorizationPermissionMismatch,
                        format!(
                            "the account SAS does not permit creating tables: it needs \
                             permission `a`, `c` or `w` (sp={})",
                            self.fields.permissions.as_deref().unwrap_or("")
                        ),
                    ))
                }
            }
            Operation::DeleteTable => {
                needs_type('c', "tables")?;
                self.need("d", "deleting tables")
            }
            Operation::ServiceProperties { write } => {
                needs_type('s', "the service's settings")?;
                if *write {
                    self.need("w", "setting service properties")
                } else {
                    self.need("r", "reading service properties")
                }
            }
            Operation::ServiceStats => {
                needs_type('s', "the service's statistics")?;
                self.need("r", "reading service statistics")
            }
            Operation::TableAcl { .. } => Err(refused(
                ErrorCode::AuthorizationFailure,
                "a table's access policies are read and set with the account key only",
            )),
            // As for a table SAS, each operation is checked inside the batch.
            Operation::Batch => needs_type('o', "entities"),
            Operation::Entity { kind, .. } => {
                needs_type('o', "entities")?;
                self.need(kind.letters(), kind.name())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_client::sign::{AccountKey, SasBuilder};

    fn grant(builder: SasBuilder, now: DateTime<Utc>) -> Result<SasGrant, ApiError> {
        let key = AccountKey::development();
        let token = builder.sign(&key);
        let (fields, sig) = read_token(Some(&token)).unwrap().unwrap();
        verify(&MacMemo::new(key), fields, &sig, now)
    }

    fn at(text: &str) -> DateTime<Utc> {
        parse_time(text).unwrap()
    }

    #[test]
    fn times_in_the_forms_the_service_accepts() {
        assert_eq!(at("2026-01-02"), at("2026-01-02T00:00:00Z"));
        assert_eq!(at("2026-01-02T03:04Z"), at("2026-01-02T03:04:00Z"));
        assert_eq!(
            at("2026-01-02T03:04:05.1234567Z"),
            at("2026-01-02T03:04:05Z") + chrono::Duration::nanoseconds(123_456_700)
        );
        for bad in ["", "tomorrow", "2026-13-01", "2026-01-02T03:04:05"] {
            assert!(parse_time(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_time_window_is_enforced() {
        let b = SasBuilder::table("t")
            .permissions("r")
            .start("2026-01-01T00:00:00Z")
            .expiry("2026-01-02T00:00:00Z");
        assert!(grant(b.clone(), at("2026-01-01T12:00:00Z")).is_ok());
        let early = grant(b.clone(), at("2025-12-31T23:59:59Z")).unwrap_err();
        assert!(early.detail().unwrap().contains("not valid yet"), "{early}");
        assert_eq!(early.code(), "AuthenticationFailed");
        let late = grant(b, at("2026-01-02T00:00:01Z")).unwrap_err();
        assert!(late.detail().unwrap().contains("expired"), "{late}");
        let no_expiry = grant(SasBuilder::table("t").permissions("r"), at("2026-01-01"));
        assert!(
            no_expiry
                .unwrap_err()
                .detail()
                .unwrap()
                .contains("no expiry")
        );
    }

    #[test]
    fn a_remembered_signature_still_has_its_window_checked() {
        let key = AccountKey::development();
        let memo = MacMemo::new(key.clone());
        let token = SasBuilder::table("t")
            .permissions("r")
            .start("2026-01-01T00:00:00Z")
            .expiry("2026-01-02T00:00:00Z")
            .sign(&key);
        let at_time = |now: &str| {
            let (fields, sig) = read_token(Some(&token)).unwrap().unwrap();
            verify(&memo, fields, &sig, at(now))
        };
        // The first request verifies (and the memo remembers) the signature ...
        assert!(at_time("2026-01-01T12:00:00Z").is_ok());
        // ... and every later one is judged at its own time.
        let late = at_time("2026-01-02T00:00:01Z").unwrap_err();
        assert!(late.detail().unwrap().contains("expired"), "{late}");
        let early = at_time("2025-12-31T23:59:59Z").unwrap_err();
        assert!(early.detail().unwrap().contains("not valid yet"), "{early}");
        assert!(at_time("2026-01-01T23:59:59Z").is_ok());
    }

    #[test]
    fn a_changed_field_breaks_the_signature() {
        let key = AccountKey::development();
        let token = SasBuilder::table("t")
            .permissions("r")
            .expiry("2030-01-01T00:00:00Z")
            .sign(&key);
        let widened = token.replace("sp=r", "sp=raud");
        let (fields, sig) = read_token(Some(&widened)).unwrap().unwrap();
        let memo = MacMemo::new(key.clone());
        let e = verify(&memo, fields, &sig, at("2026-01-01")).unwrap_err();
        assert!(e.detail().unwrap().contains("does not match"), "{e}");
        let other = AccountKey::new("other1", "AAAA").unwrap();
        let (fields, sig) = read_token(Some(&token)).unwrap().unwrap();
        assert!(verify(&MacMemo::new(other), fields, &sig, at("2026-01-01")).is_err());
        // The memo of the right key knows this token once it verified, and still refuses
        // the changed one.
        let (fields, sig) = read_token(Some(&token)).unwrap().unwrap();
        assert!(verify(&memo, fields, &sig, at("2026-01-01")).is_ok());
        let (fields, sig) = read_token(Some(&widened)).unwrap().unwrap();
        assert!(verify(&memo, fields, &sig, at("2026-01-01")).is_err());
        assert_eq!(read_token(Some("$filter=x")).unwrap(), None);
        assert!(read_token(Some("sig=a&sig=b")).is_err());
    }

    #[test]
    fn table_sas_permissions_and_key_ranges() {
        let g = grant(
            SasBuilder::table("Orders")
                .permissions("ra")
                .expiry("2030-01-01")
                .start_key("b", Some("2"))
                .end_key("d", None),
            at("2026-01-01"),
        )
        .unwrap();
        let entity = |kind, pk: &'static str, rk: &'static str| Operation::Entity {
            table: "orders",
            kind,
            keys: Some((pk, rk)),
        };
        assert!(g.allows(&entity(EntityOp::Read, "c", "x")).is_ok());
        assert!(g.allows(&entity(EntityOp::Read, "b", "2")).is_ok());
        assert!(g.allows(&entity(EntityOp::Read, "d", "zzz")).is_ok());
        assert!(g.allows(&entity(EntityOp::Read, "b", "1")).is_err());
        assert!(g.allows(&entity(EntityOp::Read, "e", "")).is_err());
        assert!(g.allows(&entity(EntityOp::Read, "a", "9")).is_err());
        assert!(g.allows(&entity(EntityOp::Delete, "c", "x")).is_err());
        assert!(g.allows(&entity(EntityOp::Upsert, "c", "x")).is_err());
        let other_table = Operation::Entity {
            table: "other",
            kind: EntityOp::Read,
            keys: None,
        };
        let e = g.allows(&other_table).unwrap_err();
        assert_eq!(e.code(), "AuthorizationFailure");
        assert!(e.detail().unwrap().contains("not `other`"));
        assert_eq!(
            g.allows(&entity(EntityOp::Delete, "c", "x"))
                .unwrap_err()
                .code(),
            "AuthorizationPermissionMismatch"
        );
        assert_eq!(
            g.allows(&entity(EntityOp::Read, "a", "9"))
                .unwrap_err()
                .code(),
            "AuthorizationFailure"
        );
        assert!(g.allows(&Operation::QueryTables).is_err());
        // A batch is let in; its operations are checked one by one.
        assert!(g.allows(&Operation::Batch).is_ok());
        assert!(g.has_key_range());
    }

    #[test]
    fn account_sas_resource_types_and_permissions() {
        let g = grant(
            SasBuilder::account("c")
                .permissions("lc")
                .expiry("2030-01-01"),
            at("2026-01-01"),
        )
        .unwrap();
        assert!(g.allows(&Operation::QueryTables).is_ok());
        assert!(g.allows(&Operation::CreateTable).is_ok());
        assert!(g.allows(&Operation::DeleteTable).is_err());
        assert!(g.allows(&Operation::Batch).is_err());
        let read = Operation::Entity {
            table: "t",
            kind: EntityOp::Read,
            keys: None,
        };
        let e = g.allows(&read).unwrap_err();
        assert_eq!(e.code(), "AuthorizationResourceTypeMismatch");
        assert!(e.detail().unwrap().contains("resource type `o`"));
        assert_eq!(
            g.allows(&Operation::DeleteTable).unwrap_err().code(),
            "AuthorizationPermissionMismatch"
        );
        let g = grant(
            SasBuilder::account("o")
                .permissions("rau")
                .expiry("2030-01-01"),
            at("2026-01-01"),
        )
        .unwrap();
        assert!(g.allows(&read).is_ok());
        // srt=o lets a batch in (its operations are checked one by one); srt=c does not.
        assert!(g.allows(&Operation::Batch).is_ok());
        assert!(!g.has_key_range());
        let mut fields = SasBuilder::account("o")
            .permissions("r")
            .expiry("2030-01-01")
            .fields()
            .clone();
        fields.services = Some("b".into());
        let key = AccountKey::development();
        let sig = key.sign(&fields.string_to_sign(key.name()));
        assert!(verify(&MacMemo::new(key), fields, &sig, at("2026-01-01")).is_err());
    }
}

#[cfg(test)]
mod policy_tests {
    use super::*;
    use tableq_client::sign::{AccountKey, SasBuilder};
    use tableq_model::DateTime as Stamp;

    fn signed(builder: SasBuilder) -> SignedToken {
        let key = AccountKey::development();
        let token = builder.sign(&key);
        let (fields, sig) = read_token(Some(&token)).unwrap().unwrap();
        verify_signature(&MacMemo::new(key), fields, &sig, None).unwrap()
    }

    fn policy(start: Option<&str>, expiry: Option<&str>, permission: Option<&str>) -> AccessPolicy {
        AccessPolicy {
            start: start.map(|t| Stamp::parse(t).unwrap()),
            expiry: expiry.map(|t| Stamp::parse(t).unwrap()),
            permission: permission.map(str::to_owned),
        }
    }

    fn now() -> DateTime<Utc> {
        parse_time("2026-06-01T00:00:00Z").unwrap()
    }

    #[test]
    fn the_policy_gives_what_the_token_does_not() {
        let token = signed(SasBuilder::table("t").policy("p"));
        assert_eq!(token.policy_id(), Some("p"));
        assert_eq!(token.table(), Some("t"));
        let p = policy(None, Some("2030-01-01T00:00:00Z"), Some("ra"));
        let g = token.clone().grant(Some(&p), now(), None, false).unwrap();
        let insert = Operation::Entity {
            table: "t",
            kind: EntityOp::Insert,
            keys: None,
        };
        assert!(g.allows(&insert).is_ok());
        // An expired policy, a policy without expiry, a policy not started.
        let expired = policy(None, Some("2026-01-01T00:00:00Z"), Some("r"));
        assert_eq!(
            token
                .clone()
                .grant(Some(&expired), now(), None, false)
                .unwrap_err()
                .code(),
            "AuthenticationFailed"
        );
        let open = policy(None, None, Some("r"));
        assert!(
            token
                .clone()
                .grant(Some(&open), now(), None, false)
                .is_err()
        );
        let later = policy(
            Some("2027-01-01T00:00:00Z"),
            Some("2030-01-01T00:00:00Z"),
            None,
        );
        assert!(token.grant(Some(&later), now(), None, false).is_err());
    }

    #[test]
    fn a_field_in_both_is_refused() {
        let token = signed(SasBuilder::table("t").policy("p").permissions("r"));
        let p = policy(None, Some("2030-01-01T00:00:00Z"), Some("r"));
        let e = token.grant(Some(&p), now(), None, false).unwrap_err();
        assert_eq!(
            (e.status().as_u16(), e.code()),
            (403, "AuthenticationFailed")
        );
        assert!(e.detail().unwrap().contains("permissions (sp)"), "{e}");
        // The token's own expiry with the policy's permissions is fine.
        let token = signed(SasBuilder::table("t").policy("p").expiry("2030-01-01"));
        let p = policy(None, None, Some("r"));
        assert!(token.grant(Some(&p), now(), None, false).is_ok());
    }

    #[test]
    fn addresses_and_protocols() {
        let token = signed(
            SasBuilder::table("t")
                .permissions("r")
                .expiry("2030-01-01")
                .ip("127.0.0.1-127.0.0.9"),
        );
        assert!(
            token
                .clone()
                .grant(None, now(), Some([127, 0, 0, 5].into()), false)
                .is_ok()
        );
        for client in [
            Some([127, 0, 0, 10].into()),
            Some([10, 0, 0, 1].into()),
            None,
        ] {
            let e = token.clone().grant(None, now(), client, false).unwrap_err();
            assert_eq!(e.code(), "AuthorizationSourceIPMismatch", "{client:?}");
        }
        let https = signed(
            SasBuilder::table("t")
                .permissions("r")
                .expiry("2030-01-01")
                .protocol("https"),
        );
        let e = https.clone().grant(None, now(), None, false).unwrap_err();
        assert_eq!(e.code(), "AuthorizationProtocolMismatch");
        // Over HTTPS, `spr=https` is satisfied.
        assert!(https.grant(None, now(), None, true).is_ok());
        let both = signed(
            SasBuilder::table("t")
                .permissions("r")
                .expiry("2030-01-01")
                .protocol("https,http"),
        );
        assert!(both.grant(None, now(), None, false).is_ok());
    }
}
