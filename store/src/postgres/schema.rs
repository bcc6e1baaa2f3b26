//! The engine's tables in PostgreSQL: creation on first use, checks on every open, and the
//! partitioned (sharded) layout.
//!
//! ```sql
//! CREATE SCHEMA tableq;
//! CREATE TABLE tableq.meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
//!     -- ('schema_version', '1')
//! CREATE TABLE tableq.tables (
//!     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- never reused
//!     key text COLLATE "C" NOT NULL UNIQUE,                 -- lowercase name
//!     name text NOT NULL                                    -- name as created
//! );
//! CREATE TABLE tableq.settings (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
//!     -- ('service', <service properties, crate::service's stored form>)
//! CREATE TABLE tableq.acls (                                -- stored access policies
//!     table_id bigint PRIMARY KEY REFERENCES tableq.tables (id) ON DELETE CASCADE,
//!     value text NOT NULL                                   -- crate::acl's stored form
//! );
//! CREATE TABLE tableq.entities (
//!     table_id bigint NOT NULL,            -- tables.id
//!     pk text COLLATE "C" NOT NULL,        -- PartitionKey, order-preserving encoding
//!     rk text COLLATE "C" NOT NULL,        -- RowKey, same encoding
//!     ts bigint NOT NULL,                  -- Timestamp in .NET ticks
//!     props jsonb NOT NULL,                -- {"Name": [tag, value], …}
//!     PRIMARY KEY (table_id, pk, rk)
//! );
//! ```
//!
//! `settings` and `acls` were added without a version change: they are created on open
//! when missing, so a database of an older tableq gains them.
//!
//! Partitioned, `tableq.entities` on the coordinator is instead `PARTITION BY HASH (pk)`
//! without a primary key (PostgreSQL cannot enforce one across foreign partitions); each
//! partition is a foreign table (`postgres_fdw`) over a shard's `tableq.entities`, which
//! has the primary key. [`provision_sharded`] creates that layout; `scripts/pg-cluster.sh`
//! creates the same with `psql`.
//!
//! Creation takes a transaction-scoped advisory lock, so two processes opening an empty
//! database at once create the schema once.

use super::client::{Client, ConnectFailure, Transaction};
use super::config::PostgresConfig;
use super::error::PostgresError;
use super::pool::Conn;

/// The version this engine writes and reads.
pub const SCHEMA_VERSION: &str = "1";

/// Rows a coordinator fetches from a shard per round trip (`postgres_fdw`'s `fetch_size`
/// of each foreign server). A page is a Merge Append of the shards' remote `ORDER BY pk,
/// rk` scans under the page's `LIMIT`: it pulls rows from each shard as the merge needs
/// them, one fetch at a time, so a shard reads at most this many rows past its share of
/// the page. (postgres_fdw sends the `LIMIT` itself only when it estimates more rows than
/// the limit, which it never does for foreign tables without statistics; the fetch size
/// bounds the work instead. 1000 made every shard find 1000 matches for any page.)
pub const FETCH_SIZE: usize = 100;

/// The advisory-lock key serialising schema creation ("tableq" in ASCII).
const CREATE_LOCK: i64 = 0x7461_626c_6571;

/// The columns of the entity table, as `format_type` and collation report them.
const ENTITY_COLUMNS: [(&str, &str, &str); 5] = [
    ("table_id", "bigint", ""),
    ("pk", "text", "C"),
    ("rk", "text", "C"),
    ("ts", "bigint", ""),
    ("props", "jsonb", ""),
];

fn entity_columns_ddl() -> &'static str {
    "table_id bigint NOT NULL,
    pk text COLLATE \"C\" NOT NULL,
    rk text COLLATE \"C\" NOT NULL,
    ts bigint NOT NULL,
    props jsonb NOT NULL"
}

/// The entity table of one server (single-server layout, and each shard's table).
pub fn entity_table_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS \"{schema}\".entities (\n    {},\n    PRIMARY KEY (table_id, pk, rk)\n)",
        entity_columns_ddl()
    )
}

/// How the entity table is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// One table on this server.
    Single,
    /// Hash-partitioned on `pk` into this many partitions, this many of them foreign.
    Partitioned {
        /// Partitions.
        partitions: usize,
        /// Foreign partitions (postgres_fdw).
        foreign: usize,
    },
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layout::Single => f.write_str("one table"),
            Layout::Partitioned {
                partitions,
                foreign,
            } => write!(
                f,
                "hash-partitioned on PartitionKey into {partitions} partitions ({foreign} foreign)"
            ),
        }
    }
}

