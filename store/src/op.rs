//! Write operations with the Table service's semantics ([`WriteOp`]) and what a successful
//! write reports ([`Written`]).
//!
//! | operation | entity missing | entity present |
//! |---|---|---|
//! | [`Insert`](WriteOp::Insert) | inserted | `EntityAlreadyExists` |
//! | [`Replace`](WriteOp::Replace) | `ResourceNotFound` | replaced if `If-Match` holds, else `UpdateConditionNotSatisfied` |
//! | [`Merge`](WriteOp::Merge) | `ResourceNotFound` | merged if `If-Match` holds, else `UpdateConditionNotSatisfied` |
//! | [`InsertOrReplace`](WriteOp::InsertOrReplace) | inserted | replaced |
//! | [`InsertOrMerge`](WriteOp::InsertOrMerge) | inserted | merged |
//! | [`Delete`](WriteOp::Delete) | `ResourceNotFound` | deleted if `If-Match` holds, else `UpdateConditionNotSatisfied` |
//!
//! *Replace* swaps the whole property set; *merge* keeps the stored properties the payload
//! does not mention (a payload `null` was already dropped by the JSON decoder, so it leaves
//! the stored value alone). The payload's Timestamp is ignored: the store assigns one.
//!
//! ```
//! use tableq_model::{DateTime, Entity};
//! use tableq_store::{IfMatch, WriteOp};
//! let op = WriteOp::Merge { entity: Entity::new("p", "r"), if_match: IfMatch::Any };
//! assert_eq!(op.keys(), ("p", "r"));
//! assert!(IfMatch::Any.admits(DateTime::MIN));
//! ```

use tableq_model::{DateTime, Entity, json};

/// An `If-Match` condition: `*`, one ETag of this service (which names a Timestamp), or
/// another well-formed weak ETag (which matches nothing).
///
/// ```
/// use tableq_store::IfMatch;
/// assert_eq!(IfMatch::parse(r#"W/"wrong""#).unwrap(), IfMatch::Unmatched);
/// let lower = r#"w/"datetime'2021-06-09T01%3A17%3A08.3795894Z'""#;
/// assert!(matches!(IfMatch::parse(lower), Ok(IfMatch::Timestamp(_))));
/// for malformed in ["wrong", r#""strong""#, "\"", r#"W/"a"b""#, "W/"] {
///     assert!(IfMatch::parse(malformed).is_err(), "{malformed}");
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMatch {
    /// `If-Match: *` — any current version.
    Any,
    /// `If-Match: W/"datetime'…'"` — only the version with this Timestamp.
    Timestamp(DateTime),
    /// A well-formed weak ETag (`W/"…"` or `w/"…"`) that names no version this service
    /// wrote (e.g. `W/"wrong"`): satisfied by no version, so a write with it fails with
    /// `UpdateConditionNotSatisfied` (412) — not a malformed header (400).
    Unmatched,
}

impl IfMatch {
    /// Parses an `If-Match` header value: `*` or an ETag of this service
    /// ([`json::parse_etag`]); anything else is an `InvalidInput` error.
    pub fn parse(header: &str) -> Result<IfMatch, tableq_model::ModelError> {
        let header = header.trim();
        if header == "*" {
            return Ok(IfMatch::Any);
        }
        // `w/` is the same weak marker as `W/`.
        let weak = header
            .strip_prefix("W/")
            .or_else(|| header.strip_prefix("w/"));
        let normalised = weak.map(|tag| format!("W/{tag}"));
        match json::parse_etag(normalised.as_deref().unwrap_or(header)) {
            Ok(t) => Ok(IfMatch::Timestamp(t)),
            Err(_)
                if weak.is_some_and(|tag| {
                    tag.len() >= 2
                        && tag.starts_with('"')
                        && tag.ends_with('"')
                        && !tag[1..tag.len() - 1].contains('"')
                }) =>
            {
                Ok(IfMatch::Unmatched)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the stored version with Timestamp `current` satisfies the condition.
    pub fn admits(self, current: DateTime) -> bool {
        match self {
            IfMatch::Any => true,
            IfMatch::Timestamp(t) => t == current,
            IfMatch::Unmatched => false,
        }
    }
}

/// One write (see the module docs for the semantics).
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// Insert a new entity.
    Insert {
        /// The entity (its Timestamp is ignored).
        entity: Entity,
    },
    /// Replace an existing entity (HTTP `PUT` with `If-Match`).
    Replace {
        /// The new entity (its Timestamp is ignored).
        entity: Entity,
        /// The condition on the stored version.
        if_match: IfMatch,
    },
    /// Merge into an existing entity (`MERGE`/`PATCH` with `If-Match`).
    Merge {
        /// The properties to set (its Timestamp is ignored).
        entity: Entity,
        /// The condition on the stored version.
        if_match: IfMatch,
    },
    /// Insert or replace (`PUT` without `If-Match`).
    InsertOrReplace {
        /// The entity (its Timestamp is ignored).
        entity: Entity,
    },
    /// Insert or merge (`MERGE`/`PATCH` without `If-Match`).
    InsertOrMerge {
        /// The entity (its Timestamp is ignored).
        entity: Entity,
    },
    /// Delete an existing entity.
    Delete {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
        /// The condition on the stored version.
        if_match: IfMatch,
    },
}

impl WriteOp {
    /// The (PartitionKey, RowKey) the operation writes.
    pub fn keys(&self) -> (&str, &str) {
        match self {
            WriteOp::Insert { entity }
            | WriteOp::Replace { entity, .. }
            | WriteOp::Merge { entity, .. }
            | WriteOp::InsertOrReplace { entity }
            | WriteOp::InsertOrMerge { entity } => (entity.partition_key(), entity.row_key()),
            WriteOp::Delete {
                partition_key,
                row_key,
                ..
            } => (partition_key, row_key),
        }
    }

    /// The operation's name as the service's docs spell it (for logs and messages).
    pub fn name(&self) -> &'static str {
        match self {
            WriteOp::Insert { .. } => "Insert Entity",
            WriteOp::Replace { .. } => "Update Entity",
            WriteOp::Merge { .. } => "Merge Entity",
            WriteOp::InsertOrReplace { .. } => "Insert Or Replace Entity",
            WriteOp::InsertOrMerge { .. } => "Insert Or Merge Entity",
            WriteOp::Delete { .. } => "Delete Entity",
        }
    }
}

/// What one successful operation wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The Timestamp the store assigned (shared by every operation of one write); for a
    /// delete, the Timestamp of the write that deleted it.
    pub timestamp: DateTime,
}

impl Written {
    /// The ETag of the written version (`W/"datetime'…'"`), as the `ETag` header and
    /// `odata.etag` carry it.
    pub fn etag(&self) -> String {
        json::etag(self.timestamp)
    }
}
