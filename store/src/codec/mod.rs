//! The row codec: how a stored row holds its properties, shared by the two layouts that
//! store rows — memory partitions ([`crate::memory::MemorySnapshot`]: slots in an array,
//! payloads in per-partition text and byte arenas) and durable blocks (`durable/format/block.rs`:
//! slots as little-endian bytes inside the row, payloads after them).
//!
//! * [`Slot`] — one custom property in 12 bytes: the property's name number (from the
//!   table's [`Names`]) and its Edm type tag in one `u32`, then two `u32`s holding the value
//!   inline (numbers, booleans, DateTime ticks) or the place of its payload (strings,
//!   binary, Guids). A row's slots are sorted by name number.
//! * [`Slot::encode`] / [`Slot::decode`] — value ⇄ slot; where payloads live is the
//!   layout's business (a closure places them when encoding, two closures fetch them when
//!   decoding), so one codec serves arenas and position-independent rows alike. Bytes read
//!   from a file are checked ([`Slot::decode`]); arenas a memory partition built itself are
//!   read without checks ([`Slot::decode_trusted`], the scan loop's fast path).
//! * [`Names`] — a table's interned property names (`names.rs`).
//! * [`ColumnSet`] — the fixed-width properties of a run of rows again, column by column,
//!   and their byte encoding (`columns.rs`).
//! * [`timestamp_ticks`] / [`timestamp_from_ticks`] — the Timestamp of a row as ticks,
//!   [`NO_TIMESTAMP`] for none.
//!
//! ```text
//! slot     = id_tag:u32  a:u32  b:u32          id_tag = name number << 4 | tag
//! Int32    a = the value (two's complement)
//! Int64, Double (bit pattern), DateTime (ticks)   b:a = high:low 32 bits
//! Boolean  a = 0 or 1
//! String, Binary   a = payload offset, b = payload length
//! Guid     a = payload offset, b = 16
//! ```
//!
//! The tags and this packing are part of the durable file format (written out with the rest
//! of it in `durable/format/mod.rs`): changing them needs a new
//! [`FORMAT_VERSION`](crate::durable::FORMAT_VERSION).

mod columns;
mod names;

#[cfg(test)]
pub(crate) use columns::reseal as reseal_columns;
pub(crate) use columns::{ColumnDirectory, ColumnRun, ColumnSet, EncodedColumns, LazyColumns};
pub(crate) use names::{MAX_NAME_ID, Names};

use tableq_model::{DateTime, ValueRef};
use uuid::Uuid;

const TAG_BINARY: u32 = 0;
const TAG_BOOLEAN: u32 = 1;
const TAG_DATETIME: u32 = 2;
const TAG_DOUBLE: u32 = 3;
const TAG_GUID: u32 = 4;
const TAG_INT32: u32 = 5;
const TAG_INT64: u32 = 6;
const TAG_STRING: u32 = 7;
const TAG_BITS: u32 = 4;
const TAG_MASK: u32 = (1 << TAG_BITS) - 1;

/// Bytes of an encoded slot ([`Slot::to_le_bytes`]).
pub(crate) const SLOT_BYTES: usize = 12;

/// The Timestamp ticks marking "no Timestamp".
pub(crate) const NO_TIMESTAMP: i64 = i64::MIN;

/// Why stored bytes are not a valid row (a damaged file, never a user's input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt block: {0}")]
pub(crate) struct Corrupt(pub(crate) &'static str);

/// A property name number too large for a slot (more than [`MAX_NAME_ID`] + 1 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameOverflow;

/// Where a slot's payload lives: text (UTF-8) or bytes (Binary, Guid). Memory partitions
/// keep them in separate arenas; durable rows keep both after the slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Payload<'v> {
    /// A String value's text.
    Text(&'v str),
    /// A Binary value's bytes or a Guid's 16 bytes.
    Bytes(&'v [u8]),
}

impl Payload<'_> {
    /// The payload's length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Payload::Text(s) => s.len(),
            Payload::Bytes(b) => b.len(),
        }
    }
}

/// Which arena a slot's payload is in ([`Slot::payload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PayloadKind {
    /// Text: a String.
    Text,
    /// Bytes: a Binary or a Guid.
    Bytes,
}

