//! Options shared by every subcommand that parses a filter (`eval`, `explain`, `debug …`):
//! the parser's comparison limit and the planner's range limit, with one precedence
//! everywhere — `--max-comparisons N` wins over `--no-limits`, which lifts the service's
//! 15-comparison limit (the nesting limit of 100 and the 32 KiB length limit always apply).
//! Zero and other nonsense values are rejected by clap with a message.

use tableq::parser::FilterOptions;
use tableq::planner::{DEFAULT_MAX_RANGES, Planner};

/// `--max-comparisons`, `--no-limits`, `--max-ranges`.
#[derive(clap::Args, Debug, Clone)]
pub struct Limits {
    /// The most comparisons a filter may hold (default: the service's 15); wins over
    /// --no-limits.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_comparisons: Option<u32>,
    /// Lift the comparison limit (the nesting limit of 100 and the 32 KiB length limit
    /// stay).
    #[arg(long)]
    no_limits: bool,
    /// The most key ranges a plan may have; beyond it a coarser range is read and the
    /// residual keeps the precision (planning only).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_RANGES as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_ranges: u32,
}

impl Limits {
    /// The parser's options.
    pub fn filter_options(&self) -> FilterOptions {
        let mut options = FilterOptions::default();
        options.max_comparisons = match (self.max_comparisons, self.no_limits) {
            (Some(n), _) => Some(n as usize),
            (None, true) => None,
            (None, false) => options.max_comparisons,
        };
        options
    }

    /// The planner with `--max-ranges`.
    pub fn planner(&self) -> Planner {
        Planner::new().max_ranges(self.max_ranges as usize)
    }
}

/// `--color`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Color {
    /// Colour when the output is a terminal (and `NO_COLOR` is not set).
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl Color {
    /// Applies the choice to everything written through `anstream` (diagnostics).
    pub fn apply(self) {
        let choice = match self {
            Color::Auto => anstream::ColorChoice::Auto,
            Color::Always => anstream::ColorChoice::Always,
            Color::Never => anstream::ColorChoice::Never,
        };
        choice.write_global();
    }
}
