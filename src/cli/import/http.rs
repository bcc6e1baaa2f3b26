//! `import --endpoint URL`: the entities go to a running server through
//! `tableq_client::load::BulkLoader` (`$batch` changesets of one PartitionKey over
//! `--connections N` connections, rejected lines reported by line number, the rest sent
//! again; see that module), every request signed with SharedKey. This module only adapts
//! the command's [`Loader`] interface (a reading thread pushing lines) to the async loader,
//! and turns the client's errors into messages that name the command's flags.
//!
//! ```text
//! tableq import --table people --endpoint http://127.0.0.1:10002/devstoreaccount1 people.jsonl
//! ```

use super::loader::{Item, Loader, Mode};
use super::outcome::Outcome;
use std::sync::Arc;
use tableq::model::ErrorCode;
use tableq_client::load::{BulkLoader, LoadItem, LoadMode, LoadReport};
use tableq_client::sign::AccountKey;
use tableq_client::{ClientError, Credential, TableServiceClient};
use tokio::runtime::Runtime;

/// A client of `--endpoint URL` signing with `key` (SharedKey), or a message naming the
/// flags to fix.
pub fn endpoint_client(url: &str, key: AccountKey) -> Result<TableServiceClient, String> {
    TableServiceClient::new(url, Credential::SharedKey(key)).map_err(|e| match e {
        ClientError::AccountMismatch {
            endpoint_account,
            key_account,
            ..
        } => format!(
            "--endpoint {url} names account {endpoint_account:?}, but requests are signed \
             for {key_account:?}: give --account {endpoint_account}:KEY"
        ),
        ClientError::Config(why) => format!("--{why}"),
        other => other.to_string(),
    })
}

/// `--account NAME:BASE64KEY` → the account's key (name and key checked).
pub fn parse_account(text: &str) -> Result<AccountKey, String> {
    let (name, key) = text
        .split_once(':')
        .ok_or_else(|| format!("--account {text}: want NAME:BASE64KEY"))?;
    AccountKey::new(name, key).map_err(|e| format!("--account: {e}"))
}

/// The key requests are signed with: `--account`'s, else the development account's.
pub fn signing_key(account: Option<&str>) -> Result<AccountKey, String> {
    account.map_or_else(|| Ok(AccountKey::development()), parse_account)
}

impl LoadReport for Outcome {
    fn loaded(&self, count: u64) {
        Outcome::loaded(self, count);
    }

    fn rejected(&self, tag: u64, code: ErrorCode, message: String) {
        self.reject(tag, code, message);
    }
}

/// Loads through a running server: the client's bulk loader on a runtime of its own.
pub struct HttpLoader {
    runtime: Runtime,
    loader: Option<BulkLoader>,
    outcome: Arc<Outcome>,
}

impl HttpLoader {
    /// Checks the endpoint, creates the table when missing (`true`), and starts
    /// `connections` senders.
    pub fn connect(
        url: &str,
        table: &str,
        mode: Mode,
        connections: usize,
        key: AccountKey,
        outcome: &Arc<Outcome>,
    ) -> Result<(HttpLoader, bool), String> {
        let service = endpoint_client(url, key)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let created = runtime
            .block_on(service.create_table_if_missing(table))
            .map_err(|e| match e.code() {
                Some(_) => format!("cannot create table {table}: {e}"),
                None => e.to_string(),
            })?;
        let mode = match mode {
            Mode::Insert => LoadMode::Insert,
            Mode::Upsert => LoadMode::Upsert,
        };
        let report: Arc<dyn LoadReport> = outcome.clone();
        let loader = {
            let _entered = runtime.enter();
            BulkLoader::start(service.table(table), mode, connections, report)
                .map_err(|e| e.to_string())?
        };
        Ok((
            HttpLoader {
                runtime,
                loader: Some(loader),
                outcome: outcome.clone(),
            },
            created,
        ))
    }
}

impl Loader for HttpLoader {
    fn push(&mut self, item: Item) -> Result<(), String> {
        let Some(loader) = self.loader.as_mut() else {
            return Err("the import is finished".into());
        };
        let item = LoadItem {
            tag: item.line,
            partition_key: item.entity.partition_key().to_owned(),
            row_key: item.entity.row_key().to_owned(),
            body: item.text,
        };
        self.runtime
            .block_on(loader.push(item))
            .map_err(|e| e.to_string())
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
        let Some(loader) = self.loader.take() else {
            return Ok(());
        };
        if let Err(e) = self.runtime.block_on(loader.finish()) {
            self.outcome.fail(e.to_string());
        }
        match self.outcome.failure() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}
