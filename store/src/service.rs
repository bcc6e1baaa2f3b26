//! [`ServiceProperties`]: an account's Table service properties — logging, hour and minute
//! metrics, and CORS rules — as one typed value, the only form in which they exist inside
//! tableq. The server maps them to and from the service's XML; every engine stores them
//! per account ([`crate::Backend::service_properties`]) in the JSON form of this module
//! ([`ServiceProperties::to_stored`] / [`ServiceProperties::from_stored`]).
//!
//! Invariants (checked by [`ServiceProperties::validate`], which every engine calls before
//! storing): at most [`MAX_CORS_RULES`] CORS rules, each with at least one origin and one
//! method, header lists of at most 64 entries, at most 2 KiB of text per list; retention
//! days 1–365 when a retention policy is enabled.
//!
//! ```
//! use tableq_store::service::{CorsMethod, CorsRule, ServiceProperties};
//! let mut props = ServiceProperties::default();
//! assert!(!props.logging.read && props.cors.is_empty());
//! props.cors.push(CorsRule {
//!     allowed_origins: vec!["https://app.example".into()],
//!     allowed_methods: vec![CorsMethod::Get, CorsMethod::Put],
//!     allowed_headers: vec!["x-ms-*".into()],
//!     exposed_headers: vec!["*".into()],
//!     max_age_in_seconds: 60,
//! });
//! props.validate().unwrap();
//! let stored = props.to_stored();
//! assert_eq!(ServiceProperties::from_stored(&stored).unwrap(), props);
//! ```

use serde::{Deserialize, Serialize};

/// Most CORS rules an account may have (the service's limit).
pub const MAX_CORS_RULES: usize = 5;
/// Most entries in one of a rule's header lists.
const MAX_LIST_ENTRIES: usize = 64;
/// Most characters of one of a rule's lists (the service counts 256 per header entry and
/// 2 KiB for the whole list).
const MAX_LIST_CHARS: usize = 2048;

/// Why a value cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSetting(pub String);

/// An account's Table service properties (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceProperties {
    /// Analytics logging settings.
    pub logging: Logging,
    /// Hourly metrics settings.
    pub hour_metrics: Metrics,
    /// Minute metrics settings.
    pub minute_metrics: Metrics,
    /// CORS rules, in the order they are matched (at most [`MAX_CORS_RULES`]).
    pub cors: Vec<CorsRule>,
}

/// Analytics logging settings (kept and returned; tableq writes no logs for them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Logging {
    /// The analytics version, e.g. `1.0`.
    pub version: String,
    /// Log delete requests.
    pub delete: bool,
    /// Log read requests.
    pub read: bool,
    /// Log write requests.
    pub write: bool,
    /// How long logs are kept.
    pub retention_policy: RetentionPolicy,
}

impl Default for Logging {
    /// Logging off, version 1.0 (the service's state before anything is set).
    fn default() -> Logging {
        Logging {
            version: "1.0".into(),
            delete: false,
            read: false,
            write: false,
            retention_policy: RetentionPolicy::default(),
        }
    }
}

/// Hour or minute metrics settings (kept and returned; tableq computes no metrics for them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    /// The analytics version, e.g. `1.0`.
    pub version: String,
    /// Whether metrics are collected.
    pub enabled: bool,
    /// Whether per-API metrics are included (only meaningful when enabled).
    pub include_apis: Option<bool>,
    /// How long metrics are kept.
    pub retention_policy: RetentionPolicy,
}

impl Default for Metrics {
    /// Metrics off, version 1.0.
    fn default() -> Metrics {
        Metrics {
            version: "1.0".into(),
            enabled: false,
            include_apis: None,
            retention_policy: RetentionPolicy::default(),
        }
    }
}

/// A retention policy: off, or on for a number of days.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    /// Whether data is deleted after [`days`](RetentionPolicy::days).
    pub enabled: bool,
    /// Days kept (1–365), when enabled.
    pub days: Option<u32>,
}

