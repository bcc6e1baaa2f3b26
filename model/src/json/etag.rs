//! The ETag of an entity: its Timestamp in the service's weak-ETag form, and back.

use crate::validate::excerpt;
use crate::{DateTime, ErrorCode, ModelError};

/// The ETag of an entity with this Timestamp: `W/"datetime'<Timestamp>'"` with `:`
/// percent-encoded as `%3A`, e.g. `W/"datetime'2021-06-09T01%3A17%3A08.3795894Z'"`.
pub fn etag(timestamp: DateTime) -> String {
    let (text, len) = timestamp.render();
    let mut out = String::with_capacity(len + 24);
    out.push_str("W/\"datetime'");
    for &b in &text[..len] {
        if b == b':' {
            out.push_str("%3A");
        } else {
            out.push(char::from(b));
        }
    }
    out.push_str("'\"");
    out
}

/// Reads an ETag written by [`etag`] back to its Timestamp (`%3A` in either case, or a plain
/// `:`). Anything else is `InvalidInput`.
pub fn parse_etag(text: &str) -> Result<DateTime, ModelError> {
    let bad = || {
        ModelError::new(
            ErrorCode::InvalidInput,
            format!(
                "`{}` is not an ETag of this service (expected W/\"datetime'…'\")",
                excerpt(text)
            ),
        )
    };
    let inner = text
        .strip_prefix("W/\"datetime'")
        .and_then(|s| s.strip_suffix("'\""))
        .ok_or_else(bad)?;
    let decoded = inner.replace("%3A", ":").replace("%3a", ":");
    DateTime::parse(&decoded).map_err(|_| bad())
}
