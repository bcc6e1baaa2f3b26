//! Shared access signatures: reading a token from the query string ([`read_token`]),
//! checking it ([`verify`]: signature, version, protocol, time window) and what it then
//! allows ([`SasGrant`]: which operations on which tables and keys).
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
//! | `$batch` | — (sign with the key) | `o` and all of `r a u d` |
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

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use percent_encoding::percent_decode_str;
use std::cmp::Ordering;
use tableq_model::order::compare_str;

use super::sign::{AccountKey, SasFields};

/// A request's operation, as far as permissions go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Operation {
    /// `GET Tables`, `GET Tables('t')`.
    QueryTables,
    /// `POST Tables`.
    CreateTable,
    /// `DELETE Tables('t')`.
    DeleteTable,
    /// `POST $batch`.
    Batch,
    /// An operation on entities of `table`.
    Entity {
        /// The table.
        table: String,
        /// What is done.
        kind: EntityOp,
        /// The entity's keys, when the URL names one entity.
        keys: Option<(String, String)>,
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

/// Reads the SAS parameters of a raw query string; `None` when it has no `sig`.
pub(crate) fn read_token(query: Option<&str>) -> Result<Option<(SasFields, String)>, String> {
    let Some(query) = query else {
        return Ok(None);
    };
    let mut fields = SasFields::default();
    let mut signature = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            percent_decode_str(&s.replace('+', " "))
                .decode_utf8()
                .map(|v| v.into_owned())
                .map_err(|_| format!("the SAS parameter `{name}` is not UTF-8"))
        };
        let name_text = decode(name)?;
        if name_text == "sig" {
            if signature.replace(decode(value)?).is_some() {
                return Err("the SAS parameter `sig` is given more than once".into());
            }
        } else if let Some(slot) = fields.slot_mut(&name_text)
            && slot.replace(decode(value)?).is_some()
        {
            return Err(format!(
                "the SAS parameter `{name_text}` is given more than once"
            ));
        }
    }
    Ok(signature.map(|s| (fields, s)))
}

