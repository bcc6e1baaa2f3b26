//! Rendering of query diagnostics ([`ParseError`]) for people, shared by every subcommand
//! that reads `$filter`/`$select`/`$top` text (`debug`, `explain`, `eval`, …).
//!
//! The library's own `Display` of a `ParseError` is a dependency-free caret diagnostic; here
//! the same data (span, headline, hint, expected set) is rendered with `annotate-snippets`,
//! in colour when stderr is a terminal (via `anstream`, which also honours `NO_COLOR` and
//! `CLICOLOR_FORCE`):
//!
//! ```text
//! error: unknown operator `EQ`
//!  --> $filter:1:14
//!   |
//! 1 | PartitionKey EQ 'a'
//!   |              ^^ keywords are lowercase: did you mean `eq`?
//!   |
//! note: at byte 13 (line 1, column 14); expected `eq`, `ne`, `gt`, `ge`, `lt` or `le`
//! ```

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use tableq::parser::ParseError;

/// The diagnostic as plain text (no colour), for files, tests and logs. `source_name` names
/// the input in the `-->` line, e.g. `"filter"` or `"$select"`.
#[allow(dead_code, reason = "API for the other subcommands; used by tests")]
pub fn render_parse_error(err: &ParseError, source_name: &str) -> String {
    render(err, source_name, Renderer::plain())
}

/// The diagnostic with ANSI colours.
pub fn render_parse_error_styled(err: &ParseError, source_name: &str) -> String {
    render(err, source_name, Renderer::styled())
}

/// Prints the diagnostic to stderr, in colour when stderr is a terminal.
pub fn print_parse_error(err: &ParseError, source_name: &str) {
    use std::io::Write;
    let text = render_parse_error_styled(err, source_name);
    // A closed stderr leaves nowhere to report to; ignore the write error.
    let _ = writeln!(anstream::stderr(), "{text}");
}

fn render(err: &ParseError, source_name: &str, renderer: Renderer) -> String {
    let source = err.source_text();
    let span = clamp_span(source, err.span().start, err.span().end);
    let headline = err.message();
    let mut annotation = AnnotationKind::Primary.span(span);
    let label = err.label();
    if let Some(label) = &label {
        annotation = annotation.label(label.as_str());
    }
    let snippet = Snippet::source(source)
        .line_start(1)
        .path(source_name)
        .annotation(annotation);
    // The position in bytes (the `-->` line shows line and column in characters), and the
    // expected set when the label under the carets is a hint.
    let mut note = format!(
        "at byte {} (line {}, column {})",
        err.offset(),
        err.line(),
        err.column()
    );
    if err.hint().is_some() && !err.expected().is_empty() {
        let list = match err.expected() {
            [one] => (*one).to_owned(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
            [] => String::new(),
        };
        note.push_str(&format!("; expected {list}"));
    }
    let mut report = vec![
        Level::ERROR
            .primary_title(headline.as_str())
            .element(snippet),
        Group::with_title(Level::NOTE.secondary_title(note.as_str())),
    ];
    let encoded = url_encoding(source).map(|escape| {
        format!(
            "the text looks URL-encoded (`{escape}`): pass it as after URL decoding, e.g. \
             `Age eq 30` rather than `Age%20eq%2030`"
        )
    });
    if let Some(help) = &encoded {
        report.push(Group::with_title(
            Level::HELP.secondary_title(help.as_str()),
        ));
    }
    renderer.render(&report)
}

/// The first `%XX` escape of `text`, if it has one (a filter copied from a URL).
fn url_encoding(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(2))
        .find(|&i| b[i] == b'%' && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit())
        .map(|i| &text[i..i + 3])
}

/// A span inside `source` on character boundaries (spans from the parser always are; this
/// keeps the renderer safe whatever it is given).
fn clamp_span(source: &str, start: usize, end: usize) -> std::ops::Range<usize> {
    let mut start = start.min(source.len());
    while !source.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = end.clamp(start, source.len());
    while !source.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;
    use tableq::parser::{FilterOptions, parse_filter};

    fn rendered(filter: &str) -> String {
        match parse_filter(filter, &FilterOptions::default()) {
            Ok(f) => panic!("{filter}: parsed as {f}"),
            Err(e) => render_parse_error(&e, "filter"),
        }
    }

    #[test]
    fn plain_rendering_points_at_the_span() {
        let text = rendered("PartitionKey EQ 'a'");
        assert!(text.starts_with("error: unknown operator `EQ`\n"), "{text}");
        assert!(text.contains("--> filter:1:14"), "{text}");
        assert!(text.contains("1 | PartitionKey EQ 'a'"), "{text}");
        assert!(
            text.contains("^^ keywords are lowercase: did you mean `eq`?"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'));
    }

    #[test]
    fn every_diagnostic_names_the_byte_offset() {
        let text = rendered("Größe eq");
        assert!(
            text.contains("note: at byte 10 (line 1, column 9)"),
            "{text}"
        );
    }

    #[test]
    fn styled_rendering_has_colour_codes() {
        let err = parse_filter("A eq", &FilterOptions::default()).unwrap_err();
        assert!(render_parse_error_styled(&err, "filter").contains('\u{1b}'));
    }

    #[test]
    fn end_of_input_and_multibyte_text_render() {
        let text = rendered("Größe eq");
        assert!(text.contains("missing operand after `eq`"), "{text}");
        let text = rendered("Größe eq 'ä");
        assert!(text.contains("unterminated string literal"), "{text}");
    }

    #[test]
    fn url_encoded_text_gets_a_hint() {
        let text = rendered("Age%20eq%2030");
        assert!(
            text.contains("help: the text looks URL-encoded (`%20`)"),
            "{text}"
        );
        assert!(!rendered("Age eq").contains("URL-encoded"));
    }

    #[test]
    fn hint_and_expected_both_shown() {
        let text = rendered("A eq 1 AND B eq 2");
        assert!(text.contains("did you mean `and`?"), "{text}");
        assert!(
            text.contains(
                "note: at byte 7 (line 1, column 8); expected `and`, `or` or the end of the filter"
            ),
            "{text}"
        );
    }
}
