use super::*;
use crate::codec::Names;
use crate::resolve::Change;
use proptest::prelude::*;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use tableq_exec::{Chunk, Key, Scan, SourceRow, compare_keys};
use tableq_model::Entity;
use tableq_model::order::OrdinalString;
use tableq_model::{DateTime, EntityView, Value};
use tableq_planner::plan::{KeyInterval, KeyRange};

/// An entity whose shape varies with `n`: strings, and (for some `n`) Binary values of
/// varying length (empty included) and Guids, so that copies of runs of rows (merges)
/// must shift offsets into both arenas correctly.
fn entity(pk: &str, rk: &str, n: i32) -> Entity {
    let mut e = Entity::new(pk, rk);
    e.set("N", Value::Int32(n));
    e.set("S", Value::String(format!("s{n}")));
    if n % 3 != 0 {
        let len = n.unsigned_abs() as usize % 5;
        e.set(
            "B",
            Value::Binary((0..len).map(|i| (n as u8) ^ i as u8).collect()),
        );
    }
    if n % 2 == 0 {
        e.set(
            "G",
            Value::Guid(uuid::Uuid::from_u128(n as u128 * 0x1_0001)),
        );
        e.set(
            "T",
            Value::String("é".repeat(n.unsigned_abs() as usize % 4)),
        );
    }
    e
}

fn keys(snapshot: &MemorySnapshot) -> Vec<(String, String)> {
    snapshot
        .iter()
        .map(|r| (r.partition_key().to_owned(), r.row_key().to_owned()))
        .collect()
}

fn put(pk: &str, rk: &str, n: i32) -> Change {
    Change::Put(entity(pk, rk, n))
}

#[test]
fn versions_and_snapshots() {
    let v0 = MemorySnapshot::new();
    let v1 = v0
        .with_changes([put("p", "b", 1), put("p", "a", 2), put("o", "z", 3)])
        .unwrap();
    let v2 = v1
        .with_changes([put("p", "a", 4), Change::delete("o", "z")])
        .unwrap();
    let v3 = v2.with_changes([Change::delete("o", "z")]).unwrap();
    assert!(v0.is_empty());
    assert_eq!(
        keys(&v1),
        [
            ("o".into(), "z".into()),
            ("p".into(), "a".into()),
            ("p".into(), "b".into())
        ]
    );
    assert_eq!(
        keys(&v2),
        [("p".into(), "a".into()), ("p".into(), "b".into())]
    );
    assert_eq!(keys(&v3), keys(&v2));
    let n = |v: &MemorySnapshot| {
        v.get("p", "a")
            .and_then(|r| r.custom("N").map(|v| v.to_owned()))
    };
    assert_eq!(
        (n(&v1), n(&v2)),
        (Some(Value::Int32(2)), Some(Value::Int32(4)))
    );
    assert_eq!(
        v2.get("p", "b").map(|r| r.to_entity()),
        Some(entity("p", "b", 1))
    );
    assert_eq!((v1.len(), v2.len(), v3.len()), (3, 2, 2));
    assert_eq!((v1.partition_count(), v2.partition_count()), (2, 1));
    // Within one call, the last change of a key wins.
    let v4 = v3
        .with_changes([put("q", "x", 1), Change::delete("q", "x"), put("q", "x", 2)])
        .unwrap();
    assert_eq!(
        v4.get("q", "x").map(|r| r.to_entity()),
        Some(entity("q", "x", 2))
    );
    // Compacting keeps the contents and empties the overlay.
    assert!(v4.overlay_rows() > 0);
    let c = v4.compacted().unwrap();
    assert_eq!(c.overlay_rows(), 0);
    assert_eq!(keys(&c), keys(&v4));
    assert_eq!((c.len(), c.partition_count()), (3, 2));
}

