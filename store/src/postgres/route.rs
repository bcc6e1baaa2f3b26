//! Point gets straight to the shard ([`Routes`]): on a coordinator whose entity table is
//! `PARTITION BY HASH (pk)` into foreign tables, a get through the coordinator costs a
//! postgres_fdw round of its own — a remote transaction, a cursor, a fetch and a commit on
//! the shard, each a round trip — on top of the coordinator's. Here the engine works out
//! which partition holds a PartitionKey exactly as PostgreSQL does (its extended
//! Jenkins hash of the key's bytes, seeded and combined as hash partitioning combines
//! them, modulo the partitions' modulus), and asks that shard in one round trip.
//!
//! **When it applies.** At open, from the coordinator's catalog: the entity table is
//! partitioned `HASH (pk)`; every partition is a foreign table with a bound `FOR VALUES
//! WITH (modulus N, remainder r)`, one for each r; each foreign server names its host, and
//! the user mapping (the current user's, else `PUBLIC`) lets this engine connect. The hash
//! is then checked against the coordinator's own `satisfies_hash_partition` on sample keys,
//! and a connection to every shard is opened. Anything else (a local partition, another
//! partitioning, an unreachable shard, a hash that does not agree): no routes, and every
//! get goes through the coordinator as before, with the reason logged once.
//!
//! **What a routed get may answer.** A row found on the shard under the table's id is the
//! answer (a deleted table's rows are deleted with it, and ids are never reused). Anything
//! else — no row, no id known yet, an error — goes through the coordinator's statement,
//! which tells a missing entity from a missing table.

use super::config::PostgresConfig;
use super::error::PostgresError;
use super::nonblocking::AsyncPool;
use super::pool::{Conn, Pool};

/// PostgreSQL's seed for the hash of a partition key column (`HASH_PARTITION_SEED`).
const HASH_PARTITION_SEED: u64 = 0x7A5B_2236_7996_DCFD;

/// Sample PartitionKeys (as stored: the order-preserving encoding) the hash is checked on
/// at open: every tail length of a 12-byte round, and non-ASCII text.
fn samples() -> Vec<String> {
    let mut keys: Vec<String> = (0..26).map(|n| "k".repeat(n)).collect();
    keys.extend(["p000", "partition-0001", "ключ", "\u{10000}x", "\u{E000}"].map(String::from));
    keys.iter()
        .map(|k| super::encode::encode_str(k).into_owned())
        .collect()
}

/// The shards of a hash-partitioned coordinator, by remainder.
pub(crate) struct Routes {
    modulus: u64,
    shards: Vec<Shard>,
}

/// One shard: its connections and its point-get statement.
pub(crate) struct Shard {
    pub(crate) pool: Pool,
    /// The same server's connections for gets that do not block a thread.
    pub(crate) nonblocking: AsyncPool,
    /// `SELECT ts, props FROM <the shard's entity table> WHERE table_id = $1 AND pk = $2
    /// AND rk = $3`.
    pub(crate) get: String,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("modulus", &self.modulus)
            .finish_non_exhaustive()
    }
}

/// One partition of the coordinator's entity table, as its catalog describes it.
struct Partition {
    bound: String,
    relkind: String,
    server: Vec<String>,
    mapping: Vec<String>,
    table: Vec<String>,
    name: String,
}

