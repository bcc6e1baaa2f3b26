//! How an emulator or service embeds tableq: its own store implements
//! [`EntitySource`], requests arrive as `$filter` / `$select` / `$top` text, and result
//! pages are followed through continuation tokens (carried as the service's
//! `x-ms-continuation-NextPartitionKey` / `NextRowKey` headers) — with writes between
//! pages.
//!
//! Run: `cargo run --example embed`. The root test `tests/embed_example.rs` includes this
//! file and calls [`main`], so CI runs it (and its assertions) with `cargo test`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, PoisonError, RwLock};
use tableq::exec::{Chunk, EntityRef, EntitySource, Executor, Key, OkRows, PageOptions, Scan};
use tableq::model::order::OrdinalString;
use tableq::model::{Entity, EntityView, Value, ValueRef};
use tableq::parser::FilterOptions;
use tableq::planner::{Query, QueryText};

type KeyPair = (OrdinalString, OrdinalString);

/// One immutable version of the emulator's table: entities in a `BTreeMap` ordered by
/// (PartitionKey, RowKey) under the UTF-16 ordinal order, plus partition sizes for splits.
#[derive(Clone, Default)]
pub struct TableVersion {
    rows: BTreeMap<KeyPair, Entity>,
    partitions: BTreeMap<OrdinalString, usize>,
}

/// The emulator's table: readers take an `Arc` snapshot; writers copy on write.
#[derive(Default)]
pub struct EmulatorTable {
    current: RwLock<Arc<TableVersion>>,
}

impl EmulatorTable {
    /// The current version (what one page of a query reads).
    pub fn snapshot(&self) -> Arc<TableVersion> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Inserts or replaces an entity.
    pub fn upsert(&self, entity: Entity) {
        let mut guard = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let version = Arc::make_mut(&mut guard);
        let pk = OrdinalString(entity.partition_key().to_owned());
        let key = (pk.clone(), OrdinalString(entity.row_key().to_owned()));
        if version.rows.insert(key, entity).is_none() {
            *version.partitions.entry(pk).or_default() += 1;
        }
    }
}

/// An in-memory version cannot fail: `Infallible` errors, rows wrapped in `OkRows` (a store
/// on disk would name its I/O error type here and yield `Err` rows).
impl EntitySource for TableVersion {
    type Error = Infallible;
    type Row<'a> = EntityRef<'a>;
    type Rows<'a> = OkRows<Box<dyn Iterator<Item = EntityRef<'a>> + 'a>>;

    fn scan<'a>(&'a self, scan: Scan<'a>) -> Self::Rows<'a> {
        // Start at the later of the PartitionKey interval's first key and the scan's `from`.
        let pk = &scan.range.partition_key;
        let mut start: KeyPair = (
            OrdinalString(pk.start_key().into_owned()),
            OrdinalString(String::new()),
        );
        if let Some(k) = scan.from {
            let from = (
                OrdinalString(k.partition_key.clone()),
                OrdinalString(k.row_key.clone()),
            );
            start = start.max(from);
        }
        let rows = self
            .rows
            .range(start..)
            .map(|(_, e)| EntityRef(e))
            // Stop past the PartitionKey interval or at `until`.
            .take_while(move |e| {
                pk.position(e.partition_key()).is_le()
                    && scan
                        .until
                        .is_none_or(|u| u.cmp_pair(e.partition_key(), e.row_key()).is_gt())
            })
            // Exactly the scan's entities: drop RowKeys outside the rectangle.
            .filter(move |e| scan.contains(e.partition_key(), e.row_key()));
        OkRows::new(Box::new(rows))
    }

    fn get<'a>(
        &'a self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<EntityRef<'a>>, Infallible> {
        let key = (
            OrdinalString(partition_key.to_owned()),
            OrdinalString(row_key.to_owned()),
        );
        Ok(self.rows.get(&key).map(EntityRef))
    }

    /// Splits by partition: consecutive whole partitions of about `chunk_rows` entities.
    fn split(
        &self,
        scan: Scan<'_>,
        chunk_rows: usize,
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, Infallible> {
        let pk_range = &scan.range.partition_key;
        let first = match scan.from {
            Some(k) => k.partition_key.clone(),
            None => pk_range.start_key().into_owned(),
        };
        let mut chunks = Vec::new();
        let mut current = Chunk {
            from: scan.from.cloned(),
            until: None,
            rows: Some(0),
        };
        for (OrdinalString(pk), &size) in self.partitions.range(OrdinalString(first)..) {
            match pk_range.position(pk) {
                Ordering::Less => continue,
                Ordering::Equal => {}
                Ordering::Greater => break,
            }
            if current.rows >= Some(chunk_rows.max(1)) {
                if chunks.len() + 1 == max_chunks {
                    // Stop here: the executor asks again from this partition.
                    current.until = Some(Key::new(pk.clone(), ""));
                    chunks.push(current);
                    return Ok(chunks);
                }
                let boundary = Key::new(pk.clone(), "");
                current.until = Some(boundary.clone());
                chunks.push(std::mem::replace(
                    &mut current,
                    Chunk {
                        from: Some(boundary),
                        until: None,
                        rows: Some(0),
                    },
                ));
            }
            current.rows = current.rows.map(|r| r + size);
        }
        if current.rows > Some(0) {
            current.until = scan.until.cloned();
            chunks.push(current);
        }
        Ok(chunks)
    }
}

/// One HTTP-style query: `$filter`, `$select`, `$top` as received, and the continuation
/// headers of the previous page.
struct Request<'a> {
    filter: &'a str,
    select: &'a str,
    top: &'a str,
    next_partition_key: Option<String>,
    next_row_key: Option<String>,
}