/// A SAS time: `YYYY-MM-DD`, `YYYY-MM-DDThh:mmZ`, `YYYY-MM-DDThh:mm:ss[.fffffff]Z` (UTC).
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%MZ") {
        return Some(t.and_utc());
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// Checks a token for `account` at time `now`: signature, version, protocol, addresses,
/// the time window; returns what it allows or why it is refused.
pub(crate) fn verify(
    key: &AccountKey,
    fields: SasFields,
    signature: &str,
    now: DateTime<Utc>,
) -> Result<SasGrant, String> {
    if fields.version.is_none() {
        return Err("the SAS has no signed version (sv)".into());
    }
    if !key.verify(&fields.string_to_sign(key.name()), signature) {
        return Err(format!(
            "the SAS signature (sig) does not match: the token was not signed with the key of \
             account `{}`, or one of its fields was changed",
            key.name()
        ));
    }
    if fields.is_account_sas() {
        if !fields.services.as_deref().unwrap_or("").contains('t') {
            return Err("the account SAS does not cover the table service (ss has no `t`)".into());
        }
    } else if fields.table.as_deref().unwrap_or("").is_empty() {
        return Err("the SAS names no table (tn) and no services (ss)".into());
    }
    if fields.identifier.is_some() {
        return Err(
            "the SAS refers to a stored access policy (si), which tableq does not keep".into(),
        );
    }
    if fields.ip.is_some() {
        return Err("the SAS limits client addresses (sip), which tableq does not check".into());
    }
    if let Some(protocol) = &fields.protocol
        && !protocol.split(',').any(|p| p.trim() == "http")
    {
        return Err(format!(
            "the SAS allows only `{protocol}`, and this server speaks plain http"
        ));
    }
    let time = |name: &str, value: &Option<String>| -> Result<Option<DateTime<Utc>>, String> {
        value
            .as_deref()
            .map(|v| {
                parse_time(v).ok_or_else(|| {
                    format!("the SAS {name} `{v}` is not a UTC time such as 2030-01-01T00:00:00Z")
                })
            })
            .transpose()
    };
    let start = time("start (st)", &fields.start)?;
    let Some(expiry) = time("expiry (se)", &fields.expiry)? else {
        return Err("the SAS has no expiry (se)".into());
    };
    if let Some(start) = start
        && now < start
    {
        return Err(format!(
            "the SAS is not valid yet: it starts at {} (now {})",
            start.to_rfc3339(),
            now.to_rfc3339()
        ));
    }
    if now > expiry {
        return Err(format!(
            "the SAS expired at {} (now {})",
            expiry.to_rfc3339(),
            now.to_rfc3339()
        ));
    }
    if (fields.start_rk.is_some() && fields.start_pk.is_none())
        || (fields.end_rk.is_some() && fields.end_pk.is_none())
    {
        return Err("the SAS has a row key bound (srk/erk) without its partition key".into());
    }
    Ok(SasGrant { fields })
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

    fn need(&self, letters: &str, what: &str) -> Result<(), String> {
        match letters.chars().find(|&c| !self.permits(c)) {
            None => Ok(()),
            Some(c) => Err(format!(
                "the SAS does not permit {what}: it needs permission `{c}` (sp={})",
                self.fields.permissions.as_deref().unwrap_or("")
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

    /// Whether the token allows `operation` (key ranges of inserts are checked apart, once
    /// the body's keys are known).
    pub(crate) fn allows(&self, operation: &Operation) -> Result<(), String> {
        if self.fields.is_account_sas() {
            return self.allows_as_account_sas(operation);
        }
        let tn = self.fields.table.as_deref().unwrap_or("");
        match operation {
            Operation::Entity { table, kind, keys } => {
                if !table.eq_ignore_ascii_case(tn) {
                    return Err(format!("the SAS is for table `{tn}`, not `{table}`"));
                }
                let letters = match kind {
                    EntityOp::Read => "r",
                    EntityOp::Insert => "a",
                    EntityOp::Update => "u",
                    EntityOp::Upsert => "au",
                    EntityOp::Delete => "d",
                };
                self.need(letters, kind.name())?;
                if let Some((pk, rk)) = keys
                    && !self.covers(pk, rk)
                {
                    return Err(format!(
                        "the entity (PartitionKey '{pk}', RowKey '{rk}') is outside the SAS's \
                         key range"
                    ));
                }
                Ok(())
            }
            Operation::QueryTables | Operation::CreateTable | Operation::DeleteTable => {
                Err(format!(
                    "a table SAS (tn={tn}) reaches the entities of its table, not the table list"
                ))
            }
            Operation::Batch => Err(
                "entity group transactions ($batch) need the account key or an account SAS \
                 with srt=o and sp=raud; a table SAS is not accepted for them"
                    .into(),
            ),
        }
    }

    fn allows_as_account_sas(&self, operation: &Operation) -> Result<(), String> {
        let needs_type = |t: char, what: &str| {
            if self.resource_type(t) {
                Ok(())
            } else {
                Err(format!(
                    "the account SAS does not reach {what}: it needs resource type `{t}` (srt={})",
                    self.fields.resource_types.as_deref().unwrap_or("")
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
                    Err(format!(
                        "the account SAS does not permit creating tables: it needs permission \
                         `a`, `c` or `w` (sp={})",
                        self.fields.permissions.as_deref().unwrap_or("")
                    ))
                }
            }
            Operation::DeleteTable => {
                needs_type('c', "tables")?;
                self.need("d", "deleting tables")
            }
            Operation::Batch => {
                needs_type('o', "entities")?;
                self.need("raud", "entity group transactions ($batch)")
            }
            Operation::Entity { kind, .. } => {
                needs_type('o', "entities")?;
                let letters = match kind {
                    EntityOp::Read => "r",
                    EntityOp::Insert => "a",
                    EntityOp::Update => "u",
                    EntityOp::Upsert => "au",
                    EntityOp::Delete => "d",
                };
                self.need(letters, kind.name())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::sign::SasBuilder;

    fn grant(builder: SasBuilder, now: DateTime<Utc>) -> Result<SasGrant, String> {
        let key = AccountKey::development();
        let token = builder.sign(&key);
        let (fields, sig) = read_token(Some(&token)).unwrap().unwrap();
        verify(&key, fields, &sig, now)
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
        assert!(early.contains("not valid yet"), "{early}");
        let late = grant(b, at("2026-01-02T00:00:01Z")).unwrap_err();
        assert!(late.contains("expired"), "{late}");
        let no_expiry = grant(SasBuilder::table("t").permissions("r"), at("2026-01-01"));
        assert!(no_expiry.unwrap_err().contains("no expiry"));
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
        let e = verify(&key, fields, &sig, at("2026-01-01")).unwrap_err();
        assert!(e.contains("does not match"), "{e}");
        let other = AccountKey::new("other1", "AAAA").unwrap();
        let (fields, sig) = read_token(Some(&token)).unwrap().unwrap();
        assert!(verify(&other, fields, &sig, at("2026-01-01")).is_err());
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
        let entity = |kind, pk: &str, rk: &str| Operation::Entity {
            table: "orders".into(),
            kind,
            keys: Some((pk.into(), rk.into())),
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
            table: "other".into(),
            kind: EntityOp::Read,
            keys: None,
        };
        assert!(g.allows(&other_table).unwrap_err().contains("not `other`"));
        assert!(g.allows(&Operation::QueryTables).is_err());
        assert!(g.allows(&Operation::Batch).is_err());
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
        let read = Operation::Entity {
            table: "t".into(),
            kind: EntityOp::Read,
            keys: None,
        };
        assert!(g.allows(&read).unwrap_err().contains("resource type `o`"));
        let g = grant(
            SasBuilder::account("o")
                .permissions("rau")
                .expiry("2030-01-01"),
            at("2026-01-01"),
        )
        .unwrap();
        assert!(g.allows(&read).is_ok());
        assert!(g.allows(&Operation::Batch).is_err());
        assert!(!g.has_key_range());
        let mut fields = SasBuilder::account("o")
            .permissions("r")
            .expiry("2030-01-01")
            .fields()
            .clone();
        fields.services = Some("b".into());
        let key = AccountKey::development();
        let sig = key.sign(&fields.string_to_sign(key.name()));
        assert!(verify(&key, fields, &sig, at("2026-01-01")).is_err());
    }
}