/// A number read from a slot ([`Slot::number`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    /// An Int32.
    Int32(i32),
    /// An Int64.
    Int64(i64),
    /// A Double (any bit pattern).
    Double(f64),
}

/// One encoded property (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    id_tag: u32,
    a: u32,
    b: u32,
}

impl Slot {
    /// Encodes property number `id` with `value`; `place` stores a payload and returns its
    /// offset (the slot records the offset and the payload's length).
    ///
    /// Fails with `place`'s error, or with [`NameOverflow`] (converted) when `id` exceeds
    /// [`MAX_NAME_ID`].
    #[inline(always)]
    pub(crate) fn encode<E: From<NameOverflow>>(
        id: u32,
        value: ValueRef<'_>,
        place: impl FnOnce(Payload<'_>) -> Result<u32, E>,
    ) -> Result<Slot, E> {
        if id > MAX_NAME_ID {
            return Err(NameOverflow.into());
        }
        let split = |v: u64| (v as u32, (v >> 32) as u32);
        let (tag, a, b) = match value {
            ValueRef::String(s) => (TAG_STRING, place(Payload::Text(s))?, s.len()),
            ValueRef::Binary(bytes) => (TAG_BINARY, place(Payload::Bytes(bytes))?, bytes.len()),
            ValueRef::Guid(g) => (TAG_GUID, place(Payload::Bytes(g.as_bytes()))?, 16),
            ValueRef::Int32(i) => (TAG_INT32, i as u32, 0),
            ValueRef::Int64(i) => {
                let (a, b) = split(i as u64);
                (TAG_INT64, a, b as usize)
            }
            ValueRef::Double(d) => {
                let (a, b) = split(d.to_bits());
                (TAG_DOUBLE, a, b as usize)
            }
            ValueRef::Boolean(v) => (TAG_BOOLEAN, u32::from(v), 0),
            ValueRef::DateTime(t) => {
                let (a, b) = split(t.ticks() as u64);
                (TAG_DATETIME, a, b as usize)
            }
        };
        Ok(Slot {
            id_tag: (id << TAG_BITS) | tag,
            a,
            // A payload's length: `place` accepted it, so it fits the layout's offsets,
            // which are 32-bit like this field.
            b: b as u32,
        })
    }

    /// The property's name number.
    #[inline(always)]
    pub(crate) fn id(self) -> u32 {
        self.id_tag >> TAG_BITS
    }

    /// The slot with property number `id` instead of its own; `None` when `id` exceeds
    /// [`MAX_NAME_ID`].
    #[inline]
    pub(crate) fn with_id(self, id: u32) -> Option<Slot> {
        (id <= MAX_NAME_ID).then_some(Slot {
            id_tag: (id << TAG_BITS) | (self.id_tag & TAG_MASK),
            ..self
        })
    }

    /// Where the slot's payload is, and its (offset, length); `None` for inline values.
    #[inline]
    pub(crate) fn payload(self) -> Option<(PayloadKind, u32, u32)> {
        match self.id_tag & TAG_MASK {
            TAG_STRING => Some((PayloadKind::Text, self.a, self.b)),
            TAG_BINARY | TAG_GUID => Some((PayloadKind::Bytes, self.a, self.b)),
            _ => None,
        }
    }

    /// This slot with its payload moved to `offset` (for a layout that copies payloads
    /// between arenas). Inline values are unchanged.
    #[inline]
    pub(crate) fn with_payload_offset(self, offset: u32) -> Slot {
        match self.payload() {
            Some(_) => Slot { a: offset, ..self },
            None => self,
        }
    }

    /// Decodes the value; `text` and `bytes` fetch a payload by (offset, length). Damage
    /// (an unknown tag, a Boolean other than 0 or 1, a DateTime out of range, a Guid not
    /// 16 bytes long, a payload the closures reject) is a [`Corrupt`] error.
    #[inline(always)]
    pub(crate) fn decode<'v>(
        self,
        text: impl FnOnce(u32, u32) -> Result<&'v str, Corrupt>,
        bytes: impl FnOnce(u32, u32) -> Result<&'v [u8], Corrupt>,
    ) -> Result<ValueRef<'v>, Corrupt> {
        let (a, b) = (self.a, self.b);
        let wide = || u64::from(a) | (u64::from(b) << 32);
        Ok(match self.id_tag & TAG_MASK {
            TAG_STRING => ValueRef::String(text(a, b)?),
            TAG_INT32 => ValueRef::Int32(a as i32),
            TAG_INT64 => ValueRef::Int64(wide() as i64),
            TAG_DOUBLE => ValueRef::Double(f64::from_bits(wide())),
            TAG_BOOLEAN if a <= 1 => ValueRef::Boolean(a == 1),
            TAG_DATETIME => ValueRef::DateTime(
                DateTime::from_ticks(wide() as i64).ok_or(Corrupt("DateTime out of range"))?,
            ),
            TAG_GUID => ValueRef::Guid(Uuid::from_bytes(
                <[u8; 16]>::try_from(bytes(a, b)?).map_err(|_| Corrupt("Guid is not 16 bytes"))?,
            )),
            TAG_BINARY => ValueRef::Binary(bytes(a, b)?),
            _ => return Err(Corrupt("unknown value tag")),
        })
    }

    /// Decodes a slot whose payloads lie in `text` and `bytes`, arenas written by the same
    /// builder as the slot (a memory partition's): nothing can be damaged, so nothing is
    /// checked beyond bounds, and what [`decode`](Slot::decode) would report as damage reads
    /// as a harmless value (an empty payload, `DateTime::MIN`, an empty Binary). Agrees with
    /// `decode` on every slot [`encode`](Slot::encode) makes (property-tested).
    ///
    /// The arenas are passed as closures so that a scan testing a number never loads them.
    #[inline(always)]
    pub(crate) fn decode_trusted<'v>(
        self,
        text: impl FnOnce() -> &'v str,
        bytes: impl FnOnce() -> &'v [u8],
    ) -> ValueRef<'v> {
        let (at, len) = (self.a as usize, self.b as usize);
        match self.id_tag & TAG_MASK {
            TAG_STRING => ValueRef::String(text().get(at..at + len).unwrap_or("")),
            TAG_INT32 => ValueRef::Int32(self.a as i32),
            TAG_INT64 => ValueRef::Int64(self.wide() as i64),
            TAG_DOUBLE => ValueRef::Double(f64::from_bits(self.wide())),
            TAG_BOOLEAN => ValueRef::Boolean(self.a != 0),
            TAG_DATETIME => ValueRef::DateTime(
                DateTime::from_ticks(self.wide() as i64).unwrap_or(DateTime::MIN),
            ),
            TAG_GUID => ValueRef::Guid(Uuid::from_bytes(
                bytes()
                    .get(at..at + 16)
                    .and_then(|b| b.try_into().ok())
                    .unwrap_or([0; 16]),
            )),
            _ => ValueRef::Binary(bytes().get(at..at + len).unwrap_or(&[])),
        }
    }

    /// Whether the value is of a fixed-width type, held whole in the slot (Boolean,
    /// DateTime, Double, Int32, Int64): the types with a column form (`columns.rs`).
    #[inline]
    pub(crate) fn is_fixed_width(self) -> bool {
        matches!(
            self.id_tag & TAG_MASK,
            TAG_BOOLEAN | TAG_DATETIME | TAG_DOUBLE | TAG_INT32 | TAG_INT64
        )
    }

    /// The value when it is a number, which the slot holds whole (Int32, Int64, Double:
    /// every bit pattern is a valid value, so nothing is checked; [`decode`](Slot::decode)
    /// returns the same number); `None` for the other types.
    #[inline(always)]
    pub(crate) fn number(self) -> Option<Number> {
        match self.id_tag & TAG_MASK {
            TAG_INT32 => Some(Number::Int32(self.a as i32)),
            TAG_INT64 => Some(Number::Int64(self.wide() as i64)),
            TAG_DOUBLE => Some(Number::Double(f64::from_bits(self.wide()))),
            _ => None,
        }
    }

    /// `b:a` as one 64-bit value.
    #[inline(always)]
    fn wide(self) -> u64 {
        u64::from(self.a) | (u64::from(self.b) << 32)
    }

    /// The slot as 12 little-endian bytes (`id_tag`, `a`, `b`).
    #[inline]
    pub(crate) fn to_le_bytes(self) -> [u8; SLOT_BYTES] {
        let mut out = [0; SLOT_BYTES];
        out[..4].copy_from_slice(&self.id_tag.to_le_bytes());
        out[4..8].copy_from_slice(&self.a.to_le_bytes());
        out[8..].copy_from_slice(&self.b.to_le_bytes());
        out
    }

    /// The name number of an encoded slot, reading only its first word (`bytes` holds at
    /// least 4 bytes; fewer read as number 0).
    #[inline(always)]
    pub(crate) fn id_of_le_bytes(bytes: &[u8]) -> u32 {
        match bytes {
            [a, b, c, d, ..] => u32::from_le_bytes([*a, *b, *c, *d]) >> TAG_BITS,
            _ => 0,
        }
    }

    /// Reverses [`to_le_bytes`](Slot::to_le_bytes).
    #[inline(always)]
    pub(crate) fn from_le_bytes(bytes: &[u8; SLOT_BYTES]) -> Slot {
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        Slot {
            id_tag: word(0),
            a: word(4),
            b: word(8),
        }
    }
}

