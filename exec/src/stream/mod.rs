//! Executing a plan over entities that arrive in *input order* — JSON lines read once from
//! start to end, as `tableq eval` reads a file or a pipe — instead of from an ordered
//! [`EntitySource`](crate::EntitySource). The answer is the [`Executor`](crate::Executor)'s
//! over the same lines loaded into a table: the entities in the plan's key ranges that
//! satisfy its residual, in key order; the later of two lines with the same key wins, as an
//! upsert would (even when the earlier one matched and the later one does not); with
//! `$top` N the first N and the key of the next match. Memory follows the answer, not the
//! input.
//!
//! Three parts, which a driver that reads the input uses in this order:
//!
//! * [`StreamFilter`] — the plan compiled for testing single rows:
//!   [`KeySet::contains`](tableq_planner::plan::KeySet::contains) (a binary search) and the
//!   residual as a [`CompiledPredicate`](crate::CompiledPredicate) by name;
//! * [`scan_lines`] — one [`LineBlock`] of whole lines decoded and tested
//!   ([`ScannedBlock`]); blocks are independent, so a driver scans many at once;
//! * [`StreamRun`] — takes the scanned blocks in input order (the driver reports their
//!   problems, [`ScannedBlock::problems`]) and [`finish`](StreamRun::finish)es into a
//!   [`StreamAnswer`]: repeats resolved, matches in key order, `$top` applied; see
//!   [`run`](mod@run) for inputs whose keys are not in order.
//!
//! No I/O happens here: the driver reads the bytes, reads matching lines again at their
//! positions ([`MatchText::At`]) and writes them.
//!
//! ```
//! use tableq_exec::stream::{LineBlock, Pushed, Reading, StreamFilter, StreamRun, scan_lines};
//! use tableq_parser::FilterOptions;
//! use tableq_planner::{Query, QueryText};
//!
//! let text = QueryText { filter: Some("N gt 1"), top: Some("1"), ..QueryText::default() };
//! let plan = Query::parse(text, &FilterOptions::default()).unwrap().plan();
//! let input = concat!(
//!     r#"{"PartitionKey":"b","RowKey":"1","N":2}"#, "\n",
//!     r#"{"PartitionKey":"a","RowKey":"1","N":3}"#, "\n",
//!     r#"{"PartitionKey":"a","RowKey":"1","N":0}"#, "\n",
//! );
//! let filter = StreamFilter::new(&plan);
//! let mut run = StreamRun::new(plan.top, Reading::Once);
//! let options = run.block_options(4 << 20, 20);
//! let block = scan_lines(&filter, LineBlock { bytes: input.as_bytes(), offset: 0, first: true }, &options);
//! assert_eq!(run.push(block), Pushed::Continue);
//! let answer = run.finish();
//! // Line 3 overrides line 2 (same key), so only b/1 matches.
//! assert_eq!((answer.repeats.len(), answer.len(), answer.next), (1, 1, None));
//! ```

mod block;
mod filter;
pub mod keys;
pub mod run;

pub use block::{BlockOptions, LineBlock, LineProblem, ScannedBlock, scan_lines};
pub use filter::StreamFilter;
pub use keys::{KeyLog, Repeat, find_repeats};
pub use run::{MatchText, Pushed, Reading, StreamAnswer, StreamRun};

#[cfg(test)]
mod tests {
    use super::*;
    use tableq_model::Entity;
    use tableq_parser::FilterOptions;
    use tableq_planner::plan::Plan;
    use tableq_planner::{Query, QueryText};

    fn plan(filter: &str, top: Option<&str>) -> Plan {
        let text = QueryText {
            filter: Some(filter),
            top,
            ..QueryText::default()
        };
        Query::parse(text, &FilterOptions::unlimited())
            .unwrap_or_else(|e| panic!("{e}"))
            .plan()
    }

    fn line(pk: &str, rk: &str, n: i32) -> String {
        format!("{{\"PartitionKey\":\"{pk}\",\"RowKey\":\"{rk}\",\"N\":{n}}}\n")
    }

