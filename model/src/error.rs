//! The Table service's error codes and the model's typed error.

use std::fmt;

/// An error code of the Table service (what the emulator returns in `odata.error.code`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Bad characters in a table name, or a reserved name.
    InvalidResourceName,
    /// A table name of bad length, a DateTime out of range, or another out-of-range input.
    OutOfRangeInput,
    /// A property name that is not a valid identifier.
    PropertyNameInvalid,
    /// A property name longer than 255 UTF-16 code units.
    PropertyNameTooLong,
    /// More than 252 custom properties.
    TooManyProperties,
    /// An entity larger than 1 MiB by the service's size formula.
    EntityTooLarge,
    /// A String or Binary value larger than 64 KiB.
    PropertyValueTooLarge,
    /// A PartitionKey or RowKey longer than 1 KiB.
    KeyValueTooLarge,
    /// PartitionKey or RowKey missing.
    PropertiesNeedValue,
    /// The same property twice in one payload.
    DuplicatePropertiesSpecified,
    /// Any other invalid input: malformed values, forbidden key characters, bad queries.
    InvalidInput,
}

impl ErrorCode {
    /// The code as the service spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidResourceName => "InvalidResourceName",
            ErrorCode::OutOfRangeInput => "OutOfRangeInput",
            ErrorCode::PropertyNameInvalid => "PropertyNameInvalid",
            ErrorCode::PropertyNameTooLong => "PropertyNameTooLong",
            ErrorCode::TooManyProperties => "TooManyProperties",
            ErrorCode::EntityTooLarge => "EntityTooLarge",
            ErrorCode::PropertyValueTooLarge => "PropertyValueTooLarge",
            ErrorCode::KeyValueTooLarge => "KeyValueTooLarge",
            ErrorCode::PropertiesNeedValue => "PropertiesNeedValue",
            ErrorCode::DuplicatePropertiesSpecified => "DuplicatePropertiesSpecified",
            ErrorCode::InvalidInput => "InvalidInput",
        }
    }

    /// The HTTP status the service answers with (all model errors are 400 Bad Request).
    pub const fn http_status(self) -> u16 {
        400
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A data-model violation: the service's error code plus a message that names the offending
/// table, property or value and the limit it broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ModelError {
    /// The service's error code.
    pub code: ErrorCode,
    /// A human-readable explanation.
    pub message: String,
}

impl ModelError {
    /// A new error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ModelError {
        ModelError {
            code,
            message: message.into(),
        }
    }
}