/// A response: JSON-ish rows and the continuation headers.
struct Response {
    rows: Vec<String>,
    next_partition_key: Option<String>,
    next_row_key: Option<String>,
}

/// What the emulator does per request: parse, plan, execute one page on a fresh snapshot.
fn handle(table: &EmulatorTable, request: &Request<'_>) -> Result<Response, String> {
    let text = QueryText {
        filter: Some(request.filter),
        select: Some(request.select),
        top: Some(request.top),
    };
    // An invalid option names itself: `$top: error: …` with carets under its text.
    let query = Query::parse(text, &FilterOptions::default()).map_err(|e| e.to_string())?;
    let plan = query.plan();
    let continuation = match (&request.next_partition_key, &request.next_row_key) {
        (Some(pk), Some(rk)) => Some(Key::new(pk.clone(), rk.clone())),
        _ => None,
    };
    let snapshot = table.snapshot();
    // Cap the work per page, as the service does (it uses a 5 s deadline).
    let options = PageOptions::default().with_max_examined(1_000_000);
    let page = Executor::new(snapshot.as_ref())
        .execute_page(&plan, continuation.as_ref(), &options)
        .map_err(|e| e.to_string())?;
    let rows = page
        .rows
        .iter()
        .map(|row| {
            let fields: Vec<String> = row
                .fields()
                .map(|(name, value)| match value {
                    Some(ValueRef::String(s)) => format!("{name:?}: {s:?}"),
                    // Other values in their OData literal form (a real service encodes JSON
                    // with `tableq::model::json`).
                    Some(v) => format!("{name:?}: {}", v.to_owned()),
                    None => format!("{name:?}: null"),
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        })
        .collect();
    Ok(Response {
        rows,
        next_partition_key: page.continuation.as_ref().map(|k| k.partition_key.clone()),
        next_row_key: page.continuation.map(|k| k.row_key),
    })
}

/// Runs the walkthrough; panics (non-zero exit) if a result is not the expected one.
pub fn main() {
    let table = EmulatorTable::default();
    for p in 0..4 {
        for r in 0..25 {
            let mut e = Entity::new(format!("customer-{p}"), format!("order-{r:03}"));
            e.set("Amount", Value::Double(f64::from(r) * 10.0));
            e.set(
                "Status",
                Value::from(if r % 3 == 0 { "open" } else { "closed" }),
            );
            table.upsert(e);
        }
    }

    let mut request = Request {
        filter: "PartitionKey ge 'customer-1' and Status eq 'open' and Amount gt 50.0",
        select: "RowKey,Amount,Missing",
        top: "5",
        next_partition_key: None,
        next_row_key: None,
    };
    let mut all = Vec::new();
    let mut pages = 0;
    loop {
        let response = match handle(&table, &request) {
            Ok(r) => r,
            Err(e) => panic!("query failed: {e}"),
        };
        pages += 1;
        println!("page {pages}: {} rows", response.rows.len());
        for row in &response.rows {
            println!("  {row}");
        }
        all.extend(response.rows);
        if pages == 1 {
            // A write between pages: an entity *after* the continuation is seen by the next
            // page; the continuation protocol never revisits earlier keys.
            let mut late = Entity::new("customer-3", "order-999");
            late.set("Amount", Value::Double(1000.0));
            late.set("Status", Value::from("open"));
            table.upsert(late);
        }
        match (response.next_partition_key, response.next_row_key) {
            (Some(pk), Some(rk)) => {
                println!("  continuation: NextPartitionKey={pk} NextRowKey={rk}");
                request.next_partition_key = Some(pk);
                request.next_row_key = Some(rk);
            }
            _ => break,
        }
    }
    // Open orders (r % 3 == 0) with Amount > 50 (r > 5): r = 6, 9, …, 24 → 7 per partition,
    // in partitions 1..=3, plus the late insert.
    assert_eq!(all.len(), 3 * 7 + 1, "{all:#?}");
    assert_eq!(pages, 5);
    assert!(
        all[0] == r#"{"RowKey": "order-006", "Amount": 60.0, "Missing": null}"#,
        "{}",
        all[0]
    );
    assert!(all.last().is_some_and(|r| r.contains("order-999")));
    println!("{} results in {pages} pages", all.len());
}
