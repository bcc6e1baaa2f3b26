//! The writer thread and its group commit.
//!
//! Every change — entity writes, table creation and deletion — is a [`Request`] queued for
//! one thread, which owns redb's single write transaction at a time:
//!
//! 1. take the first request, then every request queued behind it (up to 256): a group;
//! 2. begin one write transaction and handle the group's requests in order, each against
//!    the transaction's current state (so a request sees the ones before it): an entity
//!    write is resolved first ([`crate::resolve()`]: validation, existence, `If-Match`,
//!    merge, Timestamp) and applied only if it succeeds, so a failing request leaves no
//!    trace;
//! 3. store the group's largest Timestamp (the clock's floor after a restart), publish the
//!    property names the group added (readers must know them before they can see rows that
//!    use them), and commit once with `Durability::Immediate`;
//! 4. only then reply to every request of the group — with its result if the commit
//!    succeeded, with a storage error (and nothing stored) if it failed.
//!
//! Callers that arrive while a commit is on disk queue up and share the next one, so many
//! concurrent writers pay about one `fsync` per group, not one each. A storage failure
//! while handling a request fails the whole group (its transaction is dropped, nothing is
//! written); the in-memory name lists are rolled back with it.
//!
//! ```text
//! callers ──▶ queue ──▶ [writer] begin ─ resolve+apply A ─ resolve B (fails) ─ resolve+apply C ─ commit ──▶ replies A ✓ B ✗ C ✓
//! ```

use super::edit::{self, RowsTable};
use super::open::{decode_table, encode_table};
use super::schema::{META, META_CLOCK, META_NEXT_TABLE, NAMES, ROWS, TABLES};
use super::{Shared, TableEntry};
use crate::backend::TableInfo;
use crate::codec::Names;
use crate::error::{BatchError, StoreError};
use crate::op::{WriteOp, Written};
use crate::resolve::{StateReader, resolve};
use redb::{Durability, ReadableTable, Table, WriteTransaction};
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, PoisonError, RwLock};
use tableq_model::{DateTime, Entity, validate};

use super::block::BlockView;
use super::keys::{table_end, table_prefix};
use super::locate::{floor_block, search_keys};

/// Most requests committed together.
const MAX_GROUP: usize = 256;

/// A change for the writer thread, with the channel its answer goes to.
pub(crate) enum Request {
    /// `Backend::write_batch`.
    Write {
        table: String,
        ops: Vec<WriteOp>,
        reply: SyncSender<Result<Vec<Written>, BatchError>>,
    },
    /// `Backend::create_table` (the name is already validated).
    CreateTable {
        name: String,
        reply: SyncSender<Result<TableInfo, StoreError>>,
    },
    /// `Backend::delete_table`.
    DeleteTable {
        name: String,
        reply: SyncSender<Result<(), StoreError>>,
    },
}

/// A request's answer, held until the commit.
enum Answer {
    Write(Result<Vec<Written>, BatchError>),
    CreateTable(Result<TableInfo, StoreError>),
    DeleteTable(Result<(), StoreError>),
}

/// A catalog change to publish after the commit.
enum CatalogChange {
    Created { key: String, id: u64, name: String },
    Deleted { key: String },
}

/// What a group changed in memory, to publish after the commit or undo after a failure.
#[derive(Default)]
struct GroupState {
    /// Table id → (table key, number of names before the group), for tables that existed.
    names_before: HashMap<u64, (String, usize)>,
    /// Tables created by the group.
    created: Vec<u64>,
    /// Name lists of tables the group deleted.
    deleted: Vec<(u64, Names)>,
    /// Name lists published to readers before the commit, with what they replaced.
    published: Vec<(Arc<TableEntry>, Arc<Names>)>,
    catalog: Vec<CatalogChange>,
    max_timestamp: Option<DateTime>,
}

/// The writer thread's state.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    /// Table id → property names: the authoritative lists (readers get copies).
    names: HashMap<u64, Names>,
}

fn storage(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::storage(e)
}

/// Reads a table's current state inside the write transaction, for `resolve`.
struct TxnReader<'a, 'txn> {
    rows: &'a RowsTable<'txn>,
    table: u64,
    names: &'a Names,
}

impl StateReader for TxnReader<'_, '_> {
    fn current(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        let (key, partition) = search_keys(self.table, pk, rk);
        let found = floor_block(self.rows.range::<&[u8]>(..=key.as_slice()), &partition)
            .map_err(storage)?;
        let Some((_, bytes)) = found else {
            return Ok(None);
        };
        let view = BlockView::parse(bytes.value()).map_err(storage)?;
        let Some(i) = view.find(rk) else {
            return Ok(None);
        };
        let entity = view.row(i).to_entity(pk, self.names).map_err(storage)?;
        Ok(Some(entity))
    }
}