impl Routes {
    /// The routes of the coordinator `conn` is connected to (configured by `config`):
    /// `Err` with the reason when gets cannot be routed (see the module docs).
    pub(crate) fn discover(conn: &mut Conn, config: &PostgresConfig) -> Result<Routes, String> {
        let schema = config.schema_name();
        let fail = |e: PostgresError| e.to_string();
        let parent = format!("\"{schema}\".entities");
        let keydef: Option<String> = conn
            .client
            .query_one(
                "SELECT pg_get_partkeydef(to_regclass($1)::oid)",
                &[&parent.as_str()],
            )
            .map_err(fail)?
            .try_get(0)
            .map_err(|e| e.to_string())?;
        if keydef.as_deref() != Some("HASH (pk)") {
            return Err(format!("the entity table is partitioned {keydef:?}"));
        }
        let rows = conn
            .client
            .query(
                "SELECT pg_get_expr(c.relpartbound, c.oid), c.relkind::text, \
                 coalesce(s.srvoptions, '{}'), \
                 coalesce((SELECT m.umoptions FROM pg_user_mappings m WHERE m.srvid = s.oid \
                   AND m.umuser IN (0, (SELECT oid FROM pg_roles WHERE rolname = current_user)) \
                   ORDER BY m.umuser DESC LIMIT 1), '{}'), \
                 coalesce(f.ftoptions, '{}'), c.relname::text \
                 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
                 LEFT JOIN pg_foreign_table f ON f.ftrelid = c.oid \
                 LEFT JOIN pg_foreign_server s ON s.oid = f.ftserver \
                 WHERE i.inhparent = to_regclass($1)::oid",
                &[&parent.as_str()],
            )
            .map_err(fail)?;
        let mut partitions = Vec::new();
        for row in &rows {
            let get = |e: tokio_postgres::Error| e.to_string();
            partitions.push(Partition {
                bound: row.try_get(0).map_err(get)?,
                relkind: row.try_get(1).map_err(get)?,
                server: row.try_get(2).map_err(get)?,
                mapping: row.try_get(3).map_err(get)?,
                table: row.try_get(4).map_err(get)?,
                name: row.try_get(5).map_err(get)?,
            });
        }
        let modulus = partitions
            .first()
            .and_then(|p| hash_bound(&p.bound))
            .map(|(m, _)| m)
            .ok_or("the entity table has no hash partition")?;
        let mut by_remainder: Vec<Option<&Partition>> = vec![None; modulus as usize];
        for p in &partitions {
            match hash_bound(&p.bound) {
                Some((m, r)) if m == modulus && p.relkind == "f" => {
                    by_remainder[r as usize] = Some(p);
                }
                _ => {
                    return Err(format!(
                        "partition {} is not a foreign table of modulus {modulus} ({})",
                        p.name, p.bound
                    ));
                }
            }
        }
        // The hash agrees with the coordinator's on every sample.
        let keys = samples();
        let remainders: Vec<i32> = keys
            .iter()
            .map(|k| (partition_hash(k.as_bytes()) % modulus) as i32)
            .collect();
        let agrees: Option<bool> = conn
            .client
            .query_one(
                "SELECT bool_and(satisfies_hash_partition(to_regclass($1)::oid, $2, u.r, u.k)) \
                 FROM unnest($3::text[], $4::int4[]) AS u (k, r)",
                &[&parent.as_str(), &(modulus as i32), &keys, &remainders],
            )
            .map_err(fail)?
            .try_get(0)
            .map_err(|e| e.to_string())?;
        if agrees != Some(true) {
            return Err("the PartitionKey hash does not agree with the coordinator's".into());
        }
        let mut shards = Vec::with_capacity(by_remainder.len());
        for (r, p) in by_remainder.into_iter().enumerate() {
            let p = p.ok_or_else(|| format!("no partition has remainder {r}"))?;
            shards.push(Shard::open(p, config)?);
        }
        Ok(Routes { modulus, shards })
    }

    /// The shard holding PartitionKey `pk` (as stored: encoded).
    pub(crate) fn shard(&self, pk: &str) -> &Shard {
        &self.shards[(partition_hash(pk.as_bytes()) % self.modulus) as usize]
    }

    /// Closes the shards' idle connections (the engine is closing).
    pub(crate) fn close_idle(&self) {
        for shard in &self.shards {
            shard.nonblocking.close_idle();
        }
        for shard in &self.shards {
            shard.pool.close_idle();
        }
    }

    /// How many shards gets are routed to.
    pub(crate) fn len(&self) -> usize {
        self.shards.len()
    }
}

impl Shard {
    /// Connects to the shard of foreign table `p` (as the coordinator's user mapping says).
    fn open(p: &Partition, config: &PostgresConfig) -> Result<Shard, String> {
        let server = options(&p.server);
        let mapping = options(&p.mapping);
        let table = options(&p.table);
        let host = server
            .iter()
            .find(|(k, _)| *k == "host")
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("the server of {} names no host", p.name))?;
        let mut client = tokio_postgres::Config::new();
        client.host(host);
        if let Some((_, port)) = server.iter().find(|(k, _)| *k == "port") {
            client.port(port.parse().map_err(|_| format!("port {port}"))?);
        }
        let user = match mapping.iter().find(|(k, _)| *k == "user") {
            Some((_, u)) => (*u).to_owned(),
            None => config.client.get_user().unwrap_or("postgres").to_owned(),
        };
        client.user(&user);
        if let Some((_, pw)) = mapping.iter().find(|(k, _)| *k == "password") {
            client.password(*pw);
        }
        let dbname = server
            .iter()
            .find(|(k, _)| *k == "dbname")
            .map_or(user.as_str(), |(_, v)| v);
        client.dbname(dbname);
        let schema = table
            .iter()
            .find(|(k, _)| *k == "schema_name")
            .map_or(config.schema_name(), |(_, v)| v);
        let name = table
            .iter()
            .find(|(k, _)| *k == "table_name")
            .map_or(p.name.as_str(), |(_, v)| v);
        let shard_config = config.for_shard(client);
        let pool = Pool::new(&shard_config);
        let conn = pool
            .connect(pool.connect_timeout())
            .map_err(|e| e.to_string())?;
        pool.adopt(conn);
        Ok(Shard {
            nonblocking: AsyncPool::new(&shard_config, pool.session_sql()),
            pool,
            get: format!(
                "SELECT ts, props FROM {}.{} WHERE table_id = $1 AND pk = $2 AND rk = $3",
                ident(schema),
                ident(name)
            ),
        })
    }
}

