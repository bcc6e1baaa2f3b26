//! Criterion benchmark `lines`: the per-line costs of `tableq eval`'s streaming engine on
//! `tableq gen` lines (9 typed properties, ≈ 370 bytes): decoding with the full decoder
//! (`decode_entity`, serde_json + an owned `Entity`) vs the borrowed fast path
//! (`decode_borrowed`), and encoding an entity with the `EncodedEntity` encoder vs the
//! streaming `EntityWriter`.
//!
//! Run: `cargo bench --bench lines -- --warm-up-time 1 --measurement-time 3`.
//! Results: `benches/README.md` (section `eval`).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tableq::datagen::{GenOptions, Generator};
use tableq::model::Entity;
use tableq::model::json::{
    BorrowedEntity, DecodeOptions, EncodeOptions, EntityWriter, EnvelopeRef, MetadataLevel,
    decode_borrowed, decode_entity, encode_entity_to_string,
};

const LINES: u64 = 4096;

fn lines() -> (Vec<Entity>, Vec<String>) {
    let entities: Vec<Entity> = Generator::new(GenOptions {
        entities: LINES,
        partitions: 100,
        seed: 7,
        timestamps: true,
    })
    .collect();
    let writer = EntityWriter::new(MetadataLevel::MinimalMetadata);
    let text = entities
        .iter()
        .map(|e| writer.to_string(e, EnvelopeRef::default()))
        .collect();
    (entities, text)
}

fn bench(c: &mut Criterion) {
    let (entities, text) = lines();
    let bytes: usize = text.iter().map(String::len).sum();
    let mut group = c.benchmark_group("decode_4096_lines");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("decode_entity", |b| {
        b.iter(|| {
            for line in &text {
                black_box(decode_entity(black_box(line), &DecodeOptions::STORED).is_ok());
            }
        })
    });
    group.bench_function("decode_borrowed", |b| {
        let mut view = BorrowedEntity::new();
        b.iter(|| {
            for line in &text {
                black_box(decode_borrowed(
                    black_box(line),
                    &DecodeOptions::STORED,
                    &mut view,
                ));
            }
        })
    });
    group.finish();

    let mut group = c.benchmark_group("encode_4096_entities");
    group.throughput(Throughput::Bytes(bytes as u64));
    let options = EncodeOptions::level(MetadataLevel::MinimalMetadata);
    group.bench_function("encode_entity_to_string", |b| {
        b.iter(|| {
            for e in &entities {
                black_box(encode_entity_to_string(black_box(e), &options));
            }
        })
    });
    let writer = EntityWriter::new(MetadataLevel::MinimalMetadata);
    group.bench_function("entity_writer", |b| {
        let mut out = Vec::with_capacity(1024);
        b.iter(|| {
            for e in &entities {
                out.clear();
                writer.write(&mut out, black_box(e), EnvelopeRef::default());
                black_box(&out);
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
