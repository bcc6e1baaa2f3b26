//! Entities and the [`EntityView`] trait evaluators read them through.

use crate::{DateTime, Value, ValueRef};

/// The three system properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SystemProperty {
    /// `PartitionKey`: an always-present String.
    PartitionKey,
    /// `RowKey`: an always-present String.
    RowKey,
    /// `Timestamp`: a DateTime set by the service on every write.
    Timestamp,
}

impl SystemProperty {
    /// The system property with this exact (case-sensitive) name.
    pub fn from_name(name: &str) -> Option<SystemProperty> {
        match name {
            "PartitionKey" => Some(SystemProperty::PartitionKey),
            "RowKey" => Some(SystemProperty::RowKey),
            "Timestamp" => Some(SystemProperty::Timestamp),
            _ => None,
        }
    }

    /// The property name.
    pub const fn name(self) -> &'static str {
        match self {
            SystemProperty::PartitionKey => "PartitionKey",
            SystemProperty::RowKey => "RowKey",
            SystemProperty::Timestamp => "Timestamp",
        }
    }
}

/// Read access to an entity, whatever its representation. Evaluators and projections are
/// written against this trait so that an [`Entity`] and a storage engine's compact row
/// format can both be queried.
pub trait EntityView {
    /// The PartitionKey.
    fn partition_key(&self) -> &str;
    /// The RowKey.
    fn row_key(&self) -> &str;
    /// The Timestamp, if the entity has one (entities loaded from files may lack it).
    fn timestamp(&self) -> Option<DateTime>;
    /// A custom property by exact name (system names are not looked up here).
    fn custom(&self, name: &str) -> Option<ValueRef<'_>>;

    /// Any property by exact name, system properties included: what a `$filter` comparison
    /// on `name` reads.
    fn get(&self, name: &str) -> Option<ValueRef<'_>> {
        match SystemProperty::from_name(name) {
            Some(SystemProperty::PartitionKey) => Some(ValueRef::String(self.partition_key())),
            Some(SystemProperty::RowKey) => Some(ValueRef::String(self.row_key())),
            Some(SystemProperty::Timestamp) => self.timestamp().map(ValueRef::DateTime),
            None => self.custom(name),
        }
    }
}

/// One custom property: a case-sensitive name and a typed value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Property {
    /// The property name.
    pub name: String,
    /// The value (the service stores no nulls).
    pub value: Value,
}

/// An entity: primary key, Timestamp and custom properties.
///
/// **Representation.** Custom properties are a `Vec<Property>` kept sorted by name (byte
/// order), so lookup by name is a binary search over a contiguous array: `O(log n)` with no
/// hashing and good cache behaviour for the typical 5–30 properties, one allocation for the
/// whole set, and a deterministic property order for output. The cost: inserting a property
/// is `O(n)` (a shift), which only matters when building entities with hundreds of
/// properties one by one. Storage engines that scan millions of rows use their own compact
/// layout and implement [`EntityView`].
///
/// Construction does not validate; see the `validate` functions of this crate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Entity {
    partition_key: String,
    row_key: String,
    timestamp: Option<DateTime>,
    properties: Vec<Property>,
}

impl Entity {
    /// An entity with the given keys, no Timestamp and no custom properties.
    pub fn new(partition_key: impl Into<String>, row_key: impl Into<String>) -> Entity {
        Entity {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
            timestamp: None,
            properties: Vec::new(),
        }
    }

    /// The PartitionKey.
    pub fn partition_key(&self) -> &str {
        &self.partition_key
    }

    /// The RowKey.
    pub fn row_key(&self) -> &str {
        &self.row_key
    }

    /// The Timestamp, if set.
    pub fn timestamp(&self) -> Option<DateTime> {
        self.timestamp
    }

    /// Sets the PartitionKey.
    pub fn set_partition_key(&mut self, key: impl Into<String>) {
        self.partition_key = key.into();
    }

    /// Sets the RowKey.
    pub fn set_row_key(&mut self, key: impl Into<String>) {
        self.row_key = key.into();
    }

