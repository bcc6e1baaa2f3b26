//! Continuation tokens: how a query's resume position travels in ASCII headers and query
//! parameters.
//!
//! Each key (PartitionKey, RowKey, table name) is one token, in the service's own shape
//! `1!<length>!<base64>`: `<base64>` is the key's UTF-8 bytes in URL-safe base64 without
//! padding (letters, digits, `-`, `_`: safe unencoded in headers and URLs) and `<length>`
//! is the number of its characters. Keys can hold any Unicode, but tokens are always ASCII
//! (SDKs read header bytes as Latin-1).
//!
//! Entity queries answer `x-ms-continuation-NextPartitionKey` and
//! `x-ms-continuation-NextRowKey` (the key of the next entity to examine, inclusive), both
//! or neither; clients send them back as `NextPartitionKey` / `NextRowKey`. Decided:
//! `NextPartitionKey` alone resumes at the start of that partition (as if `NextRowKey`
//! were the empty key); `NextRowKey` alone is 400 `InvalidInput`. Table queries use
//! `NextTableName` the same way (the next table to examine, by its case-insensitive key).
//! A token that does not decode is 400 `InvalidInput`; an empty parameter means "no
//! continuation".
//!
//! ```
//! use tableq_server::continuation::{encode_token, decode_token};
//! let token = encode_token("Größe/😀");
//! assert!(token.is_ascii() && token.starts_with("1!"));
//! assert_eq!(decode_token("NextRowKey", &token).unwrap(), "Größe/😀");
//! assert_eq!(decode_token("NextRowKey", "1!3!abc!").unwrap_err().code(), "InvalidInput");
//! ```

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use tableq_exec::Key;
use tableq_model::ErrorCode;

use crate::protocol::error::ApiError;

/// The response header of the next PartitionKey (header names are case-insensitive;
/// HTTP/1 responses send them in lowercase).
pub const NEXT_PARTITION_KEY_HEADER: &str = "x-ms-continuation-nextpartitionkey";
/// The response header of the next RowKey.
pub const NEXT_ROW_KEY_HEADER: &str = "x-ms-continuation-nextrowkey";
/// The response header of the next table name.
pub const NEXT_TABLE_NAME_HEADER: &str = "x-ms-continuation-nexttablename";

/// The token of a key.
pub fn encode_token(key: &str) -> String {
    let b64 = URL_SAFE_NO_PAD.encode(key.as_bytes());
    format!("1!{}!{b64}", b64.len())
}

/// The key of a token; `parameter` names the query parameter for the error message.
pub fn decode_token(parameter: &str, token: &str) -> Result<String, ApiError> {
    let bad = |why: &str| {
        let shown: String = token.chars().take(80).collect();
        ApiError::new(
            ErrorCode::InvalidInput,
            format!(
                "{parameter} `{shown}` is not a continuation token of this server ({why}); \
                 send back the x-ms-continuation-{parameter} header value unchanged"
            ),
        )
    };
    let mut parts = token.splitn(3, '!');
    let (Some("1"), Some(len), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("expected 1!<length>!<base64>"));
    };
    if len.parse::<usize>().ok() != Some(b64.len()) {
        return Err(bad("the length does not match"));
    }
    let bytes = URL_SAFE_NO_PAD.decode(b64).map_err(|_| bad("not base64"))?;
    String::from_utf8(bytes).map_err(|_| bad("not UTF-8"))
}

/// The resume key of an entity query from its `NextPartitionKey` / `NextRowKey` parameters
/// (see the module docs for the decided cases).
pub fn entity_continuation(
    next_partition_key: Option<&str>,
    next_row_key: Option<&str>,
) -> Result<Option<Key>, ApiError> {
    let pk = next_partition_key.filter(|t| !t.is_empty());
    let rk = next_row_key.filter(|t| !t.is_empty());
    match (pk, rk) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(ApiError::new(
            ErrorCode::InvalidInput,
            "NextRowKey without NextPartitionKey: send back both continuation headers",
        )),
        (Some(pk), rk) => {
            let partition_key = decode_token("NextPartitionKey", pk)?;
            let row_key = match rk {
                Some(rk) => decode_token("NextRowKey", rk)?,
                None => String::new(),
            };
            Ok(Some(Key::new(partition_key, row_key)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn tokens_round_trip_and_are_ascii(key in any::<String>()) {
            let token = encode_token(&key);
            prop_assert!(token.bytes().all(|b| b.is_ascii_graphic()));
            prop_assert_eq!(decode_token("NextPartitionKey", &token).unwrap(), key);
        }

        #[test]
        fn garbage_never_panics(token in any::<String>()) {
            let _ = decode_token("NextRowKey", &token);
        }
    }

    #[test]
    fn bad_tokens() {
        for bad in [
            "", "x", "1!2", "2!2!YQ", "1!3!YQ", "1!2!Y!", "1!3!_-_", "1!2!_w",
        ] {
            assert!(decode_token("NextRowKey", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pairs() {
        let p = encode_token("p");
        let r = encode_token("r");
        assert_eq!(entity_continuation(None, None).unwrap(), None);
        assert_eq!(entity_continuation(Some(""), Some("")).unwrap(), None);
        assert_eq!(
            entity_continuation(Some(&p), Some(&r)).unwrap(),
            Some(Key::new("p", "r"))
        );
        assert_eq!(
            entity_continuation(Some(&p), None).unwrap(),
            Some(Key::new("p", ""))
        );
        assert!(entity_continuation(None, Some(&r)).is_err());
    }
}
