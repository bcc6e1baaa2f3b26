//! The decoding rules both JSON decoders share — the [`DecodeOptions`], how a payload key
//! is classified ([`classify`]), and how an annotated text converts to its Edm type
//! ([`from_string`], [`finite_double`]) with the service's error messages — so that the
//! full decoder (`decode`) and its fast path (`borrowed`) cannot drift apart.

use crate::validate::excerpt;
use crate::{DateTime, DateTimeError, EdmType, ErrorCode, ModelError, Value};
use base64::Engine;

/// How to decode an entity payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DecodeOptions {
    /// Keep the payload's `Timestamp` (`true` for entities read from a file, where the
    /// Timestamp is the stored value) or ignore it entirely (`false`, the default: writes
    /// through the service ignore a payload Timestamp, whatever it contains).
    pub keep_timestamp: bool,
}

impl DecodeOptions {
    /// The service's rules for write payloads: a payload Timestamp is ignored.
    pub const SERVICE: DecodeOptions = DecodeOptions {
        keep_timestamp: false,
    };
    /// The rules for stored entities read from files: the Timestamp is kept (and must be a
    /// valid DateTime).
    pub const STORED: DecodeOptions = DecodeOptions {
        keep_timestamp: true,
    };
}

/// An `InvalidInput` error with this message.
pub(super) fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::new(ErrorCode::InvalidInput, message)
}

/// What a payload key is.
pub(super) enum KeyKind<'k> {
    /// `Name@odata.type`: the type annotation of `Name`.
    TypeAnnotation(&'k str),
    /// `odata.*` metadata, or any other annotation (`@odata.etag`, `Name@ns.term`): ignored.
    Ignored,
    /// A property (system or custom).
    Property,
}

/// What `key` is: a type annotation, ignored metadata, or a property.
pub(super) fn classify(key: &str) -> KeyKind<'_> {
    if let Some(name) = key.strip_suffix("@odata.type") {
        if !name.is_empty() && !name.contains('@') {
            return KeyKind::TypeAnnotation(name);
        }
        return KeyKind::Ignored;
    }
    if key.contains('@') || key.starts_with("odata.") {
        KeyKind::Ignored
    } else {
        KeyKind::Property
    }
}

/// Whether a Guid text has the dashed 8-4-4-4-12 hex form (either case).
pub(super) fn guid_text_ok(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// The `InvalidInput` error for serde_json's lone-surrogate complaints, if this is one.
/// `whole_text` says whether `e` came from parsing the whole payload (its position is then
/// meaningful) or one value of it (`place` names that value).
pub(super) fn lone_surrogate_error(
    e: &serde_json::Error,
    place: &str,
    whole_text: bool,
) -> Option<ModelError> {
    let text = e.to_string();
    (text.contains("surrogate") || text.contains("end of hex escape")).then(|| {
        let at = if whole_text {
            format!(" (at column {})", e.column())
        } else {
            String::new()
        };
        ModelError::new(
            ErrorCode::InvalidInput,
            format!(
                "{place}a string contains a lone surrogate escape (an unpaired \\uD800-\\uDFFF){at}: \
                 strings must be valid Unicode"
            ),
        )
    })
}

/// What a value of type `t` may look like in a payload (for error messages).
pub(super) fn expected_form(t: EdmType) -> &'static str {
    match t {
        EdmType::Binary => "a padded base64 string",
        EdmType::Boolean => "true, false, or the string \"true\"/\"false\" in any case",
        EdmType::DateTime => "a string YYYY-MM-DDTHH:MM:SS[.fffffff][Z|±hh:mm]",
        EdmType::Double => {
            "a JSON number, a numeric string, \"NaN\", \"Infinity\" or \"-Infinity\""
        }
        EdmType::Guid => "a string in the dashed 8-4-4-4-12 hex form",
        EdmType::Int32 | EdmType::Int64 => "a JSON integer or a string of [+-]digits",
        EdmType::String => "a JSON string or number",
    }
}

/// The error for an integer text out of the range of `t`.
pub(super) fn out_of_range_int(name: &str, text: &str, t: EdmType) -> ModelError {
    let range = if t == EdmType::Int32 {
        "-2147483648 to 2147483647"
    } else {
        "-9223372036854775808 to 9223372036854775807"
    };
    invalid(format!(
        "property `{}`: {} is out of range for {t} ({range})",
        excerpt(name),
        excerpt(text)
    ))
}

