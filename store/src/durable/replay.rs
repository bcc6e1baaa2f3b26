//! Replaying the write-ahead log: the records numbered after the last checkpoint are
//! applied to redb through the writer's own operations (`txn.rs`), in order, when the data
//! directory is opened (and when redb is reopened after an I/O failure).
//!
//! Replay is a bulk load: consecutive writes to one table are merged (the last change of
//! each key wins, as applying them one by one would leave it) and applied together, up to
//! [`BATCH_CHANGES`] changes per transaction; a table created or deleted is applied at its
//! place in the order. Transactions are non-durable; the caller checkpoints at the end.
//! The clock is raised past every replayed Timestamp, so ETags keep increasing.

use super::txn::{GroupState, Tables};
use super::wal::{self, Contents, LogOp};
use super::writer::Writer;
use crate::error::StoreError;
use crate::resolve::Change;
use redb::Durability;
use tableq_exec::compare_keys;
use tableq_model::DateTime;

/// Most changes applied in one replay transaction (bounds the memory a replay holds).
pub(crate) const BATCH_CHANGES: usize = 100_000;

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
        let mut batch: Vec<LogOp> = Vec::new();
        let mut changes = 0usize;
        let mut replayed = 0u64;
        for (lsn, body) in &contents.records {
            if *lsn <= durable_lsn {
                continue;
            }
            let op = wal::encode::decode(body).map_err(|e| {
                StoreError::storage(format!("write-ahead log record {lsn} is corrupt: {e}"))
            })?;
            if let LogOp::Write { changes: c, .. } = &op {
                changes += c.len();
            }
            batch.push(op);
            replayed += 1;
            if changes >= BATCH_CHANGES {
                self.replay_batch(std::mem::take(&mut batch))?;
                changes = 0;
            }
        }
        if !batch.is_empty() {
            self.replay_batch(batch)?;
        }
        self.wal
            .continue_after(contents.last_lsn().max(durable_lsn));
        Ok(replayed)
    }

    /// Applies `ops` in one transaction.
    fn replay_batch(&mut self, ops: Vec<LogOp>) -> Result<(), StoreError> {
        self.in_transaction(Durability::None, |w, t, state| {
            let mut pending: Option<(u64, Vec<Change>, DateTime)> = None;
            for op in ops {
                match op {
                    LogOp::Write {
                        table,
                        timestamp,
                        changes,
                    } => {
                        w.shared.clock.observe(timestamp);
                        match &mut pending {
                            Some((t_id, c, ts)) if *t_id == table => {
                                c.extend(changes);
                                *ts = (*ts).max(timestamp);
                            }
                            _ => {
                                if let Some(p) = pending.take() {
                                    w.replay_writes(t, state, p)?;
                                }
                                pending = Some((table, changes, timestamp));
                            }
                        }
                    }
                    LogOp::CreateTable { id, name } => {
                        if let Some(p) = pending.take() {
                            w.replay_writes(t, state, p)?;
                        }
                        let key = tableq_model::validate::table_key(&name);
                        w.add_table(t, state, key, id, &name)?;
                    }
                    LogOp::DeleteTable { id, key } => {
                        if let Some(p) = pending.take() {
                            w.replay_writes(t, state, p)?;
                        }
                        w.drop_table(t, state, key, id)?;
                    }
                    LogOp::SetService { stored } => {
                        super::settings::put_service(t.txn, &stored)?;
                    }
                    LogOp::SetAcl { table, stored } => {
                        super::settings::put_acl(t.txn, table, stored.as_deref())?;
                    }
                }
            }
            if let Some(p) = pending {
                w.replay_writes(t, state, p)?;
            }
            Ok(())
        })
    }

    /// Applies merged writes to one table: the last change of each key.
    fn replay_writes(
        &mut self,
        t: &mut Tables<'_>,
        state: &mut GroupState,
        (table, mut changes, timestamp): (u64, Vec<Change>, DateTime),
    ) -> Result<(), StoreError> {
        // Stable: equal keys keep their order, so the last of each run is the latest.
        changes.sort_by(|a, b| {
            let ((pa, ra), (pb, rb)) = (a.keys(), b.keys());
            compare_keys(pa, ra, pb, rb)
        });
        let mut last: Vec<Change> = Vec::with_capacity(changes.len());
        for c in changes {
            match last.last_mut() {
                Some(prev) if prev.keys() == c.keys() => *prev = c,
                _ => last.push(c),
            }
        }
        self.apply_write(t, state, table, last, timestamp)
    }
}
