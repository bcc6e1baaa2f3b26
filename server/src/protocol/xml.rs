//! The XML of the administration operations, and only that: `StorageServiceProperties`,
//! `StorageServiceStats` and `SignedIdentifiers` ↔ the typed values of
//! [`tableq_store::service`] and [`tableq_store::acl`], with quick-xml's serde support
//! (documents are never spliced together as text).
//!
//! Reading is in two steps: the document is deserialised into plain shapes whose leaves
//! are text (a document that is not well-formed XML, or not of the expected shape → 400
//! `InvalidXmlDocument`); then each leaf is converted and checked, naming the element
//! whose value is wrong (→ 400 `InvalidXmlNodeValue`). As the service answers them, more
//! than 5 CORS rules, more than 5 signed identifiers and a retention over 365 days are a
//! malformed document (`InvalidXmlDocument`). Booleans are read in any letter case (the
//! legacy Python SDKs write `True`). Elements the service does not define are ignored, as
//! the service does.
//!
//! A Set of service properties names only the top-level elements it replaces
//! ([`PropertiesUpdate`]): `Logging`, `HourMetrics`, `MinuteMetrics`, `Cors`.
//!
//! ```
//! use tableq_server::xml::{parse_properties, write_properties};
//! use tableq_store::ServiceProperties;
//! let update = parse_properties(
//!     "<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins>\
//!      <AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>60</MaxAgeInSeconds>\
//!      <ExposedHeaders>x-ms-*</ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule></Cors>\
//!      </StorageServiceProperties>",
//! )
//! .unwrap();
//! let props = update.apply(ServiceProperties::default());
//! assert_eq!(props.cors[0].allowed_methods.len(), 2);
//! assert!(write_properties(&props).unwrap().contains("<AllowedMethods>GET,PUT</AllowedMethods>"));
//! assert_eq!(parse_properties("<StorageServiceProperties>").unwrap_err().code(), "InvalidXmlDocument");
//! ```

use serde::{Deserialize, Serialize};
use tableq_model::{DateTime, ErrorCode};
use tableq_store::acl::{AccessPolicy, SignedIdentifier};
use tableq_store::service::{
    CorsMethod, CorsRule, Logging, Metrics, RetentionPolicy, ServiceProperties,
};

use crate::protocol::error::ApiError;
use crate::protocol::formats::{DECLARATION, parse_sas_time};

fn malformed(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidXmlDocument,
        format!("the body is not a {what} XML document: {e}"),
    )
}

fn bad_value(element: &str, value: &str, expected: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidXmlNodeValue,
        format!("<{element}> holds `{value}`: expected {expected}"),
    )
}

fn missing(element: &str, parent: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidXmlDocument,
        format!("<{parent}> has no <{element}>"),
    )
}

fn serialise<T: Serialize>(value: &T) -> Result<String, ApiError> {
    let body = quick_xml::se::to_string(value)
        .map_err(|e| ApiError::internal(format!("cannot write XML: {e}")))?;
    Ok(format!("{DECLARATION}{body}"))
}

// ---------------------------------------------------------------------------------------
// Shapes as read: every leaf is text, every element optional.

#[derive(Debug, Deserialize)]
#[serde(rename = "StorageServiceProperties")]
struct PropertiesIn {
    #[serde(rename = "Logging")]
    logging: Option<LoggingIn>,
    #[serde(rename = "HourMetrics")]
    hour_metrics: Option<MetricsIn>,
    #[serde(rename = "MinuteMetrics")]
    minute_metrics: Option<MetricsIn>,
    #[serde(rename = "Cors")]
    cors: Option<CorsIn>,
}

#[derive(Debug, Deserialize)]
struct LoggingIn {
    #[serde(rename = "Version")]
    version: Option<String>,
    #[serde(rename = "Delete")]
    delete: Option<String>,
    #[serde(rename = "Read")]
    read: Option<String>,
    #[serde(rename = "Write")]
    write: Option<String>,
    #[serde(rename = "RetentionPolicy")]
    retention_policy: Option<RetentionIn>,
}

