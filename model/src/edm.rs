//! The eight Edm property types.

use std::fmt;
use std::str::FromStr;

/// One of the eight property types of the Table service.
///
/// The declaration order is the type rank used by the total order of [`crate::Value`]
/// (values of different types sort by this rank first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdmType {
    /// `Edm.Binary`: up to 64 KiB of bytes.
    Binary,
    /// `Edm.Boolean`.
    Boolean,
    /// `Edm.DateTime`: a UTC instant with 100 ns precision.
    DateTime,
    /// `Edm.Double`: IEEE 754 binary64, NaN and infinities included.
    Double,
    /// `Edm.Guid`.
    Guid,
    /// `Edm.Int32`.
    Int32,
    /// `Edm.Int64`.
    Int64,
    /// `Edm.String`: up to 32 K UTF-16 code units.
    String,
}

impl EdmType {
    /// All types, in rank order.
    pub const ALL: [EdmType; 8] = [
        EdmType::Binary,
        EdmType::Boolean,
        EdmType::DateTime,
        EdmType::Double,
        EdmType::Guid,
        EdmType::Int32,
        EdmType::Int64,
        EdmType::String,
    ];

    /// The OData name, e.g. `"Edm.Int64"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EdmType::Binary => "Edm.Binary",
            EdmType::Boolean => "Edm.Boolean",
            EdmType::DateTime => "Edm.DateTime",
            EdmType::Double => "Edm.Double",
            EdmType::Guid => "Edm.Guid",
            EdmType::Int32 => "Edm.Int32",
            EdmType::Int64 => "Edm.Int64",
            EdmType::String => "Edm.String",
        }
    }
}

impl fmt::Display for EdmType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error returned when a string is not one of the eight `Edm.*` names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown type `{0}`: expected one of Edm.Binary, Edm.Boolean, Edm.DateTime, Edm.Double, Edm.Guid, Edm.Int32, Edm.Int64, Edm.String"
)]
pub struct UnknownEdmType(pub String);

impl FromStr for EdmType {
    type Err = UnknownEdmType;

    /// Parses the exact (case-sensitive) OData type name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EdmType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownEdmType(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in EdmType::ALL {
            assert_eq!(t.as_str().parse::<EdmType>(), Ok(t));
        }
        assert!("edm.int32".parse::<EdmType>().is_err());
        assert!("Edm.Single".parse::<EdmType>().is_err());
    }
}