#[test]
fn utf16_order_of_partitions_and_rows() {
    let want: Vec<(String, String)> = [
        ("p", "\u{10000}"),
        ("p", "\u{E000}"),
        ("p", "\u{FFFF}"),
        ("\u{10000}", "a"),
        ("\u{FFFF}", "a"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let changes = || {
        want.iter()
            .rev()
            .enumerate()
            .map(|(i, (p, r))| put(p, r, i as i32))
    };
    let bulk = MemorySnapshot::from_entities(want.iter().map(|(p, r)| entity(p, r, 0))).unwrap();
    assert_eq!(keys(&bulk), want);
    let written = MemorySnapshot::new().with_changes(changes()).unwrap();
    assert_eq!(keys(&written), want);
    let mut one_by_one = MemorySnapshot::new();
    for c in changes() {
        one_by_one = one_by_one.with_changes([c]).unwrap();
    }
    assert_eq!(keys(&one_by_one), want);
}

#[test]
fn all_value_types_round_trip() {
    let mut e = Entity::new("p", "r");
    e.set_timestamp(Some(DateTime::MIN));
    e.set("Bin", Value::Binary(vec![1, 2, 3]));
    e.set("Bool", Value::Boolean(true));
    e.set("Dt", Value::DateTime(DateTime::MAX));
    e.set("Dbl", Value::Double(f64::NAN));
    e.set("G", Value::Guid(uuid::Uuid::from_bytes([7; 16])));
    e.set("I32", Value::Int32(-5));
    e.set("I64", Value::Int64(i64::MIN));
    e.set("Str", Value::String("Zürich \u{1F600}".into()));
    e.set("Empty", Value::String(String::new()));
    let bulk = MemorySnapshot::from_entities([e.clone()]).unwrap();
    assert_eq!(bulk.get("p", "r").map(|r| r.to_entity()), Some(e.clone()));
    let written = MemorySnapshot::new()
        .with_changes([Change::Put(e.clone())])
        .unwrap();
    assert_eq!(
        written.get("p", "r").map(|r| r.to_entity()),
        Some(e.clone())
    );
    assert_eq!(
        written
            .compacted()
            .unwrap()
            .get("p", "r")
            .map(|r| r.to_entity()),
        Some(e)
    );
}

#[test]
fn single_writes_keep_the_overlay_bounded() {
    let mut v = MemorySnapshot::new();
    let limits = OverlayLimits::DEFAULT;
    for i in 0..20_000 {
        v = v.with_changes([put("p", &format!("r{i:05}"), i)]).unwrap();
        assert!(v.overlay_rows() <= limits.allowance(v.len()) + 1);
    }
    assert_eq!(v.len(), 20_000);
    assert!(v.overlay_rows() > 0 && v.overlay_rows() <= 20_000 / 4);
    // Many partitions, one row each.
    for i in 0..5_000 {
        v = v.with_changes([put(&format!("q{i:04}"), "r", i)]).unwrap();
        assert!(v.overlay_rows() <= limits.allowance(v.len()) + 1);
    }
    assert_eq!((v.len(), v.partition_count()), (25_000, 5_001));
}

#[test]
fn forward_lower_bounds_equal_binary_searches() {
    let hasher = std::hash::RandomState::new();
    let mut b = partition::PartitionBuilder::new("p");
    for i in (0..200).step_by(3) {
        b.push_entity(&entity("p", &format!("{i:03}"), i), &mut Names::default())
            .unwrap();
    }
    let part = b.finish(&hasher).unwrap();
    for from in 0..=part.len() + 1 {
        for k in 0..205 {
            let key = format!("{k:03}");
            let want = part.lower_bound(&key, false).max(from).min(part.len());
            assert_eq!(
                part.lower_bound_from(from, &key),
                want,
                "from {from}, key {key}"
            );
        }
    }
}

#[test]
fn hash_collisions_fall_back_to_search() {
    // Many rows in one partition: 32-bit hash collisions become likely enough to exercise
    // the fallback occasionally; every key must still be found.
    let snap =
        MemorySnapshot::from_entities((0..20_000).map(|i| entity("p", &format!("{i:x}"), i)))
            .unwrap();
    for i in (0..20_000).step_by(7) {
        assert!(snap.get("p", &format!("{i:x}")).is_some());
    }
    assert!(snap.get("p", "nope").is_none());
}

// --- Property tests against a `BTreeMap` model -------------------------------------------

/// Keys from an alphabet that exercises the UTF-16 order: a supplementary-plane character
/// sorts before U+E000–U+FFFF in UTF-16 (after them in UTF-8).
const KEY: &str = "[ab\u{E000}\u{FFFF}\u{10000}]{0,3}";

type Model = BTreeMap<(OrdinalString, OrdinalString), Entity>;

fn model_key(pk: &str, rk: &str) -> (OrdinalString, OrdinalString) {
    (OrdinalString(pk.to_owned()), OrdinalString(rk.to_owned()))
}

#[derive(Debug, Clone)]
enum Op {
    Put(String, String),
    Remove(String, String),
}

fn arb_batch(partitions: &'static str) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (partitions, KEY).prop_map(|(p, r)| Op::Put(p, r)),
        1 => (partitions, KEY).prop_map(|(p, r)| Op::Remove(p, r)),
    ];
    // Mostly single writes, some batches.
    prop_oneof![
        4 => op.clone().prop_map(|o| vec![o]),
        1 => proptest::collection::vec(op, 0..8),
    ]
}

fn arb_batches() -> impl Strategy<Value = Vec<Vec<Op>>> {
    // Few partitions (big ones) or many.
    prop_oneof![
        proptest::collection::vec(arb_batch("[ab]"), 0..120),
        proptest::collection::vec(arb_batch(KEY), 0..120),
    ]
}

fn arb_limits() -> impl Strategy<Value = OverlayLimits> {
    (
        prop_oneof![Just(1usize), Just(2), Just(5), Just(64)],
        1usize..5,
    )
        .prop_map(|(min_rows, divisor)| OverlayLimits { min_rows, divisor })
}

fn arb_bound() -> impl Strategy<Value = Bound<String>> {
    prop_oneof![
        Just(Bound::Unbounded),
        KEY.prop_map(Bound::Included),
        KEY.prop_map(Bound::Excluded),
    ]
}

fn arb_interval() -> impl Strategy<Value = KeyInterval> {
    prop_oneof![
        1 => Just(KeyInterval::full()),
        1 => KEY.prop_map(KeyInterval::point),
        2 => (arb_bound(), arb_bound()).prop_map(|(l, u)| KeyInterval::new(l, u)),
    ]
}

fn arb_key() -> impl Strategy<Value = Option<Key>> {
    proptest::option::of((KEY, KEY).prop_map(|(p, r)| Key::new(p, r)))
}

/// Every entity of the snapshot, owned, in scan order.
fn contents(s: &MemorySnapshot) -> Vec<Entity> {
    s.iter().map(|r| r.to_entity()).collect()
}

fn check_against_model(
    s: &MemorySnapshot,
    model: &Model,
    probes: &[(String, String)],
) -> Result<(), TestCaseError> {
    let want: Vec<Entity> = model.values().cloned().collect();
    prop_assert_eq!(contents(s), want);
    prop_assert_eq!(s.len(), model.len());
    let parts = model
        .keys()
        .map(|(p, _)| p)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    prop_assert_eq!(s.partition_count(), parts);
    for (p, r) in probes {
        prop_assert_eq!(
            s.get(p, r).map(|row| row.to_entity()),
            model.get(&model_key(p, r)).cloned()
        );
    }
    Ok(())
}

fn apply(model: &mut Model, batch: &[Op], n: &mut i32) -> Vec<Change> {
    batch
        .iter()
        .map(|op| {
            *n += 1;
            match op {
                Op::Put(p, r) => {
                    let e = entity(p, r, *n);
                    model.insert(model_key(p, r), e.clone());
                    Change::Put(e)
                }
                Op::Remove(p, r) => {
                    model.remove(&model_key(p, r));
                    Change::delete(p.as_str(), r.as_str())
                }
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random writes give the table a `BTreeMap` gives, read in full, by point gets and
    /// by ranges; earlier versions keep their contents.
    #[test]
    fn writes_equal_a_btreemap(
        initial in proptest::collection::vec((KEY, KEY), 0..30),
        batches in arb_batches(),
        limits in arb_limits(),
        ranges in proptest::collection::vec((arb_interval(), arb_interval(), arb_key(), arb_key()), 1..6),
    ) {
        let mut model = Model::new();
        let mut n = 0;
        let initial: Vec<Entity> = initial.iter().map(|(p, r)| { n += 1; entity(p, r, n) }).collect();
        for e in &initial {
            model.insert(model_key(e.partition_key(), e.row_key()), e.clone());
        }
        let mut v = MemorySnapshot::from_entities(initial).unwrap().with_overlay_limits(limits);
        let mut probes: Vec<(String, String)> = model.keys().map(|(p, r)| (p.0.clone(), r.0.clone())).collect();
        let mut history: Vec<(MemorySnapshot, Model)> = vec![(v.clone(), model.clone())];
        for batch in &batches {
            let changes = apply(&mut model, batch, &mut n);
            probes.extend(changes.iter().map(|c| (c.keys().0.to_owned(), c.keys().1.to_owned())));
            v = v.with_changes(changes).unwrap();
            if history.len() < 8 && n % 5 == 0 {
                history.push((v.clone(), model.clone()));
            }
        }
        history.push((v.clone(), model.clone()));
        for (s, m) in &history {
            check_against_model(s, m, &probes)?;
            for (pk, rk, from, until) in &ranges {
                let range = KeyRange { partition_key: pk.clone(), row_key: rk.clone() };
                let scan = Scan { range: &range, from: from.as_ref(), until: until.as_ref() };
                let got: Vec<Entity> = s.scan(scan).map(|r| r.to_entity()).collect();
                let want: Vec<Entity> = m.values().filter(|e| scan.contains(e.partition_key(), e.row_key())).cloned().collect();
                prop_assert_eq!(got, want);
            }
        }
        // Compacting changes nothing visible.
        let c = v.compacted().unwrap();
        prop_assert_eq!(c.overlay_rows(), 0);
        check_against_model(&c, &model, &probes)?;
    }

    #[test]
    fn split_chunks_cover_scans(
        keys_in in proptest::collection::vec((KEY, KEY), 0..60),
        written in proptest::collection::vec(arb_batch(KEY), 0..30),
        chunk_rows in 1usize..7,
        max_chunks in 1usize..4,
        range in (arb_interval(), arb_interval()),
    ) {
        let bulk = MemorySnapshot::from_entities(keys_in.iter().enumerate().map(|(i, (p, r))| entity(p, r, i as i32))).unwrap();
        let mut model = Model::new();
        let mut n = 0;
        let changes: Vec<Change> = written.iter().flat_map(|b| apply(&mut model, b, &mut n)).collect();
        let mut overlaid = bulk.with_overlay_limits(OverlayLimits { min_rows: 1_000, divisor: 1 });
        for c in changes {
            overlaid = overlaid.with_changes([c]).unwrap();
        }
        let range = KeyRange { partition_key: range.0, row_key: range.1 };
        for snap in [&bulk, &overlaid] {
            let all: Vec<(String, String)> = snap.scan(Scan { range: &range, from: None, until: None }).map(|r| (r.partition_key().to_owned(), r.row_key().to_owned())).collect();
            // Key order, no duplicates.
            for w in all.windows(2) {
                prop_assert!(compare_keys(&w[0].0, &w[0].1, &w[1].0, &w[1].1) == Ordering::Less);
            }
            let mut from: Option<Key> = None;
            let mut seen = Vec::new();
            loop {
                let chunks = snap.split(Scan { range: &range, from: from.as_ref(), until: None }, chunk_rows, max_chunks);
                prop_assert!(chunks.len() <= max_chunks);
                for (i, c) in chunks.iter().enumerate() {
                    if i > 0 {
                        prop_assert_eq!(&c.from, &chunks[i - 1].until);
                    }
                    let scan = Scan { range: &range, from: c.from.as_ref().or(from.as_ref()), until: c.until.as_ref() };
                    let got: Vec<_> = snap.scan(scan).map(|r| (r.partition_key().to_owned(), r.row_key().to_owned())).collect();
                    prop_assert_eq!(Some(got.len()), c.rows);
                    prop_assert!(got.len() <= chunk_rows);
                    seen.extend(got);
                }
                match chunks.last() {
                    Some(Chunk { until: Some(u), .. }) => from = Some(u.clone()),
                    _ => break,
                }
            }
            prop_assert_eq!(&seen, &all);
        }
    }
}
