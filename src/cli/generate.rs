//! `tableq gen`: deterministic synthetic entities as JSON lines on stdout, for benchmarks
//! and tests (see [`tableq::datagen`] for keys, properties and value ranges).
//!
//! Each line is one entity in the form `tableq eval` and `tableq validate` read: the
//! service's JSON with `Name@odata.type` annotations only where JSON cannot show the type
//! (Int64, DateTime, Guid, Binary). The same options always print the same bytes. Lines are
//! encoded on all cores in chunks and written in order through one buffered writer.
//!
//! ```text
//! $ tableq gen --entities 2 --partitions 2 --seed 1
//! {"PartitionKey":"p000","RowKey":"r00000000","Active":…,"Age":…,…}
//! {"PartitionKey":"p001","RowKey":"r00000000",…}
//! ```

use std::io::{self, Write};
use std::process::ExitCode;
use tableq::datagen::{GenOptions, Generator};
use tableq::model::json::{EntityWriter, EnvelopeRef, MetadataLevel};

/// Arguments of `tableq gen`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of entities to generate.
    #[arg(long, value_name = "N")]
    entities: u64,
    /// Number of partitions the entities are spread over evenly (PartitionKeys `p000`, …).
    #[arg(long, value_name = "P", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..))]
    partitions: u32,
    /// Seed of the generator: the same seed prints the same bytes.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// Give every entity a Timestamp (2026-01-01T00:00:00Z plus 1 ms per entity).
    #[arg(long)]
    timestamps: bool,
}

/// Entities encoded per work unit of one thread.
const CHUNK: u64 = 4096;

/// Runs `tableq gen`.
pub fn run(args: Args) -> ExitCode {
    let generator = Generator::new(GenOptions {
        entities: args.entities,
        partitions: args.partitions,
        seed: args.seed,
        timestamps: args.timestamps,
    });
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
    match write_all(&generator, &mut out).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // `tableq gen … | head` closes the pipe early: that is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            ExitCode::from(2)
        }
    }
}

/// Encodes `generator`'s entities in parallel chunks and writes them in key order.
fn write_all(generator: &Generator, out: &mut impl Write) -> io::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let total = generator.total();
    let mut start = 0;
    while start < total {
        let round_end = total.min(start.saturating_add(CHUNK * threads));
        let chunks: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (start..round_end)
                .step_by(CHUNK as usize)
                .map(|from| {
                    let range = generator.range(from..round_end.min(from + CHUNK));
                    scope.spawn(move || encode_chunk(range))
                })
                .collect();
            // A panic in an encoder thread is a bug; surface it rather than write a gap.
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for chunk in &chunks {
            out.write_all(chunk)?;
        }
        start = round_end;
    }
    Ok(())
}

/// JSON lines of the entities of one generator range.
fn encode_chunk(range: Generator) -> Vec<u8> {
    let writer = EntityWriter::new(MetadataLevel::MinimalMetadata);
    let mut buf = Vec::with_capacity(range.len() * 400);
    for entity in range {
        writer.write(&mut buf, &entity, EnvelopeRef::default());
        buf.push(b'\n');
    }
    buf
}
