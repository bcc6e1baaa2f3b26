//! The durable engine's account and table settings: the account's service properties and
//! each table's stored access policies, in two redb tables of the data file beside the
//! entities, in the stored (JSON) forms of [`crate::service`] and [`crate::acl`].
//!
//! * `tableq_settings`: `"service"` → the service properties;
//! * `tableq_acls`: table id → the table's policies. Table ids are never reused, so a table
//!   re-created under a deleted table's name starts without policies even before the
//!   deletion's removal of the old entry (which happens in the same transaction as the
//!   deletion, see the writer).
//!
//! Both tables are created by the first write that needs them; a data file written before
//! they existed reads as "nothing set" (no format change).

use redb::{ReadTransaction, TableError, WriteTransaction};

use super::format::tables::{ACLS, SETTING_SERVICE as SERVICE, SETTINGS};
use crate::acl::{self, SignedIdentifier};
use crate::error::StoreError;
use crate::service::ServiceProperties;

fn storage(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::storage(e)
}

/// The service properties as of `txn` (the defaults when never set).
pub(crate) fn service(txn: &ReadTransaction) -> Result<ServiceProperties, StoreError> {
    let table = match txn.open_table(SETTINGS) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(ServiceProperties::default()),
        Err(e) => return Err(storage(e)),
    };
    match table.get(SERVICE).map_err(storage)? {
        Some(v) => Ok(ServiceProperties::from_stored(v.value()).map_err(storage)?),
        None => Ok(ServiceProperties::default()),
    }
}

/// The policies of table `id` as of `txn` (empty when never set).
pub(crate) fn acl(txn: &ReadTransaction, id: u64) -> Result<Vec<SignedIdentifier>, StoreError> {
    let table = match txn.open_table(ACLS) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(storage(e)),
    };
    match table.get(id).map_err(storage)? {
        Some(v) => Ok(acl::from_stored(v.value()).map_err(storage)?),
        None => Ok(Vec::new()),
    }
}

/// Stores the service properties (already validated, in their stored form) in `txn`.
pub(crate) fn put_service(txn: &WriteTransaction, stored: &str) -> Result<(), StoreError> {
    let mut table = txn.open_table(SETTINGS).map_err(storage)?;
    table.insert(SERVICE, stored).map_err(storage)?;
    Ok(())
}

/// Stores table `id`'s policies (already validated, in their stored form) in `txn`; an
/// empty list removes the entry.
pub(crate) fn put_acl(
    txn: &WriteTransaction,
    id: u64,
    stored: Option<&str>,
) -> Result<(), StoreError> {
    let mut table = txn.open_table(ACLS).map_err(storage)?;
    match stored {
        Some(s) => {
            table.insert(id, s).map_err(storage)?;
        }
        None => {
            table.remove(id).map_err(storage)?;
        }
    }
    Ok(())
}
