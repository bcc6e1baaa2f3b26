//! `tableq debug tokens|ast --filter F`: print the first stages of the query pipeline.
//!
//! * `debug tokens` prints one token per line: byte span, token class, canonical text (and
//!   the Edm type of literals). The filter is then parsed too, so an invalid filter still
//!   exits with 2 and its diagnostic.
//! * `debug ast` prints the canonical OData form of the filter and its indented tree with
//!   spans.
//!
//! An invalid filter prints the rendered diagnostic on stderr and exits with 2.
//!
//! ```text
//! $ tableq debug ast --filter "not (Age lt 18) and Active"
//! canonical: not Age lt 18 and Active
//! tree:
//!   and 0..26
//!     not 0..15
//!       comparison 5..14: Age lt 18 (Edm.Int32)
//!     property 20..26: Active
//! ```

use crate::cli::args::Limits;
use crate::cli::diagnostic::print_parse_error;
use std::io::Write;
use std::process::ExitCode;
use tableq::parser::{FilterOptions, lex, parse_filter};

/// Arguments of `debug tokens` and `debug ast`.
#[derive(clap::Args)]
pub struct Args {
    /// The `$filter` expression (as after URL decoding).
    #[arg(long, allow_hyphen_values = true)]
    filter: String,
    #[command(flatten)]
    limits: Limits,
}

impl Args {
    fn options(&self) -> FilterOptions {
        self.limits.filter_options()
    }
}

/// `debug tokens`.
pub fn run_tokens(args: Args) -> ExitCode {
    let tokens = match lex(&args.filter) {
        Ok(tokens) => tokens,
        Err(e) => {
            print_parse_error(&e, "$filter");
            return ExitCode::from(2);
        }
    };
    let mut out = String::new();
    for (token, span) in &tokens {
        let range = format!("{}..{}", span.start, span.end);
        let text = token.to_string();
        match token.value() {
            Some(v) => {
                out.push_str(&format!(
                    "{range:<12}{:<12}{text}  ({})\n",
                    token.class(),
                    v.edm_type()
                ));
            }
            None => out.push_str(&format!("{range:<12}{:<12}{text}\n", token.class())),
        }
    }
    if tokens.is_empty() {
        out.push_str("(no tokens: an empty filter matches every entity)\n");
    }
    // A closed stdout (e.g. `| head`) is not an error worth reporting.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    match parse_filter(&args.filter, &args.options()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            print_parse_error(&e, "$filter");
            ExitCode::from(2)
        }
    }
}

/// `debug ast`.
pub fn run_ast(args: Args) -> ExitCode {
    let filter = match parse_filter(&args.filter, &args.options()) {
        Ok(filter) => filter,
        Err(e) => {
            print_parse_error(&e, "$filter");
            return ExitCode::from(2);
        }
    };
    let out = match &filter.expr {
        None => "canonical: (empty: no filter, every entity matches)\n".to_owned(),
        Some(expr) => {
            let tree: String = format!("{expr:#}")
                .lines()
                .map(|line| format!("  {line}\n"))
                .collect();
            format!("canonical: {filter}\ntree:\n{tree}")
        }
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    ExitCode::SUCCESS
}