/// One CORS rule: which origins may call with which methods and headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorsRule {
    /// Origins allowed (`*` = any), compared case-insensitively.
    pub allowed_origins: Vec<String>,
    /// Methods allowed.
    pub allowed_methods: Vec<CorsMethod>,
    /// Request headers allowed: names, `prefix*`, or `*`.
    pub allowed_headers: Vec<String>,
    /// Response headers exposed to the page: names, `prefix*`, or `*`.
    pub exposed_headers: Vec<String>,
    /// How long a browser may cache the preflight answer.
    pub max_age_in_seconds: u32,
}

/// An HTTP method a CORS rule may allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CorsMethod {
    /// `DELETE`.
    Delete,
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// `MERGE`.
    Merge,
    /// `POST`.
    Post,
    /// `OPTIONS`.
    Options,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
}

impl CorsMethod {
    /// Every method, in the service's documentation order.
    pub const ALL: [CorsMethod; 8] = [
        CorsMethod::Delete,
        CorsMethod::Get,
        CorsMethod::Head,
        CorsMethod::Merge,
        CorsMethod::Post,
        CorsMethod::Options,
        CorsMethod::Put,
        CorsMethod::Patch,
    ];

    /// The method's name in upper case, e.g. `GET`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CorsMethod::Delete => "DELETE",
            CorsMethod::Get => "GET",
            CorsMethod::Head => "HEAD",
            CorsMethod::Merge => "MERGE",
            CorsMethod::Post => "POST",
            CorsMethod::Options => "OPTIONS",
            CorsMethod::Put => "PUT",
            CorsMethod::Patch => "PATCH",
        }
    }

    /// The method named `name` (exact upper case, as the service requires), if any.
    pub fn from_name(name: &str) -> Option<CorsMethod> {
        CorsMethod::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

impl CorsRule {
    /// Whether the rule allows requests from `origin` (`*` allows every origin).
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.allowed_origins
            .iter()
            .any(|o| o == "*" || o.eq_ignore_ascii_case(origin))
    }

    /// Whether the rule allows every origin (`*`).
    pub fn allows_any_origin(&self) -> bool {
        self.allowed_origins.iter().any(|o| o == "*")
    }

    /// Whether the rule allows the method named `method` (case-sensitive, as HTTP methods).
    pub fn allows_method(&self, method: &str) -> bool {
        self.allowed_methods.iter().any(|m| m.as_str() == method)
    }

    /// Whether the rule allows the request header `name` (`*`, an exact name or a
    /// `prefix*` entry; compared case-insensitively).
    pub fn allows_header(&self, name: &str) -> bool {
        list_matches(&self.allowed_headers, name)
    }

    /// Whether the rule exposes the response header `name` to the page.
    pub fn exposes_header(&self, name: &str) -> bool {
        list_matches(&self.exposed_headers, name)
    }

    fn validate(&self, index: usize) -> Result<(), InvalidSetting> {
        let bad = |what: String| Err(InvalidSetting(format!("CORS rule {}: {what}", index + 1)));
        if self.allowed_origins.iter().all(|o| o.trim().is_empty()) {
            return bad("AllowedOrigins is empty: name origins or `*`".into());
        }
        if self.allowed_methods.is_empty() {
            return bad("AllowedMethods is empty".into());
        }
        for (name, list) in [
            ("AllowedOrigins", &self.allowed_origins),
            ("AllowedHeaders", &self.allowed_headers),
            ("ExposedHeaders", &self.exposed_headers),
        ] {
            let chars: usize = list.iter().map(|e| e.chars().count() + 1).sum();
            if chars > MAX_LIST_CHARS {
                return bad(format!("{name} is longer than {MAX_LIST_CHARS} characters"));
            }
            if name != "AllowedOrigins" && list.len() > MAX_LIST_ENTRIES {
                return bad(format!("{name} has more than {MAX_LIST_ENTRIES} entries"));
            }
            if let Some(e) = list.iter().find(|e| e.contains('*') && !e.ends_with('*')) {
                return bad(format!(
                    "{name} entry `{e}`: `*` may only end an entry (`prefix*`) or be alone"
                ));
            }
        }
        Ok(())
    }
}

