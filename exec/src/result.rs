//! What execution returns: result rows (with `$select` projection), pages with
//! continuations, and execution statistics.

use crate::key::Key;
use crate::source::SourceRow;
use std::ops::AddAssign;
use std::sync::Arc;
use tableq_model::{Entity, Property, SystemProperty, ValueRef};

/// One result entity.
///
/// Without `$select` it is the whole entity. With `$select`, [`entity`](ResultRow::entity)
/// keeps the keys and Timestamp (needed for continuations and ETags) but only the selected
/// custom properties, and [`fields`](ResultRow::fields) lists exactly what the result holds:
/// each selected name in selection order with its value, or `None` — the one place a null
/// appears in results — when the entity lacks it.
///
/// ```
/// use std::sync::Arc;
/// use tableq_exec::ResultRow;
/// use tableq_model::{Entity, Value, ValueRef};
/// let mut e = Entity::new("p", "r");
/// e.set("Age", Value::Int32(3));
/// let row = ResultRow::new(e, Some(Arc::from(vec!["Age".to_string(), "Missing".into(), "RowKey".into()])));
/// let fields: Vec<_> = row.fields().collect();
/// assert!(matches!(fields[0], ("Age", Some(ValueRef::Int32(3)))));
/// assert!(matches!(fields[1], ("Missing", None)));
/// assert!(matches!(fields[2], ("RowKey", Some(ValueRef::String("r")))));
/// assert_eq!(row.nulls().collect::<Vec<_>>(), ["Missing"]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    /// The entity: complete without `$select`, else keys, Timestamp and the selected custom
    /// properties it has.
    pub entity: Entity,
    /// The `$select` list (deduplicated, in order), `None` for all properties.
    pub select: Option<Arc<[String]>>,
}

impl ResultRow {
    /// A result row from an (already projected) entity and the selection.
    pub fn new(entity: Entity, select: Option<Arc<[String]>>) -> ResultRow {
        ResultRow { entity, select }
    }

    /// Builds the result row of a source row, projecting to `select`.
    pub fn project<R: SourceRow + ?Sized>(row: &R, select: Option<&Arc<[String]>>) -> ResultRow {
        match select {
            None => ResultRow {
                entity: row.to_entity(),
                select: None,
            },
            Some(names) => {
                let props = names
                    .iter()
                    .filter(|n| SystemProperty::from_name(n).is_none())
                    .filter_map(|n| {
                        row.custom(n).map(|v| Property {
                            name: n.clone(),
                            value: v.to_owned(),
                        })
                    });
                let entity = Entity::with_properties(
                    row.partition_key(),
                    row.row_key(),
                    row.timestamp(),
                    props,
                );
                ResultRow {
                    entity,
                    select: Some(names.clone()),
                }
            }
        }
    }

    /// The entity's key.
    pub fn key(&self) -> Key {
        Key::new(self.entity.partition_key(), self.entity.row_key())
    }

    /// Whether `$select` applies.
    pub fn is_projected(&self) -> bool {
        self.select.is_some()
    }

    /// The properties the result holds, in output order: without `$select` PartitionKey,
    /// RowKey, Timestamp (if any) and the custom properties by name; with `$select` each
    /// selected name with its value or `None` (null).
    pub fn fields(&self) -> Box<dyn Iterator<Item = (&str, Option<ValueRef<'_>>)> + '_> {
        match &self.select {
            Some(names) => Box::new(names.iter().map(|n| (n.as_str(), self.entity.get(n)))),
            None => {
                let system = [
                    SystemProperty::PartitionKey,
                    SystemProperty::RowKey,
                    SystemProperty::Timestamp,
                ]
                .into_iter()
                .filter_map(|s| self.entity.get(s.name()).map(|v| (s.name(), Some(v))));
                let custom = self
                    .entity
                    .properties()
                    .iter()
                    .map(|p| (p.name.as_str(), Some(p.value.as_ref())));
                Box::new(system.chain(custom))
            }
        }
    }

    /// The selected names the entity lacks (returned as nulls).
    pub fn nulls(&self) -> impl Iterator<Item = &str> {
        self.select
            .iter()
            .flat_map(|names| names.iter())
            .filter(|n| self.entity.get(n).is_none())
            .map(String::as_str)
    }
}

/// A borrowed result handed to [`Executor::execute_page_with`](crate::Executor::execute_page_with)
/// visitors: the source row and the `$select` list.
#[derive(Clone, Copy)]
pub struct RowView<'r> {
    row: &'r dyn SourceRow,
    select: Option<&'r [String]>,
}

impl<'r> RowView<'r> {
    /// A view of `row` projected to `select`.
    pub fn new(row: &'r dyn SourceRow, select: Option<&'r [String]>) -> RowView<'r> {
        RowView { row, select }
    }

    /// The source row (keys, Timestamp, any property by name).
    pub fn row(&self) -> &'r dyn SourceRow {
        self.row
    }

    /// The `$select` list, `None` for all properties.
    pub fn select(&self) -> Option<&'r [String]> {
        self.select
    }

    /// Calls `f` with each property the result holds, in output order — the same fields as
    /// [`ResultRow::fields`]: without `$select` PartitionKey, RowKey, Timestamp (if any),
    /// then the custom properties by name; with `$select` each selected name with its value
    /// or `None` (null).
    pub fn fields(&self, f: &mut dyn FnMut(&str, Option<ValueRef<'_>>)) {
        match self.select {
            Some(names) => {
                for n in names {
                    f(n, self.row.get(n));
                }
            }
            None => {
                f(
                    SystemProperty::PartitionKey.name(),
                    Some(ValueRef::String(self.row.partition_key())),
                );
                f(
                    SystemProperty::RowKey.name(),
                    Some(ValueRef::String(self.row.row_key())),
                );
                if let Some(t) = self.row.timestamp() {
                    f(
                        SystemProperty::Timestamp.name(),
                        Some(ValueRef::DateTime(t)),
                    );
                }
                self.row.for_each_custom(&mut |n, v| f(n, Some(v)));
            }
        }
    }

    /// The owned result row.
    pub fn to_result_row(&self) -> ResultRow {
        let select: Option<Arc<[String]>> = self.select.map(Arc::from);
        ResultRow::project(self.row, select.as_ref())
    }
}

impl std::fmt::Debug for RowView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowView")
            .field("partition_key", &self.row.partition_key())
            .field("row_key", &self.row.row_key())
            .field("select", &self.select)
            .finish()
    }
}

/// Counters of one page (or, summed with `+=`, of several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExecStats {
    /// Key ranges of the plan this page read from.
    pub ranges: u64,
    /// Chunks scanned (units of parallel work).
    pub chunks: u64,
    /// Entities read from the source (including work discarded past the page's end).
    pub examined: u64,
    /// Entities returned.
    pub matched: u64,
}

impl AddAssign for ExecStats {
    fn add_assign(&mut self, other: ExecStats) {
        self.ranges += other.ranges;
        self.chunks += other.chunks;
        self.examined += other.examined;
        self.matched += other.matched;
    }
}

/// One page of results.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The results, in ascending (PartitionKey, RowKey) order.
    pub rows: Vec<ResultRow>,
    /// Where the next page starts — the key of the next entity to examine, inclusive — or
    /// `None` when the query is complete. A page may be empty and still carry one (a work
    /// budget ran out).
    pub continuation: Option<Key>,
    /// What the page cost.
    pub stats: ExecStats,
}
