//! Response bodies: entities and tables in the three metadata levels, with the `odata.*`
//! envelope that names them by URL, and the `{"odata.metadata":…,"value":[…]}` collection.
//!
//! * `odata.metadata`: `<base>/$metadata#<table>` for an entity collection,
//!   `#<table>/@Element` for one entity, `#Tables` / `#Tables/@Element` for tables, where
//!   `<base>` is `http://<Host header>/<account>`; a request with `$select` has it repeated
//!   after the entities' fragment, as the service writes it (`#t&$select=age,sex`,
//!   `#t/@Element&$select=age,ratio`; [`Links::entity_metadata`]);
//! * `odata.etag` (minimal and full) per entity; `odata.type` (`<account>.<table>`),
//!   `odata.id` (`<base>/<editLink>`) and `odata.editLink`
//!   (`t(PartitionKey='p',RowKey='r')`, `Tables('t')`) at full metadata.
//!
//! Entities are written by `tableq_model::json`'s streaming [`EntityWriter`] (value forms,
//! annotations, member order, `$select` with nulls) straight from the store's borrowed rows:
//! no owned entity and no JSON tree per row. The collection wrapper is its
//! [`CollectionWriter`].
//!
//! ```text
//! minimal, one entity:  {"odata.metadata":"http://h/acct/$metadata#t/@Element","odata.etag":"W/\"datetime'…'\"",
//!                        "PartitionKey":"p","RowKey":"r","Timestamp":"…","Age":3}
//! minimal, a query:     {"odata.metadata":"http://h/acct/$metadata#t","value":[{"odata.etag":…,"PartitionKey":"p",…}]}
//! no metadata, tables:  {"value":[{"TableName":"t"}]}
//! ```

use tableq_exec::RowView;
use tableq_model::DateTime;
use tableq_model::json::{
    CollectionWriter, EncodedEntity, EntityWriter, Envelope, EnvelopeRef, ListProperties,
    MetadataLevel, etag,
};

use crate::protocol::resource::{entity_link, table_link};

/// What names resources in responses: the host and the account, which make the base URL
/// `http://<host>/<account>` (written out only where a response carries a URL).
#[derive(Debug, Clone)]
pub(crate) struct Links {
    /// The host of the base URL (the request's `Host`).
    pub host: String,
    /// The account name.
    pub account: String,
    /// The request's `$select` as sent (percent-decoded; empty when given empty), which
    /// `odata.metadata` of entities repeats: `#t&$select=a,b`, `#t/@Element&$select=a,b`.
    pub select: Option<String>,
}

/// What `odata.metadata` percent-encodes of a `$select` it repeats: controls, space and the
/// characters a URL cannot carry as they are (the service writes `age,%20sex` for
/// `$select=age%2C%20sex`).
const SELECT_ECHO: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

impl Links {
    /// `<base>/$metadata#<fragment>`.
    pub fn metadata(&self, fragment: &str) -> String {
        format!("http://{}/{}/$metadata#{fragment}", self.host, self.account)
    }

    /// `<base>/$metadata#<fragment>` of entities: with `&$select=…` when the request
    /// projected (as the service writes it).
    pub fn entity_metadata(&self, fragment: &str) -> String {
        let mut text = self.metadata(fragment);
        if let Some(select) = &self.select {
            text.push_str("&$select=");
            text.extend(percent_encoding::utf8_percent_encode(select, SELECT_ECHO));
        }
        text
    }

    /// `<base>/<relative link>`.
    pub fn absolute(&self, link: &str) -> String {
        format!("http://{}/{}/{link}", self.host, self.account)
    }