#[derive(Debug, Deserialize)]
struct MetricsIn {
    #[serde(rename = "Version")]
    version: Option<String>,
    #[serde(rename = "Enabled")]
    enabled: Option<String>,
    #[serde(rename = "IncludeAPIs")]
    include_apis: Option<String>,
    #[serde(rename = "RetentionPolicy")]
    retention_policy: Option<RetentionIn>,
}

#[derive(Debug, Deserialize)]
struct RetentionIn {
    #[serde(rename = "Enabled")]
    enabled: Option<String>,
    #[serde(rename = "Days")]
    days: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct CorsIn {
    #[serde(rename = "CorsRule", default)]
    rules: Vec<CorsRuleIn>,
}

#[derive(Debug, Deserialize)]
struct CorsRuleIn {
    #[serde(rename = "AllowedOrigins")]
    allowed_origins: Option<String>,
    #[serde(rename = "AllowedMethods")]
    allowed_methods: Option<String>,
    #[serde(rename = "AllowedHeaders")]
    allowed_headers: Option<String>,
    #[serde(rename = "ExposedHeaders")]
    exposed_headers: Option<String>,
    #[serde(rename = "MaxAgeInSeconds")]
    max_age_in_seconds: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename = "SignedIdentifiers")]
struct IdentifiersIn {
    #[serde(rename = "SignedIdentifier", default)]
    identifiers: Vec<IdentifierIn>,
}

#[derive(Debug, Deserialize)]
struct IdentifierIn {
    #[serde(rename = "Id")]
    id: Option<String>,
    #[serde(rename = "AccessPolicy")]
    policy: Option<PolicyIn>,
}

#[derive(Debug, Deserialize)]
struct PolicyIn {
    #[serde(rename = "Start")]
    start: Option<String>,
    #[serde(rename = "Expiry")]
    expiry: Option<String>,
    #[serde(rename = "Permission")]
    permission: Option<String>,
}

// ---------------------------------------------------------------------------------------
// Leaf conversions.

fn boolean(element: &str, text: Option<&String>, parent: &str) -> Result<bool, ApiError> {
    let text = text.ok_or_else(|| missing(element, parent))?.trim();
    // In any letter case: the legacy Python SDKs write Python's `True` / `False`.
    if text.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if text.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(bad_value(element, text, "`true` or `false`"))
    }
}

/// The analytics version: `1.0` when left out (the JS SDK's types make it optional).
fn version(text: Option<&String>) -> Result<String, ApiError> {
    let Some(text) = text.map(|t| t.trim()) else {
        return Ok("1.0".into());
    };
    if text.is_empty() {
        return Err(bad_value(
            "Version",
            text,
            "an analytics version such as 1.0",
        ));
    }
    Ok(text.to_owned())
}

/// A retention policy; off when left out (the JS SDK's types make it optional).
fn retention(r: Option<&RetentionIn>, parent: &str) -> Result<RetentionPolicy, ApiError> {
    let Some(r) = r else {
        return Ok(RetentionPolicy::default());
    };
    let enabled = boolean("Enabled", r.enabled.as_ref(), "RetentionPolicy")?;
    let days = match r.days.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(d) => match d.parse::<u32>() {
            Ok(n) if (1..=365).contains(&n) => Some(n),
            // The service answers a retention over 365 days as a malformed document.
            Ok(n) if n > 365 => {
                return Err(ApiError::new(
                    ErrorCode::InvalidXmlDocument,
                    format!("<Days>{n}</Days>: a retention policy keeps at most 365 days"),
                ));
            }
            _ => return Err(bad_value("Days", d, "a number of days from 1 to 365")),
        },
    };
    if enabled && days.is_none() {
        return Err(ApiError::new(
            ErrorCode::InvalidXmlNodeValue,
            format!("<{parent}>: an enabled <RetentionPolicy> needs <Days> (1 to 365)"),
        ));
    }
    Ok(RetentionPolicy {
        enabled,
        days: if enabled { days } else { None },
    })
}

