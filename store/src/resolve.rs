//! The write path's semantics, once for every backend: [`resolve`] turns a list of
//! [`WriteOp`]s into the [`Change`]s to store, given read access to the current state.
//!
//! A backend calls it while it holds exclusive write access to the table (a writer lock, a
//! storage write transaction, SQL row locks), applies the returned changes atomically, and
//! only then acknowledges. `resolve` itself never writes, so a failing operation leaves
//! nothing behind. Steps 1 and 2 below need no stored state: a backend may run them first
//! with [`check_ops`], outside its exclusive access (the durable engine does, on the
//! caller's thread, so that its one writer thread does less), and the rest with
//! [`resolve_checked`] under it.
//!
//! What it decides, in this order:
//! 1. every entity is valid (`tableq_model::validate::entity`; keys of deletes are checked as
//!    keys) → else that operation fails with the model's code (400);
//! 2. no entity appears twice → else `InvalidDuplicateRow` at the second occurrence;
//! 3. each operation against the current state, in order (see [`crate::op`]): existence,
//!    `If-Match`, replace vs merge; a merged entity is validated again (property count and
//!    size may grow past the limits);
//! 4. one Timestamp for the whole write, from the [`Clock`], greater than the Timestamp of
//!    every entity it replaces or deletes (so Timestamps and ETags strictly increase per
//!    entity).
//!
//! ```
//! use std::collections::HashMap;
//! use tableq_model::{Entity, Value};
//! use tableq_store::{resolve, Change, Clock, StateReader, StoreError, WriteOp};
//!
//! struct Map(HashMap<(String, String), Entity>);
//! impl StateReader for Map {
//!     fn current(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
//!         Ok(self.0.get(&(pk.to_owned(), rk.to_owned())).cloned())
//!     }
//! }
//!
//! let mut stored = Entity::new("p", "r");
//! stored.set("A", Value::Int32(1));
//! let mut state = Map(HashMap::from([(("p".into(), "r".into()), stored)]));
//! let mut patch = Entity::new("p", "r");
//! patch.set("B", Value::Int32(2));
//! let out = resolve(vec![WriteOp::InsertOrMerge { entity: patch }], &mut state, &Clock::new()).unwrap();
//! let Change::Put(merged) = &out.changes[0] else { panic!() };
//! assert_eq!((merged.custom("A"), merged.custom("B")), (Some(&Value::Int32(1)), Some(&Value::Int32(2))));
//! assert_eq!(merged.timestamp(), Some(out.timestamp));
//! ```

use crate::clock::Clock;
use crate::error::{BatchError, StoreError};
use crate::op::{IfMatch, WriteOp, Written};
use std::collections::HashSet;
use tableq_model::{DateTime, Entity, SystemProperty, validate};

/// Read access to a table's current state inside a write.
pub trait StateReader {
    /// The stored entity with these keys (with its Timestamp), if any.
    fn current(&mut self, partition_key: &str, row_key: &str)
    -> Result<Option<Entity>, StoreError>;
}

/// One change to store: what [`resolve`] decides, what every engine applies (the memory
/// engine's [`MemorySnapshot::with_changes`](crate::MemorySnapshot::with_changes), the
/// durable engine's blocks and write-ahead log, PostgreSQL's statements).
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Store this entity (its Timestamp is set), replacing any entity with its keys.
    Put(Entity),
    /// Remove the entity with these keys ([`resolve`] only deletes entities that exist;
    /// engines treat the removal of a missing key as doing nothing).
    Delete {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
}

impl Change {
    /// A [`Change::Delete`].
    pub fn delete(partition_key: impl Into<String>, row_key: impl Into<String>) -> Change {
        Change::Delete {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
        }
    }

    /// The (PartitionKey, RowKey) the change writes.
    pub fn keys(&self) -> (&str, &str) {
        match self {
            Change::Put(e) => (e.partition_key(), e.row_key()),
            Change::Delete {
                partition_key,
                row_key,
            } => (partition_key, row_key),
        }
    }
}

/// The outcome of [`resolve`]: what to store, and what to report per operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The changes, one per operation, in operation order.
    pub changes: Vec<Change>,
    /// What each operation wrote, in operation order.
    pub written: Vec<Written>,
    /// The write's one Timestamp.
    pub timestamp: DateTime,
}

/// Decides a write (see the module docs). `ops` empty → no changes. The same as
/// [`check_ops`] then [`resolve_checked`].
pub fn resolve(
    ops: Vec<WriteOp>,
    state: &mut dyn StateReader,
    clock: &Clock,
) -> Result<Resolved, BatchError> {
    resolve_checked(check_ops(ops)?, state, clock)
}

/// Operations that passed the checks needing no stored state (steps 1 and 2 of the module
/// docs), from [`check_ops`]: a backend may run them before it takes its exclusive write
/// access, and [`resolve_checked`] does the rest under it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckedOps(Vec<WriteOp>);

impl CheckedOps {
    /// The operations.
    pub fn ops(&self) -> &[WriteOp] {
        &self.0
    }
}

