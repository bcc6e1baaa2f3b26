//! Response bodies: entities and tables in the three metadata levels, with the `odata.*`
//! envelope that names them by URL, and the `{"odata.metadata":…,"value":[…]}` collection.
//!
//! * `odata.metadata`: `<base>/$metadata#<table>` for an entity collection,
//!   `#<table>/@Element` for one entity, `#Tables` / `#Tables/@Element` for tables, where
//!   `<base>` is `http://<Host header>/<account>`;
//! * `odata.etag` (minimal and full) per entity; `odata.type` (`<account>.<table>`),
//!   `odata.id` (`<base>/<editLink>`) and `odata.editLink`
//!   (`t(PartitionKey='p',RowKey='r')`, `Tables('t')`) at full metadata.
//!
//! Entities are encoded by `tableq_model::json` (value forms, annotations, member order);
//! with `$select`, exactly the selected names follow the envelope, in selection order, a
//! missing one as `null`.
//!
//! ```text
//! minimal, one entity:  {"odata.metadata":"http://h/acct/$metadata#t/@Element","odata.etag":"W/\"datetime'…'\"",
//!                        "PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp":"…","Age":3}
//! minimal, a query:     {"odata.metadata":"http://h/acct/$metadata#t","value":[{"odata.etag":…,"PartitionKey":"p",…}]}
//! no metadata, tables:  {"value":[{"TableName":"t"}]}
//! ```

use serde_json::Value as Json;
use tableq_exec::RowView;
use tableq_model::Entity;
use tableq_model::json::{
    EncodeOptions, EncodedEntity, Envelope, MetadataLevel, encode_entity_ordered, etag,
};

use crate::error::ApiError;
use crate::resource::{entity_link, table_link};

/// What names resources in responses: the base URL and the account.
#[derive(Debug, Clone)]
pub(crate) struct Links {
    /// `http://<host>/<account>`.
    pub base: String,
    /// The account name.
    pub account: String,
}

impl Links {
    /// `<base>/$metadata#<fragment>`.
    pub fn metadata(&self, fragment: &str) -> String {
        format!("{}/$metadata#{fragment}", self.base)
    }

    /// `<base>/<relative link>`.
    pub fn absolute(&self, link: &str) -> String {
        format!("{}/{link}", self.base)
    }

    /// The envelope of an entity; `element` adds `odata.metadata` (single-entity bodies).
    pub fn entity_envelope(&self, table: &str, entity: &Entity, element: bool) -> Envelope {
        let edit = entity_link(table, entity.partition_key(), entity.row_key());
        Envelope {
            metadata: element.then(|| self.metadata(&format!("{table}/@Element"))),
            type_name: Some(format!("{}.{table}", self.account)),
            id: Some(self.absolute(&edit)),
            etag: entity.timestamp().map(etag),
            edit_link: Some(edit),
        }
    }
}

/// An entity's JSON members: envelope, then all properties or (with `select`) the selected
/// names in order, a missing one as `null`.
pub(crate) fn entity_members(
    entity: &Entity,
    select: Option<&[String]>,
    options: &EncodeOptions,
) -> EncodedEntity {
    let encoded = encode_entity_ordered(entity, options);
    let Some(names) = select else {
        return encoded;
    };
    let mut out = EncodedEntity::default();
    for (k, v) in encoded.members() {
        if k.starts_with("odata.") {
            out.push(k.clone(), v.clone());
        }
    }
    for name in names {
        let annotation = format!("{name}@odata.type");
        let mut value = Json::Null;
        for (k, v) in encoded.members() {
            if *k == annotation {
                out.push(annotation.clone(), v.clone());
            } else if k == name {
                value = v.clone();
            }
        }
        out.push(name.clone(), value);
    }
    out
}

/// One entity as a complete JSON body (`odata.metadata` `#t/@Element`).
pub(crate) fn entity_body(
    links: &Links,
    table: &str,
    entity: &Entity,
    select: Option<&[String]>,
    level: MetadataLevel,
) -> Vec<u8> {
    let options = EncodeOptions {
        level,
        envelope: links.entity_envelope(table, entity, true),
    };
    entity_members(entity, select, &options)
        .to_json_string()
        .into_bytes()
}

/// One table as JSON members at a level (`element`: a single-table body).
pub(crate) fn table_members(
    links: &Links,
    name: &str,
    level: MetadataLevel,
    element: bool,
) -> EncodedEntity {
    let mut out = EncodedEntity::default();
    if level != MetadataLevel::NoMetadata && element {
        out.push("odata.metadata", links.metadata("Tables/@Element").into());
    }
    if level == MetadataLevel::FullMetadata {
        let edit = table_link(name);
        out.push("odata.type", format!("{}.Tables", links.account).into());
        out.push("odata.id", links.absolute(&edit).into());
        out.push("odata.editLink", edit.into());
    }
    out.push("TableName", name.into());
    out
}

