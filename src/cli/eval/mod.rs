//! `tableq eval`: the standalone filter evaluator (spec: query.md, "The standalone
//! evaluator").
//!
//! ```text
//! tableq eval [--filter F] [--select S] [--top N] [--queries FILE] [--engine E]
//!             [--max-comparisons N] [--no-limits] [--max-ranges N]
//!             [--threads N] [--stats] [--strict] [FILE|-]
//! ```
//!
//! 1. **Queries first.** The query (or, with `--queries`, every query) is parsed and planned
//!    before any input is read: an invalid `--filter`, `--select` or `--top` prints a caret
//!    diagnostic on stderr and exits 2. No `--filter` (or a blank one) means every entity.
//! 2. **Input** is read as `tableq validate` reads it (`cli::input`), each line decoded
//!    as a *stored* entity (its Timestamp kept). An invalid line is skipped with a warning
//!    (`warning: line N: <Code>: <message>`; the first 20 warnings are shown, then a count);
//!    `--strict` makes the first invalid line fatal. Two lines with the same keys: the later
//!    line wins, as an upsert would — also when the earlier one matched and the later one
//!    does not (then neither is printed); a warning names both lines, `--strict` makes it
//!    fatal. Nothing is printed on stdout before the input has been read completely, so a
//!    fatal problem never leaves half an output.
//! 3. **Engines** ([`Engine`](args::Engine)): `stream` (the default for one query, [`stream`]: the reading
//!    driver of [`tableq::exec::stream`]) evaluates while reading, in parallel, and keeps only
//!    the matches; `table` (the default with
//!    `--queries`, [`table`]) loads an indexed in-memory table once and runs each query
//!    through the planner's key ranges and the parallel executor. Both print the same rows.
//! 4. **Output**: the matches as JSON lines in ascending (PartitionKey, RowKey) order, in the
//!    service's form with `Name@odata.type` where JSON cannot show the type (Int64, DateTime,
//!    Guid, Binary, non-finite Double, the Timestamp), written by
//!    [`EntityWriter`](tableq::model::json::EntityWriter); with `--select` exactly the
//!    selected properties, `null` for missing ones. Without `--top` every match; with
//!    `--top N` the first N and, when more match, a note on stderr with the continuation
//!    keys (the key of the next match). With `--queries`, each query's rows follow a header
//!    line `# query N (line L): <query>`.
//! 5. **`--stats`**: per query, one JSON object on stderr (the last lines):
//!    `{"engine","loaded","ranges","examined","matched","next","load_ms","parse_us","plan_us","exec_us"}`
//!    (`"query"` after `"engine"` with `--queries`); see docs/commands.md for each field.
//!
//! Exit codes: 0 success (also when lines were skipped with a warning), 2 invalid query,
//! unreadable input, or (with `--strict`) invalid input.
//!
//! Files, each importing only those listed before it: `args`, `context` (what the engines
//! share with the command), `progress`, `warnings`, `queries`, `output`, `blocks` (the
//! input cut into blocks of lines), the engines `stream` and `table`, and `command` (the
//! run). This file only declares them.

mod args;
mod blocks;
mod command;
mod context;
mod output;
mod progress;
mod queries;
mod stream;
mod table;
mod warnings;

pub use args::Args;
pub use command::run;