    /// The envelope of an entity; `element` adds `odata.metadata` (single-entity bodies).
    /// Each member is built only at the levels that carry it: none without metadata, the
    /// URLs only at full metadata.
    pub fn entity_envelope(
        &self,
        table: &str,
        level: MetadataLevel,
        partition_key: &str,
        row_key: &str,
        timestamp: Option<DateTime>,
        element: bool,
    ) -> Envelope {
        if level == MetadataLevel::NoMetadata {
            return Envelope::default();
        }
        let full = level == MetadataLevel::FullMetadata;
        let edit = full.then(|| entity_link(table, partition_key, row_key));
        Envelope {
            metadata: element.then(|| self.entity_metadata(&format!("{table}/@Element"))),
            type_name: full.then(|| format!("{}.{table}", self.account)),
            id: edit.as_deref().map(|e| self.absolute(e)),
            etag: timestamp.map(etag),
            edit_link: edit,
        }
    }
}

/// One entity as a complete JSON body (`odata.metadata` `#t/@Element`), projected to
/// `select` (distinct names) if given.
pub(crate) fn entity_body<E: ListProperties + ?Sized>(
    links: &Links,
    table: &str,
    entity: &E,
    select: Option<&[String]>,
    level: MetadataLevel,
) -> Vec<u8> {
    entity_reply(links, table, entity, select, level).0
}

/// [`entity_body`] and the entity's ETag (for the reply's `ETag` header; `None` without a
/// Timestamp), rendered once for both.
pub(crate) fn entity_reply<E: ListProperties + ?Sized>(
    links: &Links,
    table: &str,
    entity: &E,
    select: Option<&[String]>,
    level: MetadataLevel,
) -> (Vec<u8>, Option<String>) {
    let mut envelope = links.entity_envelope(
        table,
        level,
        entity.partition_key(),
        entity.row_key(),
        entity.timestamp(),
        true,
    );
    let mut out = Vec::with_capacity(512);
    EntityWriter::new(level).with_select(select).write(
        &mut out,
        entity,
        envelope.as_envelope_ref(),
    );
    // Without metadata the envelope has no ETag; the header still carries one.
    let etag = envelope
        .etag
        .take()
        .or_else(|| entity.timestamp().map(etag));
    (out, etag)
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

/// A table listing: `{"odata.metadata":"<base>/$metadata#Tables","value":[…]}`.
pub(crate) fn tables_body(links: &Links, names: &[String], level: MetadataLevel) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + names.len() * 48);
    let metadata = links.metadata("Tables");
    let mut page = CollectionWriter::begin(&mut out, level, Some(&metadata));
    for name in names {
        page.item(&mut out);
        out.extend_from_slice(
            table_members(links, name, level, false)
                .to_json_string()
                .as_bytes(),
        );
    }
    page.end(&mut out);
    out
}

/// Writes one query page: the collection wrapper, then each row as the store hands it over.
pub(crate) struct PageWriter<'a> {
    out: Vec<u8>,
    page: Option<CollectionWriter>,
    writer: EntityWriter<'a>,
    links: &'a Links,
    table: &'a str,
    type_name: Option<String>,
}

