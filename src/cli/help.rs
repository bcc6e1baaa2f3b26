//! The long help texts (`tableq <command> --help`): examples, output format and exit codes,
//! in the manner of ripgrep's. `-h` prints the short form.
//!
//! The `*_USAGE` strings replace clap's generic `[OPTIONS]` usage line where a command has
//! many options, so `Usage:` names each one as `docs/commands.md` does;
//! `tests/doc_examples.rs` fails when a command's usage line is missing from that page.

/// `tableq --help`.
pub const MAIN: &str = "\
EXAMPLES:
    tableq validate samples/entities.jsonl
    tableq eval --filter \"PartitionKey eq 'books' and Price lt 20\" samples/entities.jsonl
    tableq explain --filter \"PartitionKey eq 'a' and RowKey ge '2024'\"
    tableq gen --entities 1000000 > 1m.jsonl
    tableq serve --in-memory
    tableq check --data ./tableq-data
    tableq gen --entities 1000 | tableq import --table people --endpoint http://127.0.0.1:10002/devstoreaccount1

EXIT STATUS:
    0 success, 1 the input has problems (validate), 2 unusable input (an invalid query, an
    unreadable file) or a usage error.

Run `tableq <command> --help` for a command's input, output and options.";

/// The usage line of `tableq serve` (after `Usage: `).
pub const SERVE_USAGE: &str = "\
tableq serve [--host HOST] [--port PORT] [--data DIR | --in-memory | --store URL]
       [--fsync always|interval=MS] [--accept-log-loss] [--cache-size SIZE] [--block-size SIZE]
       [--memtable-size SIZE] [--flush-interval D] [--flush-slice D]
       [--checkpoint-interval D] [--checkpoint-log-size SIZE]
       [--account NAME:KEY]... [--no-auth] [--no-explorer]
       [--tls self-signed | --tls-cert PEM --tls-key PEM] [--https-port PORT]
       [--keys DIR] [--local-issuer] [--trust-issuer URL|FILE]... [--role-assignments FILE]
       [--public-url URL] [--log-format text|json] [--header-timeout D] [--body-timeout D]
       [--request-timeout D] [--idle-timeout D] [--max-connections N] [--workers N]
       [--body-budget SIZE] [--body-budget-wait D] [--ready-file PATH] [--ready-json]
       [--seed PATH]... [--throttle] [--throttle-partition N] [--throttle-account N]
       [--faults FILE] [--fault-seed N]";

/// The usage line of `tableq eval`: no option is required (no `--filter` = every entity).
pub const EVAL_USAGE: &str = "\
tableq eval [--filter F] [--select S] [--top N] [--queries FILE] [--engine auto|stream|table]
       [--threads N] [--stats] [--strict] [--max-comparisons N | --no-limits] [--max-ranges N]
       [FILE|-]";

/// The usage line of `tableq explain`: no option is required (no `--filter` = every entity).
pub const EXPLAIN_USAGE: &str = "\
tableq explain [--filter F] [--select S] [--top N] [--json] [--verbose]
       [--max-comparisons N | --no-limits] [--max-ranges N]";

/// The usage line of `tableq debug plan` (the arguments of `explain`).
pub const DEBUG_PLAN_USAGE: &str = "\
tableq debug plan [--filter F] [--select S] [--top N] [--json] [--verbose]
       [--max-comparisons N | --no-limits] [--max-ranges N]";

/// `tableq validate --help`.
pub const VALIDATE: &str = "\
INPUT:
    JSON lines, one entity per line in the service's JSON form, from FILE or standard input
    (`-` or no FILE). LF or CRLF; a UTF-8 byte-order mark at the start is skipped; blank
    lines are skipped but counted. Each line is judged as the service judges an insert: a
    payload Timestamp is ignored, `odata.*` keys are ignored. A line over 4 MiB is reported
    (RequestBodyTooLarge) without being read.

