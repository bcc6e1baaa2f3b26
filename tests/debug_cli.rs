//! Golden tests of `tableq debug tokens|ast`: they run the built binary.

use std::process::{Command, Output};

fn tableq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the tableq binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn ast_prints_canonical_form_and_tree() {
    let o = tableq(&["debug", "ast", "--filter", "not (Age lt 18) and Active"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "canonical: not Age lt 18 and Active\n\
         tree:\n  \
           and 0..26\n    \
             not 0..15\n      \
               comparison 5..14: Age lt 18 (Edm.Int32)\n    \
             property 20..26: Active\n"
    );
}

#[test]
fn ast_of_boolean_literals() {
    let o = tableq(&[
        "debug",
        "ast",
        "--filter",
        "PartitionKey eq 'a' and not FALSE",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "canonical: PartitionKey eq 'a' and not false\n\
         tree:\n  \
           and 0..33\n    \
             comparison 0..19: PartitionKey eq 'a' (Edm.String)\n    \
             not 24..33\n      \
               constant 28..33: false\n"
    );
    let o = tableq(&["debug", "tokens", "--filter", "True"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "0..4        literal     true  (Edm.Boolean)\n");
}

#[test]
fn ast_normalises_spacing_and_literals() {
    let o = tableq(&[
        "debug",
        "ast",
        "--filter",
        "( 30 lt Age )or(X eq binary'0AFF')",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).starts_with("canonical: 30 lt Age or X eq X'0aff'\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn ast_of_an_empty_filter() {
    let o = tableq(&["debug", "ast", "--filter", "  "]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "canonical: (empty: no filter, every entity matches)\n"
    );
}

#[test]
fn tokens_lists_spans_classes_and_types() {
    let o = tableq(&[
        "debug",
        "tokens",
        "--filter",
        "PartitionKey eq 'a' and not(N ge 5L)",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "0..12       identifier  PartitionKey\n\
         13..15      operator    eq\n\
         16..19      literal     'a'  (Edm.String)\n\
         20..23      keyword     and\n\
         24..27      keyword     not\n\
         27..28      punctuation (\n\
         28..29      identifier  N\n\
         30..32      operator    ge\n\
         33..35      literal     5L  (Edm.Int64)\n\
         35..36      punctuation )\n"
    );
}

#[test]
fn invalid_filter_renders_a_diagnostic_and_exits_2() {
    let o = tableq(&["debug", "ast", "--filter", "PartitionKey EQ 'a'"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(err.starts_with("error: unknown operator `EQ`\n"), "{err}");
    assert!(err.contains("--> $filter:1:14"), "{err}");
    assert!(err.contains("1 | PartitionKey EQ 'a'"), "{err}");
    assert!(
        err.contains("  |              ^^ keywords are lowercase: did you mean `eq`?"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no colour when stderr is not a terminal: {err}"
    );
}

#[test]
fn tokens_of_an_unlexable_filter_exit_2() {
    let o = tableq(&["debug", "tokens", "--filter", "A eq 'x'and B"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("missing space between `'x'` and `and`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tokens_of_a_lexable_but_invalid_filter_print_then_exit_2() {
    let o = tableq(&["debug", "tokens", "--filter", "A eq"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stdout(&o),
        "0..1        identifier  A\n2..4        operator    eq\n"
    );
    assert!(
        stderr(&o).contains("missing operand after `eq`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn comparison_limit_and_no_limits() {
    let chain = (0..16)
        .map(|i| format!("P{i} eq {i}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let o = tableq(&["debug", "ast", "--filter", &chain]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("the filter has 16 comparisons; at most 15 are allowed"));
    let o = tableq(&["debug", "ast", "--no-limits", "--filter", &chain]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_filter_starting_with_a_minus_is_accepted_as_a_value() {
    let o = tableq(&["debug", "ast", "--filter", "-5 lt Age"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("canonical: -5 lt Age\n"));
}