/// A Double from a number text; overflow to ±infinity is an error (the service's message).
pub(super) fn finite_double(name: &str, text: &str) -> Result<f64, ModelError> {
    match text.parse::<f64>() {
        Ok(d) if d.is_finite() => Ok(d),
        Ok(_) => Err(invalid(format!(
            "property `{}`: {} overflows Edm.Double (largest finite value ±1.7976931348623157e308)",
            excerpt(name),
            excerpt(text)
        ))),
        Err(_) => Err(invalid(format!(
            "property `{}`: {} is not a number",
            excerpt(name),
            excerpt(text)
        ))),
    }
}

/// `[+-]?digits`.
fn is_integer_text(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[+-]?(digits[.digits*]|.digits)([eE][+-]?digits)?`: the numeric strings accepted for
/// Edm.Double (no `inf`/`nan` spellings, no spaces).
fn is_decimal_text(s: &str) -> bool {
    let b = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == b.len()
}

/// Converts an annotated JSON string to its declared (non-String) type.
pub(super) fn from_string(name: &str, s: &str, t: EdmType) -> Result<Value, ModelError> {
    let cannot = || {
        invalid(format!(
            "property `{}`: \"{}\" cannot be read as {t} (expected {})",
            excerpt(name),
            excerpt(s),
            expected_form(t)
        ))
    };
    Ok(match t {
        EdmType::String => Value::String(s.to_owned()),
        EdmType::Int32 if is_integer_text(s) => {
            Value::Int32(s.parse().map_err(|_| out_of_range_int(name, s, t))?)
        }
        EdmType::Int64 if is_integer_text(s) => {
            Value::Int64(s.parse().map_err(|_| out_of_range_int(name, s, t))?)
        }
        EdmType::Int32 | EdmType::Int64 => return Err(cannot()),
        EdmType::Boolean if s.eq_ignore_ascii_case("true") => Value::Boolean(true),
        EdmType::Boolean if s.eq_ignore_ascii_case("false") => Value::Boolean(false),
        EdmType::Boolean => return Err(cannot()),
        EdmType::Double => match s {
            "NaN" => Value::Double(f64::NAN),
            "Infinity" => Value::Double(f64::INFINITY),
            "-Infinity" => Value::Double(f64::NEG_INFINITY),
            _ if is_decimal_text(s) => Value::Double(finite_double(name, s)?),
            _ => return Err(cannot()),
        },
        EdmType::DateTime => match DateTime::parse(s) {
            Ok(d) => Value::DateTime(d),
            Err(DateTimeError::OutOfRange(_)) => {
                return Err(ModelError::new(
                    ErrorCode::OutOfRangeInput,
                    format!(
                        "property `{}`: DateTime \"{}\" is out of range (allowed: \
                         1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z)",
                        excerpt(name),
                        excerpt(s)
                    ),
                ));
            }
            Err(DateTimeError::Invalid(_)) => return Err(cannot()),
        },
        EdmType::Guid => {
            if !guid_text_ok(s) {
                return Err(cannot());
            }
            Value::Guid(uuid::Uuid::parse_str(s).map_err(|_| cannot())?)
        }
        EdmType::Binary => Value::Binary(
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| cannot())?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_grammars() {
        for ok in ["0", "+1", "-12", "007"] {
            assert!(is_integer_text(ok), "{ok}");
        }
        for bad in ["", "+", "1.0", " 1", "1 ", "1e3", "0x1", "１"] {
            assert!(!is_integer_text(bad), "{bad}");
        }
        for ok in [
            "0", "1.5", "-1.5", "+2", ".5", "5.", "1e5", "1E-5", "-.5e+3",
        ] {
            assert!(is_decimal_text(ok), "{ok}");
        }
        for bad in [
            "", ".", "-", "e5", "1e", "1e+", "inf", "nan", "infinity", "1.2.3", " 1", "0x10",
            "1_000",
        ] {
            assert!(!is_decimal_text(bad), "{bad}");
        }
    }

    #[test]
    fn key_classification() {
        assert!(matches!(
            classify("A@odata.type"),
            KeyKind::TypeAnnotation("A")
        ));
        assert!(matches!(classify("@odata.type"), KeyKind::Ignored));
        assert!(matches!(classify("odata.etag"), KeyKind::Ignored));
        assert!(matches!(classify("A@odata.mediaEtag"), KeyKind::Ignored));
        assert!(matches!(classify("odata"), KeyKind::Property));
        assert!(matches!(classify("odataX"), KeyKind::Property));
    }
}