/// Writes `{"odata.metadata":…,"value":[` row by row `]}`.
pub(crate) struct CollectionWriter {
    out: Vec<u8>,
    rows: usize,
    failed: Option<String>,
}

impl CollectionWriter {
    /// Starts a collection; `metadata` is its `odata.metadata` (left out at no metadata).
    pub fn new(level: MetadataLevel, metadata: &str) -> CollectionWriter {
        let mut out = Vec::with_capacity(4096);
        out.push(b'{');
        if level != MetadataLevel::NoMetadata {
            out.extend_from_slice(b"\"odata.metadata\":");
            out.extend_from_slice(Json::from(metadata).to_string().as_bytes());
            out.push(b',');
        }
        out.extend_from_slice(b"\"value\":[");
        CollectionWriter {
            out,
            rows: 0,
            failed: None,
        }
    }

    /// Appends one member of `value`.
    pub fn push(&mut self, item: &impl serde::Serialize) {
        if self.rows > 0 {
            self.out.push(b',');
        }
        self.rows += 1;
        if let Err(e) = serde_json::to_writer(&mut self.out, item) {
            self.failed.get_or_insert_with(|| e.to_string());
        }
    }

    /// Appends a query result row.
    pub fn push_row(&mut self, links: &Links, table: &str, row: RowView<'_>, level: MetadataLevel) {
        let result = row.to_result_row();
        let options = EncodeOptions {
            level,
            envelope: links.entity_envelope(table, &result.entity, false),
        };
        let members = entity_members(&result.entity, result.select.as_deref(), &options);
        self.push(&members);
    }

    /// Closes the collection; the body.
    pub fn finish(mut self) -> Result<Vec<u8>, ApiError> {
        if let Some(e) = self.failed {
            return Err(ApiError::internal(format!(
                "encoding the response failed: {e}"
            )));
        }
        self.out.extend_from_slice(b"]}");
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::{DateTime, Value};

    fn links() -> Links {
        Links {
            base: "http://h/acct".into(),
            account: "acct".into(),
        }
    }

    fn entity() -> Entity {
        let mut e = Entity::new("p", "r");
        e.set_timestamp(DateTime::parse("2021-06-09T01:17:08.3795894Z").ok());
        e.set("Big", Value::Int64(5));
        e.set("Name", Value::from("n"));
        e
    }

    #[test]
    fn minimal_element() {
        let body = entity_body(
            &links(),
            "t",
            &entity(),
            None,
            MetadataLevel::MinimalMetadata,
        );
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"odata.metadata":"http://h/acct/$metadata#t/@Element","odata.etag":"W/\"datetime'2021-06-09T01%3A17%3A08.3795894Z'\"","PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2021-06-09T01:17:08.3795894Z","Big@odata.type":"Edm.Int64","Big":"5","Name":"n"}"#
        );
    }

    #[test]
    fn select_keeps_envelope_and_order_with_nulls() {
        let select = ["Name".to_string(), "Missing".into(), "Big".into()];
        let body = entity_body(
            &links(),
            "t",
            &entity(),
            Some(&select),
            MetadataLevel::FullMetadata,
        );
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with(r#"{"odata.metadata":"http://h/acct/$metadata#t/@Element","odata.type":"acct.t","odata.id":"http://h/acct/t(PartitionKey='p',RowKey='r')","odata.etag":"#));
        assert!(text.ends_with(r#""odata.editLink":"t(PartitionKey='p',RowKey='r')","Name":"n","Missing":null,"Big@odata.type":"Edm.Int64","Big":"5"}"#));
    }

    #[test]
    fn tables_at_each_level() {
        let l = links();
        let none = table_members(&l, "t", MetadataLevel::NoMetadata, true);
        assert_eq!(none.to_json_string(), r#"{"TableName":"t"}"#);
        let full = table_members(&l, "t", MetadataLevel::FullMetadata, false);
        assert_eq!(
            full.to_json_string(),
            r#"{"odata.type":"acct.Tables","odata.id":"http://h/acct/Tables('t')","odata.editLink":"Tables('t')","TableName":"t"}"#
        );
    }

    #[test]
    fn collection_shape() {
        let mut w = CollectionWriter::new(MetadataLevel::MinimalMetadata, "m");
        w.push(&serde_json::json!({"a": 1}));
        w.push(&serde_json::json!({"b": 2}));
        let body = w.finish().unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"odata.metadata":"m","value":[{"a":1},{"b":2}]}"#
        );
        let w = CollectionWriter::new(MetadataLevel::NoMetadata, "m");
        assert_eq!(w.finish().unwrap(), br#"{"value":[]}"#);
    }
}
