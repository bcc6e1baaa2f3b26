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

/// An `If-Match` condition: `*` or one ETag (which names a Timestamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMatch {
    /// `If-Match: *` — any current version.
    Any,
    /// `If-Match: W/"datetime'…'"` — only the version with this Timestamp.
    Timestamp(DateTime),
}

impl IfMatch {
    /// Parses an `If-Match` header value: `*` or an ETag of this service
    /// ([`json::parse_etag`]); anything else is an `InvalidInput` error.
    pub fn parse(header: &str) -> Result<IfMatch, tableq_model::ModelError> {
        if header.trim() == "*" {
            return Ok(IfMatch::Any);
        }
        json::parse_etag(header.trim()).map(IfMatch::Timestamp)
    }

    /// Whether the stored version with Timestamp `current` satisfies the condition.
    pub fn admits(self, current: DateTime) -> bool {
        match self {
            IfMatch::Any => true,
            IfMatch::Timestamp(t) => t == current,
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