/// `"name"`, quoted for SQL.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A catalog options array (`{host=…,port=…}`) as (key, value) pairs.
fn options(list: &[String]) -> Vec<(&str, &str)> {
    list.iter().filter_map(|o| o.split_once('=')).collect()
}

/// `(modulus, remainder)` of a bound `FOR VALUES WITH (modulus 3, remainder 1)`.
fn hash_bound(bound: &str) -> Option<(u64, u64)> {
    let inner = bound.strip_prefix("FOR VALUES WITH (")?.strip_suffix(')')?;
    let (m, r) = inner.split_once(", ")?;
    let modulus: u64 = m.strip_prefix("modulus ")?.parse().ok()?;
    let remainder: u64 = r.strip_prefix("remainder ")?.parse().ok()?;
    (modulus > 0 && remainder < modulus).then_some((modulus, remainder))
}

/// The hash PostgreSQL partitions a row by when its partition key is one `text` column of
/// a deterministic collation: the column's extended hash seeded with
/// [`HASH_PARTITION_SEED`], combined into 0 as `hash_combine64` combines.
pub(crate) fn partition_hash(pk: &[u8]) -> u64 {
    let h = hash_bytes_extended(pk, HASH_PARTITION_SEED);
    // hash_combine64(0, h): 0 ^ (h + 0x49a0f4dd15e5a8e3 + (0 << 54) + (0 >> 7)).
    h.wrapping_add(0x49a0_f4dd_15e5_a8e3)
}

/// Bob Jenkins' lookup3 hash as PostgreSQL's `hash_bytes_extended` computes it on a
/// little-endian machine (the value `hashtextextended` returns for a `text` of a
/// deterministic collation): 12-byte rounds of three little-endian words, the last
/// 0–11 bytes added with `c`'s lowest byte left for the length, the 64-bit result `b` and
/// `c` after the final mix. Checked against PostgreSQL at open (`Routes::discover`) and in
/// the sharded tests.
pub(crate) fn hash_bytes_extended(key: &[u8], seed: u64) -> u64 {
    let init = 0x9e37_79b9u32
        .wrapping_add(key.len() as u32)
        .wrapping_add(3_923_095);
    let (mut a, mut b, mut c) = (init, init, init);
    if seed != 0 {
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    let (rounds, tail) = key.as_chunks::<12>();
    for round in rounds {
        a = a.wrapping_add(u32::from_le_bytes([round[0], round[1], round[2], round[3]]));
        b = b.wrapping_add(u32::from_le_bytes([round[4], round[5], round[6], round[7]]));
        c = c.wrapping_add(u32::from_le_bytes([
            round[8], round[9], round[10], round[11],
        ]));
        mix(&mut a, &mut b, &mut c);
    }
    for (i, &byte) in tail.iter().enumerate() {
        let byte = u32::from(byte);
        match i {
            0..4 => a = a.wrapping_add(byte << (8 * i)),
            4..8 => b = b.wrapping_add(byte << (8 * (i - 4))),
            // The lowest byte of c is the length's.
            _ => c = c.wrapping_add(byte << (8 * (i - 7))),
        }
    }
    final_mix(&mut a, &mut b, &mut c);
    (u64::from(b) << 32) | u64::from(c)
}

/// lookup3's `mix`.
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

/// lookup3's `final`.
fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_bounds_parse() {
        assert_eq!(
            hash_bound("FOR VALUES WITH (modulus 3, remainder 1)"),
            Some((3, 1))
        );
        assert_eq!(hash_bound("FOR VALUES WITH (modulus 3, remainder 3)"), None);
        assert_eq!(hash_bound("FOR VALUES IN ('a')"), None);
        assert_eq!(hash_bound("DEFAULT"), None);
    }

    #[test]
    fn catalog_options_split_at_the_first_equals_sign() {
        let list = vec!["host=/tmp".to_owned(), "password=a=b".to_owned()];
        assert_eq!(options(&list), [("host", "/tmp"), ("password", "a=b")]);
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn every_tail_length_feeds_the_hash() {
        // Each byte of a key, wherever it falls in the last round, changes the hash.
        for len in 0..30usize {
            let key: Vec<u8> = (0..len as u8).collect();
            let h = hash_bytes_extended(&key, HASH_PARTITION_SEED);
            for i in 0..len {
                let mut other = key.clone();
                other[i] ^= 1;
                assert_ne!(
                    hash_bytes_extended(&other, HASH_PARTITION_SEED),
                    h,
                    "{len} {i}"
                );
            }
        }
    }
}