OUTPUT:
    stdout: one line per problem, in input order; only the first problem of each line is
    reported:
        table: <ErrorCode>: <message>     (with --table, first)
        line N: <ErrorCode>: <message>
    stderr: a summary, `<input>: N entities checked, M invalid`.

EXAMPLES:
    tableq validate samples/invalid.jsonl --table my_table
    cat entities.jsonl | tableq validate

EXIT STATUS:
    0 everything valid, 1 something invalid, 2 the input cannot be read (missing file, I/O
    error, bytes that are not UTF-8).";

/// `tableq eval --help`.
pub const EVAL: &str = "\
INPUT:
    JSON lines read like `tableq validate` reads them (FILE or standard input); each line's
    Timestamp is kept as the stored value. An invalid line is skipped with a warning (the
    first 20 warnings are shown, then a count); --strict makes it fatal. Two lines with the
    same PartitionKey and RowKey: the later line wins.

ENGINES:
    stream (the default for one query): one parallel pass over the input that keeps only the
        matches; memory follows the result, not the input.
    table (the default with --queries): loads the input into an indexed in-memory table once
        and runs every query against it.

OUTPUT:
    stdout: the matches as JSON lines in ascending (PartitionKey, RowKey) order, in the
    service's form with `Name@odata.type` where JSON cannot show the type; with --select
    exactly the selected properties, `null` for missing ones. With --queries each query's
    rows follow a header line `# query N (line L): <query>`.
    stderr: warnings; with --top, a note when more entities match (and the continuation
    keys); with --stats, one JSON object per query as the last lines.

EXAMPLES:
    tableq eval --filter \"Age ge 30 and City eq 'Oslo'\" --select Name,Age people.jsonl
    tableq eval --top 10 --stats --filter \"PartitionKey eq 'p042'\" 1m.jsonl
    tableq eval --queries queries.txt 1m.jsonl

EXIT STATUS:
    0 success (also when invalid lines were skipped), 2 an invalid query (reported before
    any input is read), unreadable input, or with --strict an invalid line or a repeated
    key.";

