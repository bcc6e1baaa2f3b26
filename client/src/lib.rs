//! `tableq-client`: a small client of the Azure Table service REST API, as tableq's tools
//! (`tableq import --endpoint`, `tableq bench-http`) and tests use it against the emulator
//! (`tableq serve`), and as the official SDKs speak it.
//!
//! * [`sign`] — account keys, the SharedKey / SharedKeyLite strings to sign and SAS tokens:
//!   the one home of request signing (the emulator verifies with the same code);
//! * [`TableServiceClient`] — one account's endpoint: addressing, signing
//!   ([`Credential`]), sending, typed errors ([`ClientError`], [`ServiceError`] with the
//!   service's error code), and the table operations;
//! * [`TableClient`] — one table's entities: insert, get, update and delete with ETags
//!   ([`IfMatch`]), upserts, queries page by page with continuations ([`Query`],
//!   [`QueryPage`]), and `$batch` changesets ([`BatchOperation`], module [`batch`]);
//! * [`load`] — the bulk loader (changesets by PartitionKey over concurrent connections);
//! * [`conn`] — a raw keep-alive HTTP/1.1 connection for load generators;
//! * [`path`] — resource paths (entity and table links);
//! * [`account`] — the development storage account, the default port and connection
//!   strings.
//!
//! The client is async (tokio, reqwest) and speaks plain HTTP to path-style endpoints
//! (`http://HOST:PORT/ACCOUNT`), which is what the emulator serves.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tableq_client::ClientError> {
//! use tableq_client::{Query, TableServiceClient};
//! use tableq_model::{Entity, ErrorCode};
//!
//! let service = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?;
//! service.create_table_if_missing("Products").await?;
//! let products = service.table("Products");
//! products.insert(&Entity::new("books", "B01007")).await?;
//! let again = products.insert(&Entity::new("books", "B01007")).await.unwrap_err();
//! assert_eq!(again.code(), Some(ErrorCode::EntityAlreadyExists));
//! let page = products.query_page(&Query::filter("PartitionKey eq 'books'").top(10), None).await?;
//! assert_eq!(page.rows.len(), 1);
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod account;
pub mod batch;
pub mod conn;
mod error;
pub mod load;
pub mod path;
mod service;
pub mod sign;
mod table;

pub use account::{DEFAULT_PORT, DEV_ACCOUNT, DEV_ACCOUNT_KEY, connection_string};
pub use batch::{BatchKind, BatchOperation};
pub use error::{ClientError, ServiceError};
pub use service::{Credential, TableServiceClient, TablesPage, VERSION};
pub use table::{Continuation, IfMatch, Query, QueryPage, Record, Row, TableClient, UpdateMode};
