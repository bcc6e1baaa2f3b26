//! Deterministic synthetic entities for benchmarks and tests (`tableq gen`).
//!
//! A [`Generator`] yields `N` [`Entity`] values in ascending (PartitionKey, RowKey) order,
//! spread evenly over `P` partitions, every property derived from `(seed, position)` alone:
//! the same options always give the same entities, on every platform and every version of
//! every dependency (the generator is a self-contained [SplitMix64] hash, not a crate whose
//! value stream could change). Because each entity depends only on its position, any entity
//! can be built directly ([`Generator::entity_at`]) and disjoint ranges can be generated in
//! parallel ([`Generator::range`]) without holding the data set, let alone its JSON, in memory.
//!
//! ## Keys
//! * **PartitionKey** `p` + the partition number, zero-padded to the width of `P − 1` digits
//!   but never fewer than 3 digits: the default `P = 100` gives `p000` … `p099`, `P = 5000`
//!   gives `p0000` … `p4999`. (The issue names both `p000` and "the width of P−1" for the
//!   default P = 100, whose P − 1 = 99 has two digits; the 3-digit minimum keeps the named
//!   first key `p000` and follows the width rule for every larger P.)
//! * **RowKey** `r` + the row number *within its partition*, 8 digits (`r00000000`, …;
//!   wider only beyond 10⁸ rows per partition).
//! * Zero padding makes the string order of the keys their numeric order.
//! * Entity `i` of `N` (in key order) lives in partition `i / ⌈N/P⌉`-ish: the first `N mod P`
//!   partitions hold `⌊N/P⌋ + 1` entities, the others `⌊N/P⌋` (partitions are empty when
//!   `N < P`).
//!
//! ## Properties
//! | name | type | values |
//! |---|---|---|
//! | `Age` | Int32 | 0–99, uniform |
//! | `Big` | Int64 | any i64, uniform |
//! | `Score` | Double | 0.000–999.999 in steps of 0.001 |
//! | `Active` | Boolean | true/false, 50 % each |
//! | `Name` | String | one of 32 first names |
//! | `City` | String | one of 16 city names (some non-ASCII, e.g. `Zürich`) |
//! | `Born` | DateTime | 1940-01-01 … 2009-12-31, 100 ns precision |
//! | `Id` | Guid | random (version 4 layout) |
//! | `Blob` | Binary | 0–16 random bytes |
//!
//! With [`GenOptions::timestamps`] each entity also gets a Timestamp: 2026-01-01T00:00:00Z
//! plus one millisecond per position.
//!
//! [SplitMix64]: https://prng.di.unimi.it/splitmix64.c
//!
//! ```
//! use tableq::datagen::{GenOptions, Generator};
//!
//! let entities: Vec<_> = Generator::new(GenOptions { entities: 5, partitions: 2, seed: 7, ..Default::default() })
//!     .collect();
//! let keys: Vec<_> = entities.iter().map(|e| (e.partition_key(), e.row_key())).collect();
//! assert_eq!(keys, [("p000", "r00000000"), ("p000", "r00000001"), ("p000", "r00000002"),
//!                   ("p001", "r00000000"), ("p001", "r00000001")]);
//! // Deterministic: the same options give the same entities.
//! let again = Generator::new(GenOptions { entities: 5, partitions: 2, seed: 7, ..Default::default() });
//! assert!(again.eq(entities));
//! ```

use std::ops::Range;
use tableq_model::{DateTime, Entity, Property, Value};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenOptions {
    /// The number of entities.
    pub entities: u64,
    /// The number of partitions (default 100). `0` is treated as `1`.
    pub partitions: u32,
    /// The seed: the same seed gives the same entities.
    pub seed: u64,
    /// Whether to give every entity a Timestamp (default: no Timestamp).
    pub timestamps: bool,
}

impl Default for GenOptions {
    /// No entities, 100 partitions, seed 0, no Timestamps.
    fn default() -> Self {
        GenOptions {
            entities: 0,
            partitions: 100,
            seed: 0,
            timestamps: false,
        }
    }
}

/// A deterministic stream of synthetic entities in key order; see the [module docs](self).
///
/// `Generator` is an [`Iterator`] over the positions it covers (all `N` entities for
/// [`Generator::new`], a sub-range for [`Generator::range`]).
#[derive(Debug, Clone)]
pub struct Generator {
    layout: Layout,
    seed: u64,
    timestamps: bool,
    next: u64,
    end: u64,
}