/// `tableq explain --help` / `tableq debug plan --help`.
pub const EXPLAIN: &str = "\
OUTPUT:
    Text: the key ranges with their strategy (point, partition, range, full), the residual
    in canonical OData, the projection and the page limit. With --json one JSON object,
    indented: {\"ranges\":[{\"strategy\",\"partition_key\",\"row_key\"}],\"residual\",\"select\",
    \"top\"} (`jq -c` prints it on one line).

EXAMPLES:
    tableq explain --filter \"PartitionKey eq 'orders' and Total gt 100.0\" --top 50
    tableq explain --json --verbose --filter \"not (RowKey lt 'm')\"

EXIT STATUS:
    0 success, 2 an invalid --filter/--select/--top (a caret diagnostic on stderr).";

/// `tableq debug tokens|ast --help`.
pub const DEBUG: &str = "\
OUTPUT:
    tokens: one token per line — byte span, class, canonical text (and a literal's type).
    ast: the canonical OData form and the tree with byte spans.

EXAMPLES:
    tableq debug tokens --filter \"Price lt 9.5 and not (Tag eq 'it''s')\"
    tableq debug ast --filter \"(Price lt 9.5)and not(Tag eq 'x' or 30 lt Age)\"

EXIT STATUS:
    0 success, 2 an invalid filter (a caret diagnostic on stderr).";

/// `tableq gen --help`.
pub const GEN: &str = "\
OUTPUT:
    JSON lines in key order: PartitionKey `p000`…, RowKey `r00000000`…, and the properties
    Age, Big, Score, Active, Name, City, Born, Id, Blob (and a Timestamp with
    --timestamps). The same options always print the same bytes.

EXAMPLES:
    tableq gen --entities 1000000 > 1m.jsonl
    tableq gen --entities 10 --partitions 2 --seed 7 --timestamps

EXIT STATUS:
    0 success, 2 stdout cannot be written.";

/// `tableq serve --help`.
pub const SERVE: &str = "\
STORAGE:
    --data DIR (default ./tableq-data) keeps every table durably in DIR (acknowledged writes
    survive crashes and kill -9); --in-memory keeps nothing after the process; --store
    postgres://user@host:port/db keeps the data in PostgreSQL. One server per data directory.
    A data directory whose write-ahead log is missing, cut or another directory's is
    refused (exit 2); --accept-log-loss starts anyway and logs what was lost. Damaged
    blocks are never served: reads of them answer 500 and log the table and key range
    (`tableq check --data DIR` lists them all).

OPERATIONS (every operation of the Table REST API; docs/rest.md):
    tables      query (GET /ACCT/Tables), create (POST), delete (DELETE /ACCT/Tables('t'))
    entities    query (GET /ACCT/t()), get, insert, update/merge (If-Match), upsert, delete,
                entity group transactions (POST /ACCT/$batch)
    service     properties (GET/PUT /ACCT/?restype=service&comp=properties: logging,
                metrics, CORS rules), stats (GET /ACCT-secondary/?restype=service&comp=stats)
    table ACL   stored access policies (GET/PUT /ACCT/t?comp=acl), used by SAS with si=
    CORS        preflight (OPTIONS on any path, no authorization) and response headers from
                the account's CORS rules
    secondary   /ACCT-secondary/... serves reads of the account's data (writes: 403)
    Authorization: SharedKey, SharedKeyLite, table SAS (stored policies, key ranges, sip)
    and account SAS; refusals carry the service's codes (AuthenticationFailed,
    AuthorizationPermissionMismatch, AuthorizationResourceTypeMismatch,
    AuthorizationFailure, AuthorizationSourceIPMismatch, AuthorizationProtocolMismatch).

EXPLORER:
    http://HOST:PORT/_explorer/ is a table explorer for a browser (tables, an entity grid
    and editor, JSON-lines import/export, filters checked as you type, the plan and
    statistics of each query). It signs its requests in the browser with the account key
    or a SAS token you give it, like any client. --no-explorer turns it off.