    /// Sets or clears the Timestamp.
    pub fn set_timestamp(&mut self, timestamp: Option<DateTime>) {
        self.timestamp = timestamp;
    }

    /// The custom properties, sorted by name.
    pub fn properties(&self) -> &[Property] {
        &self.properties
    }

    /// The number of custom properties.
    pub fn len(&self) -> usize {
        self.properties.len()
    }

    /// Whether the entity has no custom properties.
    pub fn is_empty(&self) -> bool {
        self.properties.is_empty()
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.properties
            .binary_search_by(|p| p.name.as_str().cmp(name))
    }

    /// A custom property's value by exact name.
    pub fn custom(&self, name: &str) -> Option<&Value> {
        self.position(name).ok().map(|i| &self.properties[i].value)
    }

    /// Any property (system ones included) by exact name; see [`EntityView::get`].
    pub fn get(&self, name: &str) -> Option<ValueRef<'_>> {
        EntityView::get(self, name)
    }

    /// Sets a custom property, returning the previous value. System property names are not
    /// special here: validation rejects them as custom names.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        let name = name.into();
        let value = value.into();
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.properties[i].value, value)),
            Err(i) => {
                self.properties.insert(i, Property { name, value });
                None
            }
        }
    }

    /// Removes a custom property, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.position(name)
            .ok()
            .map(|i| self.properties.remove(i).value)
    }

    /// Builds an entity from already sorted-or-not properties; a later duplicate replaces an
    /// earlier one. (Decoders that must *reject* duplicates check before calling this.)
    pub fn with_properties(
        partition_key: impl Into<String>,
        row_key: impl Into<String>,
        timestamp: Option<DateTime>,
        properties: impl IntoIterator<Item = Property>,
    ) -> Entity {
        let mut props: Vec<Property> = properties.into_iter().collect();
        // Stable sort keeps input order among equal names; keep the last of each run.
        props.sort_by(|a, b| a.name.cmp(&b.name));
        let mut deduped: Vec<Property> = Vec::with_capacity(props.len());
        for p in props {
            match deduped.last_mut() {
                Some(last) if last.name == p.name => *last = p,
                _ => deduped.push(p),
            }
        }
        Entity {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
            timestamp,
            properties: deduped,
        }
    }
}

impl EntityView for Entity {
    fn partition_key(&self) -> &str {
        &self.partition_key
    }
    fn row_key(&self) -> &str {
        &self.row_key
    }
    fn timestamp(&self) -> Option<DateTime> {
        self.timestamp
    }
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        Entity::custom(self, name).map(Value::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_and_system_properties() {
        let mut e = Entity::new("p", "r");
        assert!(e.get("Timestamp").is_none());
        e.set_timestamp(Some(DateTime::MIN));
        e.set("b", 2);
        e.set("a", 1);
        assert_eq!(e.set("b", 3), Some(Value::Int32(2)));
        assert_eq!(e.properties()[0].name, "a");
        assert!(matches!(e.get("PartitionKey"), Some(ValueRef::String("p"))));
        assert!(matches!(e.get("RowKey"), Some(ValueRef::String("r"))));
        assert!(matches!(e.get("Timestamp"), Some(ValueRef::DateTime(_))));
        assert!(matches!(e.get("b"), Some(ValueRef::Int32(3))));
        assert!(e.get("timestamp").is_none());
        assert_eq!(e.remove("a"), Some(Value::Int32(1)));
        assert_eq!(e.len(), 1);
    }

    #[test]
    fn with_properties_sorts_and_keeps_last_duplicate() {
        let e = Entity::with_properties(
            "p",
            "r",
            None,
            [
                Property {
                    name: "z".into(),
                    value: Value::Int32(1),
                },
                Property {
                    name: "a".into(),
                    value: Value::Int32(2),
                },
                Property {
                    name: "z".into(),
                    value: Value::Int32(3),
                },
            ],
        );
        assert_eq!(e.len(), 2);
        assert_eq!(e.custom("z"), Some(&Value::Int32(3)));
    }
}