impl<'a> PageWriter<'a> {
    /// Starts a page of `table` at `level`, rows projected to `select` (distinct names).
    pub fn begin(
        links: &'a Links,
        table: &'a str,
        level: MetadataLevel,
        select: Option<&'a [String]>,
    ) -> PageWriter<'a> {
        let mut out = Vec::with_capacity(4096);
        let metadata = links.entity_metadata(table);
        let page = CollectionWriter::begin(&mut out, level, Some(&metadata));
        PageWriter {
            out,
            page: Some(page),
            writer: EntityWriter::new(level).with_select(select),
            links,
            table,
            type_name: (level == MetadataLevel::FullMetadata)
                .then(|| format!("{}.{table}", links.account)),
        }
    }

    /// Appends one result row.
    pub fn row(&mut self, row: RowView<'_>) {
        let Some(page) = self.page.as_mut() else {
            return;
        };
        let source = row.row();
        // No metadata: no envelope, so no ETag to render.
        let etag = match self.writer.level() {
            MetadataLevel::NoMetadata => None,
            _ => source.timestamp().map(etag),
        };
        let (edit, id) = match &self.type_name {
            Some(_) => {
                let edit = entity_link(self.table, source.partition_key(), source.row_key());
                let id = self.links.absolute(&edit);
                (Some(edit), Some(id))
            }
            None => (None, None),
        };
        let envelope = EnvelopeRef {
            metadata: None,
            type_name: self.type_name.as_deref(),
            id: id.as_deref(),
            etag: etag.as_deref(),
            edit_link: edit.as_deref(),
        };
        page.entity(&mut self.out, &self.writer, source, envelope);
    }

    /// Closes the collection; the body.
    pub fn finish(mut self) -> Vec<u8> {
        if let Some(page) = self.page.take() {
            page.end(&mut self.out);
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::{Entity, Value};

    fn links() -> Links {
        Links {
            select: None,
            host: "h".into(),
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
            r#"{"odata.metadata":"http://h/acct/$metadata#t/@Element","odata.etag":"W/\"datetime'2021-06-09T01%3A17%3A08.3795894Z'\"","PartitionKey":"p","RowKey":"r","Timestamp":"2021-06-09T01:17:08.3795894Z","Big@odata.type":"Edm.Int64","Big":"5","Name":"n"}"#
        );
    }

    #[test]
    fn an_entity_reply_carries_the_etag_at_every_level_and_none_without_a_timestamp() {
        let want = etag(entity().timestamp().unwrap());
        for level in [
            MetadataLevel::NoMetadata,
            MetadataLevel::MinimalMetadata,
            MetadataLevel::FullMetadata,
        ] {
            let (body, tag) = entity_reply(&links(), "t", &entity(), None, level);
            assert_eq!(tag.as_deref(), Some(want.as_str()), "{level:?}");
            assert_eq!(body, entity_body(&links(), "t", &entity(), None, level));
        }
        let untimed = Entity::new("p", "r");
        let (_, tag) = entity_reply(&links(), "t", &untimed, None, MetadataLevel::FullMetadata);
        assert_eq!(tag, None);
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
        let names = ["a".to_string(), "b".to_string()];
        assert_eq!(
            tables_body(&l, &names, MetadataLevel::MinimalMetadata),
            br#"{"odata.metadata":"http://h/acct/$metadata#Tables","value":[{"TableName":"a"},{"TableName":"b"}]}"#
        );
        assert_eq!(
            tables_body(&l, &[], MetadataLevel::NoMetadata),
            br#"{"value":[]}"#
        );
    }

    #[test]
    fn pages_are_written_from_borrowed_rows() {
        use tableq_exec::EntityRef;
        let l = links();
        let e = entity();
        let select = ["Big".to_string(), "Nope".into()];
        let mut page = PageWriter::begin(&l, "t", MetadataLevel::MinimalMetadata, Some(&select));
        page.row(RowView::new(&EntityRef(&e), Some(&select)));
        page.row(RowView::new(&EntityRef(&e), Some(&select)));
        let body = String::from_utf8(page.finish()).unwrap();
        let row = r#"{"odata.etag":"W/\"datetime'2021-06-09T01%3A17%3A08.3795894Z'\"","Big@odata.type":"Edm.Int64","Big":"5","Nope":null}"#;
        assert_eq!(
            body,
            format!(r#"{{"odata.metadata":"http://h/acct/$metadata#t","value":[{row},{row}]}}"#)
        );
        // The same bytes as the single-entity form, minus odata.metadata.
        let mut full = PageWriter::begin(&l, "t", MetadataLevel::FullMetadata, None);
        full.row(RowView::new(&EntityRef(&e), None));
        let body = String::from_utf8(full.finish()).unwrap();
        let single =
            String::from_utf8(entity_body(&l, "t", &e, None, MetadataLevel::FullMetadata)).unwrap();
        let member = single.replace(
            r#""odata.metadata":"http://h/acct/$metadata#t/@Element","#,
            "",
        );
        assert_eq!(
            body,
            format!(r#"{{"odata.metadata":"http://h/acct/$metadata#t","value":[{member}]}}"#)
        );
    }
}
