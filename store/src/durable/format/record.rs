//! What one log record says: one change the writer made — a table created or deleted, one
//! write's [`Change`]s, or a setting (the account's service properties, a table's stored
//! access policies) — encoded into a record body, and decoded again for replay.
//!
//! The body layout, by kind, is written out in the format's module docs
//! (`format/mod.rs`).
//!
//! A put's row is the durable row layout of `block.rs` (the store's row codec), its property
//! numbers indexing the record's own name list — so the record needs no table state to be
//! read, and replay re-interns the names into the table's numbering. All integers are
//! little-endian. Decoding checks everything (lengths, UTF-8, rows, name numbers) and
//! reports damage as [`Corrupt`]; the record's checksum (`log.rs`) makes damage there
//! unlikely, so a failure is treated as a corrupt log.

use super::block::{EncodeError, RowRef, encode_row};
use crate::codec::{Corrupt, MAX_NAME_ID, Names};
use crate::resolve::Change;
use tableq_model::DateTime;
#[cfg(test)]
use tableq_model::Entity;

const KIND_CREATE: u8 = 1;
const KIND_DELETE_TABLE: u8 = 2;
const KIND_WRITE: u8 = 3;
const KIND_SERVICE: u8 = 4;
const KIND_ACL: u8 = 5;
const CHANGE_PUT: u8 = 1;
const CHANGE_DELETE: u8 = 2;

/// One logged change, decoded (what replay applies), borrowing the record's body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LogOp<'b> {
    /// Table `id` was created with this name (as given).
    CreateTable {
        /// The table id.
        id: u64,
        /// The name as created.
        name: &'b str,
    },
    /// Table `id` (catalog key `key`, its lowercase name) was deleted with its entities.
    DeleteTable {
        /// The table id.
        id: u64,
        /// The catalog key.
        key: &'b str,
    },
    /// One write to table `table`, with its Timestamp.
    Write {
        /// The table id.
        table: u64,
        /// The write's Timestamp (the clock's floor after a replay).
        timestamp: DateTime,
        /// The property names the record's rows number (a row's slot `i` names `names[i]`).
        names: Vec<&'b str>,
        /// The changes, in the order `resolve` returned them.
        changes: Vec<LogChange<'b>>,
    },
    /// The account's service properties were set (their stored form).
    SetService {
        /// The stored form (`crate::service`).
        stored: &'b str,
    },
    /// Table `table`'s stored access policies were set (`None`: removed).
    SetAcl {
        /// The table id.
        table: u64,
        /// The stored form (`crate::acl`), or `None` for no policies.
        stored: Option<&'b str>,
    },
}

/// One change of a logged write: a put's row (checked, numbered by the record's names)
/// or a removal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LogChange<'b> {
    /// Store this row in partition `pk`.
    Put {
        /// The PartitionKey.
        pk: &'b str,
        /// The row, in the block layout.
        row: RowRef<'b>,
    },
    /// Remove the entity with these keys.
    Delete {
        /// The PartitionKey.
        pk: &'b str,
        /// The RowKey.
        rk: &'b str,
    },
}

impl LogChange<'_> {
    /// The change as the write path's [`Change`] (an owned entity, named by `names`).
    #[cfg(test)]
    pub(crate) fn to_change(self, names: &[&str]) -> Result<Change, Corrupt> {
        Ok(match self {
            LogChange::Put { pk, row } => {
                let mut table = Names::default();
                for name in names {
                    table.push(name);
                }
                Change::Put(row.to_entity(pk, &table)?)
            }
            LogChange::Delete { pk, rk } => Change::delete(pk, rk),
        })
    }
}