/// Steps 1 and 2 of the module docs: every entity valid, no entity twice.
pub fn check_ops(ops: Vec<WriteOp>) -> Result<CheckedOps, BatchError> {
    for (i, op) in ops.iter().enumerate() {
        check(op).map_err(|e| BatchError::at(i, e))?;
    }
    let mut seen = HashSet::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        if !seen.insert(op.keys()) {
            let (pk, rk) = op.keys();
            return Err(BatchError::at(
                i,
                StoreError::DuplicateRow {
                    partition_key: pk.to_owned(),
                    row_key: rk.to_owned(),
                },
            ));
        }
    }
    drop(seen);
    Ok(CheckedOps(ops))
}

/// Steps 3 and 4 of the module docs, for operations [`check_ops`] passed.
pub fn resolve_checked(
    ops: CheckedOps,
    state: &mut dyn StateReader,
    clock: &Clock,
) -> Result<Resolved, BatchError> {
    let CheckedOps(ops) = ops;
    let mut floor: Option<DateTime> = None;
    let mut changes = Vec::with_capacity(ops.len());
    for (i, op) in ops.into_iter().enumerate() {
        let (pk, rk) = op.keys();
        let current = state.current(pk, rk).map_err(|e| BatchError::at(i, e))?;
        if let Some(t) = current.as_ref().and_then(Entity::timestamp) {
            floor = floor.max(Some(t));
        }
        let change = apply(op, current).map_err(|e| BatchError::at(i, e))?;
        changes.push(change);
    }
    let timestamp = clock.next_after(floor);
    for change in &mut changes {
        if let Change::Put(e) = change {
            e.set_timestamp(Some(timestamp));
        }
    }
    let written = vec![Written { timestamp }; changes.len()];
    Ok(Resolved {
        changes,
        written,
        timestamp,
    })
}

/// The checks that need no stored state.
fn check(op: &WriteOp) -> Result<(), StoreError> {
    match op {
        WriteOp::Insert { entity }
        | WriteOp::Replace { entity, .. }
        | WriteOp::Merge { entity, .. }
        | WriteOp::InsertOrReplace { entity }
        | WriteOp::InsertOrMerge { entity } => validate::entity(entity)?,
        WriteOp::Delete {
            partition_key,
            row_key,
            ..
        } => {
            validate::key(SystemProperty::PartitionKey, partition_key)?;
            validate::key(SystemProperty::RowKey, row_key)?;
        }
    }
    Ok(())
}

fn not_found(pk: &str, rk: &str) -> StoreError {
    StoreError::EntityNotFound {
        partition_key: pk.to_owned(),
        row_key: rk.to_owned(),
    }
}

/// The stored version must exist and satisfy `if_match`.
fn condition(
    current: Option<&Entity>,
    if_match: IfMatch,
    pk: &str,
    rk: &str,
) -> Result<(), StoreError> {
    let current = current.ok_or_else(|| not_found(pk, rk))?;
    // A stored entity always has a Timestamp; one without (never written by a store)
    // satisfies only `*`.
    let admitted = match current.timestamp() {
        Some(t) => if_match.admits(t),
        None => if_match == IfMatch::Any,
    };
    if admitted {
        Ok(())
    } else {
        Err(StoreError::ConditionNotSatisfied {
            partition_key: pk.to_owned(),
            row_key: rk.to_owned(),
        })
    }
}

/// `patch`'s properties over `current`'s; the result is validated again.
fn merged(current: Entity, patch: Entity) -> Result<Entity, StoreError> {
    let mut out = current;
    for p in patch.properties() {
        out.set(p.name.clone(), p.value.clone());
    }
    validate::entity(&out)?;
    Ok(out)
}

fn apply(op: WriteOp, current: Option<Entity>) -> Result<Change, StoreError> {
    Ok(match op {
        WriteOp::Insert { entity } => {
            if current.is_some() {
                return Err(StoreError::EntityAlreadyExists {
                    partition_key: entity.partition_key().to_owned(),
                    row_key: entity.row_key().to_owned(),
                });
            }
            Change::Put(entity)
        }
        WriteOp::Replace { entity, if_match } => {
            condition(
                current.as_ref(),
                if_match,
                entity.partition_key(),
                entity.row_key(),
            )?;
            Change::Put(entity)
        }
        WriteOp::Merge { entity, if_match } => {
            condition(
                current.as_ref(),
                if_match,
                entity.partition_key(),
                entity.row_key(),
            )?;
            match current {
                Some(c) => Change::Put(merged(c, entity)?),
                None => return Err(not_found(entity.partition_key(), entity.row_key())),
            }
        }
        WriteOp::InsertOrReplace { entity } => Change::Put(entity),
        WriteOp::InsertOrMerge { entity } => match current {
            Some(c) => Change::Put(merged(c, entity)?),
            None => Change::Put(entity),
        },
        WriteOp::Delete {
            partition_key,
            row_key,
            if_match,
        } => {
            condition(current.as_ref(), if_match, &partition_key, &row_key)?;
            Change::Delete {
                partition_key,
                row_key,
            }
        }
    })
}
