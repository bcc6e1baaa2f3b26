//! [`StoreError`]: why a store operation failed, with the Table service's error code.

use tableq_model::{ErrorCode, ModelError};

/// Why a store operation failed. Every variant maps to the Table service's error code
/// ([`StoreError::code`]) and so to an HTTP status. A failed write changes nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// An entity operation or lookup named a table that does not exist (404
    /// `TableNotFound`; the server answers `ResourceNotFound` when *deleting* a missing
    /// table, see [`StoreError::TableToDeleteNotFound`]).
    #[error("table `{0}` does not exist")]
    TableNotFound(String),
    /// `delete_table` of a table that does not exist (404 `ResourceNotFound`).
    #[error("table `{0}` does not exist")]
    TableToDeleteNotFound(String),
    /// `create_table` with a name taken case-insensitively (409 `TableAlreadyExists`).
    #[error("a table named `{existing}` already exists (table names are case-insensitive)")]
    TableAlreadyExists {
        /// The existing table's name, in the case it was created with.
        existing: String,
    },
    /// No entity with these keys (404 `ResourceNotFound`).
    #[error("no entity with PartitionKey {partition_key:?} and RowKey {row_key:?}")]
    EntityNotFound {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
    /// An insert found an entity with the same keys (409 `EntityAlreadyExists`).
    #[error("an entity with PartitionKey {partition_key:?} and RowKey {row_key:?} already exists")]
    EntityAlreadyExists {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
    /// An `If-Match` ETag is not the entity's current one (412 `UpdateConditionNotSatisfied`).
    #[error(
        "the entity with PartitionKey {partition_key:?} and RowKey {row_key:?} has changed \
         (its ETag is not the one given in If-Match)"
    )]
    ConditionNotSatisfied {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
    /// The entity or table name breaks a data-model rule (400, the model's code).
    #[error(transparent)]
    Invalid(#[from] ModelError),
    /// The same entity twice in one atomic write (400 `InvalidDuplicateRow`).
    #[error(
        "the entity with PartitionKey {partition_key:?} and RowKey {row_key:?} appears more \
         than once in one atomic write"
    )]
    DuplicateRow {
        /// The PartitionKey.
        partition_key: String,
        /// The RowKey.
        row_key: String,
    },
    /// Service properties or access policies that break a limit (400
    /// `InvalidXmlNodeValue`: they are only ever set as XML).
    #[error(transparent)]
    InvalidSetting(#[from] crate::service::InvalidSetting),
    /// The storage engine failed (disk, database, corruption): 500 `InternalError`. The
    /// write was not applied.
    #[error("storage failure: {0}")]
    Storage(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Stored data failed its checksum or its structural checks (500 `InternalError`): the
    /// damaged rows are never returned as data; the error names where they are.
    #[error("{0}")]
    Damaged(Box<Damage>),
    /// The store is closed or shutting down (503 `ServerBusy`).
    #[error("the store is closed")]
    Closed,
    /// Writes are refused for now — the disk is full, the write-ahead log cannot be written
    /// — while reads go on (503 `ServerBusy`: clients retry). The message names the cause;
    /// writes resume by themselves once it is gone. Nothing of the write was applied.
    #[error("writes are refused for now: {0}")]
    WritesRefused(String),
    /// The storage engine did not answer in time (a frozen or overloaded database): 500
    /// `OperationTimedOut`. The write may or may not have been applied.
    #[error("the storage engine did not answer in time: {0}")]
    Timeout(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The storage engine cannot be reached or has no free connection now (503
    /// `ServerBusy`: retry later). The write was not applied.
    #[error("the storage engine is unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// The Table service's error code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            StoreError::TableNotFound(_) => ErrorCode::TableNotFound,
            StoreError::TableToDeleteNotFound(_) => ErrorCode::ResourceNotFound,
            StoreError::TableAlreadyExists { .. } => ErrorCode::TableAlreadyExists,
            StoreError::EntityNotFound { .. } => ErrorCode::ResourceNotFound,
            StoreError::EntityAlreadyExists { .. } => ErrorCode::EntityAlreadyExists,
            StoreError::ConditionNotSatisfied { .. } => ErrorCode::UpdateConditionNotSatisfied,
            StoreError::Invalid(e) => e.code,
            StoreError::DuplicateRow { .. } => ErrorCode::InvalidDuplicateRow,
            StoreError::InvalidSetting(_) => ErrorCode::InvalidXmlNodeValue,
            StoreError::Storage(_) | StoreError::Damaged(_) => ErrorCode::InternalError,
            StoreError::Closed | StoreError::WritesRefused(_) | StoreError::Unavailable(_) => {
                ErrorCode::ServerBusy
            }
            StoreError::Timeout(_) => ErrorCode::OperationTimedOut,
        }
    }

    /// A storage-engine failure from any error.
    pub fn storage(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
        StoreError::Storage(error.into())
    }
}

/// Where stored data is damaged and how ([`StoreError::Damaged`]): one block of rows of one
/// table, by the range of keys it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The file that holds the damaged data.
    pub file: std::path::PathBuf,
    /// The table (as created; its id when its name is unknown).
    pub table: String,
    /// The PartitionKey of the block's rows.
    pub partition_key: String,
    /// The first RowKey the block holds.
    pub first_row_key: String,
    /// The last RowKey the block holds, when it could still be read.
    pub last_row_key: Option<String>,
    /// What is wrong (e.g. "the block fails its checksum").
    pub what: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "damaged data in {}: table `{}`, PartitionKey {:?}, RowKeys from {:?}",
            self.file.display(),
            self.table,
            self.partition_key,
            self.first_row_key
        )?;
        if let Some(last) = &self.last_row_key {
            write!(f, " to {last:?}")?;
        }
        write!(f, ": {}", self.what)
    }
}

/// Why an atomic multi-operation write failed: the 0-based index of the operation that
/// failed (the service's batch error message starts with it) and why. Nothing was applied.
#[derive(Debug, thiserror::Error)]
#[error("{}{error}", match index { Some(i) => format!("operation {i}: "), None => String::new() })]
pub struct BatchError {
    /// The failing operation's index in the write, 0-based; `None` when the failure is not
    /// one operation's (the table is missing, storage failed, the store is closed).
    pub index: Option<usize>,
    /// Why it failed.
    #[source]
    pub error: StoreError,
}

impl BatchError {
    /// An error of operation `index`.
    pub fn at(index: usize, error: impl Into<StoreError>) -> BatchError {
        BatchError {
            index: Some(index),
            error: error.into(),
        }
    }
}

/// A failure of the whole write, not of one operation.
impl From<StoreError> for BatchError {
    fn from(error: StoreError) -> BatchError {
        BatchError { index: None, error }
    }
}
