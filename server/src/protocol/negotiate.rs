//! Content negotiation and the protocol headers a request may carry: the response's JSON
//! metadata level (`$format`, `Accept`), the request body's `Content-Type`, `Prefer`,
//! `x-ms-version`, `DataServiceVersion` / `MaxDataServiceVersion`, and `X-HTTP-Method`.
//!
//! * **Metadata level**: `$format` in the query overrides `Accept`. Values:
//!   `application/json;odata=nometadata|minimalmetadata|fullmetadata` (plain
//!   `application/json`, `json`, `*/*`, `application/*` or nothing = minimal). Atom/XML →
//!   415 `UnsupportedMediaType`; an unknown `odata=` level → 400 (`InvalidHeaderValue` in
//!   `Accept`, `InvalidQueryParameterValue` in `$format`).
//! * **Request bodies** must be JSON: a `Content-Type` of `application/json` (any
//!   parameters) or none; Atom/XML → 415; anything else → 400 `InvalidContentType`.
//! * **`Prefer`**: `return-content` / `return-no-content` (other preferences are ignored).
//! * **Versions**: `x-ms-version` is a date `YYYY-MM-DD` from 2013-08-15 (the first version
//!   with JSON) on, including dates after [`NEWEST_VERSION`] (answered as that version: an
//!   SDK upgrade never breaks the emulator); `DataServiceVersion` and `MaxDataServiceVersion` are `1.0`, `2.0` or
//!   `3.0`, with or without `;NetFx`. Anything else → 400 `InvalidHeaderValue`.
//!
//! ```
//! use axum::http::HeaderValue;
//! use tableq_model::json::MetadataLevel;
//! use tableq_server::negotiate::response_level;
//! let accept = HeaderValue::from_static("application/json;odata=fullmetadata");
//! assert_eq!(response_level(Some(&accept), None).unwrap(), MetadataLevel::FullMetadata);
//! // $format wins over Accept.
//! let format = "application/json;odata=nometadata";
//! assert_eq!(response_level(Some(&accept), Some(format)).unwrap(), MetadataLevel::NoMetadata);
//! let atom = HeaderValue::from_static("application/atom+xml");
//! assert_eq!(response_level(Some(&atom), None).unwrap_err().status().as_u16(), 415);
//! ```

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use tableq_model::ErrorCode;
use tableq_model::json::MetadataLevel;

use crate::protocol::error::ApiError;
pub use crate::protocol::formats::content_type;

/// The oldest `x-ms-version` accepted (the first with JSON payloads).
pub const OLDEST_VERSION: &str = "2013-08-15";
/// The `x-ms-version` answered when the request names none (what the current SDKs send).
pub const DEFAULT_VERSION: &str = "2019-02-02";
/// The newest `x-ms-version` this server implements: a request naming a later date (an SDK
/// newer than this server) is served as this version, never refused.
pub const NEWEST_VERSION: &str = "2025-11-05";

/// What one media type (of `Accept`, `$format` or `Content-Type`) asks for.
enum Media {
    /// JSON at this level (`None`: no `odata=` parameter, i.e. minimal).
    Json(Option<MetadataLevel>),
    /// JSON with an `odata=` value that is no level.
    BadLevel(String),
    /// Atom or XML.
    Xml,
    /// Anything else.
    Other,
}