/// Checks the server, creates what is missing (idempotent, safe with concurrent openers)
/// and checks what exists. Returns the entity table's layout.
pub(crate) fn ensure(conn: &mut Conn, config: &PostgresConfig) -> Result<Layout, PostgresError> {
    let schema = config.schema_name();
    let target = config.target();
    let row = conn.client.query_one(
        "SELECT current_setting('server_version_num')::int, current_setting('server_encoding')",
        &[],
    )?;
    let (version, encoding): (i32, String) = (row.get(0), row.get(1));
    if version < 120_000 {
        return Err(PostgresError::Unsupported {
            target: target.into(),
            message: format!("server version {version} is older than 12 (jsonpath is needed)"),
        });
    }
    if encoding != "UTF8" {
        return Err(PostgresError::Unsupported {
            target: target.into(),
            message: format!("the database encoding is {encoding}; tableq needs UTF8"),
        });
    }
    let mut tx = conn.client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CREATE_LOCK])?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
CREATE TABLE IF NOT EXISTS \"{schema}\".meta (key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS \"{schema}\".tables (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key text COLLATE \"C\" NOT NULL UNIQUE,
    name text NOT NULL
);
CREATE TABLE IF NOT EXISTS \"{schema}\".settings (key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS \"{schema}\".acls (
    table_id bigint PRIMARY KEY REFERENCES \"{schema}\".tables (id) ON DELETE CASCADE,
    value text NOT NULL
);
{};
INSERT INTO \"{schema}\".meta VALUES ('schema_version', '{SCHEMA_VERSION}') ON CONFLICT (key) DO NOTHING;",
        entity_table_ddl(schema)
    ))?;
    let version: String = tx
        .query_one(
            &format!("SELECT value FROM \"{schema}\".meta WHERE key = 'schema_version'"),
            &[],
        )?
        .get(0);
    if version != SCHEMA_VERSION {
        return Err(PostgresError::Schema {
            schema: schema.into(),
            message: format!(
                "schema version {version}, but this tableq reads version {SCHEMA_VERSION}"
            ),
        });
    }
    let layout = check_entities(&mut tx, schema)?;
    tx.commit()?;
    Ok(layout)
}

fn check_entities(tx: &mut Transaction<'_>, schema: &str) -> Result<Layout, PostgresError> {
    let mismatch = |message: String| PostgresError::Schema {
        schema: schema.into(),
        message,
    };
    let relation = format!("\"{schema}\".entities");
    let columns = tx.query(
        "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), coalesce(c.collname::text, '')
         FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation
         WHERE a.attrelid = $1::text::regclass AND a.attnum > 0 AND NOT a.attisdropped
         ORDER BY a.attnum",
        &[&relation],
    )?;
    let found: Vec<(String, String, String)> = columns
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let expected: Vec<(String, String, String)> = ENTITY_COLUMNS
        .iter()
        .map(|(a, b, c)| ((*a).into(), (*b).into(), (*c).into()))
        .collect();
    // The default collation reports as "default"; only pk/rk need "C".
    let same = found.len() == expected.len()
        && found
            .iter()
            .zip(&expected)
            .all(|(f, e)| f.0 == e.0 && f.1 == e.1 && (e.2.is_empty() || f.2 == e.2));
    if !same {
        return Err(mismatch(format!(
            "{relation} has columns {found:?}; expected {expected:?}"
        )));
    }
    let kind: i8 = tx
        .query_one(
            "SELECT relkind::\"char\" FROM pg_class WHERE oid = $1::text::regclass",
            &[&relation],
        )?
        .get(0);
    match kind as u8 {
        b'r' => Ok(Layout::Single),
        b'p' => {
            let key: String = tx
                .query_one("SELECT pg_get_partkeydef($1::text::regclass)", &[&relation])?
                .get(0);
            if key != "HASH (pk)" {
                return Err(mismatch(format!(
                    "{relation} is partitioned by {key}; tableq needs HASH (pk)"
                )));
            }
            let row = tx.query_one(
                "SELECT count(*), count(*) FILTER (WHERE c.relkind = 'f')
                 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                 WHERE i.inhparent = $1::text::regclass",
                &[&relation],
            )?;
            let (partitions, foreign): (i64, i64) = (row.get(0), row.get(1));
            Ok(Layout::Partitioned {
                partitions: partitions as usize,
                foreign: foreign as usize,
            })
        }
        other => Err(mismatch(format!(
            "{relation} is a relation of kind {:?}; expected a table",
            other as char
        ))),
    }
}

