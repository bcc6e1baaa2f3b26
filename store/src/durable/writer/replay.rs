//! Replaying the write-ahead log: the records numbered after the last checkpoint are
//! applied again, in order, when the data directory is opened (and when redb is reopened
//! after an I/O failure).
//!
//! Replay takes the live write path minus the log append: a logged write's rows go into
//! the memtables as they are (a row keeps its bytes, only its property numbers move from
//! the record's name list to the table's: [`RowRef::renumbered`]), and the memtables are
//! folded into redb's blocks whenever they hold
//! [`DurableOptions::memtable_bytes`](crate::durable::DurableOptions::memtable_bytes) — the live
//! writes' flush, in bulk and in key order. Nothing decodes an entity. A table created or
//! deleted, service properties or access policies are applied in their own transaction at
//! their place in the order. Every transaction is non-durable; the caller checkpoints at
//! the end. The clock is raised past every replayed Timestamp, so ETags keep increasing.
//!
//! Readers (only a reopen after an I/O failure has any) keep the memtables they had until
//! that checkpoint: replay folds without publishing empty memtables, so no reader sees a
//! row go back to an older version while the replay catches up.
//!
//! [`RowRef::renumbered`]: crate::durable::format::block::RowRef::renumbered

use super::state::Writer;
use super::txn::{GroupState, Tables};
use crate::durable::format::log::Contents;
use crate::durable::format::record::{self, LogOp};
use crate::durable::settings;
use crate::error::StoreError;

impl Writer {
    /// Applies the records of `contents` numbered after `durable_lsn` (those before are in
    /// the durable file already), and makes the log continue after the last one. Returns
    /// how many records were replayed. A record that does not decode, or names a table that
    /// does not exist, is a corrupt log.
    pub(crate) fn replay(
        &mut self,
        contents: &Contents<'_>,
        durable_lsn: u64,
    ) -> Result<u64, StoreError> {
        if contents.base_lsn > durable_lsn.saturating_add(1) {
            return Err(StoreError::storage(format!(
                "the write-ahead log starts at record {} but the data file ends at record \
                 {durable_lsn}: records in between are missing",
                contents.base_lsn
            )));
        }
        // The tables whose name lists the replayed rows extend (published before a fold).
        let mut state = GroupState::default();
        // A record's name number → its table's (reused between records).
        let mut map: Vec<u32> = Vec::new();
        let mut replayed = 0u64;
        for (lsn, body) in &contents.records {
            if *lsn <= durable_lsn {
                continue;
            }
            let corrupt =
                |e| StoreError::storage(format!("write-ahead log record {lsn} is corrupt: {e}"));
            let op = record::decode(body).map_err(corrupt)?;
            replayed += 1;
            match op {
                LogOp::Write {
                    table,
                    timestamp,
                    names,
                    changes,
                } => {
                    self.shared.clock.observe(timestamp);
                    self.replay_to_memtable(
                        &mut state, table, timestamp, &names, &changes, &mut map,
                    )?;
                    if self.memtables_full() {
                        self.publish_replayed_names(&mut state);
                        self.fold_unpublished()?;
                    }
                }
                LogOp::CreateTable { id, name } => {
                    self.replay_in_transaction(&mut state, |w, t, s| {
                        let key = tableq_model::validate::table_key(name);
                        w.add_table(t, s, key, id, name)
                    })?;
                }
                LogOp::DeleteTable { id, key } => {
                    self.replay_in_transaction(&mut state, |w, t, s| {
                        w.drop_table(t, s, key.to_owned(), id)
                    })?;
                }
                LogOp::SetService { stored } => {
                    self.replay_in_transaction(&mut state, |_, t, _| {
                        settings::put_service(t.txn, stored)
                    })?;
                }
                LogOp::SetAcl { table, stored } => {
                    self.replay_in_transaction(&mut state, |_, t, _| {
                        settings::put_acl(t.txn, table, stored)
                    })?;
                }
            }
        }
        self.publish_replayed_names(&mut state);
        self.wal
            .continue_after(contents.last_lsn().max(durable_lsn));
        Ok(replayed)
    }

    /// Applies a record that is not an entity write in a transaction of its own, after
    /// publishing the names the writes before it added.
    fn replay_in_transaction(
        &mut self,
        state: &mut GroupState,
        work: impl FnOnce(&mut Writer, &mut Tables<'_>, &mut GroupState) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.publish_replayed_names(state);
        self.in_transaction(redb::Durability::None, work)
    }

    /// Gives readers the name lists the replayed rows extended, and starts over (what was
    /// published is not kept: a failed replay is not undone, it fails the open).
    fn publish_replayed_names(&self, state: &mut GroupState) {
        self.publish_names(state);
        *state = GroupState::default();
    }
}
