//! Byte-offset spans.

use std::fmt;
use std::ops::Range;

/// A half-open byte range `start..end` into the query text.
///
/// **Spans never take part in equality**: `Span`'s `PartialEq` is always `true` (and its
/// `Hash` writes nothing), so AST nodes can derive `PartialEq`/`Hash` and compare by
/// structure alone — `parse("A eq 1") == parse("A  eq  1")`. Use [`Span::range`] to compare
/// positions explicitly.
#[derive(Clone, Copy, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span over `start..end`.
    pub const fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The byte range.
    pub const fn range(self) -> Range<usize> {
        self.start..self.end
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// Length in bytes.
    pub const fn len(self) -> usize {
        self.end - self.start
    }

    /// Whether the span is empty.
    pub const fn is_empty(self) -> bool {
        self.end <= self.start
    }
}

impl From<Range<usize>> for Span {
    fn from(r: Range<usize>) -> Span {
        Span::new(r.start, r.end)
    }
}

impl PartialEq for Span {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}
impl Eq for Span {}
impl std::hash::Hash for Span {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}