/// Whether `text` contains `needle` (ASCII) in any ASCII letter case.
fn contains_ignore_ascii_case(text: &str, needle: &str) -> bool {
    text.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

fn classify(media: &str) -> Media {
    let mut parts = media.split(';').map(str::trim);
    let essence = parts.next().unwrap_or("");
    let mut level = None;
    let mut q_zero = false;
    for p in parts {
        if let Some((k, v)) = p.split_once('=') {
            let (k, v) = (k.trim(), v.trim().trim_matches('"'));
            if k.eq_ignore_ascii_case("odata") {
                match MetadataLevel::from_name(v) {
                    Some(l) => level = Some(l),
                    None => return Media::BadLevel(v.to_owned()),
                }
            } else if k.eq_ignore_ascii_case("q") {
                q_zero = v.parse::<f32>().is_ok_and(|q| q <= 0.0);
            }
        }
    }
    if q_zero {
        return Media::Other;
    }
    // The essence in any ASCII letter case (compared as if lower-cased).
    let json = ["application/json", "json", "*/*", "application/*"];
    if json.iter().any(|j| essence.eq_ignore_ascii_case(j)) {
        Media::Json(level)
    } else if contains_ignore_ascii_case(essence, "xml")
        || contains_ignore_ascii_case(essence, "atom")
    {
        Media::Xml
    } else {
        Media::Other
    }
}

/// The metadata level of the response, from `$format` (if given) else `Accept`.
pub fn response_level(
    accept: Option<&HeaderValue>,
    format: Option<&str>,
) -> Result<MetadataLevel, ApiError> {
    if let Some(format) = format {
        return match classify(format) {
            Media::Json(level) => Ok(level.unwrap_or_default()),
            Media::Xml => Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                format!("$format `{format}` asks for XML; this server speaks JSON only"),
            )),
            Media::BadLevel(_) | Media::Other => Err(ApiError::new(
                ErrorCode::InvalidQueryParameterValue,
                format!(
                    "$format `{format}` is not supported: use application/json;odata=nometadata, \
                     minimalmetadata or fullmetadata"
                ),
            )),
        };
    }
    let Some(accept) = accept else {
        return Ok(MetadataLevel::default());
    };
    let text = accept.to_str().map_err(|_| {
        ApiError::new(
            ErrorCode::InvalidHeaderValue,
            "the Accept header is not ASCII text",
        )
    })?;
    if text.trim().is_empty() {
        return Ok(MetadataLevel::default());
    }
    let mut saw_xml = false;
    for range in text.split(',') {
        match classify(range) {
            Media::Json(level) => return Ok(level.unwrap_or_default()),
            Media::BadLevel(level) => {
                return Err(ApiError::new(
                    ErrorCode::InvalidHeaderValue,
                    format!(
                        "Accept asks for odata={level}; the levels are nometadata, \
                         minimalmetadata and fullmetadata"
                    ),
                ));
            }
            Media::Xml => saw_xml = true,
            Media::Other => {}
        }
    }
    let why = if saw_xml {
        "Accept asks for Atom/XML"
    } else {
        "Accept names no JSON media type"
    };
    Err(ApiError::new(
        ErrorCode::UnsupportedMediaType,
        format!("{why} (`{text}`); this server answers application/json only"),
    ))
}

/// Checks that a request body is declared as JSON (or not declared at all).
pub fn check_body_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return Ok(());
    };
    let text = value.to_str().unwrap_or("");
    let essence = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match classify(text) {
        Media::Json(_) if essence == "application/json" => Ok(()),
        Media::Xml => Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!("the body is declared as `{text}`; this server accepts JSON only"),
        )),
        _ => Err(ApiError::new(
            ErrorCode::InvalidContentType,
            format!("the body is declared as `{text}`; send application/json"),
        )),
    }
}

/// What `Prefer` asks of an insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefer {
    /// `return-content`: answer 201 with the created resource.
    ReturnContent,
    /// `return-no-content`: answer 204 without a body.
    ReturnNoContent,
}

impl Prefer {
    /// The preference's token, as `Preference-Applied` repeats it.
    pub fn as_str(self) -> &'static str {
        match self {
            Prefer::ReturnContent => "return-content",
            Prefer::ReturnNoContent => "return-no-content",
        }
    }
}

/// The `return-*` preference of the `Prefer` header(s), if any (the last one wins; other
/// preferences are ignored).
pub fn prefer(headers: &HeaderMap) -> Option<Prefer> {
    let mut preferences = headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|token| match token.trim().to_ascii_lowercase().as_str() {
            "return-content" => Some(Prefer::ReturnContent),
            "return-no-content" => Some(Prefer::ReturnNoContent),
            _ => None,
        });
    preferences.next_back()
}

/// Whether `text` is a date `YYYY-MM-DD` (digits in the right places).
fn is_version_date(text: &str) -> bool {
    text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        })
}

/// `x-ms-version`.
const X_MS_VERSION: HeaderName = HeaderName::from_static("x-ms-version");
/// `DataServiceVersion`.
const DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("dataserviceversion");
/// `MaxDataServiceVersion`.
const MAX_DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("maxdataserviceversion");

/// The `x-ms-version` to answer with: the request's when it is acceptable and known,
/// [`NEWEST_VERSION`] for a later date, else [`DEFAULT_VERSION`].
pub fn response_version(headers: &HeaderMap) -> HeaderValue {
    let sent = headers.get(X_MS_VERSION);
    match sent.map(|v| (v, v.to_str())) {
        Some((_, Ok(v))) if is_version_date(v) && v > NEWEST_VERSION => {
            HeaderValue::from_static(NEWEST_VERSION)
        }
        // The request's own value (ASCII digits and dashes), shared rather than copied.
        Some((sent, Ok(v))) if is_version_date(v) && v >= OLDEST_VERSION => sent.clone(),
        _ => HeaderValue::from_static(DEFAULT_VERSION),
    }
}

