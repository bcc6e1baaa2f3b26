//! The fixed pieces of the service's formats, shared by the modules that write errors, XML
//! and negotiated responses: the JSON `Content-Type` of each metadata level, the XML
//! declaration and character escaping, and the time format of SAS tokens and stored access
//! policies. Imports nothing of the crate (it sits under `error`, `negotiate` and `xml`,
//! which import each other's neighbours).

use axum::http::HeaderValue;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use tableq_model::json::MetadataLevel;

/// The response `Content-Type` for a metadata level:
/// `application/json;odata=<level>;streaming=true;charset=utf-8`.
pub fn content_type(level: MetadataLevel) -> HeaderValue {
    HeaderValue::from_static(match level {
        MetadataLevel::NoMetadata => {
            "application/json;odata=nometadata;streaming=true;charset=utf-8"
        }
        MetadataLevel::MinimalMetadata => {
            "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"
        }
        MetadataLevel::FullMetadata => {
            "application/json;odata=fullmetadata;streaming=true;charset=utf-8"
        }
    })
}

/// The XML declaration every XML response starts with.
pub(crate) const DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>";

/// `text` as XML character data (`&`, `<`, `>`, `"`, `'` escaped; line breaks kept).
pub(crate) fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    quick_xml::escape::escape(text)
}

/// A SAS time: `YYYY-MM-DD`, `YYYY-MM-DDThh:mmZ`, `YYYY-MM-DDThh:mm:ss[.fffffff]Z` (UTC).
pub(crate) fn parse_sas_time(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%MZ") {
        return Some(t.and_utc());
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}