    /// Runs `lines` through the engine in blocks of `per_block` lines, as a driver would
    /// (restarting a re-readable input when asked); returns the answer's keys and texts.
    fn run(
        plan: &Plan,
        lines: &[String],
        per_block: usize,
        reading: Reading,
    ) -> (StreamAnswer, Vec<String>) {
        let filter = StreamFilter::new(plan);
        let input: String = lines.concat();
        let mut blocks = Vec::new();
        let mut offset = 0;
        for chunk in lines.chunks(per_block) {
            let len: usize = chunk.iter().map(String::len).sum();
            blocks.push((offset, len));
            offset += len;
        }
        let mut run = StreamRun::new(plan.top, reading);
        let mut restarted = false;
        'pass: loop {
            let options = run.block_options(1 << 20, 8);
            for (i, &(start, len)) in blocks.iter().enumerate() {
                let block = LineBlock {
                    bytes: &input.as_bytes()[start..start + len],
                    offset: start as u64,
                    first: i == 0,
                };
                if run.push(scan_lines(&filter, block, &options)) == Pushed::Restart {
                    assert!(!restarted, "a second restart");
                    restarted = true;
                    run = StreamRun::reread(plan.top);
                    continue 'pass;
                }
            }
            break;
        }
        let answer = run.finish();
        let texts = answer
            .rows()
            .map(|m| match m {
                MatchText::Kept(t) => String::from_utf8_lossy(t).into_owned(),
                MatchText::At { offset, len } => {
                    input[offset as usize..offset as usize + len as usize].to_owned()
                }
            })
            .collect();
        (answer, texts)
    }

    /// The executor's answer over the same lines loaded as a table (later lines win).
    fn oracle(plan: &Plan, lines: &[String]) -> (Vec<String>, Option<(String, String)>) {
        let mut table = std::collections::BTreeMap::new();
        for l in lines {
            let e = tableq_model::json::decode_entity(
                l.trim_end(),
                &tableq_model::json::DecodeOptions::STORED,
            )
            .unwrap();
            table.insert(
                (e.partition_key().to_owned(), e.row_key().to_owned()),
                (l.trim_end().to_owned(), e),
            );
        }
        type Row = (String, Entity);
        let hits: Vec<(&(String, String), &Row)> =
            table.iter().filter(|(_, (_, e))| plan.matches(e)).collect();
        let top = plan.top.map_or(usize::MAX, |t| t as usize);
        let next = hits.get(top).map(|(k, _)| (*k).clone());
        (
            hits.iter().take(top).map(|(_, (t, _))| t.clone()).collect(),
            next,
        )
    }

    #[test]
    fn answers_as_the_executor_would_in_every_input_order() {
        let mut lines: Vec<String> = Vec::new();
        for p in ["a", "b", "c", "d"] {
            for r in 0..6 {
                lines.push(line(p, &format!("r{r}"), r));
            }
        }
        let sorted = lines.clone();
        let mut shuffled = lines.clone();
        shuffled.reverse();
        shuffled.swap(3, 17);
        let mut repeated = sorted.clone();
        // A later line repeats an early matching key with a value that does not match.
        repeated.push(line("a", "r3", 0));
        repeated.push(line("c", "r1", 5));
        for filter in [
            "N gt 2",
            "PartitionKey eq 'b' or PartitionKey eq 'd' and N lt 2",
            "true",
            "false",
            "RowKey ge 'r4'",
        ] {
            for top in [None, Some("1"), Some("3"), Some("1000")] {
                let plan = plan(filter, top);
                for lines in [&sorted, &shuffled, &repeated] {
                    let (want, next) = oracle(&plan, lines);
                    for reading in [Reading::Rereadable, Reading::Once] {
                        for per_block in [1, 5, 100] {
                            let (answer, texts) = run(&plan, lines, per_block, reading);
                            let what = format!("{filter} top {top:?} {reading:?} {per_block}");
                            if answer.incomplete {
                                // Only an input read once can end up incomplete.
                                assert_eq!(reading, Reading::Once, "{what}");
                                continue;
                            }
                            assert_eq!(texts, want, "{what}");
                            assert_eq!(
                                answer.next.map(|k| (k.partition_key, k.row_key)),
                                next,
                                "{what}"
                            );
                            assert_eq!(answer.valid, lines.len() as u64, "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn problems_are_reported_and_skipped() {
        let plan = plan("", None);
        let filter = StreamFilter::new(&plan);
        let input = "\u{feff}{\"PartitionKey\":\"a\",\"RowKey\":\"1\"}\r\n\n  \nnot json\n\
                     {\"PartitionKey\":\"b\",\"RowKey\":\"1\",\"X\":\"aaaaaaaaaaaaaaaaaaaa\"}\n\
                     {\"PartitionKey\":\"c\",\"RowKey\":\"1\"}";
        let mut run = StreamRun::new(None, Reading::Once);
        let options = run.block_options(40, 8);
        let block = LineBlock {
            bytes: input.as_bytes(),
            offset: 0,
            first: true,
        };
        let scanned = scan_lines(&filter, block, &options);
        assert_eq!(scanned.lines, 6);
        assert_eq!(scanned.problem_count, 2);
        assert!(matches!(scanned.problems[0], (3, LineProblem::Invalid(_))));
        assert!(matches!(scanned.problems[1], (4, LineProblem::TooLong(60))));
        assert_eq!(run.push(scanned), Pushed::Continue);
        assert_eq!(run.next_line(), 7);
        let answer = run.finish();
        assert_eq!((answer.valid, answer.skipped, answer.len()), (2, 2, 2));
        let rows: Vec<MatchText<'_>> = answer.rows().collect();
        assert_eq!(
            rows[0],
            MatchText::Kept(b"{\"PartitionKey\":\"a\",\"RowKey\":\"1\"}")
        );
        // Bytes that are not UTF-8 stop the scan.
        let bad = scan_lines(
            &filter,
            LineBlock {
                bytes: b"{}\nab\xff\n",
                offset: 0,
                first: false,
            },
            &options,
        );
        assert_eq!(bad.unreadable, Some((1, 2)));
        assert!(matches!(
            ScannedBlock::too_long(99, 50).problems[0],
            (0, LineProblem::TooLong(50))
        ));
    }
}
