//! `tableq import --table T [FILE|-] (--data DIR | --endpoint URL)`: bulk-loads entities,
//! one JSON object per line, into a table of the emulator.
//!
//! * Input is read the way `tableq validate` reads it (`cli::input`: FILE or standard
//!   input, LF/CRLF, BOM, blank lines skipped but counted) and every line is judged the way
//!   the service judges an insert (`DecodeOptions::SERVICE`: a payload `Timestamp` and
//!   `odata.*` annotations are ignored). An invalid line is **rejected** and the rest are
//!   loaded.
//! * The table is created when it does not exist (the run says so).
//! * Two destinations (`command::Destination`):
//!   * `--data DIR` opens the durable store directly (no server may hold it: a locked
//!     directory is refused with a message naming `--endpoint`) and writes through
//!     `Backend::write_batch`, up to 100 operations per batch grouped by PartitionKey, from
//!     several threads so that the store's group commit shares one fsync between batches;
//!   * `--endpoint URL` (the table endpoint `tableq serve` prints, e.g.
//!     `http://127.0.0.1:10002/devstoreaccount1`) sends the same groups as `$batch`
//!     changesets over `--connections N` concurrent connections ([`http`]), every request
//!     signed with SharedKey: the development account's key, or `--account NAME:KEY`.
//! * Duplicate keys — in the table already, or twice in the input — are rejected with
//!   `EntityAlreadyExists` (the later line loses, as with sequential inserts). `--upsert`
//!   writes *Insert Or Replace* instead: the later line wins and nothing is rejected for its
//!   keys.
//! * Rejections are printed on stderr after the run, in line order, as
//!   `rejected: line N: <ErrorCode>: <message>` — the first [`SHOWN`](outcome::SHOWN), then a count and
//!   the count per code. A summary line ends the run (loaded, rejected, time, rate); a
//!   progress bar is shown while loading when stderr is a terminal.
//!
//! Exit codes: 0 everything loaded, 1 some lines rejected, 2 nothing could be done or the
//! run stopped early (unreadable input, unusable destination, a server or storage failure;
//! what was loaded before stays loaded).
//!
//! ```text
//! $ tableq gen --entities 100000 | tableq import --table people --data ./tableq-data
//! created table people
//! <stdin>: 100000 loaded, 0 rejected in 1.9 s (52 000 entities/s)
//! ```
//!
//! Files, each importing only those listed before it: `outcome` (what a run achieved),
//! `loader` (the interface of a destination), `progress` (the bar), `direct` (`--data`),
//! `http` (`--endpoint`), `command` (arguments and the reading loop). This file only
//! declares them.

mod command;
mod direct;
pub mod http;
mod loader;
mod outcome;
mod progress;

pub use command::{Args, run};