/// Whether a header list (`*`, names, `prefix*`) matches `name`, case-insensitively.
fn list_matches(list: &[String], name: &str) -> bool {
    let name = name.trim();
    list.iter().any(|entry| match entry.strip_suffix('*') {
        Some(prefix) => name
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix)),
        None => entry.eq_ignore_ascii_case(name),
    })
}

impl RetentionPolicy {
    fn validate(&self, what: &str) -> Result<(), InvalidSetting> {
        match (self.enabled, self.days) {
            (true, None) => Err(InvalidSetting(format!(
                "{what}: an enabled retention policy needs Days (1-365)"
            ))),
            (true, Some(d)) if !(1..=365).contains(&d) => Err(InvalidSetting(format!(
                "{what}: retention Days {d} is not within 1-365"
            ))),
            _ => Ok(()),
        }
    }
}

impl ServiceProperties {
    /// Checks the invariants of the module docs.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.cors.len() > MAX_CORS_RULES {
            return Err(InvalidSetting(format!(
                "{} CORS rules: at most {MAX_CORS_RULES} are allowed",
                self.cors.len()
            )));
        }
        for (i, rule) in self.cors.iter().enumerate() {
            rule.validate(i)?;
        }
        self.logging.retention_policy.validate("Logging")?;
        self.hour_metrics.retention_policy.validate("HourMetrics")?;
        self.minute_metrics
            .retention_policy
            .validate("MinuteMetrics")?;
        for (what, version) in [
            ("Logging", &self.logging.version),
            ("HourMetrics", &self.hour_metrics.version),
            ("MinuteMetrics", &self.minute_metrics.version),
        ] {
            if version.trim().is_empty() {
                return Err(InvalidSetting(format!("{what}: Version is empty")));
            }
        }
        Ok(())
    }

    /// The stored form (JSON text).
    pub fn to_stored(&self) -> String {
        // Plain data with string keys: serialisation cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads the stored form back.
    pub fn from_stored(text: &str) -> Result<ServiceProperties, InvalidSetting> {
        serde_json::from_str(text)
            .map_err(|e| InvalidSetting(format!("stored service properties do not decode: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> CorsRule {
        CorsRule {
            allowed_origins: vec!["http://a.example".into()],
            allowed_methods: vec![CorsMethod::Get],
            allowed_headers: vec!["x-ms-*".into(), "content-type".into()],
            exposed_headers: vec![],
            max_age_in_seconds: 5,
        }
    }

    #[test]
    fn rules_match_origins_methods_and_headers() {
        let r = rule();
        assert!(r.allows_origin("HTTP://A.example"));
        assert!(!r.allows_origin("http://b.example"));
        assert!(r.allows_method("GET") && !r.allows_method("PUT") && !r.allows_method("get"));
        assert!(r.allows_header("X-MS-Version") && r.allows_header("Content-Type"));
        assert!(!r.allows_header("x-custom") && !r.exposes_header("etag"));
        let any = CorsRule {
            allowed_origins: vec!["*".into()],
            exposed_headers: vec!["*".into()],
            ..rule()
        };
        assert!(
            any.allows_any_origin() && any.allows_origin("http://x") && any.exposes_header("etag")
        );
    }

    #[test]
    fn validation_limits() {
        let mut p = ServiceProperties::default();
        p.validate().unwrap();
        p.cors = vec![rule(); 5];
        p.validate().unwrap();
        p.cors.push(rule());
        assert!(p.validate().unwrap_err().0.contains("at most 5"));
        p.cors = vec![CorsRule {
            allowed_methods: vec![],
            ..rule()
        }];
        assert!(p.validate().is_err());
        p.cors = vec![CorsRule {
            allowed_headers: vec!["a*b".into()],
            ..rule()
        }];
        assert!(p.validate().is_err());
        p.cors.clear();
        p.logging.retention_policy = RetentionPolicy {
            enabled: true,
            days: Some(0),
        };
        assert!(p.validate().is_err());
        p.logging.retention_policy.days = Some(365);
        p.validate().unwrap();
        assert_eq!(CorsMethod::from_name("MERGE"), Some(CorsMethod::Merge));
        assert_eq!(CorsMethod::from_name("get"), None);
    }
}
