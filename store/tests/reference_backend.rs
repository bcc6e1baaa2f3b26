//! The backend suite run against the simplest correct backend: a `BTreeMap` per table
//! behind one mutex, queries executed on a fresh `MemorySnapshot` copy. It is not an engine
//! anyone should use (every query copies the table); it exists to check the suite itself,
//! so that a failing case in a real engine points at the engine, not at the test.

use crate::suite;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tableq_exec::{Executor, Key, PageOptions, RowView};
use tableq_model::order::OrdinalString;
use tableq_model::{Entity, validate};
use tableq_planner::plan::Plan;
use tableq_store::{
    Backend, BatchError, Change, Clock, MemorySnapshot, QueryPage, ServiceProperties,
    SignedIdentifier, StateReader, StoreError, TableInfo, WriteOp, Written, acl, resolve,
};

type Rows = BTreeMap<(OrdinalString, OrdinalString), Entity>;

#[derive(Default)]
struct Reference {
    /// table key → (name, rows)
    tables: Mutex<BTreeMap<String, (String, Rows)>>,
    /// table key → stored access policies (removed with the table)
    acls: Mutex<BTreeMap<String, Vec<SignedIdentifier>>>,
    service: Mutex<ServiceProperties>,
    clock: Clock,
}

struct Reader<'a>(&'a Rows);

impl StateReader for Reader<'_> {
    fn current(&mut self, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        Ok(self
            .0
            .get(&(OrdinalString(pk.into()), OrdinalString(rk.into())))
            .cloned())
    }
}

impl Reference {
    fn with_rows<T>(
        &self,
        table: &str,
        f: impl FnOnce(&mut Rows) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut tables = self.tables.lock().unwrap();
        match tables.get_mut(&validate::table_key(table)) {
            Some((_, rows)) => f(rows),
            None => Err(StoreError::TableNotFound(table.to_owned())),
        }
    }
}

impl Backend for Reference {
    fn describe(&self) -> String {
        "reference".into()
    }

    fn service_properties(&self) -> Result<ServiceProperties, StoreError> {
        Ok(self.service.lock().unwrap().clone())
    }

    fn set_service_properties(&self, properties: &ServiceProperties) -> Result<(), StoreError> {
        properties.validate()?;
        *self.service.lock().unwrap() = properties.clone();
        Ok(())
    }

    fn table_acl(&self, table: &str) -> Result<Vec<SignedIdentifier>, StoreError> {
        self.table(table)?;
        let key = validate::table_key(table);
        Ok(self
            .acls
            .lock()
            .unwrap()
            .get(&key)
            .cloned()
            .unwrap_or_default())
    }

    fn set_table_acl(&self, table: &str, policies: &[SignedIdentifier]) -> Result<(), StoreError> {
        acl::validate(policies)?;
        self.table(table)?;
        let key = validate::table_key(table);
        self.acls.lock().unwrap().insert(key, policies.to_vec());
        Ok(())
    }

    fn create_table(&self, name: &str) -> Result<TableInfo, StoreError> {
        validate::table_name(name)?;
        let mut tables = self.tables.lock().unwrap();
        if let Some((existing, _)) = tables.get(&validate::table_key(name)) {
            return Err(StoreError::TableAlreadyExists {
                existing: existing.clone(),
            });
        }
        tables.insert(validate::table_key(name), (name.to_owned(), Rows::new()));
        Ok(TableInfo { name: name.into() })
    }

    fn delete_table(&self, name: &str) -> Result<(), StoreError> {
        let mut tables = self.tables.lock().unwrap();
        self.acls.lock().unwrap().remove(&validate::table_key(name));
        tables
            .remove(&validate::table_key(name))
            .map(|_| ())
            .ok_or_else(|| StoreError::TableToDeleteNotFound(name.to_owned()))
    }

    fn table(&self, name: &str) -> Result<TableInfo, StoreError> {
        let tables = self.tables.lock().unwrap();
        tables
            .get(&validate::table_key(name))
            .map(|(n, _)| TableInfo { name: n.clone() })
            .ok_or_else(|| StoreError::TableNotFound(name.to_owned()))
    }

    fn tables(&self) -> Result<Vec<TableInfo>, StoreError> {
        let tables = self.tables.lock().unwrap();
        Ok(tables
            .values()
            .map(|(n, _)| TableInfo { name: n.clone() })
            .collect())
    }

    fn get(&self, table: &str, pk: &str, rk: &str) -> Result<Option<Entity>, StoreError> {
        self.with_rows(table, |rows| Reader(rows).current(pk, rk))
    }

    fn query(
        &self,
        table: &str,
        plan: &Plan,
        continuation: Option<&Key>,
        options: &PageOptions,
        visit: &mut dyn FnMut(RowView<'_>),
    ) -> Result<QueryPage, StoreError> {
        let snapshot = self.with_rows(table, |rows| {
            MemorySnapshot::from_entities(rows.values().cloned()).map_err(StoreError::storage)
        })?;
        let (continuation, stats) = Executor::new(&snapshot)
            .execute_page_with(plan, continuation, options, visit)
            .map_err(StoreError::storage)?;
        Ok(QueryPage {
            continuation,
            stats,
        })
    }

    fn write_batch(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<Written>, BatchError> {
        let mut tables = self.tables.lock().unwrap();
        let (_, rows) = tables
            .get_mut(&validate::table_key(table))
            .ok_or_else(|| StoreError::TableNotFound(table.to_owned()))?;
        let resolved = resolve(ops, &mut Reader(rows), &self.clock)?;
        for change in resolved.changes {
            let (pk, rk) = change.keys();
            let key = (OrdinalString(pk.to_owned()), OrdinalString(rk.to_owned()));
            match change {
                Change::Put(e) => rows.insert(key, e),
                Change::Delete { .. } => rows.remove(&key),
            };
        }
        Ok(resolved.written)
    }

    fn close(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

fn fixture() -> suite::Fixture {
    suite::Fixture::new(Arc::new(Reference::default()))
}

backend_suite!(fixture);
