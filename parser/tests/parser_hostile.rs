//! Hostile input: deep nesting, huge chains, long literals. Nothing may panic or overflow
//! the stack; every limit answers with its error. (Speed is measured by the `parse`
//! benchmark, never timed here.)

use tableq_parser::ast::Expr;
use tableq_parser::{ErrorKind, FilterOptions, MAX_DEPTH_CAP, lex, parse_filter};

/// Runs `f` on a thread with a deliberately small stack (256 KiB), so a recursion that is
/// not bounded by the nesting limit fails here rather than in production.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow");
}

#[test]
fn ten_thousand_nested_parentheses_are_an_error() {
    on_small_stack(|| {
        let text = format!("{}A eq 1{}", "(".repeat(10_000), ")".repeat(10_000));
        let e = parse_filter(&text, &FilterOptions::default()).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::TooDeep { limit: 100 });
        assert_eq!(e.offset(), 100);
        let _ = e.to_string();
        let unclosed = "(".repeat(10_000);
        assert!(parse_filter(&unclosed, &FilterOptions::default()).is_err());
        let closing = ")".repeat(10_000);
        assert!(parse_filter(&closing, &FilterOptions::default()).is_err());
    });
}

#[test]
fn eight_thousand_nots_are_an_error() {
    on_small_stack(|| {
        let text = format!("{}A", "not ".repeat(8_000));
        let e = parse_filter(&text, &FilterOptions::default()).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::TooDeep { limit: 100 });
    });
}

#[test]
fn the_deepest_allowed_filter_parses_prints_and_drops_on_a_small_stack() {
    on_small_stack(|| {
        let text = format!("{}A eq 1{}", "not (".repeat(50), ")".repeat(50));
        let f = parse_filter(&text, &FilterOptions::default()).unwrap();
        let printed = f.to_string();
        assert_eq!(
            parse_filter(&printed, &FilterOptions::default()).unwrap(),
            f
        );
        let _ = format!("{f:#}");
        drop(f);
    });
}

#[test]
fn depth_limit_is_capped() {
    let opts = FilterOptions {
        max_depth: usize::MAX,
        ..FilterOptions::unlimited()
    };
    let ok = format!(
        "{}A{}",
        "(".repeat(MAX_DEPTH_CAP),
        ")".repeat(MAX_DEPTH_CAP)
    );
    let too_deep = format!("({ok})");
    // The default test thread stack (2 MiB) holds the capped depth.
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            assert!(parse_filter(&ok, &opts).is_ok());
            // The deepest tree the cap allows prints, re-parses and drops on this stack.
            let nots = format!("{}A eq 1", "not ".repeat(MAX_DEPTH_CAP));
            let f = parse_filter(&nots, &opts).unwrap();
            assert_eq!(f.to_string(), nots);
            let _ = format!("{f:#}");
            drop(f);
            // Alternating chains give the deepest tree per level: or → and → or → …
            let mut text = String::from("A");
            for level in 0..MAX_DEPTH_CAP {
                let op = if level % 2 == 0 { "or" } else { "and" };
                text = format!("A {op} ({text})");
            }
            let f = parse_filter(&text, &opts).unwrap();
            assert_eq!(parse_filter(&f.to_string(), &opts).unwrap(), f);
            drop(f);
            assert_eq!(
                parse_filter(&too_deep, &opts).unwrap_err().kind(),
                &ErrorKind::TooDeep {
                    limit: MAX_DEPTH_CAP
                }
            );
        })
        .expect("spawn")
        .join()
        .expect("no stack overflow");
}

#[test]
fn a_32_kib_or_chain_parses_without_the_comparison_limit() {
    on_small_stack(|| {
        let mut text = String::from("P eq 0");
        let mut n = 1;
        loop {
            let next = format!(" or P eq {n}");
            if text.len() + next.len() > 32 * 1024 {
                break;
            }
            text.push_str(&next);
            n += 1;
        }
        let f = parse_filter(&text, &FilterOptions::unlimited()).unwrap();
        let Some(Expr::Or(xs, _)) = &f.expr else {
            panic!("not an or chain")
        };
        assert_eq!(xs.len(), n);
        assert_eq!(f.to_string(), text);
        let e = parse_filter(&text, &FilterOptions::default()).unwrap_err();
        assert_eq!(
            e.kind(),
            &ErrorKind::TooManyComparisons {
                count: n,
                limit: 15
            }
        );
    });
}

#[test]
fn a_32_kib_and_not_chain_and_long_literals() {
    on_small_stack(|| {
        let text = (0..4000)
            .map(|i| format!("not A{i}"))
            .collect::<Vec<_>>()
            .join(" and ");
        let text = &text[..text[..32 * 1024].rfind(" and ").unwrap_or(0)];
        assert!(parse_filter(text, &FilterOptions::unlimited()).is_ok());
        let long = format!("A eq '{}'", "''".repeat(16 * 1024 - 4));
        assert!(long.len() <= 32 * 1024);
        assert!(parse_filter(&long, &FilterOptions::default()).is_ok());
        let digits = format!("A eq {}", "9".repeat(32_000));
        assert_eq!(
            parse_filter(&digits, &FilterOptions::default())
                .unwrap_err()
                .kind(),
            &ErrorKind::Int32OutOfRange
        );
    });
}

#[test]
fn lexing_many_tokens_and_many_errors() {
    on_small_stack(|| {
        let text = "( ".repeat(16 * 1024);
        assert_eq!(lex(&text).unwrap().len(), 16 * 1024);
        let quotes = "'".repeat(32 * 1024 - 1);
        assert!(lex(&quotes).is_err());
        let garbage = "#".repeat(32 * 1024);
        assert!(parse_filter(&garbage, &FilterOptions::default()).is_err());
    });
}