fn str16(out: &mut Vec<u8>, s: &str) -> Result<(), EncodeError> {
    let len = u16::try_from(s.len()).map_err(|_| EncodeError::TooLarge("key or name"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// The body of a "table created" record.
pub(crate) fn create_table(id: u64, name: &str) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![KIND_CREATE];
    out.extend_from_slice(&id.to_le_bytes());
    str16(&mut out, name)?;
    Ok(out)
}

fn str32(out: &mut Vec<u8>, s: &str) -> Result<(), EncodeError> {
    let len = u32::try_from(s.len()).map_err(|_| EncodeError::TooLarge("setting"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// The body of a "service properties set" record.
pub(crate) fn set_service(stored: &str) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![KIND_SERVICE];
    str32(&mut out, stored)?;
    Ok(out)
}

/// The body of a "table policies set" record (`None`: removed).
pub(crate) fn set_acl(table: u64, stored: Option<&str>) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![KIND_ACL];
    out.extend_from_slice(&table.to_le_bytes());
    match stored {
        Some(s) => {
            out.push(1);
            str32(&mut out, s)?;
        }
        None => out.push(0),
    }
    Ok(out)
}

/// The body of a "table deleted" record.
pub(crate) fn delete_table(id: u64, key: &str) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![KIND_DELETE_TABLE];
    out.extend_from_slice(&id.to_le_bytes());
    str16(&mut out, key)?;
    Ok(out)
}

/// The body of a write's record.
pub(crate) fn write(
    table: u64,
    timestamp: DateTime,
    changes: &[Change],
) -> Result<Vec<u8>, EncodeError> {
    let mut names = Names::default();
    let mut entries = Vec::with_capacity(changes.len() * 64);
    for change in changes {
        match change {
            Change::Put(entity) => {
                entries.push(CHANGE_PUT);
                str16(&mut entries, entity.partition_key())?;
                let row = encode_row(entity, &mut |name| {
                    names.intern(name).ok_or(EncodeError::TooManyNames)
                })?;
                let len = u32::try_from(row.len()).map_err(|_| EncodeError::TooLarge("entity"))?;
                entries.extend_from_slice(&len.to_le_bytes());
                entries.extend_from_slice(&row);
            }
            Change::Delete {
                partition_key,
                row_key,
            } => {
                entries.push(CHANGE_DELETE);
                str16(&mut entries, partition_key)?;
                str16(&mut entries, row_key)?;
            }
        }
    }
    let mut out = Vec::with_capacity(32 + entries.len());
    out.push(KIND_WRITE);
    out.extend_from_slice(&table.to_le_bytes());
    out.extend_from_slice(&timestamp.ticks().to_le_bytes());
    let count = u32::try_from(names.len()).map_err(|_| EncodeError::TooManyNames)?;
    out.extend_from_slice(&count.to_le_bytes());
    for name in names.iter() {
        str16(&mut out, name)?;
    }
    let count = u32::try_from(changes.len()).map_err(|_| EncodeError::TooLarge("write"))?;
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&entries);
    Ok(out)
}

/// A cursor over a body, every read checked.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8], Corrupt> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(Corrupt("log record shorter than its contents"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, Corrupt> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, Corrupt> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn str16(&mut self) -> Result<&'b str, Corrupt> {
        let len = u16::from_le_bytes(self.array()?);
        std::str::from_utf8(self.take(usize::from(len))?)
            .map_err(|_| Corrupt("log record text is not UTF-8"))
    }

    fn str32(&mut self) -> Result<&'b str, Corrupt> {
        let len = usize::try_from(self.u32()?).map_err(|_| Corrupt("log record too long"))?;
        std::str::from_utf8(self.take(len)?).map_err(|_| Corrupt("log record text is not UTF-8"))
    }

    fn end(&self) -> Result<(), Corrupt> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(Corrupt("log record longer than its contents"))
        }
    }
}

/// Decodes a record body (borrowing it).
pub(crate) fn decode(body: &[u8]) -> Result<LogOp<'_>, Corrupt> {
    let mut r = Reader { bytes: body, at: 0 };
    let op = match r.u8()? {
        KIND_CREATE => LogOp::CreateTable {
            id: r.u64()?,
            name: r.str16()?,
        },
        KIND_DELETE_TABLE => LogOp::DeleteTable {
            id: r.u64()?,
            key: r.str16()?,
        },
        KIND_WRITE => {
            let table = r.u64()?;
            let timestamp = DateTime::from_ticks(i64::from_le_bytes(r.array()?))
                .ok_or(Corrupt("log record Timestamp out of range"))?;
            let count = r.u32()? as usize;
            // Each name takes at least 2 bytes: bound the allocation by the body.
            let mut names: Vec<&str> = Vec::with_capacity(count.min(body.len() / 2));
            for _ in 0..count {
                names.push(r.str16()?);
            }
            if names.len() > MAX_NAME_ID as usize + 1 || repeats(&names) {
                return Err(Corrupt("log record names repeat or overflow"));
            }
            let count = r.u32()? as usize;
            // Each change takes at least 5 bytes: bound the allocation by the body.
            let mut changes = Vec::with_capacity(count.min(body.len() / 5));
            for _ in 0..count {
                changes.push(match r.u8()? {
                    CHANGE_PUT => {
                        let pk = r.str16()?;
                        let len = r.u32()? as usize;
                        let row = RowRef(r.take(len)?);
                        row.check(names.len())?;
                        LogChange::Put { pk, row }
                    }
                    CHANGE_DELETE => LogChange::Delete {
                        pk: r.str16()?,
                        rk: r.str16()?,
                    },
                    _ => return Err(Corrupt("unknown change in a log record")),
                });
            }
            LogOp::Write {
                table,
                timestamp,
                names,
                changes,
            }
        }
        KIND_SERVICE => LogOp::SetService { stored: r.str32()? },
        KIND_ACL => LogOp::SetAcl {
            table: r.u64()?,
            stored: match r.u8()? {
                0 => None,
                1 => Some(r.str32()?),
                _ => return Err(Corrupt("unknown policies marker in a log record")),
            },
        },
        _ => return Err(Corrupt("unknown log record kind")),
    };
    r.end()?;
    Ok(op)
}