/// Creates the partitioned layout for `coordinator`'s schema: on every shard the schema
/// and its entity table (with the primary key); on the coordinator the `postgres_fdw`
/// extension, one foreign server per shard (named `<schema>_shard<i>`, connecting as the
/// shard URL's user and password), a user mapping for `PUBLIC`, and the entity table
/// hash-partitioned on `pk` with partition *i* a foreign table on shard *i* (fetching
/// [`FETCH_SIZE`] rows per round trip). Open the
/// coordinator afterwards; tableq creates the rest on first use. Fails if the coordinator
/// already has the schema's entity table.
///
/// ```no_run
/// use tableq_store::postgres::{provision_sharded, PostgresConfig};
/// let coordinator = PostgresConfig::from_url("postgres://postgres@127.0.0.1:5432/tableq")?;
/// let shards = ["postgres://postgres@127.0.0.1:5433/tableq", "postgres://postgres@127.0.0.1:5434/tableq"]
///     .map(|u| PostgresConfig::from_url(u).unwrap());
/// provision_sharded(&coordinator, &shards)?;
/// # Ok::<(), tableq_store::postgres::PostgresError>(())
/// ```
pub fn provision_sharded(
    coordinator: &PostgresConfig,
    shards: &[PostgresConfig],
) -> Result<(), PostgresError> {
    let schema = coordinator.schema_name();
    if shards.len() < 2 {
        return Err(PostgresError::InvalidUrl(
            "a partitioned layout needs at least 2 shards".into(),
        ));
    }
    let connect = |c: &PostgresConfig| {
        let connect_timeout = c.connect_timeout();
        Client::connect(&c.client, connect_timeout, c.call_timeout()).map_err(|failure| {
            match failure {
                ConnectFailure::Refused(source) => PostgresError::Connect {
                    target: c.target().into(),
                    source,
                },
                ConnectFailure::TimedOut(after) => PostgresError::ConnectTimeout {
                    target: c.target().into(),
                    after,
                },
                ConnectFailure::Runtime(e) => PostgresError::Unsupported {
                    target: c.target().into(),
                    message: format!("cannot start the client's runtime: {e}"),
                },
            }
        })
    };
    for shard in shards {
        let mut client = connect(shard)?;
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CREATE_LOCK])?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{schema}\"; {};",
            entity_table_ddl(schema)
        ))?;
        tx.commit()?;
    }
    let mut client = connect(coordinator)?;
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CREATE_LOCK])?;
    let mut ddl = format!(
        "CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE SCHEMA IF NOT EXISTS \"{schema}\";
CREATE TABLE \"{schema}\".entities (\n    {}\n) PARTITION BY HASH (pk);\n",
        entity_columns_ddl()
    );
    let n = shards.len();
    for (i, shard) in shards.iter().enumerate() {
        use tokio_postgres::config::Host;
        let c = &shard.client;
        let host = match c.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        let port = c.get_ports().first().copied().unwrap_or(5432);
        let user = c.get_user().unwrap_or("postgres");
        let dbname = c.get_dbname().unwrap_or(user);
        let server = format!("{schema}_shard{i}");
        let mut user_opts = format!("user {}", literal(user));
        if let Some(pw) = c.get_password() {
            user_opts.push_str(&format!(
                ", password {}",
                literal(&String::from_utf8_lossy(pw))
            ));
        }
        ddl.push_str(&format!(
            "CREATE SERVER \"{server}\" FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host {}, port '{port}', dbname {}, fetch_size '{FETCH_SIZE}', batch_size '100');
CREATE USER MAPPING FOR PUBLIC SERVER \"{server}\" OPTIONS ({user_opts});
CREATE FOREIGN TABLE \"{schema}\".entities_shard{i} PARTITION OF \"{schema}\".entities
    FOR VALUES WITH (MODULUS {n}, REMAINDER {i})
    SERVER \"{server}\" OPTIONS (schema_name '{schema}', table_name 'entities');\n",
            literal(&host),
            literal(dbname),
        ));
    }
    tx.batch_execute(&ddl)?;
    tx.commit()?;
    Ok(())
}

/// A single-quoted SQL literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