/// How `N` entities are spread over `P` partitions, and the key formats.
#[derive(Debug, Clone, Copy)]
struct Layout {
    entities: u64,
    partitions: u64,
    /// Entities in every partition at least (`N / P`).
    base: u64,
    /// The first `extra` partitions hold one more (`N mod P`).
    extra: u64,
    partition_width: usize,
    row_width: usize,
}

impl Layout {
    fn new(entities: u64, partitions: u32) -> Layout {
        let partitions = u64::from(partitions.max(1));
        let base = entities / partitions;
        let extra = entities % partitions;
        let max_rows = base + u64::from(extra > 0);
        Layout {
            entities,
            partitions,
            base,
            extra,
            partition_width: digits(partitions - 1).max(3),
            row_width: digits(max_rows.saturating_sub(1)).max(8),
        }
    }

    /// The number of entities of partition `p`.
    fn partition_len(&self, p: u64) -> u64 {
        if p >= self.partitions {
            0
        } else {
            self.base + u64::from(p < self.extra)
        }
    }

    /// The position of the first entity of partition `p`.
    fn partition_start(&self, p: u64) -> u64 {
        let p = p.min(self.partitions);
        p * self.base + p.min(self.extra)
    }

    /// (partition, row) of the entity at `position`.
    fn locate(&self, position: u64) -> (u64, u64) {
        let big = self.extra * (self.base + 1);
        if position < big {
            (position / (self.base + 1), position % (self.base + 1))
        } else {
            // Here base ≥ 1, since position < entities = big + (P − extra)·base.
            let rest = position - big;
            (self.extra + rest / self.base, rest % self.base)
        }
    }
}

/// The number of decimal digits of `n` (1 for 0).
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// SplitMix64's output function: a strong 64-bit mixer.
const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The SplitMix64 generator (Steele, Lea, Flood 2014; public-domain reference code).
struct SplitMix64(u64);

impl SplitMix64 {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(Self::GAMMA);
        mix64(self.0)
    }

    /// A uniform value in `0..n` (`n > 0`), by multiply-shift (bias < n / 2⁶⁴).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

const NAMES: [&str; 32] = [
    "Ada",
    "Alan",
    "Barbara",
    "Brian",
    "Claude",
    "Dennis",
    "Donald",
    "Edsger",
    "Frances",
    "Grace",
    "Guido",
    "Hedy",
    "Ivan",
    "John",
    "Ken",
    "Leslie",
    "Linus",
    "Margaret",
    "Niklaus",
    "Radia",
    "Rob",
    "Shafi",
    "Sophie",
    "Tim",
    "Tony",
    "Bjarne",
    "Whitfield",
    "Yukihiro",
    "Zoë",
    "Åsa",
    "Ørjan",
    "José",
];

const CITIES: [&str; 16] = [
    "Amsterdam",
    "Berlin",
    "Bogotá",
    "Cairo",
    "Dublin",
    "Kraków",
    "Lagos",
    "Lima",
    "London",
    "Madrid",
    "Osaka",
    "Paris",
    "São Paulo",
    "Seattle",
    "Sydney",
    "Zürich",
];

const fn ticks(t: i64) -> DateTime {
    match DateTime::from_ticks(t) {
        Some(t) => t,
        None => DateTime::MIN,
    }
}

/// 1940-01-01T00:00:00Z.
const BORN_FROM: DateTime = ticks(611_888_256_000_000_000);
/// 2010-01-01T00:00:00Z (exclusive).
const BORN_TO: DateTime = ticks(633_979_008_000_000_000);
/// 2026-01-01T00:00:00Z, the Timestamp of position 0.
const TIMESTAMP_BASE: DateTime = ticks(639_028_224_000_000_000);
/// 100 ns ticks per millisecond.
const TICKS_PER_MS: i64 = 10_000;

impl Generator {
    /// A generator of all `options.entities` entities, in key order.
    pub fn new(options: GenOptions) -> Generator {
        let layout = Layout::new(options.entities, options.partitions);
        Generator {
            layout,
            seed: options.seed,
            timestamps: options.timestamps,
            next: 0,
            end: layout.entities,
        }
    }

    /// The total number of entities of the data set (not only of this generator's range).
    pub fn total(&self) -> u64 {
        self.layout.entities
    }

    /// The number of partitions (at least 1).
    pub fn partitions(&self) -> u64 {
        self.layout.partitions
    }

    /// The PartitionKey of partition `p` (`p000`, …).
    pub fn partition_key(&self, p: u64) -> String {
        format!("p{p:0width$}", width = self.layout.partition_width)
    }

    /// The RowKey of row `r` within a partition (`r00000000`, …).
    pub fn row_key(&self, r: u64) -> String {
        format!("r{r:0width$}", width = self.layout.row_width)
    }