fn metrics(m: &MetricsIn, element: &str) -> Result<Metrics, ApiError> {
    let enabled = boolean("Enabled", m.enabled.as_ref(), element)?;
    let include_apis = match &m.include_apis {
        Some(text) => Some(boolean("IncludeAPIs", Some(text), element)?),
        None if enabled => {
            return Err(ApiError::new(
                ErrorCode::InvalidXmlNodeValue,
                format!("<{element}>: enabled metrics need <IncludeAPIs>"),
            ));
        }
        None => None,
    };
    Ok(Metrics {
        version: version(m.version.as_ref())?,
        enabled,
        include_apis: if enabled { include_apis } else { None },
        retention_policy: retention(m.retention_policy.as_ref(), element)?,
    })
}

/// A comma list, entries trimmed, empty entries dropped.
fn list(text: Option<&String>) -> Vec<String> {
    text.map(|t| {
        t.split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

fn cors_rule(r: &CorsRuleIn) -> Result<CorsRule, ApiError> {
    let origins = list(r.allowed_origins.as_ref());
    if r.allowed_origins.is_none() {
        return Err(missing("AllowedOrigins", "CorsRule"));
    }
    if origins.is_empty() {
        return Err(bad_value(
            "AllowedOrigins",
            "",
            "origins separated by commas, or *",
        ));
    }
    let methods_text = r
        .allowed_methods
        .as_ref()
        .ok_or_else(|| missing("AllowedMethods", "CorsRule"))?;
    let mut methods = Vec::new();
    for name in list(Some(methods_text)) {
        let method = CorsMethod::from_name(&name).ok_or_else(|| {
            bad_value(
                "AllowedMethods",
                &name,
                "methods from DELETE, GET, HEAD, MERGE, POST, OPTIONS, PUT, PATCH",
            )
        })?;
        if !methods.contains(&method) {
            methods.push(method);
        }
    }
    if methods.is_empty() {
        return Err(bad_value(
            "AllowedMethods",
            methods_text,
            "at least one method",
        ));
    }
    let age_text = r
        .max_age_in_seconds
        .as_deref()
        .ok_or_else(|| missing("MaxAgeInSeconds", "CorsRule"))?
        .trim();
    let max_age_in_seconds = age_text
        .parse::<u32>()
        .ok()
        .filter(|&n| i32::try_from(n).is_ok())
        .ok_or_else(|| bad_value("MaxAgeInSeconds", age_text, "a number of seconds"))?;
    Ok(CorsRule {
        allowed_origins: origins,
        allowed_methods: methods,
        allowed_headers: list(r.allowed_headers.as_ref()),
        exposed_headers: list(r.exposed_headers.as_ref()),
        max_age_in_seconds,
    })
}

// ---------------------------------------------------------------------------------------
// Service properties.

/// What a Set Service Properties body replaces: each top-level element it names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PropertiesUpdate {
    /// `Logging`, if named.
    pub logging: Option<Logging>,
    /// `HourMetrics`, if named.
    pub hour_metrics: Option<Metrics>,
    /// `MinuteMetrics`, if named.
    pub minute_metrics: Option<Metrics>,
    /// `Cors`, if named (an empty `<Cors/>` removes every rule).
    pub cors: Option<Vec<CorsRule>>,
}

impl PropertiesUpdate {
    /// `current` with the named elements replaced.
    pub fn apply(self, mut current: ServiceProperties) -> ServiceProperties {
        if let Some(l) = self.logging {
            current.logging = l;
        }
        if let Some(m) = self.hour_metrics {
            current.hour_metrics = m;
        }
        if let Some(m) = self.minute_metrics {
            current.minute_metrics = m;
        }
        if let Some(c) = self.cors {
            current.cors = c;
        }
        current
    }
}

/// Reads a Set Service Properties body (see the module docs for the error codes).
pub fn parse_properties(text: &str) -> Result<PropertiesUpdate, ApiError> {
    let doc: PropertiesIn =
        quick_xml::de::from_str(text).map_err(|e| malformed("StorageServiceProperties", e))?;
    let logging = match &doc.logging {
        None => None,
        Some(l) => Some(Logging {
            version: version(l.version.as_ref())?,
            delete: boolean("Delete", l.delete.as_ref(), "Logging")?,
            read: boolean("Read", l.read.as_ref(), "Logging")?,
            write: boolean("Write", l.write.as_ref(), "Logging")?,
            retention_policy: retention(l.retention_policy.as_ref(), "Logging")?,
        }),
    };
    let hour_metrics = doc
        .hour_metrics
        .as_ref()
        .map(|m| metrics(m, "HourMetrics"))
        .transpose()?;
    let minute_metrics = doc
        .minute_metrics
        .as_ref()
        .map(|m| metrics(m, "MinuteMetrics"))
        .transpose()?;
    let cors = match &doc.cors {
        None => None,
        Some(c) => {
            if c.rules.len() > tableq_store::service::MAX_CORS_RULES {
                // The service answers too many rules as a malformed document.
                return Err(ApiError::new(
                    ErrorCode::InvalidXmlDocument,
                    format!(
                        "<Cors> holds {} rules: at most {} are allowed",
                        c.rules.len(),
                        tableq_store::service::MAX_CORS_RULES
                    ),
                ));
            }
            Some(c.rules.iter().map(cors_rule).collect::<Result<_, _>>()?)
        }
    };
    Ok(PropertiesUpdate {
        logging,
        hour_metrics,
        minute_metrics,
        cors,
    })
}

#[derive(Serialize)]
#[serde(rename = "StorageServiceProperties")]
struct PropertiesOut {
    #[serde(rename = "Logging")]
    logging: LoggingOut,
    #[serde(rename = "HourMetrics")]
    hour_metrics: MetricsOut,
    #[serde(rename = "MinuteMetrics")]
    minute_metrics: MetricsOut,
    #[serde(rename = "Cors")]
    cors: CorsOut,
}

#[derive(Serialize)]
struct LoggingOut {
    #[serde(rename = "Version")]
    version: String,
    #[serde(rename = "Delete")]
    delete: bool,
    #[serde(rename = "Read")]
    read: bool,
    #[serde(rename = "Write")]
    write: bool,
    #[serde(rename = "RetentionPolicy")]
    retention_policy: RetentionOut,
}

#[derive(Serialize)]
struct MetricsOut {
    #[serde(rename = "Version")]
    version: String,
    #[serde(rename = "Enabled")]
    enabled: bool,
    #[serde(rename = "IncludeAPIs", skip_serializing_if = "Option::is_none")]
    include_apis: Option<bool>,
    #[serde(rename = "RetentionPolicy")]
    retention_policy: RetentionOut,
}

#[derive(Serialize)]
struct RetentionOut {
    #[serde(rename = "Enabled")]
    enabled: bool,
    #[serde(rename = "Days", skip_serializing_if = "Option::is_none")]
    days: Option<u32>,
}

#[derive(Serialize)]
struct CorsOut {
    #[serde(rename = "CorsRule")]
    rules: Vec<CorsRuleOut>,
}

#[derive(Serialize)]
struct CorsRuleOut {
    #[serde(rename = "AllowedOrigins")]
    allowed_origins: String,
    #[serde(rename = "AllowedMethods")]
    allowed_methods: String,
    #[serde(rename = "MaxAgeInSeconds")]
    max_age_in_seconds: u32,
    #[serde(rename = "ExposedHeaders")]
    exposed_headers: String,
    #[serde(rename = "AllowedHeaders")]
    allowed_headers: String,
}

fn retention_out(r: &RetentionPolicy) -> RetentionOut {
    RetentionOut {
        enabled: r.enabled,
        days: r.days.filter(|_| r.enabled),
    }
}

fn metrics_out(m: &Metrics) -> MetricsOut {
    MetricsOut {
        version: m.version.clone(),
        enabled: m.enabled,
        include_apis: m.include_apis.filter(|_| m.enabled),
        retention_policy: retention_out(&m.retention_policy),
    }
}

/// The Get Service Properties body.
pub fn write_properties(p: &ServiceProperties) -> Result<String, ApiError> {
    let out = PropertiesOut {
        logging: LoggingOut {
            version: p.logging.version.clone(),
            delete: p.logging.delete,
            read: p.logging.read,
            write: p.logging.write,
            retention_policy: retention_out(&p.logging.retention_policy),
        },
        hour_metrics: metrics_out(&p.hour_metrics),
        minute_metrics: metrics_out(&p.minute_metrics),
        cors: CorsOut {
            rules: p
                .cors
                .iter()
                .map(|r| CorsRuleOut {
                    allowed_origins: r.allowed_origins.join(","),
                    allowed_methods: r
                        .allowed_methods
                        .iter()
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    max_age_in_seconds: r.max_age_in_seconds,
                    exposed_headers: r.exposed_headers.join(","),
                    allowed_headers: r.allowed_headers.join(","),
                })
                .collect(),
        },
    };
    serialise(&out)
}

// ---------------------------------------------------------------------------------------
// Service stats.

#[derive(Serialize)]
#[serde(rename = "StorageServiceStats")]
struct StatsOut {
    #[serde(rename = "GeoReplication")]
    geo_replication: GeoReplicationOut,
}

#[derive(Serialize)]
struct GeoReplicationOut {
    #[serde(rename = "Status")]
    status: &'static str,
    #[serde(rename = "LastSyncTime")]
    last_sync_time: String,
}

/// The Get Service Stats body: replication `live`, last synchronised at `last_sync` (an
/// RFC 1123 date).
pub fn write_stats(last_sync: &str) -> Result<String, ApiError> {
    serialise(&StatsOut {
        geo_replication: GeoReplicationOut {
            status: "live",
            last_sync_time: last_sync.to_owned(),
        },
    })
}

// ---------------------------------------------------------------------------------------
// Table ACLs.

/// A policy time: ISO 8601 UTC with seconds (`2030-01-01T00:00:00Z`, up to 7 fraction
/// digits, or an offset), or the SAS forms `2030-01-01` and `2030-01-01T00:00Z`.
fn policy_time(element: &str, text: &str) -> Result<DateTime, ApiError> {
    let text = text.trim();
    DateTime::parse(text)
        .ok()
        .or_else(|| parse_sas_time(text).and_then(DateTime::from_chrono))
        .ok_or_else(|| bad_value(element, text, "a UTC time such as 2030-01-01T00:00:00Z"))
}

/// A time as the service writes it in `SignedIdentifiers`: 7 fraction digits.
pub fn service_time(t: DateTime) -> String {
    let c = t.to_chrono();
    format!(
        "{}.{:07}Z",
        c.format("%Y-%m-%dT%H:%M:%S"),
        t.ticks().rem_euclid(10_000_000)
    )
}

/// Reads a Set Table ACL body (an empty body removes every policy).
pub fn parse_acl(text: &str) -> Result<Vec<SignedIdentifier>, ApiError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let doc: IdentifiersIn =
        quick_xml::de::from_str(text).map_err(|e| malformed("SignedIdentifiers", e))?;
    if doc.identifiers.len() > tableq_store::acl::MAX_IDENTIFIERS {
        // The service answers too many identifiers as a malformed document.
        return Err(ApiError::new(
            ErrorCode::InvalidXmlDocument,
            format!(
                "<SignedIdentifiers> holds {} identifiers: at most {} are allowed",
                doc.identifiers.len(),
                tableq_store::acl::MAX_IDENTIFIERS
            ),
        ));
    }
    let mut out: Vec<SignedIdentifier> = Vec::with_capacity(doc.identifiers.len());
    for i in &doc.identifiers {
        let id =
            i.id.as_deref()
                .ok_or_else(|| missing("Id", "SignedIdentifier"))?;
        let n = id.chars().count();
        if n == 0 || n > tableq_store::acl::MAX_ID_CHARS {
            return Err(bad_value("Id", id, "an identifier of 1 to 64 characters"));
        }
        if out.iter().any(|o| o.id == id) {
            return Err(bad_value(
                "Id",
                id,
                "an identifier not used by another policy",
            ));
        }
        let mut policy = AccessPolicy::default();
        if let Some(p) = &i.policy {
            fn given(v: &Option<String>) -> Option<&str> {
                v.as_deref().filter(|s| !s.trim().is_empty())
            }
            policy.start = given(&p.start)
                .map(|s| policy_time("Start", s))
                .transpose()?;
            policy.expiry = given(&p.expiry)
                .map(|s| policy_time("Expiry", s))
                .transpose()?;
            if let Some(perm) = given(&p.permission) {
                let perm = perm.trim();
                if perm
                    .chars()
                    .any(|c| !tableq_store::acl::PERMISSIONS.contains(c))
                {
                    return Err(bad_value("Permission", perm, "letters of `raud`"));
                }
                // Kept in the service's order, each letter once.
                let letters: String = tableq_store::acl::PERMISSIONS
                    .chars()
                    .filter(|c| perm.contains(*c))
                    .collect();
                policy.permission = Some(letters);
            }
        }
        out.push(SignedIdentifier {
            id: id.to_owned(),
            policy,
        });
    }
    Ok(out)
}

#[derive(Serialize)]
#[serde(rename = "SignedIdentifiers")]
struct IdentifiersOut {
    #[serde(rename = "SignedIdentifier")]
    identifiers: Vec<IdentifierOut>,
}

#[derive(Serialize)]
struct IdentifierOut {
    #[serde(rename = "Id")]
    id: String,
    /// Absent for an identifier without any policy field (as it was set).
    #[serde(rename = "AccessPolicy", skip_serializing_if = "Option::is_none")]
    policy: Option<PolicyOut>,
}

#[derive(Serialize)]
struct PolicyOut {
    #[serde(rename = "Start", skip_serializing_if = "Option::is_none")]
    start: Option<String>,
    #[serde(rename = "Expiry", skip_serializing_if = "Option::is_none")]
    expiry: Option<String>,
    #[serde(rename = "Permission", skip_serializing_if = "Option::is_none")]
    permission: Option<String>,
}

/// The Get Table ACL body.
pub fn write_acl(identifiers: &[SignedIdentifier]) -> Result<String, ApiError> {
    serialise(&IdentifiersOut {
        identifiers: identifiers
            .iter()
            .map(|i| IdentifierOut {
                id: i.id.clone(),
                policy: (i.policy != AccessPolicy::default()).then(|| PolicyOut {
                    start: i.policy.start.map(service_time),
                    expiry: i.policy.expiry.map(service_time),
                    permission: i.policy.permission.clone(),
                }),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>\
        <Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write>\
        <RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging>\
        <HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs>\
        <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>\
        <MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled>\
        <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>\
        <Cors><CorsRule><AllowedOrigins>http://a.example, http://b.example</AllowedOrigins>\
        <AllowedMethods>GET,MERGE</AllowedMethods><MaxAgeInSeconds>500</MaxAgeInSeconds>\
        <ExposedHeaders>x-ms-meta-*</ExposedHeaders><AllowedHeaders>x-ms-meta-abc,x-ms-meta-data*</AllowedHeaders>\
        </CorsRule></Cors><Unknown>kept out</Unknown></StorageServiceProperties>";

    #[test]
    fn properties_round_trip() {
        let p = parse_properties(FULL)
            .unwrap()
            .apply(ServiceProperties::default());
        assert!(p.logging.delete && p.logging.write && !p.logging.read);
        assert_eq!(p.logging.retention_policy.days, Some(7));
        assert_eq!(p.hour_metrics.include_apis, Some(false));
        assert_eq!(
            p.cors[0].allowed_origins,
            ["http://a.example", "http://b.example"]
        );
        assert_eq!(
            p.cors[0].allowed_methods,
            [CorsMethod::Get, CorsMethod::Merge]
        );
        let text = write_properties(&p).unwrap();
        assert!(text.starts_with(DECLARATION), "{text}");
        let again = parse_properties(&text)
            .unwrap()
            .apply(ServiceProperties::default());
        assert_eq!(again, p);
        // The defaults as the service shows them.
        let default = write_properties(&ServiceProperties::default()).unwrap();
        assert!(
            default.contains(
                "<Logging><Version>1.0</Version><Delete>false</Delete><Read>false</Read>\
             <Write>false</Write><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>\
             </Logging>"
            ),
            "{default}"
        );
        assert!(
            default.contains("<Cors/>") || default.contains("<Cors></Cors>"),
            "{default}"
        );
    }

    #[test]
    fn a_set_replaces_only_what_it_names() {
        let current = parse_properties(FULL)
            .unwrap()
            .apply(ServiceProperties::default());
        let update =
            parse_properties("<StorageServiceProperties><Cors/></StorageServiceProperties>")
                .unwrap();
        assert_eq!(update.cors, Some(Vec::new()));
        let next = update.apply(current.clone());
        assert!(next.cors.is_empty());
        assert_eq!(next.logging, current.logging);
        assert_eq!(next.hour_metrics, current.hour_metrics);
    }

    #[test]
    fn errors_name_the_element() {
        let code = |text: &str| parse_properties(text).unwrap_err().code();
        for malformed in [
            "",
            "not xml",
            "<StorageServiceProperties><Logging></StorageServiceProperties>",
            "<StorageServiceProperties><Logging><Version>1.0</Version></Logging></StorageServiceProperties>",
            "<StorageServiceProperties><HourMetrics><Version>1.0</Version></HourMetrics></StorageServiceProperties>",
        ] {
            assert_eq!(code(malformed), "InvalidXmlDocument", "{malformed}");
        }
        let rule = |methods: &str, age: &str| {
            format!(
                "<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins>\
                 <AllowedMethods>{methods}</AllowedMethods><MaxAgeInSeconds>{age}</MaxAgeInSeconds>\
                 <ExposedHeaders/><AllowedHeaders/></CorsRule></Cors></StorageServiceProperties>"
            )
        };
        assert!(parse_properties(&rule("GET", "1")).is_ok());
        for bad in [rule("FETCH", "1"), rule("get", "1"), rule("GET", "-1")] {
            assert_eq!(code(&bad), "InvalidXmlNodeValue", "{bad}");
        }
        let six = format!(
            "<StorageServiceProperties><Cors>{}</Cors></StorageServiceProperties>",
            "<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods>\
             <MaxAgeInSeconds>1</MaxAgeInSeconds><ExposedHeaders/><AllowedHeaders/></CorsRule>"
                .repeat(6)
        );
        assert_eq!(code(&six), "InvalidXmlDocument");
        let negative = "<StorageServiceProperties><Logging><Version>1.0</Version><Delete>false</Delete>\
            <Read>false</Read><Write>false</Write><RetentionPolicy><Enabled>true</Enabled><Days>-1</Days>\
            </RetentionPolicy></Logging></StorageServiceProperties>";
        let e = parse_properties(negative).unwrap_err();
        assert_eq!(e.code(), "InvalidXmlNodeValue");
        assert!(e.detail().unwrap().contains("<Days>"), "{e}");
        // Over 365 days: a malformed document, as the service answers it.
        let e = parse_properties(&negative.replace("-1", "366")).unwrap_err();
        assert_eq!(e.code(), "InvalidXmlDocument");
        assert!(parse_properties(&negative.replace("-1", "365")).is_ok());
    }

    #[test]
    fn booleans_in_any_letter_case() {
        let logging = |t: &str, f: &str| {
            format!(
                "<StorageServiceProperties><Logging><Version>1.0</Version><Delete>{t}</Delete>\
                 <Read>{f}</Read><Write>{t}</Write><RetentionPolicy><Enabled>{f}</Enabled>\
                 </RetentionPolicy></Logging></StorageServiceProperties>"
            )
        };
        for (t, f) in [("true", "false"), ("True", "False"), ("TRUE", "FALSE")] {
            let props = parse_properties(&logging(t, f))
                .unwrap()
                .apply(ServiceProperties::default());
            assert!(props.logging.delete && !props.logging.read && props.logging.write);
            assert!(!props.logging.retention_policy.enabled);
        }
        for bad in ["yes", "1", "tru"] {
            let e = parse_properties(&logging(bad, "false")).unwrap_err();
            assert_eq!(e.code(), "InvalidXmlNodeValue", "{bad}");
        }
    }

    #[test]
    fn acls_round_trip() {
        let text = "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers>\
            <SignedIdentifier><Id>readers</Id><AccessPolicy><Start>2030-01-01T00:00:00Z</Start>\
            <Expiry>2031-01-01T00:00:00.5Z</Expiry><Permission>dr</Permission></AccessPolicy></SignedIdentifier>\
            <SignedIdentifier><Id>bare</Id></SignedIdentifier></SignedIdentifiers>";
        let acl = parse_acl(text).unwrap();
        assert_eq!(acl.len(), 2);
        assert_eq!(acl[0].policy.permission.as_deref(), Some("rd"));
        assert_eq!(acl[1].policy, AccessPolicy::default());
        let out = write_acl(&acl).unwrap();
        assert!(
            out.contains("<Start>2030-01-01T00:00:00.0000000Z</Start>"),
            "{out}"
        );
        assert!(
            out.contains("<Expiry>2031-01-01T00:00:00.5000000Z</Expiry>"),
            "{out}"
        );
        assert_eq!(parse_acl(&out).unwrap(), acl);
        assert_eq!(parse_acl("").unwrap(), Vec::new());
        assert_eq!(parse_acl("<SignedIdentifiers/>").unwrap(), Vec::new());
        let id = |id: &str| {
            format!(
                "<SignedIdentifiers><SignedIdentifier><Id>{id}</Id></SignedIdentifier></SignedIdentifiers>"
            )
        };
        assert!(parse_acl(&id(&"x".repeat(64))).is_ok());
        assert_eq!(
            parse_acl(&id(&"x".repeat(65))).unwrap_err().code(),
            "InvalidXmlNodeValue"
        );
        assert_eq!(
            parse_acl("<SignedIdentifiers>").unwrap_err().code(),
            "InvalidXmlDocument"
        );
        let six = format!(
            "<SignedIdentifiers>{}</SignedIdentifiers>",
            (0..6)
                .map(|i| format!("<SignedIdentifier><Id>p{i}</Id></SignedIdentifier>"))
                .collect::<String>()
        );
        assert_eq!(parse_acl(&six).unwrap_err().code(), "InvalidXmlDocument");
    }

    #[test]
    fn stats() {
        let s = write_stats("Wed, 01 Jan 2025 00:00:00 GMT").unwrap();
        assert_eq!(
            s,
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication>\
             <Status>live</Status><LastSyncTime>Wed, 01 Jan 2025 00:00:00 GMT</LastSyncTime>\
             </GeoReplication></StorageServiceStats>"
        );
    }
}