HTTPS AND TOKENS (docs/https-and-tokens.md):
    --tls self-signed makes a local CA and server certificate in the keys directory
    (--keys, default DATA/keys) and reuses them; --tls-cert/--tls-key use your own.
    HTTPS takes --port, or --https-port beside HTTP. HTTPS alone accepts SharedKey,
    SharedKeyLite and SAS, and no bearer token. --local-issuer runs the local issuer
    (OpenID discovery, JWKS, client-credentials token endpoint under /{tenant}/…) for
    ClientSecretCredential: it gives tokens only to registered clients whose secret matches
    (the clientSecret of --role-assignments principals, else one client generated on the
    first start and printed in the banner); `tableq token` prints a token with its key.
    --trust-issuer URL|JWKS-FILE trusts another issuer of one tenant (https://, http:// on
    loopback only). Tokens (RS256; iss, aud, exp/nbf, tid checked) are authorized by
    Storage Table Data Reader / Contributor roles as --role-assignments FILE decides for
    every issuer (else the token's `roles` claim). Keys and the keys directory must be
    private (0600 / 0700). --public-url https://HOST[:PORT] names the server behind a proxy.

OUTPUT:
    stdout: a banner — the table endpoint, the storage, a ready connection string for
    every hosted account (paste it into any Azure Tables SDK) and the explorer's URL; a
    closed stdout does not stop the server. stderr: one log line per request (RUST_LOG,
    default info). For test suites: --ready-json prints one JSON line (endpoints, ports,
    accounts with keys and connection strings, pid, data directory) once the server
    answers, and the banner goes to stderr; --ready-file PATH writes the same object to
    PATH (atomically, then; removed on a clean stop).

EXAMPLES:
    tableq serve                                  # http://127.0.0.1:10002/devstoreaccount1
    tableq serve --in-memory --port 0             # a free port, nothing kept
    tableq serve --in-memory --port 0 --seed data/ --ready-json   # tables from data/*.jsonl
    tableq serve --account myaccount:bXlzZWNyZXRrZXk=   # a second account with its key
    tableq serve --tls self-signed --https-port 10443  # HTTP on 10002, HTTPS + tokens on 10443

    Stop with Ctrl-C or SIGTERM: in-flight requests finish, the store is closed.

EXIT STATUS:
    0 clean shutdown, 2 the server cannot start (port taken, storage unusable or locked,
    a --seed file or line refused, the --ready-file unwritable), 1 serving or closing the
    store failed.";

/// `tableq check --help`.
pub const CHECK: &str = "\
WHAT IS CHECKED (offline; nothing is written; docs/durability.md):
    every block of the data file (tableq.redb): its checksum, its layout, every row, and
    that its key is its first row's; every record of the write-ahead log (tableq.wal); and
    that the log reaches as far as the data file says it must (not missing, not cut before
    records it had fsynced, this data file's). A server holding the directory is refused;
    a data file left by a crash needs one start and stop of the server first.

OUTPUT:
    stdout: one line per damaged block (file, table, PartitionKey, RowKey range, what is
    wrong) and per log problem (file, what, expected, found), then a summary line; with
    --json one JSON object (clean, counts, damaged_blocks, log_problems, warnings).
    stderr: warnings (a torn last log record, which a restart discards).

EXAMPLES:
    tableq check --data ./tableq-data
    tableq check --data /srv/tables --json | jq .damaged_blocks

EXIT STATUS:
    0 clean, 1 damaged blocks or lost log records found, 2 the directory cannot be checked
    (no data file, another format, in use, needs recovery) or a usage error.";

/// `tableq import --help`.
pub const IMPORT: &str = "\
INPUT:
    JSON lines (the validate/gen format) from FILE or standard input. Each line is judged
    as an insert; invalid lines and keys that already exist are rejected by line number,
    the rest are loaded. The table is created when missing.

OUTPUT:
    stderr: `created table T`, the first 20 rejections (`rejected: line N: <ErrorCode>:
    <message>`) and a count by code, then `<input>: N loaded, M rejected in T (R entities/s)`.

EXAMPLES:
    tableq gen --entities 100000 | tableq import --table people --data ./tableq-data
    tableq import --table people people.jsonl --endpoint http://127.0.0.1:10002/devstoreaccount1
    tableq import --table people people.jsonl --endpoint URL --upsert     # replace existing

    A run that stops early (Ctrl-C, an unreachable server, a full disk) keeps what was
    acknowledged; run the same command again with --upsert to load the rest without
    rejecting the lines already loaded.

EXIT STATUS:
    0 everything loaded, 1 some lines rejected, 2 the run could not start or stopped early.";

/// `tableq bench-http --help`.
pub const BENCH_HTTP: &str = "\
WHAT IT DOES:
    Loads `tableq gen` data (unless the table already holds it), then runs each scenario —
    point get, point as $filter, partition query, RowKey range, OR of 5 points, selective
    full scan, single inserts, 100-entity $batch inserts — for --seconds, checking every
    answer.

OUTPUT:
    stdout: the load rate, a Markdown table (rows, clients, requests, req/s, p50, p99 per
    scenario) and the server's peak memory; stderr: progress per scenario.

EXAMPLES:
    tableq bench-http --data /tmp/bench --entities 100000          # starts its own server
    tableq bench-http --data /tmp/bench --only 'point get' --seconds 5
    tableq bench-http --endpoint http://127.0.0.1:10002/devstoreaccount1 --server-pid 4242

EXIT STATUS:
    0 every scenario ran and every answer was right, 1 the run failed (reason on stderr),
    2 it could not start (arguments, its own server).";