    /// The positions (in key order) of the entities of partition `p`.
    pub fn partition_positions(&self, p: u64) -> Range<u64> {
        let start = self.layout.partition_start(p);
        start..start + self.layout.partition_len(p)
    }

    /// A generator of the entities at `positions` only (clamped to the data set): split the
    /// positions `0..total()` into chunks to generate in parallel. Concatenating the chunks
    /// in order gives exactly what [`Generator::new`] yields.
    pub fn range(&self, positions: Range<u64>) -> Generator {
        let end = positions.end.min(self.layout.entities);
        Generator {
            next: positions.start.min(end),
            end,
            ..self.clone()
        }
    }

    /// The entity at `position` (0-based, in key order), or `None` past the end.
    pub fn entity_at(&self, position: u64) -> Option<Entity> {
        if position >= self.layout.entities {
            return None;
        }
        let (p, r) = self.layout.locate(position);
        let mut rng = SplitMix64(mix64(self.seed ^ mix64(position)));
        let age = rng.below(100) as i32;
        let big = rng.next() as i64;
        let score = rng.below(1_000_000) as f64 / 1000.0;
        let active = rng.next() >> 63 == 1;
        let name = NAMES[rng.below(NAMES.len() as u64) as usize];
        let city = CITIES[rng.below(CITIES.len() as u64) as usize];
        let span = (BORN_TO.ticks() - BORN_FROM.ticks()) as u64;
        let born = ticks(BORN_FROM.ticks() + rng.below(span) as i64);
        let id = uuid::Builder::from_random_bytes(
            (u128::from(rng.next()) << 64 | u128::from(rng.next())).to_be_bytes(),
        )
        .into_uuid();
        let blob_len = rng.below(17) as usize;
        let mut blob = Vec::with_capacity(blob_len);
        while blob.len() < blob_len {
            let word = rng.next().to_le_bytes();
            let take = (blob_len - blob.len()).min(8);
            blob.extend_from_slice(&word[..take]);
        }
        let timestamp = self.timestamps.then(|| {
            let offset = i64::try_from(position)
                .unwrap_or(i64::MAX)
                .saturating_mul(TICKS_PER_MS);
            ticks(
                TIMESTAMP_BASE
                    .ticks()
                    .saturating_add(offset)
                    .min(DateTime::MAX.ticks()),
            )
        });
        let prop = |name: &str, value: Value| Property {
            name: name.to_owned(),
            value,
        };
        // Listed in name order, the order `Entity` keeps.
        Some(Entity::with_properties(
            self.partition_key(p),
            self.row_key(r),
            timestamp,
            [
                prop("Active", Value::Boolean(active)),
                prop("Age", Value::Int32(age)),
                prop("Big", Value::Int64(big)),
                prop("Blob", Value::Binary(blob)),
                prop("Born", Value::DateTime(born)),
                prop("City", Value::from(city)),
                prop("Id", Value::Guid(id)),
                prop("Name", Value::from(name)),
                prop("Score", Value::Double(score)),
            ],
        ))
    }
}

impl Iterator for Generator {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        if self.next >= self.end {
            return None;
        }
        let entity = self.entity_at(self.next);
        self.next += 1;
        entity
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.end - self.next).unwrap_or(usize::MAX);
        (left, Some(left))
    }

    fn nth(&mut self, n: usize) -> Option<Entity> {
        let skip = u64::try_from(n).unwrap_or(u64::MAX);
        self.next = self.next.saturating_add(skip).min(self.end);
        self.next()
    }
}

impl ExactSizeIterator for Generator {}

