//! The Table service's error codes (with their HTTP statuses and the service's messages) and
//! the model's typed error.
//!
//! ```
//! use tableq_model::ErrorCode;
//! let code = ErrorCode::EntityAlreadyExists;
//! assert_eq!((code.as_str(), code.http_status()), ("EntityAlreadyExists", 409));
//! assert_eq!(code.service_message(), "The specified entity already exists.");
//! assert_eq!(ErrorCode::from_name("TableNotFound"), Some(ErrorCode::TableNotFound));
//! ```

use std::fmt;

/// An error code of the Table service (what the emulator returns in `odata.error.code` and
/// the `x-ms-error-code` header), covering the data model (`data-model.md`) and the REST
/// protocol (`rest.md`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Bad characters in a table name, or a reserved name. (HTTP 400)
    InvalidResourceName,
    /// A table name of bad length (the service's message is then
    /// [`ErrorCode::TABLE_NAME_LENGTH_MESSAGE`]), a DateTime out of range, or another
    /// out-of-range input. (HTTP 400)
    OutOfRangeInput,
    /// A property name that is not a valid identifier. (HTTP 400)
    PropertyNameInvalid,
    /// A property name longer than 255 UTF-16 code units. (HTTP 400)
    PropertyNameTooLong,
    /// More than 252 custom properties. (HTTP 400)
    TooManyProperties,
    /// An entity larger than 1 MiB by the service's size formula. (HTTP 400)
    EntityTooLarge,
    /// A String or Binary value larger than 64 KiB. (HTTP 400)
    PropertyValueTooLarge,
    /// A PartitionKey or RowKey longer than 1 KiB. (HTTP 400)
    KeyValueTooLarge,
    /// PartitionKey or RowKey missing. (HTTP 400)
    PropertiesNeedValue,
    /// The same property twice in one payload. (HTTP 400)
    DuplicatePropertiesSpecified,
    /// Any other invalid input: malformed values, forbidden key characters, bad queries, a
    /// malformed `If-Match`. (HTTP 400)
    InvalidInput,
    /// A request path that names no resource of the protocol. (HTTP 400)
    InvalidUri,
    /// A header whose value is malformed (e.g. `x-ms-version`, `Content-Length`). (HTTP 400)
    InvalidHeaderValue,
    /// A malformed query parameter (e.g. a continuation token that does not decode). (HTTP 400)
    InvalidQueryParameterValue,
    /// A query option the Table service does not support (`$orderby`, `$skip`, …). (HTTP 400)
    UnsupportedQueryParameter,
    /// A body whose `Content-Type` is not one the operation accepts. (HTTP 400)
    InvalidContentType,
    /// The same entity twice in one batch. (HTTP 400)
    InvalidDuplicateRow,
    /// A batch whose operations name more than one PartitionKey. (HTTP 400)
    CommandsInBatchActOnDifferentPartitions,
    /// A `$batch` body that is not a well-formed multipart changeset, or holds more than 100 operations. (HTTP 400)
    InvalidBatchRequest,
    /// A missing, malformed or wrong signature, an unknown account, or a SAS outside its validity, permissions or key range. (HTTP 403)
    AuthenticationFailed,
    /// A bearer token that cannot be accepted (bad signature, issuer, audience, lifetime). (HTTP 401)
    InvalidAuthenticationInfo,
    /// No entity with the given keys (get, update, merge, delete), or no table of that name on delete. (HTTP 404)
    ResourceNotFound,
    /// An entity operation on a table that does not exist. (HTTP 404)
    TableNotFound,
    /// An HTTP method the resource does not support. (HTTP 405)
    MethodNotAllowed,
    /// An insert whose keys are taken. (HTTP 409)
    EntityAlreadyExists,
    /// A table name taken (case-insensitively). (HTTP 409)
    TableAlreadyExists,
    /// An `If-Match` ETag that is not the entity's current one. (HTTP 412)
    UpdateConditionNotSatisfied,
    /// A request body over the limit (4 MiB for a batch). (HTTP 413)
    RequestBodyTooLarge,
    /// An `Accept` or `Content-Type` asking for a format other than JSON (Atom/XML). (HTTP 415)
    UnsupportedMediaType,
    /// A request outside what its SAS reaches: another table, or keys outside its PartitionKey/RowKey range. (HTTP 403)
    AuthorizationFailure,
    /// A valid SAS without the permission the operation needs (e.g. a read-only SAS used to insert). (HTTP 403)
    AuthorizationPermissionMismatch,
    /// An account SAS whose resource types (`srt`) lack the one the operation needs. (HTTP 403)
    AuthorizationResourceTypeMismatch,
    /// A SAS whose allowed addresses (`sip`) do not include the caller's. (HTTP 403)
    AuthorizationSourceIPMismatch,
    /// A SAS that allows only HTTPS (`spr=https`) used over HTTP. (HTTP 403)
    AuthorizationProtocolMismatch,
    /// A CORS preflight (`OPTIONS`) that no CORS rule of the account allows. (HTTP 403)
    CorsPreflightFailure,
    /// An XML request body that is not well-formed or not of the expected shape. (HTTP 400)
    InvalidXmlDocument,
    /// An XML element whose value is not allowed (e.g. a sixth CORS rule, an unknown method, negative days). (HTTP 400)
    InvalidXmlNodeValue,
    /// A failure inside the server or its storage (not the client's fault). (HTTP 500)
    InternalError,
    /// A request that ran out of time. (HTTP 500)
    OperationTimedOut,
    /// The server is shutting down or overloaded. (HTTP 503)
    ServerBusy,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::InvalidResourceName,
        ErrorCode::OutOfRangeInput,
        ErrorCode::PropertyNameInvalid,
        ErrorCode::PropertyNameTooLong,
        ErrorCode::TooManyProperties,
        ErrorCode::EntityTooLarge,
        ErrorCode::PropertyValueTooLarge,
        ErrorCode::KeyValueTooLarge,
        ErrorCode::PropertiesNeedValue,
        ErrorCode::DuplicatePropertiesSpecified,
        ErrorCode::InvalidInput,
        ErrorCode::InvalidUri,
        ErrorCode::InvalidHeaderValue,
        ErrorCode::InvalidQueryParameterValue,
        ErrorCode::UnsupportedQueryParameter,
        ErrorCode::InvalidContentType,
        ErrorCode::InvalidDuplicateRow,
        ErrorCode::CommandsInBatchActOnDifferentPartitions,
        ErrorCode::InvalidBatchRequest,
        ErrorCode::AuthenticationFailed,
        ErrorCode::InvalidAuthenticationInfo,
        ErrorCode::ResourceNotFound,
        ErrorCode::TableNotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::EntityAlreadyExists,
        ErrorCode::TableAlreadyExists,
        ErrorCode::UpdateConditionNotSatisfied,
        ErrorCode::RequestBodyTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::AuthorizationFailure,
        ErrorCode::AuthorizationPermissionMismatch,
        ErrorCode::AuthorizationResourceTypeMismatch,
        ErrorCode::AuthorizationSourceIPMismatch,
        ErrorCode::AuthorizationProtocolMismatch,
        ErrorCode::CorsPreflightFailure,
        ErrorCode::InvalidXmlDocument,
        ErrorCode::InvalidXmlNodeValue,
        ErrorCode::InternalError,
        ErrorCode::OperationTimedOut,
        ErrorCode::ServerBusy,
    ];

    /// The service's message for `OutOfRangeInput` when a table name has a bad length (the
    /// Python SDK recognises this sentence).
    pub const TABLE_NAME_LENGTH_MESSAGE: &'static str =
        "The specified resource name length is not within the permissible limits.";

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
            ErrorCode::InvalidUri => "InvalidUri",
            ErrorCode::InvalidHeaderValue => "InvalidHeaderValue",
            ErrorCode::InvalidQueryParameterValue => "InvalidQueryParameterValue",
            ErrorCode::UnsupportedQueryParameter => "UnsupportedQueryParameter",
            ErrorCode::InvalidContentType => "InvalidContentType",
            ErrorCode::InvalidDuplicateRow => "InvalidDuplicateRow",
            ErrorCode::CommandsInBatchActOnDifferentPartitions => {
                "CommandsInBatchActOnDifferentPartitions"
            }
            ErrorCode::InvalidBatchRequest => "InvalidBatchRequest",
            ErrorCode::AuthenticationFailed => "AuthenticationFailed",
            ErrorCode::InvalidAuthenticationInfo => "InvalidAuthenticationInfo",
            ErrorCode::ResourceNotFound => "ResourceNotFound",
            ErrorCode::TableNotFound => "TableNotFound",
            ErrorCode::MethodNotAllowed => "MethodNotAllowed",
            ErrorCode::EntityAlreadyExists => "EntityAlreadyExists",
            ErrorCode::TableAlreadyExists => "TableAlreadyExists",
            ErrorCode::UpdateConditionNotSatisfied => "UpdateConditionNotSatisfied",
            ErrorCode::RequestBodyTooLarge => "RequestBodyTooLarge",
            ErrorCode::UnsupportedMediaType => "UnsupportedMediaType",
            ErrorCode::AuthorizationFailure => "AuthorizationFailure",
            ErrorCode::AuthorizationPermissionMismatch => "AuthorizationPermissionMismatch",
            ErrorCode::AuthorizationResourceTypeMismatch => "AuthorizationResourceTypeMismatch",
            ErrorCode::AuthorizationSourceIPMismatch => "AuthorizationSourceIPMismatch",
            ErrorCode::AuthorizationProtocolMismatch => "AuthorizationProtocolMismatch",
            ErrorCode::CorsPreflightFailure => "CorsPreflightFailure",
            ErrorCode::InvalidXmlDocument => "InvalidXmlDocument",
            ErrorCode::InvalidXmlNodeValue => "InvalidXmlNodeValue",
            ErrorCode::InternalError => "InternalError",
            ErrorCode::OperationTimedOut => "OperationTimedOut",
            ErrorCode::ServerBusy => "ServerBusy",
        }
    }

    /// The code for its name as the service spells it (exact case).
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)
    }

    /// The HTTP status the service answers with.
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidResourceName
            | ErrorCode::OutOfRangeInput
            | ErrorCode::PropertyNameInvalid
            | ErrorCode::PropertyNameTooLong
            | ErrorCode::TooManyProperties
            | ErrorCode::EntityTooLarge
            | ErrorCode::PropertyValueTooLarge
            | ErrorCode::KeyValueTooLarge
            | ErrorCode::PropertiesNeedValue
            | ErrorCode::DuplicatePropertiesSpecified
            | ErrorCode::InvalidInput
            | ErrorCode::InvalidUri
            | ErrorCode::InvalidHeaderValue
            | ErrorCode::InvalidQueryParameterValue
            | ErrorCode::UnsupportedQueryParameter
            | ErrorCode::InvalidContentType
            | ErrorCode::InvalidDuplicateRow
            | ErrorCode::CommandsInBatchActOnDifferentPartitions
            | ErrorCode::InvalidBatchRequest
            | ErrorCode::InvalidXmlDocument
            | ErrorCode::InvalidXmlNodeValue => 400,
            ErrorCode::AuthenticationFailed
            | ErrorCode::AuthorizationFailure
            | ErrorCode::AuthorizationPermissionMismatch
            | ErrorCode::AuthorizationResourceTypeMismatch
            | ErrorCode::AuthorizationSourceIPMismatch
            | ErrorCode::AuthorizationProtocolMismatch
            | ErrorCode::CorsPreflightFailure => 403,
            ErrorCode::InvalidAuthenticationInfo => 401,
            ErrorCode::ResourceNotFound | ErrorCode::TableNotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::EntityAlreadyExists | ErrorCode::TableAlreadyExists => 409,
            ErrorCode::UpdateConditionNotSatisfied => 412,
            ErrorCode::RequestBodyTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::InternalError | ErrorCode::OperationTimedOut => 500,
            ErrorCode::ServerBusy => 503,
        }
    }

    /// The service's own message for the code (the first line of `odata.error.message`),
    /// where it is known; SDKs match on some of them.
    pub const fn service_message(self) -> &'static str {
        match self {
            ErrorCode::InvalidResourceName => {
                "The specified resource name contains invalid characters."
            }
            ErrorCode::OutOfRangeInput => "One of the request inputs is out of range.",
            ErrorCode::PropertyNameInvalid => "The property name is invalid.",
            ErrorCode::PropertyNameTooLong => {
                "The property name exceeds the maximum allowed length."
            }
            ErrorCode::TooManyProperties => "The entity contains more properties than allowed.",
            ErrorCode::EntityTooLarge => "The entity is larger than the maximum size permitted.",
            ErrorCode::PropertyValueTooLarge => {
                "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."
            }
            ErrorCode::KeyValueTooLarge => "The key value exceeds the maximum allowed size (1KB).",
            ErrorCode::PropertiesNeedValue => {
                "The values are not specified for all properties in the entity."
            }
            ErrorCode::DuplicatePropertiesSpecified => {
                "A property is specified more than one time."
            }
            ErrorCode::InvalidInput => "One of the request inputs is not valid.",
            ErrorCode::InvalidUri => {
                "The requested URI does not represent any resource on the server."
            }
            ErrorCode::InvalidHeaderValue => {
                "The value for one of the HTTP headers is not in the correct format."
            }
            ErrorCode::InvalidQueryParameterValue => {
                "An invalid value was specified for one of the query parameters in the request URI."
            }
            ErrorCode::UnsupportedQueryParameter => {
                "One of the query parameters specified in the request URI is not supported."
            }
            ErrorCode::InvalidContentType => "The value of the Content-Type header is invalid.",
            ErrorCode::InvalidDuplicateRow => {
                "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."
            }
            ErrorCode::CommandsInBatchActOnDifferentPartitions => {
                "All commands in a batch must operate on same entity group."
            }
            ErrorCode::InvalidBatchRequest => "The batch request is invalid.",
            ErrorCode::AuthenticationFailed => {
                "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."
            }
            ErrorCode::InvalidAuthenticationInfo => {
                "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."
            }
            ErrorCode::ResourceNotFound => "The specified resource does not exist.",
            ErrorCode::TableNotFound => "The table specified does not exist.",
            ErrorCode::MethodNotAllowed => {
                "The requested method is not allowed on the specified resource."
            }
            ErrorCode::EntityAlreadyExists => "The specified entity already exists.",
            ErrorCode::TableAlreadyExists => "The table specified already exists.",
            ErrorCode::UpdateConditionNotSatisfied => {
                "The update condition specified in the request was not satisfied."
            }
            ErrorCode::RequestBodyTooLarge => {
                "The request body is too large and exceeds the maximum permissible limit."
            }
            ErrorCode::UnsupportedMediaType => {
                "The media type of the request is not supported. Only JSON is supported."
            }
            ErrorCode::AuthorizationFailure => {
                "This request is not authorized to perform this operation."
            }
            ErrorCode::AuthorizationPermissionMismatch => {
                "This request is not authorized to perform this operation using this permission."
            }
            ErrorCode::AuthorizationResourceTypeMismatch => {
                "This request is not authorized to perform this operation using this resource type."
            }
            ErrorCode::AuthorizationSourceIPMismatch => {
                "This request is not authorized to perform this operation using this source IP."
            }
            ErrorCode::AuthorizationProtocolMismatch => {
                "This request is not authorized to perform this operation using this protocol."
            }
            ErrorCode::CorsPreflightFailure => {
                "CORS not enabled or no matching rule found for this request."
            }
            ErrorCode::InvalidXmlDocument => "XML specified is not syntactically valid.",
            ErrorCode::InvalidXmlNodeValue => {
                "The value for one of the XML nodes is not in the correct format."
            }
            ErrorCode::InternalError => {
                "The server encountered an internal error. Please retry the request."
            }
            ErrorCode::OperationTimedOut => {
                "The operation could not be completed within the permitted time."
            }
            ErrorCode::ServerBusy => {
                "The server is currently unable to receive requests. Please retry your request."
            }
        }
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

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn names_round_trip_and_are_unique() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_name(code.as_str()), Some(*code));
            assert!(!code.service_message().is_empty());
        }
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
        assert_eq!(ErrorCode::from_name("tablenotfound"), None);
    }

    #[test]
    fn statuses_follow_the_spec() {
        use ErrorCode::*;
        let expect = [
            (InvalidResourceName, 400),
            (OutOfRangeInput, 400),
            (InvalidInput, 400),
            (PropertiesNeedValue, 400),
            (PropertyNameInvalid, 400),
            (InvalidDuplicateRow, 400),
            (CommandsInBatchActOnDifferentPartitions, 400),
            (AuthenticationFailed, 403),
            (ResourceNotFound, 404),
            (TableNotFound, 404),
            (EntityAlreadyExists, 409),
            (TableAlreadyExists, 409),
            (UpdateConditionNotSatisfied, 412),
            (RequestBodyTooLarge, 413),
            (InternalError, 500),
        ];
        for (code, status) in expect {
            assert_eq!(code.http_status(), status, "{code}");
        }
    }

    #[test]
    fn messages_are_the_services() {
        assert_eq!(
            ErrorCode::AuthenticationFailed.service_message(),
            "Server failed to authenticate the request. Make sure the value of Authorization \
             header is formed correctly including the signature."
        );
        assert_eq!(
            ErrorCode::InvalidResourceName.service_message(),
            "The specified resource name contains invalid characters."
        );
        assert_eq!(
            ErrorCode::TABLE_NAME_LENGTH_MESSAGE,
            "The specified resource name length is not within the permissible limits."
        );
    }
}
