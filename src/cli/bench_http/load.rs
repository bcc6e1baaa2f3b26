//! The load step: unless the table already holds the data set (its last entity is there),
//! creates the table and inserts `tableq gen`'s entities through the client crate's bulk
//! loader (`$batch` changesets of one partition, `--load-clients` connections), then prints
//! the load rate. Entities already present count as such; any other refusal fails the run.

use std::sync::{Arc, Mutex};
use std::time::Instant;
use tableq::datagen::Generator;
use tableq::model::ErrorCode;
use tableq::model::json::{EntityWriter, EnvelopeRef, MetadataLevel};
use tableq_client::TableClient;
use tableq_client::batch::MAX_OPERATIONS;
use tableq_client::load::{BulkLoader, LoadItem, LoadMode, LoadReport};

/// What the loader reported.
#[derive(Default)]
struct Tally {
    existing: Mutex<u64>,
    /// The first refusal other than `EntityAlreadyExists`.
    refused: Mutex<Option<String>>,
}

impl LoadReport for Tally {
    fn loaded(&self, _count: u64) {}

    fn rejected(&self, _tag: u64, code: ErrorCode, message: String) {
        if code == ErrorCode::EntityAlreadyExists {
            if let Ok(mut n) = self.existing.lock() {
                *n += 1;
            }
        } else if let Ok(mut r) = self.refused.lock() {
            r.get_or_insert(format!("loading failed: {code}: {message}"));
        }
    }
}

/// Loads `generator`'s entities into `table` over `clients` connections (see the module
/// docs).
pub async fn load(
    table: &TableClient,
    generator: &Generator,
    clients: usize,
) -> Result<(), String> {
    let total = generator.total();
    if let Some(last) = generator.entity_at(total - 1) {
        let found = match table.get(last.partition_key(), last.row_key()).await {
            Ok(found) => found.is_some(),
            Err(e) if e.code() == Some(ErrorCode::TableNotFound) => false,
            Err(e) => return Err(e.to_string()),
        };
        if found {
            println!(
                "table {} already holds the data set: not loaded again",
                table.name()
            );
            return Ok(());
        }
    }
    table
        .service()
        .create_table_if_missing(table.name())
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let tally = Arc::new(Tally::default());
    let mut loader = BulkLoader::start(table.clone(), LoadMode::Insert, clients, tally.clone())
        .map_err(|e| e.to_string())?;
    let writer = EntityWriter::new(MetadataLevel::MinimalMetadata);
    let mut buf = Vec::with_capacity(512);
    // Chunk by chunk across the partitions (the first 100 entities of every partition,
    // then the next 100, …), so that consecutive changesets are for different partitions
    // and the loader's connections work at the same time; within a partition, in order.
    let partitions: Vec<std::ops::Range<u64>> = (0..generator.partitions())
        .map(|p| generator.partition_positions(p))
        .collect();
    let longest = partitions
        .iter()
        .map(|r| r.end - r.start)
        .max()
        .unwrap_or(0);
    let chunk = MAX_OPERATIONS as u64;
    let positions = (0..longest.div_ceil(chunk)).flat_map(|c| {
        partitions.iter().flat_map(move |r| {
            let from = (r.start + c * chunk).min(r.end);
            from..(from + chunk).min(r.end)
        })
    });
    for position in positions {
        let Some(entity) = generator.entity_at(position) else {
            continue;
        };
        buf.clear();
        writer.write(&mut buf, &entity, EnvelopeRef::default());
        let item = LoadItem {
            tag: position,
            partition_key: entity.partition_key().to_owned(),
            row_key: entity.row_key().to_owned(),
            body: String::from_utf8_lossy(&buf).into_owned(),
        };
        loader.push(item).await.map_err(|e| e.to_string())?;
    }
    loader.finish().await.map_err(|e| e.to_string())?;
    if let Some(why) = tally.refused.lock().ok().and_then(|r| r.clone()) {
        return Err(why);
    }
    let existing = tally.existing.lock().map(|n| *n).unwrap_or(0);
    let elapsed = started.elapsed();
    println!(
        "loaded {} entities in {MAX_OPERATIONS}-entity batches ($batch, {clients} concurrent) in \
         {:.1} s: {:.0} entities/s{}",
        total - existing,
        elapsed.as_secs_f64(),
        (total - existing) as f64 / elapsed.as_secs_f64(),
        if existing > 0 {
            format!(" ({existing} were there already)")
        } else {
            String::new()
        }
    );
    Ok(())
}