impl std::iter::FusedIterator for Generator {}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::order::compare_str;
    use tableq_model::{EdmType, EntityView};

    fn opts(entities: u64, partitions: u32, seed: u64) -> GenOptions {
        GenOptions {
            entities,
            partitions,
            seed,
            timestamps: false,
        }
    }

    #[test]
    fn default_keys_are_p000_to_p099() {
        let g = Generator::new(opts(1000, 100, 1));
        let all: Vec<Entity> = g.clone().collect();
        assert_eq!(all.len(), 1000);
        assert_eq!(all[0].partition_key(), "p000");
        assert_eq!(all[0].row_key(), "r00000000");
        assert_eq!(all[999].partition_key(), "p099");
        assert_eq!(all[999].row_key(), "r00000009");
        assert_eq!(g.partition_key(5), "p005");
    }

    #[test]
    fn partition_width_follows_p_minus_one_beyond_three_digits() {
        let g = Generator::new(opts(0, 5000, 0));
        assert_eq!(g.partition_key(0), "p0000");
        assert_eq!(g.partition_key(4999), "p4999");
        let g = Generator::new(opts(0, 1000, 0));
        assert_eq!(g.partition_key(999), "p999");
        let g = Generator::new(opts(0, 1001, 0));
        assert_eq!(g.partition_key(1000), "p1000");
        let g = Generator::new(opts(0, 1, 0));
        assert_eq!(g.partition_key(0), "p000");
    }

    #[test]
    fn keys_are_strictly_increasing_and_spread_evenly() {
        for (n, p) in [
            (0u64, 3u32),
            (1, 3),
            (2, 3),
            (10, 3),
            (11, 4),
            (7, 10),
            (100, 7),
        ] {
            let g = Generator::new(opts(n, p, 9));
            let all: Vec<Entity> = g.clone().collect();
            assert_eq!(all.len() as u64, n);
            for w in all.windows(2) {
                let a = (w[0].partition_key(), w[0].row_key());
                let b = (w[1].partition_key(), w[1].row_key());
                let ord = compare_str(a.0, b.0).then(compare_str(a.1, b.1));
                assert!(ord.is_lt(), "{a:?} !< {b:?}");
            }
            let mut counts = vec![0u64; p as usize];
            for e in &all {
                let idx: usize = e.partition_key()[1..].parse().unwrap();
                counts[idx] += 1;
            }
            let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            assert!(max - min <= 1, "{counts:?}");
            for part in 0..u64::from(p) {
                assert_eq!(
                    g.partition_positions(part).count() as u64,
                    counts[part as usize]
                );
            }
        }
    }

    #[test]
    fn deterministic_and_seed_dependent() {
        let a: Vec<Entity> = Generator::new(opts(50, 4, 42)).collect();
        let b: Vec<Entity> = Generator::new(opts(50, 4, 42)).collect();
        let c: Vec<Entity> = Generator::new(opts(50, 4, 43)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn ranges_concatenate_to_the_whole() {
        let g = Generator::new(opts(97, 5, 3));
        let whole: Vec<Entity> = g.clone().collect();
        let mut parts = Vec::new();
        for start in (0..100).step_by(13) {
            parts.extend(g.range(start..start + 13));
        }
        assert_eq!(whole, parts);
        assert_eq!(g.range(10..20).len(), 10);
        assert_eq!(g.range(90..200).len(), 7);
        assert_eq!(g.clone().nth(96), g.entity_at(96));
        assert!(g.entity_at(97).is_none());
    }

    #[test]
    fn properties_have_the_documented_types_and_ranges() {
        let with_ts = GenOptions {
            timestamps: true,
            ..opts(500, 7, 5)
        };
        for (i, e) in Generator::new(with_ts).enumerate() {
            let ty = |n: &str| e.get(n).map(|v| v.edm_type());
            assert_eq!(ty("Age"), Some(EdmType::Int32));
            assert_eq!(ty("Big"), Some(EdmType::Int64));
            assert_eq!(ty("Score"), Some(EdmType::Double));
            assert_eq!(ty("Active"), Some(EdmType::Boolean));
            assert_eq!(ty("Name"), Some(EdmType::String));
            assert_eq!(ty("City"), Some(EdmType::String));
            assert_eq!(ty("Born"), Some(EdmType::DateTime));
            assert_eq!(ty("Id"), Some(EdmType::Guid));
            assert_eq!(ty("Blob"), Some(EdmType::Binary));
            assert_eq!(e.len(), 9);
            match e.custom("Age") {
                Some(Value::Int32(a)) => assert!((0..100).contains(a)),
                other => panic!("{other:?}"),
            }
            match e.custom("Blob") {
                Some(Value::Binary(b)) => assert!(b.len() <= 16),
                other => panic!("{other:?}"),
            }
            match e.custom("Born") {
                Some(Value::DateTime(t)) => assert!(*t >= BORN_FROM && *t < BORN_TO),
                other => panic!("{other:?}"),
            }
            let ts = EntityView::timestamp(&e).map(|t| t.ticks());
            assert_eq!(ts, Some(TIMESTAMP_BASE.ticks() + i as i64 * TICKS_PER_MS));
        }
        let no_ts = Generator::new(opts(3, 1, 0)).next().unwrap();
        assert!(EntityView::timestamp(&no_ts).is_none());
    }

    #[test]
    fn zero_partitions_means_one() {
        let all: Vec<Entity> = Generator::new(opts(3, 0, 0)).collect();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|e| e.partition_key() == "p000"));
    }
}