/// The redb tables a group writes.
struct Tables<'txn> {
    meta: Table<'txn, &'static str, u64>,
    tables: Table<'txn, &'static str, &'static [u8]>,
    names: Table<'txn, (u64, u32), &'static str>,
    rows: RowsTable<'txn>,
}

impl Writer {
    pub(crate) fn new(shared: Arc<Shared>, names: HashMap<u64, Names>) -> Writer {
        Writer { shared, names }
    }

    /// Serves requests until every sender is gone (the backend is closing).
    pub(crate) fn run(mut self, requests: Receiver<Request>) {
        while let Ok(first) = requests.recv() {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match requests.try_recv() {
                    Ok(r) => group.push(r),
                    Err(_) => break,
                }
            }
            self.commit_group(group);
        }
    }

    fn begin(&self) -> Result<WriteTransaction, StoreError> {
        let db = self
            .shared
            .db
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut txn = db
            .as_ref()
            .ok_or(StoreError::Closed)?
            .begin_write()
            .map_err(storage)?;
        txn.set_durability(Durability::Immediate).map_err(storage)?;
        Ok(txn)
    }

    fn commit_group(&mut self, mut group: Vec<Request>) {
        let mut state = GroupState::default();
        let result = self.run_group(&mut group, &mut state);
        match result {
            Ok(answers) => {
                for (request, answer) in group.into_iter().zip(answers) {
                    reply(request, answer);
                }
            }
            Err(e) => {
                self.undo(state);
                let message = e.to_string();
                for request in group {
                    let error = || StoreError::storage(message.clone());
                    let answer = match &request {
                        Request::Write { .. } => Answer::Write(Err(error().into())),
                        Request::CreateTable { .. } => Answer::CreateTable(Err(error())),
                        Request::DeleteTable { .. } => Answer::DeleteTable(Err(error())),
                    };
                    reply(request, answer);
                }
            }
        }
    }

    /// Handles a group in one transaction and commits it; `Err` = nothing was stored.
    fn run_group(
        &mut self,
        group: &mut [Request],
        state: &mut GroupState,
    ) -> Result<Vec<Answer>, StoreError> {
        let txn = self.begin()?;
        let answers = {
            let mut t = Tables {
                meta: txn.open_table(META).map_err(storage)?,
                tables: txn.open_table(TABLES).map_err(storage)?,
                names: txn.open_table(NAMES).map_err(storage)?,
                rows: txn.open_table(ROWS).map_err(storage)?,
            };
            let mut answers = Vec::with_capacity(group.len());
            for request in group.iter_mut() {
                answers.push(self.handle(request, &mut t, state)?);
            }
            if let Some(ts) = state.max_timestamp {
                let ticks = u64::try_from(ts.ticks()).map_err(storage)?;
                t.meta.insert(META_CLOCK, ticks).map_err(storage)?;
            }
            answers
        };
        self.publish_names(state);
        if state.catalog.is_empty() {
            txn.commit().map_err(storage)?;
        } else {
            // Readers begin their snapshot under the read lock: none sees the new catalog
            // with an old snapshot or the reverse.
            let mut catalog = self
                .shared
                .catalog
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            txn.commit().map_err(storage)?;
            for change in std::mem::take(&mut state.catalog) {
                match change {
                    CatalogChange::Created { key, id, name } => {
                        let names = self.names.get(&id).cloned().unwrap_or_default();
                        catalog.insert(
                            key,
                            Arc::new(TableEntry {
                                id,
                                name,
                                names: RwLock::new(Arc::new(names)),
                            }),
                        );
                    }
                    CatalogChange::Deleted { key } => {
                        catalog.remove(&key);
                    }
                }
            }
        }
        Ok(answers)
    }

    /// Handles one request; `Err` only for storage failures (which fail the group).
    fn handle(
        &mut self,
        request: &mut Request,
        t: &mut Tables<'_>,
        state: &mut GroupState,
    ) -> Result<Answer, StoreError> {
        Ok(match request {
            Request::Write { table, ops, .. } => {
                Answer::Write(self.write(table, std::mem::take(ops), t, state)?)
            }
            Request::CreateTable { name, .. } => {
                Answer::CreateTable(self.create_table(name, t, state)?)
            }
            Request::DeleteTable { name, .. } => {
                Answer::DeleteTable(self.delete_table(name, t, state)?)
            }
        })
    }

    fn lookup(t: &Tables<'_>, key: &str) -> Result<Option<(u64, String)>, StoreError> {
        match t.tables.get(key).map_err(storage)? {
            Some(v) => decode_table(v.value())
                .map(Some)
                .ok_or_else(|| storage("corrupt table record")),
            None => Ok(None),
        }
    }

    fn write(
        &mut self,
        table: &str,
        ops: Vec<WriteOp>,
        t: &mut Tables<'_>,
        state: &mut GroupState,
    ) -> Result<Result<Vec<Written>, BatchError>, StoreError> {
        let key = validate::table_key(table);
        let Some((id, _)) = Self::lookup(t, &key)? else {
            return Ok(Err(StoreError::TableNotFound(table.to_owned()).into()));
        };
        let names = self.names.entry(id).or_default();
        if !state.created.contains(&id) {
            state
                .names_before
                .entry(id)
                .or_insert_with(|| (key.clone(), names.len()));
        }
        let mut reader = TxnReader {
            rows: &t.rows,
            table: id,
            names,
        };
        let resolved = match resolve(ops, &mut reader, &self.shared.clock) {
            Ok(r) => r,
            Err(e) if matches!(e.error, StoreError::Storage(_)) => return Err(e.error),
            Err(e) => return Ok(Err(e)),
        };
        if resolved.changes.is_empty() {
            return Ok(Ok(resolved.written));
        }
        let added = edit::apply(&mut t.rows, id, names, self.shared.limits, resolved.changes)?;
        for number in added {
            t.names
                .insert((id, number), names.name(number))
                .map_err(storage)?;
        }
        state.max_timestamp = state.max_timestamp.max(Some(resolved.timestamp));
        Ok(Ok(resolved.written))
    }

    fn create_table(
        &mut self,
        name: &str,
        t: &mut Tables<'_>,
        state: &mut GroupState,
    ) -> Result<Result<TableInfo, StoreError>, StoreError> {
        let key = validate::table_key(name);
        if let Some((_, existing)) = Self::lookup(t, &key)? {
            return Ok(Err(StoreError::TableAlreadyExists { existing }));
        }
        let id = t
            .meta
            .get(META_NEXT_TABLE)
            .map_err(storage)?
            .map_or(1, |v| v.value());
        let next = id
            .checked_add(1)
            .ok_or_else(|| storage("table ids exhausted"))?;
        t.meta.insert(META_NEXT_TABLE, next).map_err(storage)?;
        t.tables
            .insert(key.as_str(), encode_table(id, name).as_slice())
            .map_err(storage)?;
        self.names.insert(id, Names::default());
        state.created.push(id);
        state.catalog.push(CatalogChange::Created {
            key,
            id,
            name: name.to_owned(),
        });
        Ok(Ok(TableInfo {
            name: name.to_owned(),
        }))
    }

    fn delete_table(
        &mut self,
        name: &str,
        t: &mut Tables<'_>,
        state: &mut GroupState,
    ) -> Result<Result<(), StoreError>, StoreError> {
        let key = validate::table_key(name);
        let Some((id, _)) = Self::lookup(t, &key)? else {
            return Ok(Err(StoreError::TableToDeleteNotFound(name.to_owned())));
        };
        t.tables.remove(key.as_str()).map_err(storage)?;
        let (start, end) = (table_prefix(id), table_end(id));
        t.rows
            .retain_in::<&[u8], _>(start.as_slice()..end.as_slice(), |_, _| false)
            .map_err(storage)?;
        t.names
            .retain_in((id, 0)..=(id, u32::MAX), |_, _| false)
            .map_err(storage)?;
        if let Some(names) = self.names.remove(&id) {
            state.deleted.push((id, names));
        }
        state.catalog.push(CatalogChange::Deleted { key });
        Ok(Ok(()))
    }

    /// Gives readers the longer name lists of existing tables (before the commit).
    fn publish_names(&self, state: &mut GroupState) {
        let catalog = self
            .shared
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for (id, (key, before)) in &state.names_before {
            let Some(names) = self.names.get(id) else {
                continue;
            };
            if names.len() == *before {
                continue;
            }
            if let Some(entry) = catalog.get(key).filter(|e| e.id == *id) {
                let mut slot = entry.names.write().unwrap_or_else(PoisonError::into_inner);
                let previous = std::mem::replace(&mut *slot, Arc::new(names.clone()));
                state.published.push((entry.clone(), previous));
            }
        }
    }

    /// Undoes the in-memory effects of a group that was not committed.
    fn undo(&mut self, state: GroupState) {
        for (entry, previous) in state.published {
            *entry.names.write().unwrap_or_else(PoisonError::into_inner) = previous;
        }
        for (id, names) in state.deleted {
            self.names.insert(id, names);
        }
        for id in state.created {
            self.names.remove(&id);
        }
        for (id, (_, before)) in state.names_before {
            if let Some(names) = self.names.get_mut(&id) {
                names.truncate(before);
            }
        }
    }
}

fn reply(request: Request, answer: Answer) {
    // A caller that gave up waiting is not an error of the write.
    match (request, answer) {
        (Request::Write { reply, .. }, Answer::Write(a)) => {
            let _ = reply.send(a);
        }
        (Request::CreateTable { reply, .. }, Answer::CreateTable(a)) => {
            let _ = reply.send(a);
        }
        (Request::DeleteTable { reply, .. }, Answer::DeleteTable(a)) => {
            let _ = reply.send(a);
        }
        _ => {}
    }
}
