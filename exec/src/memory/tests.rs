use super::*;
use crate::key::{Chunk, Key, Scan, compare_keys};
use proptest::prelude::*;
use tableq_model::Value;
use tableq_model::{DateTime, EntityView};
use tableq_planner::plan::KeyRange;

fn entity(pk: &str, rk: &str, n: i32) -> Entity {
    let mut e = Entity::new(pk, rk);
    e.set("N", Value::Int32(n));
    e.set("S", Value::String(format!("s{n}")));
    e
}

fn keys(snapshot: &MemorySnapshot) -> Vec<(String, String)> {
    snapshot
        .iter()
        .map(|r| (r.partition_key().to_owned(), r.row_key().to_owned()))
        .collect()
}

#[test]
fn writes_and_snapshots() {
    let table = MemorySource::new();
    table.insert(entity("p", "b", 1)).unwrap();
    table.insert(entity("p", "a", 2)).unwrap();
    table.insert(entity("o", "z", 3)).unwrap();
    assert!(matches!(
        table.insert(entity("p", "a", 9)),
        Err(MemoryError::AlreadyExists { .. })
    ));
    let before = table.snapshot();
    table.upsert(entity("p", "a", 4)).unwrap();
    assert!(table.delete("o", "z"));
    assert!(!table.delete("o", "z"));
    assert_eq!(
        keys(&before),
        [
            ("o".into(), "z".into()),
            ("p".into(), "a".into()),
            ("p".into(), "b".into())
        ]
    );
    let after = table.snapshot();
    assert_eq!(
        keys(&after),
        [("p".into(), "a".into()), ("p".into(), "b".into())]
    );
    assert_eq!(
        after
            .get("p", "a")
            .unwrap()
            .custom("N")
            .map(|v| v.to_owned()),
        Some(Value::Int32(4))
    );
    assert_eq!(
        before
            .get("p", "a")
            .unwrap()
            .custom("N")
            .map(|v| v.to_owned()),
        Some(Value::Int32(2))
    );
    assert_eq!(table.get("p", "b"), Some(entity("p", "b", 1)));
    assert_eq!(table.len(), 2);
}

#[test]
fn failed_batch_changes_nothing() {
    let table = MemorySource::from_entities([entity("p", "a", 1)]).unwrap();
    let batch = [
        Write::Upsert(entity("p", "b", 2)),
        Write::Delete {
            partition_key: "p".into(),
            row_key: "zz".into(),
        },
    ];
    assert!(matches!(
        table.apply(batch),
        Err(MemoryError::NotFound { .. })
    ));
    assert_eq!(table.len(), 1);
    // Within a batch, later writes see earlier ones.
    let batch = [
        Write::Insert(entity("q", "x", 1)),
        Write::Delete {
            partition_key: "q".into(),
            row_key: "x".into(),
        },
        Write::Insert(entity("q", "x", 2)),
    ];
    table.apply(batch).unwrap();
    assert_eq!(table.get("q", "x"), Some(entity("q", "x", 2)));
}

#[test]
fn utf16_order_of_partitions_and_rows() {
    let table = MemorySource::from_entities([
        entity("\u{FFFF}", "a", 1),
        entity("\u{10000}", "a", 2),
        entity("p", "\u{FFFF}", 3),
        entity("p", "\u{10000}", 4),
    ])
    .unwrap();
    let got = keys(&table.snapshot());
    let want: Vec<(String, String)> = [
        ("p", "\u{10000}"),
        ("p", "\u{FFFF}"),
        ("\u{10000}", "a"),
        ("\u{FFFF}", "a"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want);
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
    let table = MemorySource::from_entities([e.clone()]).unwrap();
    assert_eq!(table.get("p", "r"), Some(e));
}

fn arb_entities() -> impl Strategy<Value = Vec<(String, String)>> {
    let key = "[ab\u{FFFF}\u{10000}]{0,3}";
    proptest::collection::vec((key, key), 0..60)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn split_chunks_cover_scans(keys_in in arb_entities(), chunk_rows in 1usize..7, max_chunks in 1usize..4) {
        let table = MemorySource::from_entities(keys_in.iter().enumerate().map(|(i, (p, r))| entity(p, r, i as i32))).unwrap();
        let snap = table.snapshot();
        let all = keys(&snap);
        // Key order, no duplicates.
        for w in all.windows(2) {
            prop_assert!(compare_keys(&w[0].0, &w[0].1, &w[1].0, &w[1].1) == Ordering::Less);
        }
        let range = KeyRange::full();
        let mut from: Option<Key> = None;
        let mut seen = Vec::new();
        loop {
            let chunks = snap.split(Scan { range: &range, from: from.as_ref(), until: None }, chunk_rows, max_chunks);
            prop_assert!(chunks.len() <= max_chunks);
            for c in &chunks {
                let scan = Scan { range: &range, from: c.from.as_ref().or(from.as_ref()), until: c.until.as_ref() };
                let got: Vec<_> = snap.scan(scan).map(|r| (r.partition_key().to_owned(), r.row_key().to_owned())).collect();
                prop_assert_eq!(Some(got.len()), c.rows);
                seen.extend(got);
            }
            match chunks.last() {
                Some(Chunk { until: Some(u), .. }) => from = Some(u.clone()),
                _ => break,
            }
        }
        prop_assert_eq!(seen, all);
    }

    #[test]
    fn point_lookups_find_every_key(keys_in in arb_entities()) {
        let table = MemorySource::from_entities(keys_in.iter().enumerate().map(|(i, (p, r))| entity(p, r, i as i32))).unwrap();
        let snap = table.snapshot();
        for (p, r) in &keys_in {
            prop_assert!(snap.get(p, r).is_some());
            let missing = format!("{r}x");
            prop_assert_eq!(snap.get(p, &missing).is_some(), keys_in.iter().any(|(a, b)| a == p && *b == missing));
        }
    }
}

#[test]
fn hash_collisions_fall_back_to_search() {
    // Many rows in one partition: 32-bit hash collisions become likely enough to exercise
    // the fallback occasionally; every key must still be found.
    let table = MemorySource::from_entities((0..20_000).map(|i| entity("p", &format!("{i:x}"), i)))
        .unwrap();
    let snap = table.snapshot();
    for i in (0..20_000).step_by(7) {
        assert!(snap.get("p", &format!("{i:x}")).is_some());
    }
    assert!(snap.get("p", "nope").is_none());
}
