//! [`SignedIdentifier`] / [`AccessPolicy`]: a table's stored access policies (its ACL), the
//! one typed form in which they exist inside tableq. The server maps them to and from the
//! service's `SignedIdentifiers` XML and resolves a SAS's `si=` against them; every engine
//! stores them with their table ([`crate::Backend::table_acl`]), so they disappear with it,
//! in the JSON form of this module ([`to_stored`] / [`from_stored`]).
//!
//! Invariants ([`validate`], checked by every engine before storing): at most
//! [`MAX_IDENTIFIERS`] identifiers, each `Id` 1–64 characters and unique, permissions a
//! subset of `raud`.
//!
//! ```
//! use tableq_model::DateTime;
//! use tableq_store::acl::{self, AccessPolicy, SignedIdentifier};
//! let policies = vec![SignedIdentifier {
//!     id: "readers".into(),
//!     policy: AccessPolicy {
//!         start: None,
//!         expiry: Some(DateTime::parse("2030-01-01T00:00:00Z").unwrap()),
//!         permission: Some("r".into()),
//!     },
//! }];
//! acl::validate(&policies).unwrap();
//! assert_eq!(acl::from_stored(&acl::to_stored(&policies)).unwrap(), policies);
//! assert!(acl::validate(&vec![policies[0].clone(); 2]).is_err()); // Ids are unique
//! ```

use serde::{Deserialize, Serialize};
use tableq_model::DateTime;

use crate::service::InvalidSetting;

/// Most stored access policies a table may have (the service's limit).
pub const MAX_IDENTIFIERS: usize = 5;
/// Longest policy `Id`, in characters.
pub const MAX_ID_CHARS: usize = 64;
/// The permission letters of a table policy, in the service's order.
pub const PERMISSIONS: &str = "raud";

/// One stored access policy and its `Id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedIdentifier {
    /// The policy's name, which a SAS names in `si=` (1–64 characters).
    pub id: String,
    /// What the policy grants.
    pub policy: AccessPolicy,
}

/// The fields a stored policy may fix for every SAS that names it; each is either in the
/// policy or in the SAS, never both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessPolicy {
    /// When SAS tokens of the policy start to be valid.
    #[serde(with = "ticks")]
    pub start: Option<DateTime>,
    /// When they expire.
    #[serde(with = "ticks")]
    pub expiry: Option<DateTime>,
    /// Their permissions (letters of `raud`).
    pub permission: Option<String>,
}

/// Times in the stored form: .NET ticks (exact to the 100 ns the model keeps).
mod ticks {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use tableq_model::DateTime;

    pub(super) fn serialize<S: Serializer>(t: &Option<DateTime>, s: S) -> Result<S::Ok, S::Error> {
        t.map(DateTime::ticks).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DateTime>, D::Error> {
        match Option::<i64>::deserialize(d)? {
            None => Ok(None),
            Some(t) => DateTime::from_ticks(t)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("{t} ticks is out of range"))),
        }
    }
}

/// Checks the invariants of the module docs.
pub fn validate(identifiers: &[SignedIdentifier]) -> Result<(), InvalidSetting> {
    if identifiers.len() > MAX_IDENTIFIERS {
        return Err(InvalidSetting(format!(
            "{} signed identifiers: at most {MAX_IDENTIFIERS} are allowed",
            identifiers.len()
        )));
    }
    for (i, s) in identifiers.iter().enumerate() {
        let n = s.id.chars().count();
        if n == 0 || n > MAX_ID_CHARS {
            return Err(InvalidSetting(format!(
                "signed identifier Id `{}` has {n} characters: 1 to {MAX_ID_CHARS} are allowed",
                s.id
            )));
        }
        if identifiers[..i].iter().any(|other| other.id == s.id) {
            return Err(InvalidSetting(format!(
                "signed identifier Id `{}` is given more than once",
                s.id
            )));
        }
        if let Some(p) = &s.policy.permission
            && let Some(c) = p.chars().find(|c| !PERMISSIONS.contains(*c))
        {
            return Err(InvalidSetting(format!(
                "signed identifier `{}`: permission `{c}` is not one of `{PERMISSIONS}`",
                s.id
            )));
        }
    }
    Ok(())
}

/// The stored form of a table's policies (JSON text).
pub fn to_stored(identifiers: &[SignedIdentifier]) -> String {
    // Plain data with string keys: serialisation cannot fail.
    serde_json::to_string(identifiers).unwrap_or_default()
}

/// Reads the stored form back.
pub fn from_stored(text: &str) -> Result<Vec<SignedIdentifier>, InvalidSetting> {
    serde_json::from_str(text)
        .map_err(|e| InvalidSetting(format!("stored access policies do not decode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str, permission: Option<&str>) -> SignedIdentifier {
        SignedIdentifier {
            id: name.into(),
            policy: AccessPolicy {
                permission: permission.map(str::to_owned),
                ..AccessPolicy::default()
            },
        }
    }

    #[test]
    fn limits() {
        validate(&[]).unwrap();
        let five: Vec<_> = (0..5).map(|i| id(&format!("p{i}"), Some("raud"))).collect();
        validate(&five).unwrap();
        let mut six = five.clone();
        six.push(id("p5", None));
        assert!(validate(&six).is_err());
        assert!(validate(&[id("", None)]).is_err());
        validate(&[id(&"x".repeat(64), None)]).unwrap();
        assert!(validate(&[id(&"x".repeat(65), None)]).is_err());
        assert!(validate(&[id("a", Some("rw"))]).is_err());
        assert!(validate(&[id("a", None), id("a", None)]).is_err());
    }
}