/// Whether a name appears twice in `names` (a record names each property once). Records
/// name a handful: compared pairwise, hashed beyond a few dozen.
fn repeats(names: &[&str]) -> bool {
    if names.len() <= 32 {
        return names
            .iter()
            .enumerate()
            .any(|(i, a)| names[i + 1..].contains(a));
    }
    let distinct: std::collections::HashSet<&&str> = names.iter().collect();
    distinct.len() != names.len()
}

/// The changes of a decoded write as the write path's [`Change`]s (for tests).
#[cfg(test)]
pub(crate) fn changes(op: &LogOp<'_>) -> Vec<Change> {
    match op {
        LogOp::Write { names, changes, .. } => changes
            .iter()
            .map(|c| c.to_change(names).unwrap())
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tableq_model::Value;

    fn entity(pk: &str, rk: &str, n: i32) -> Entity {
        let mut e = Entity::new(pk, rk);
        e.set_timestamp(DateTime::from_ticks(639_000_000_000_000_000 + i64::from(n)));
        e.set("N", Value::Int32(n));
        e.set("S", Value::String(format!("s{n}\u{1F600}")));
        if n % 2 == 0 {
            e.set("B", Value::Binary(vec![n as u8; 3]));
            e.set("G", Value::Guid(uuid::Uuid::from_u128(n as u128)));
        }
        e
    }

    #[test]
    fn every_kind_round_trips() {
        let ts = DateTime::from_ticks(639_000_000_000_000_123).unwrap();
        let changes = vec![
            Change::Put(entity("p", "a", 1)),
            Change::delete("p\u{E000}", "b"),
            Change::Put(entity("q", "", 2)),
        ];
        let cases = [
            (
                create_table(7, "Orders").unwrap(),
                LogOp::CreateTable {
                    id: 7,
                    name: "Orders",
                },
            ),
            (
                delete_table(7, "orders").unwrap(),
                LogOp::DeleteTable {
                    id: 7,
                    key: "orders",
                },
            ),
            (
                set_service("{\"cors\":[]}").unwrap(),
                LogOp::SetService {
                    stored: "{\"cors\":[]}",
                },
            ),
            (
                set_acl(7, Some("[{\"id\":\"p1\"}]")).unwrap(),
                LogOp::SetAcl {
                    table: 7,
                    stored: Some("[{\"id\":\"p1\"}]"),
                },
            ),
            (
                set_acl(7, None).unwrap(),
                LogOp::SetAcl {
                    table: 7,
                    stored: None,
                },
            ),
        ];
        for (body, op) in cases {
            assert_eq!(decode(&body).unwrap(), op);
        }
        let body = write(7, ts, &changes).unwrap();
        let op = decode(&body).unwrap();
        let LogOp::Write {
            table,
            timestamp,
            ref names,
            ..
        } = op
        else {
            panic!("not a write: {op:?}");
        };
        assert_eq!((table, timestamp), (7, ts));
        // Each name once, in the order the rows first use them.
        assert_eq!(names, &["N", "S", "B", "G"]);
        assert_eq!(super::changes(&op), changes);
    }

    #[test]
    fn damage_is_reported() {
        let ts = DateTime::from_ticks(639_000_000_000_000_123).unwrap();
        let body = write(1, ts, &[Change::Put(entity("p", "r", 4))]).unwrap();
        for cut in 0..body.len() {
            assert!(decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = body.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
        assert!(decode(&[9]).is_err());
        let body = set_acl(3, Some("x")).unwrap();
        for cut in 0..body.len() {
            assert!(decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        let mut marker = body.clone();
        marker[9] = 2;
        assert!(decode(&marker).is_err());
    }

    #[test]
    fn a_name_listed_twice_is_damage() {
        let ts = DateTime::from_ticks(639_000_000_000_000_123).unwrap();
        let names = |list: &[&str]| {
            let mut body = vec![KIND_WRITE];
            body.extend_from_slice(&1u64.to_le_bytes());
            body.extend_from_slice(&ts.ticks().to_le_bytes());
            body.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for name in list {
                str16(&mut body, name).unwrap();
            }
            body.extend_from_slice(&0u32.to_le_bytes());
            body
        };
        assert!(decode(&names(&["a", "b"])).is_ok());
        assert!(decode(&names(&["a", "b", "a"])).is_err());
        let many: Vec<String> = (0..40).map(|i| format!("n{i}")).collect();
        let mut list: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(decode(&names(&list)).is_ok());
        list.push("n7");
        assert!(decode(&names(&list)).is_err());
    }

    proptest! {
        /// Arbitrary bytes never panic the decoder.
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&bytes);
        }

        /// Flipping a byte of a valid body is caught or yields some valid op, never a panic.
        #[test]
        fn flips_never_panic(at in any::<prop::sample::Index>(), to in any::<u8>()) {
            let ts = DateTime::from_ticks(639_000_000_000_000_123).unwrap();
            let mut body = write(1, ts, &[Change::Put(entity("p", "r", 4)), Change::delete("p", "x")]).unwrap();
            let i = at.index(body.len());
            body[i] = to;
            let _ = decode(&body);
        }
    }
}