/// Checks `x-ms-version`, `DataServiceVersion` and `MaxDataServiceVersion`.
pub fn check_versions(headers: &HeaderMap) -> Result<(), ApiError> {
    if let Some(v) = headers.get(X_MS_VERSION) {
        let text = v.to_str().unwrap_or("");
        if !is_version_date(text) {
            return Err(ApiError::new(
                ErrorCode::InvalidHeaderValue,
                format!("x-ms-version `{text}` is not a version date YYYY-MM-DD"),
            ));
        }
        if text < OLDEST_VERSION {
            return Err(ApiError::new(
                ErrorCode::InvalidHeaderValue,
                format!(
                    "x-ms-version {text} predates JSON payloads; use {OLDEST_VERSION} or later"
                ),
            ));
        }
    }
    for name in [DATA_SERVICE_VERSION, MAX_DATA_SERVICE_VERSION] {
        if let Some(v) = headers.get(&name) {
            let text = v.to_str().unwrap_or("");
            let version = text.trim();
            let version = version.strip_suffix(';').unwrap_or(version).trim_end();
            let version = match version.split_once(';') {
                Some((v, suffix)) if suffix.trim().eq_ignore_ascii_case("netfx") => v.trim(),
                Some(_) => "",
                None => version,
            };
            if !matches!(version, "1.0" | "2.0" | "3.0") {
                return Err(ApiError::new(
                    ErrorCode::InvalidHeaderValue,
                    format!(
                        "{} `{text}` is not one of 1.0, 2.0, 3.0 (optionally followed by ;NetFx)",
                        if name == DATA_SERVICE_VERSION {
                            "DataServiceVersion"
                        } else {
                            "MaxDataServiceVersion"
                        }
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The method a request asks for: `X-HTTP-Method` (`MERGE`, `PATCH`, `PUT`, `DELETE`)
/// overrides `POST`; on other methods the header is ignored.
pub fn effective_method(method: &Method, headers: &HeaderMap) -> Result<Method, ApiError> {
    if method != Method::POST {
        return Ok(method.clone());
    }
    let Some(value) = headers.get("x-http-method") else {
        return Ok(Method::POST);
    };
    let text = value.to_str().unwrap_or("").trim();
    match text.to_ascii_uppercase().as_str() {
        "MERGE" => Method::from_bytes(b"MERGE").map_err(|e| ApiError::internal(e.to_string())),
        "PATCH" => Ok(Method::PATCH),
        "PUT" => Ok(Method::PUT),
        "DELETE" => Ok(Method::DELETE),
        _ => Err(ApiError::new(
            ErrorCode::InvalidHeaderValue,
            format!("X-HTTP-Method `{text}` is not one of MERGE, PATCH, PUT, DELETE"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(accept: &str) -> Result<MetadataLevel, u16> {
        let v = HeaderValue::from_str(accept).unwrap();
        response_level(Some(&v), None).map_err(|e| e.status().as_u16())
    }

    /// `classify` as first written: the essence lower-cased into a new string.
    fn classify_lowered(media: &str) -> &'static str {
        let essence = media
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json" | "json" | "*/*" | "application/*" => "json",
            e if e.contains("xml") || e.contains("atom") => "xml",
            _ => "other",
        }
    }

    #[test]
    fn essences_compare_in_any_ascii_case() {
        for media in [
            "application/json",
            "APPLICATION/JSON;odata=nometadata",
            " Json ",
            "*/*",
            "Application/*",
            "application/atom+xml",
            "TEXT/XML",
            "application/ATOM",
            "xm",
            "",
            "application/jsonx",
            "application/xmł",
            "ÄTOM/xML",
            "text/plain",
        ] {
            let got = match classify(media) {
                Media::Json(_) => "json",
                Media::Xml => "xml",
                Media::BadLevel(_) | Media::Other => "other",
            };
            assert_eq!(got, classify_lowered(media), "{media}");
        }
    }

    #[test]
    fn accept_forms() {
        use MetadataLevel::*;
        assert_eq!(level("application/json"), Ok(MinimalMetadata));
        assert_eq!(level("application/json;odata=nometadata"), Ok(NoMetadata));
        assert_eq!(
            level("application/json; odata=FullMetadata"),
            Ok(FullMetadata)
        );
        assert_eq!(level("*/*"), Ok(MinimalMetadata));
        assert_eq!(level(""), Ok(MinimalMetadata));
        assert_eq!(
            level("application/atom+xml, application/json;odata=nometadata"),
            Ok(NoMetadata)
        );
        assert_eq!(level("application/atom+xml"), Err(415));
        assert_eq!(level("application/xml"), Err(415));
        assert_eq!(level("text/html"), Err(415));
        assert_eq!(level("application/json;odata=verbose"), Err(400));
        assert_eq!(level("application/json;q=0"), Err(415));
        assert_eq!(response_level(None, None), Ok(MinimalMetadata));
    }

    #[test]
    fn format_forms() {
        use MetadataLevel::*;
        let f = |s| response_level(None, Some(s)).map_err(|e| e.status().as_u16());
        assert_eq!(f("application/json;odata=fullmetadata"), Ok(FullMetadata));
        assert_eq!(f("json"), Ok(MinimalMetadata));
        assert_eq!(f("atom"), Err(415));
        assert_eq!(f("csv"), Err(400));
    }

    #[test]
    fn versions() {
        let mut h = HeaderMap::new();
        h.insert("x-ms-version", HeaderValue::from_static("2019-02-02"));
        h.insert("dataserviceversion", HeaderValue::from_static("3.0;NetFx"));
        h.insert("maxdataserviceversion", HeaderValue::from_static("3.0"));
        assert!(check_versions(&h).is_ok());
        assert_eq!(response_version(&h), "2019-02-02");
        h.insert("maxdataserviceversion", HeaderValue::from_static("3.0;"));
        assert!(check_versions(&h).is_ok());
        h.insert("dataserviceversion", HeaderValue::from_static("4.0"));
        assert!(check_versions(&h).is_err());
        h.insert("dataserviceversion", HeaderValue::from_static("3.0;Foo"));
        assert!(check_versions(&h).is_err());
        h.remove("dataserviceversion");
        h.insert("x-ms-version", HeaderValue::from_static("2011-08-18"));
        assert_eq!(check_versions(&h).unwrap_err().code(), "InvalidHeaderValue");
        assert_eq!(response_version(&h), DEFAULT_VERSION);
        h.insert("x-ms-version", HeaderValue::from_static("latest"));
        assert!(check_versions(&h).is_err());
        // A version newer than any this server knows is served as the newest it knows.
        h.insert("x-ms-version", HeaderValue::from_static("2099-12-31"));
        assert!(check_versions(&h).is_ok());
        assert_eq!(response_version(&h), NEWEST_VERSION);
    }

    #[test]
    fn prefer_and_override() {
        let mut h = HeaderMap::new();
        assert_eq!(prefer(&h), None);
        h.insert("prefer", HeaderValue::from_static("return-no-content"));
        assert_eq!(prefer(&h), Some(Prefer::ReturnNoContent));
        h.insert(
            "prefer",
            HeaderValue::from_static("odata.maxpagesize=3, return-content"),
        );
        assert_eq!(prefer(&h), Some(Prefer::ReturnContent));
        h.insert("x-http-method", HeaderValue::from_static("MERGE"));
        assert_eq!(
            effective_method(&Method::POST, &h).unwrap().as_str(),
            "MERGE"
        );
        assert_eq!(effective_method(&Method::GET, &h).unwrap(), Method::GET);
        h.insert("x-http-method", HeaderValue::from_static("FOO"));
        assert!(effective_method(&Method::POST, &h).is_err());
    }

    #[test]
    fn body_content_types() {
        let mut h = HeaderMap::new();
        assert!(check_body_content_type(&h).is_ok());
        h.insert(
            "content-type",
            HeaderValue::from_static("application/json;odata=nometadata"),
        );
        assert!(check_body_content_type(&h).is_ok());
        h.insert(
            "content-type",
            HeaderValue::from_static("application/atom+xml"),
        );
        assert_eq!(
            check_body_content_type(&h).unwrap_err().status().as_u16(),
            415
        );
        h.insert("content-type", HeaderValue::from_static("text/plain"));
        assert_eq!(
            check_body_content_type(&h).unwrap_err().code(),
            "InvalidContentType"
        );
    }
}
