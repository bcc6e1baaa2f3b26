//! Options shared by subcommands: [`Limits`], for every subcommand that parses a filter
//! (`eval`, `explain`, `debug …`): the parser's comparison limit and the planner's range
//! limit, with one precedence
//! everywhere — `--max-comparisons N` wins over `--no-limits`, which lifts the service's
//! 15-comparison limit (the nesting limit of 100 and the 32 KiB length limit always apply).
//! Zero and other nonsense values are rejected by clap with a message. And [`parse_size`],
//! the value parser of every size option (`serve --cache-size`, `import --cache-size`, …),
//! and [`parse_block_size`] (`--block-size`).

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

/// A size such as `128MiB`, `64K`, `1G` or `1048576` (bytes; binary multiples; not zero).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (want e.g. 128MiB, 64K or 1048576)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => return Err(format!("unknown size unit {other:?} (use K, M or G)")),
    };
    let bytes = n
        .checked_mul(1u64 << shift)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| format!("{text:?} is too large"))?;
    if bytes == 0 {
        return Err("a size of zero would refuse every request body".into());
    }
    Ok(bytes)
}

/// The smallest and largest `--block-size` (4 KiB: a block must hold a row's share of
/// its directory and columns beside rows of a useful size; 1 MiB: a point get that misses
/// the cache reads its whole block).
pub const BLOCK_SIZES: std::ops::RangeInclusive<usize> = (4 << 10)..=(1 << 20);

/// `--block-size` (`serve`, `import`): [`parse_size`] within [`BLOCK_SIZES`].
pub fn parse_block_size(text: &str) -> Result<usize, String> {
    let bytes = parse_size(text)?;
    if BLOCK_SIZES.contains(&bytes) {
        Ok(bytes)
    } else {
        Err(format!(
            "a block size of {bytes} bytes is outside 4KiB..=1MiB (the default is 32KiB)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_parse_within_their_range() {
        assert_eq!(parse_block_size("16KiB"), Ok(16 << 10));
        assert_eq!(parse_block_size("4K"), Ok(4096));
        assert_eq!(parse_block_size("1MiB"), Ok(1 << 20));
        for outside in ["4095", "1025K", "1G"] {
            let e = parse_block_size(outside).unwrap_err();
            assert!(e.contains("outside 4KiB..=1MiB"), "{outside}: {e}");
        }
        assert!(parse_block_size("0").unwrap_err().contains("zero"));
        assert!(parse_block_size("big").is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("128MiB"), Ok(128 << 20));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }
}
