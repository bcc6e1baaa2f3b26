//! The limits [`parse_filter`](crate::parse_filter) applies — nesting depth, comparison count,
//! text length — with the Table service's values as defaults.

/// The service's nesting limit: `(` and `not` levels.
pub const DEFAULT_MAX_DEPTH: usize = 100;
/// The service's comparison limit (a bare boolean property counts as one).
pub const DEFAULT_MAX_COMPARISONS: usize = 15;
/// The service's filter length limit in UTF-8 bytes (32 KiB).
pub const DEFAULT_MAX_LEN: usize = 32 * 1024;
/// The largest nesting limit honoured, whatever [`FilterOptions::max_depth`] says. The
/// parser itself does not recurse, but code walking the AST (printing, `Drop`, planners)
/// recurses once per level; this keeps every such walk far from a thread's stack limit.
pub const MAX_DEPTH_CAP: usize = 1000;

/// Limits applied by [`parse_filter`](crate::parse_filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FilterOptions {
    /// Most nested levels of `(` and `not` (default 100; the 101st is an error). Values
    /// above [`MAX_DEPTH_CAP`] act as [`MAX_DEPTH_CAP`].
    pub max_depth: usize,
    /// Most comparisons, bare boolean properties included (default `Some(15)`; `None` =
    /// unlimited).
    pub max_comparisons: Option<usize>,
    /// Longest filter text in UTF-8 bytes (default 32,768).
    pub max_len: usize,
}

impl Default for FilterOptions {
    /// The Table service's limits.
    fn default() -> FilterOptions {
        FilterOptions {
            max_depth: DEFAULT_MAX_DEPTH,
            max_comparisons: Some(DEFAULT_MAX_COMPARISONS),
            max_len: DEFAULT_MAX_LEN,
        }
    }
}

impl FilterOptions {
    /// The service's limits without the comparison limit (nesting and length limits stay).
    pub fn unlimited() -> FilterOptions {
        FilterOptions {
            max_comparisons: None,
            ..FilterOptions::default()
        }
    }
}