/// A row's Timestamp as stored: its ticks, [`NO_TIMESTAMP`] for none.
#[inline]
pub(crate) fn timestamp_ticks(timestamp: Option<DateTime>) -> i64 {
    timestamp.map_or(NO_TIMESTAMP, DateTime::ticks)
}

/// Reverses [`timestamp_ticks`]; ticks out of the DateTime range are [`Corrupt`].
#[inline]
pub(crate) fn timestamp_from_ticks(ticks: i64) -> Result<Option<DateTime>, Corrupt> {
    match ticks {
        NO_TIMESTAMP => Ok(None),
        t => DateTime::from_ticks(t)
            .map(Some)
            .ok_or(Corrupt("Timestamp out of range")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Encodes into one buffer (both payload kinds together, offsets from its start) and
    /// decodes back.
    fn round_trip(id: u32, value: ValueRef<'_>) -> (Slot, Vec<u8>) {
        let mut data = Vec::new();
        let slot = Slot::encode::<NameOverflowOrFull>(id, value, |p| {
            let at = data.len() as u32;
            match p {
                Payload::Text(s) => data.extend_from_slice(s.as_bytes()),
                Payload::Bytes(b) => data.extend_from_slice(b),
            }
            Ok(at)
        })
        .unwrap();
        (slot, data)
    }

    #[derive(Debug)]
    struct NameOverflowOrFull;
    impl From<NameOverflow> for NameOverflowOrFull {
        fn from(_: NameOverflow) -> Self {
            NameOverflowOrFull
        }
    }

    fn decode(slot: Slot, data: &[u8]) -> Result<ValueRef<'_>, Corrupt> {
        let get = |a: u32, b: u32| {
            data.get(a as usize..a as usize + b as usize)
                .ok_or(Corrupt("past the end"))
        };
        slot.decode(
            |a, b| std::str::from_utf8(get(a, b)?).map_err(|_| Corrupt("not UTF-8")),
            get,
        )
    }

    fn arb_value() -> impl Strategy<Value = tableq_model::Value> {
        use tableq_model::Value;
        prop_oneof![
            any::<i32>().prop_map(Value::Int32),
            any::<i64>().prop_map(Value::Int64),
            any::<u64>().prop_map(|b| Value::Double(f64::from_bits(b))),
            any::<bool>().prop_map(Value::Boolean),
            (DateTime::MIN.ticks()..=DateTime::MAX.ticks())
                .prop_map(|t| Value::DateTime(DateTime::from_ticks(t).unwrap_or(DateTime::MIN))),
            any::<u128>().prop_map(|g| Value::Guid(Uuid::from_u128(g))),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(Value::Binary),
            ".{0,12}".prop_map(Value::String),
        ]
    }

    proptest! {
        /// Every value survives encode → bytes → decode bit for bit (Doubles by pattern).
        #[test]
        fn values_round_trip(id in 0..=MAX_NAME_ID, value in arb_value()) {
            let (slot, data) = round_trip(id, value.as_ref());
            let back = Slot::from_le_bytes(&slot.to_le_bytes());
            prop_assert_eq!(back, slot);
            prop_assert_eq!(back.id(), id);
            let decoded = decode(back, &data).unwrap();
            prop_assert_eq!(decoded.total_cmp(&value.as_ref()), std::cmp::Ordering::Equal);
        }

        /// The trusted decoding of arenas agrees with the checked one (text and bytes in
        /// separate arenas, as memory partitions keep them).
        #[test]
        fn trusted_decoding_agrees(id in 0..=MAX_NAME_ID, value in arb_value()) {
            let (mut text, mut bytes) = (String::new(), Vec::new());
            let slot = Slot::encode::<NameOverflowOrFull>(id, value.as_ref(), |p| Ok(match p {
                Payload::Text(s) => { text.push_str(s); (text.len() - s.len()) as u32 }
                Payload::Bytes(b) => { bytes.extend_from_slice(b); (bytes.len() - b.len()) as u32 }
            })).unwrap();
            let trusted = slot.decode_trusted(|| &text, || &bytes);
            let checked = slot
                .decode(
                    |a, b| text.get(a as usize..(a + b) as usize).ok_or(Corrupt("past")),
                    |a, b| bytes.get(a as usize..(a + b) as usize).ok_or(Corrupt("past")),
                )
                .unwrap();
            prop_assert_eq!(trusted.total_cmp(&checked), std::cmp::Ordering::Equal);
            prop_assert_eq!(trusted.total_cmp(&value.as_ref()), std::cmp::Ordering::Equal);
        }

        /// Any 12 bytes decode to a value or a `Corrupt` error, never a panic.
        #[test]
        fn garbage_slots_never_panic(bytes in any::<[u8; 12]>(), data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = decode(Slot::from_le_bytes(&bytes), &data);
            let _ = Slot::from_le_bytes(&bytes).decode_trusted(|| "abc", || &data);
        }
    }

    #[test]
    fn the_packing_is_the_documented_one() {
        let (slot, _) = round_trip(3, ValueRef::Int64(-2));
        assert_eq!(
            slot.to_le_bytes(),
            [
                0x36, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF
            ]
        );
        let (slot, data) = round_trip(1, ValueRef::String("hé"));
        assert_eq!(slot.payload(), Some((PayloadKind::Text, 0, 3)));
        assert_eq!(data, "hé".as_bytes());
        assert_eq!(
            slot.with_payload_offset(9).payload(),
            Some((PayloadKind::Text, 9, 3))
        );
        let (slot, _) = round_trip(0, ValueRef::Boolean(true));
        assert_eq!((slot.payload(), slot.with_payload_offset(9)), (None, slot));
    }

    #[test]
    fn damage_is_reported() {
        let slot = |id_tag: u32, a: u32, b: u32| Slot { id_tag, a, b };
        assert_eq!(
            decode(slot(TAG_BOOLEAN, 2, 0), &[]).err(),
            Some(Corrupt("unknown value tag"))
        );
        assert_eq!(
            decode(slot(15, 0, 0), &[]).err(),
            Some(Corrupt("unknown value tag"))
        );
        assert!(decode(slot(TAG_DATETIME, u32::MAX, u32::MAX >> 1), &[]).is_err());
        assert!(decode(slot(TAG_GUID, 0, 15), &[0; 16]).is_err());
        assert!(decode(slot(TAG_STRING, 0, 4), b"abc").is_err());
        assert_eq!(timestamp_from_ticks(NO_TIMESTAMP), Ok(None));
        assert!(timestamp_from_ticks(i64::MAX).is_err());
        assert_eq!(
            timestamp_from_ticks(timestamp_ticks(Some(DateTime::MIN))),
            Ok(Some(DateTime::MIN))
        );
    }

    #[test]
    fn numbers_past_the_limit_are_refused() {
        let r = Slot::encode::<NameOverflowOrFull>(MAX_NAME_ID + 1, ValueRef::Int32(1), |_| Ok(0));
        assert!(r.is_err());
    }
}
