//! Hostile JSON payloads: deep nesting, huge numbers, lone surrogates, invalid UTF-8,
//! duplicate keys hidden behind escapes, byte-order marks, truncated input, huge counts.
//! Each gives a typed `ModelError` with the service's code — never a panic or a stack
//! overflow (the deep inputs run on a thread with a 256 KiB stack). Speed is not timed here.

use tableq_model::json::{DecodeOptions, decode_entity, decode_payload};
use tableq_model::{Entity, ErrorCode, ModelError, Value};

/// Runs `f` on a thread with a deliberately small stack (256 KiB), so a recursion that
/// depends on the input fails here rather than in production.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow");
}

fn decode(text: &str) -> Result<Entity, ModelError> {
    let service = decode_entity(text, &DecodeOptions::SERVICE);
    let stored = decode_entity(text, &DecodeOptions::STORED);
    // Both Timestamp modes agree whenever the payload has no Timestamp.
    if !text.contains("Timestamp") {
        assert_eq!(service, stored, "{text:?}");
    }
    stored
}

/// The error code of a payload that must fail, with a short message.
fn code(text: &str) -> ErrorCode {
    match decode(text) {
        Ok(e) => panic!("{:?}: expected an error, got {e:?}", excerpt(text)),
        Err(e) => {
            assert!(
                e.message.len() <= 1024,
                "message of {} bytes",
                e.message.len()
            );
            e.code
        }
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(80).collect()
}

/// `{"PartitionKey":"p","RowKey":"r",<members>}`.
fn with(members: &str) -> String {
    format!(r#"{{"PartitionKey":"p","RowKey":"r",{members}}}"#)
}

#[test]
fn deep_nesting_is_an_error_without_recursion() {
    on_small_stack(|| {
        let n = 100_000;
        for text in [
            "[".repeat(n),
            format!("{}{}", "[".repeat(n), "]".repeat(n)),
            "{\"a\":".repeat(n),
            with(&format!("\"A\":{}", "[".repeat(n))),
            with(&format!("\"A\":{}1{}", "[".repeat(n), "]".repeat(n))),
            with(&format!("\"A\":{}1{}", "{\"a\":".repeat(n), "}".repeat(n))),
            with(&format!("\"A@odata.type\":{}", "[".repeat(n))),
        ] {
            assert_eq!(code(&text), ErrorCode::InvalidInput, "{}", excerpt(&text));
            assert!(decode_payload(&text, &DecodeOptions::STORED).is_err());
        }
    });
}

#[test]
fn deeply_nested_metadata_is_ignored_like_any_metadata() {
    // `odata.*` members are skipped whatever they hold, however deep (iteratively).
    on_small_stack(|| {
        let n = 100_000;
        let text = with(&format!(
            "\"odata.etag\":{}\"x\"{},\"A\":1",
            "[".repeat(n),
            "]".repeat(n)
        ));
        let e = decode(&text).expect("metadata is ignored");
        assert_eq!(e.custom("A"), Some(&Value::Int32(1)));
    });
}

#[test]
fn huge_numbers() {
    let digits = "9".repeat(100_000);
    // Without an annotation an integer outside Int32 is a Double — if it is finite.
    assert_eq!(
        decode(&with(r#""A":123456789012345678901234567890"#)).map(|e| e.custom("A").cloned()),
        Ok(Some(Value::Double(1.2345678901234568e29)))
    );
    for members in [
        format!(r#""A":{digits}"#),
        format!(r#""A":-{digits}"#),
        format!(r#""A":1{digits}.5"#),
        r#""A":1e309"#.to_owned(),
        r#""A":-1e99999999999999999999"#.to_owned(),
        format!(r#""A@odata.type":"Edm.Int64","A":{digits}"#),
        format!(r#""A@odata.type":"Edm.Int64","A":"{digits}""#),
        format!(r#""A@odata.type":"Edm.Int32","A":"-{digits}""#),
        r#""A@odata.type":"Edm.Int32","A":2147483648"#.to_owned(),
        r#""A@odata.type":"Edm.Int64","A":"9223372036854775808""#.to_owned(),
        format!(r#""A@odata.type":"Edm.Double","A":"{digits}""#),
        r#""A@odata.type":"Edm.Double","A":"1e309""#.to_owned(),
        r#""A@odata.type":"Edm.Int64","A":1e3"#.to_owned(),
    ] {
        let text = with(&members);
        assert_eq!(
            code(&text),
            ErrorCode::InvalidInput,
            "{}",
            excerpt(&members)
        );
    }
    // Tiny magnitudes round to zero, as any JSON reader does.
    assert_eq!(
        decode(&with(r#""A":1e-99999"#)).map(|e| e.custom("A").cloned()),
        Ok(Some(Value::Double(0.0)))
    );
    // An exponent with 100,000 digits is read without trouble.
    let text = with(&format!(r#""A":1e-{digits}"#));
    assert!(decode(&text).is_ok());
}

#[test]
fn lone_surrogates() {
    for members in [
        r#""A":"\ud800""#,
        r#""A":"x\udfffy""#,
        r#""A":"\ude00\ud83d""#,
        r#""A":"\ud83d\u0041""#,
        r#""\ud800":1"#,
        r#""A\udc00@odata.type":"Edm.Int32""#,
        r#""A@odata.type":"Edm.\ud800""#,
        r#""A@odata.type":"Edm.Int32","A":"\ud800""#,
    ] {
        assert_eq!(code(&with(members)), ErrorCode::InvalidInput, "{members}");
    }
    for text in [
        r#"{"PartitionKey":"\ud800","RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":"\udbff"}"#,
    ] {
        assert_eq!(code(text), ErrorCode::InvalidInput, "{text}");
    }
    // A proper pair is one character.
    let e = decode(&with(r#""A":"\ud83d\ude00""#)).expect("a surrogate pair");
    assert_eq!(e.custom("A"), Some(&Value::from("😀")));
}

#[test]
fn invalid_utf8_is_the_callers_to_reject() {
    // The decoder takes `&str`: a server must turn invalid UTF-8 into InvalidInput before
    // decoding (the bytes never reach the decoder)…
    let mut bytes = with(r#""A":"x""#).into_bytes();
    let at = bytes.len() - 3;
    bytes[at] = 0xff;
    assert!(std::str::from_utf8(&bytes).is_err());
    // …or decode lossily: the bad byte becomes U+FFFD inside a string…
    let lossy = String::from_utf8_lossy(&bytes);
    let e = decode(&lossy).expect("U+FFFD is an ordinary character");
    assert_eq!(e.custom("A"), Some(&Value::from("\u{fffd}")));
    // …and is a syntax error outside one.
    let lossy = String::from_utf8_lossy(b"{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"A\":\xff}");
    assert_eq!(code(&lossy), ErrorCode::InvalidInput);
}

#[test]
fn duplicate_keys_behind_escapes() {
    for members in [
        r#""a":1,"\u0061":2"#,
        r#""\u0041":1,"A":2"#,
        r#""A@odata.type":"Edm.Int64","A\u0040odata.type":"Edm.Int64","A":"1""#,
        r#""\u0050artitionKey":"q""#,
        r#""Row\u004bey":"q""#,
        r#""odata.etag":"x","odata\u002eetag":"y""#,
        r#""A":null,"A":null"#,
        r#""😀":1,"\ud83d\ude00":2"#,
    ] {
        assert_eq!(
            code(&with(members)),
            ErrorCode::DuplicatePropertiesSpecified,
            "{members}"
        );
    }
    // Names are case-sensitive: `a` and `A` are two properties.
    let e = decode(&with(r#""a":1,"\u0041":2"#)).expect("two properties");
    assert_eq!(e.len(), 2);
}

#[test]
fn byte_order_marks() {
    let plain = with(r#""A":1"#);
    // A BOM before the object is not JSON whitespace: InvalidInput (a server that wants to
    // accept BOM-prefixed bodies strips it before decoding).
    assert_eq!(code(&format!("\u{feff}{plain}")), ErrorCode::InvalidInput);
    assert_eq!(code(&format!("{plain}\u{feff}")), ErrorCode::InvalidInput);
    assert_eq!(
        code(&with("\u{feff}\"A\":1")),
        ErrorCode::InvalidInput,
        "between members"
    );
    // Inside a string it is an ordinary character; in a name it is not an identifier one.
    let e = decode(&with("\"A\":\"\u{feff}x\"")).expect("a BOM in a value");
    assert_eq!(e.custom("A"), Some(&Value::from("\u{feff}x")));
    assert_eq!(
        code(&with("\"\u{feff}A\":1")),
        ErrorCode::PropertyNameInvalid
    );
}

#[test]
fn truncated_input() {
    let full = r#"{"odata.etag":"W/\"x\"","PartitionKey":"p\u00e9","RowKey":"it's","Timestamp":"2021-06-09T01:17:08.3795894Z","A@odata.type":"Edm.Int64","A":"-12","B":[1.5e3,{}],"C":true,"D":null,"Öx":"a\"b\\c\ud83d\ude00"}"#;
    let whole = decode_entity(full, &DecodeOptions::STORED);
    // `B` is an array, so the whole payload is InvalidInput too; drop it for a valid one.
    assert_eq!(whole.map_err(|e| e.code), Err(ErrorCode::InvalidInput));
    let valid = full.replace(r#""B":[1.5e3,{}],"#, "");
    let e = decode_entity(&valid, &DecodeOptions::STORED).expect("valid without `B`");
    assert_eq!(e.custom("Öx"), Some(&Value::from("a\"b\\c😀")));
    for text in [full, valid.as_str()] {
        for (end, _) in text.char_indices() {
            let prefix = &text[..end];
            for options in [DecodeOptions::SERVICE, DecodeOptions::STORED] {
                let err = decode_entity(prefix, &options).expect_err(prefix);
                assert_eq!(err.code, ErrorCode::InvalidInput, "{prefix:?}: {err}");
            }
        }
    }
}

#[test]
fn not_one_object() {
    for text in [
        "",
        " ",
        "null",
        "true",
        "1",
        "\"x\"",
        "[]",
        "{",
        "}",
        "{}{}",
        r#"{"PartitionKey":"p","RowKey":"r"} x"#,
        r#"{"PartitionKey":"p","RowKey":"r"},"#,
        r#"{"PartitionKey":"p","RowKey":"r",}"#,
        r#"{"PartitionKey":"p" "RowKey":"r"}"#,
        r#"{'PartitionKey':'p','RowKey':'r'}"#,
        r#"{PartitionKey:"p",RowKey:"r"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","A":NaN}"#,
        r#"{"PartitionKey":"p","RowKey":"r","A":01}"#,
        r#"{"PartitionKey":"p","RowKey":"r","A":"tab	inside"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","A":"\x"}"#,
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}\u{0}",
    ] {
        assert_eq!(code(text), ErrorCode::InvalidInput, "{text:?}");
    }
    // Whitespace around the object is fine.
    assert!(decode(" \n\t{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}\r\n ").is_ok());
    // An empty object lacks the keys.
    assert_eq!(code("{}"), ErrorCode::PropertiesNeedValue);
}

#[test]
fn huge_counts_and_sizes() {
    on_small_stack(|| {
        // 100,000 members: too many properties, found without quadratic work.
        let members: Vec<String> = (0..100_000).map(|i| format!("\"P{i}\":{i}")).collect();
        assert_eq!(
            code(&with(&members.join(","))),
            ErrorCode::TooManyProperties
        );
        // 100,000 times the same member: a duplicate, reported at the second one.
        let same = vec!["\"P\":1"; 100_000].join(",");
        assert_eq!(code(&with(&same)), ErrorCode::DuplicatePropertiesSpecified);
        // 100,000 ignored annotations and metadata members are still members.
        let meta: Vec<String> = (0..100_000).map(|i| format!("\"odata.m{i}\":1")).collect();
        assert!(decode(&with(&meta.join(","))).is_ok());
        // A 4 MiB string value and a 4 MiB property name.
        let big = "x".repeat(4 << 20);
        assert_eq!(
            code(&with(&format!("\"A\":\"{big}\""))),
            ErrorCode::PropertyValueTooLarge
        );
        assert_eq!(
            code(&with(&format!("\"{big}\":1"))),
            ErrorCode::PropertyNameTooLong
        );
        assert_eq!(
            code(&format!(r#"{{"PartitionKey":"{big}","RowKey":"r"}}"#)),
            ErrorCode::KeyValueTooLarge
        );
        // 4 MiB of escapes in one string.
        let escapes = "\\u0041".repeat(700_000);
        assert_eq!(
            code(&with(&format!("\"A\":\"{escapes}\""))),
            ErrorCode::PropertyValueTooLarge
        );
    });
}

#[test]
fn long_unknown_annotation_message_is_bounded() {
    // Fuzz finding `tests/regressions/long-unknown-annotation`: an unknown type name was
    // echoed whole in the error message (a 1 MiB annotation gave a 1 MiB message).
    let name = "E".repeat(1 << 20);
    let err = decode(&with(&format!("\"A@odata.type\":\"{name}\",\"A\":1"))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.len() < 400, "{} bytes", err.message.len());
    assert!(
        err.message
            .starts_with("annotation `A@odata.type`: unknown type `EEEE")
    );
    assert!(err.message.ends_with(
        "…`: expected one of Edm.Binary, Edm.Boolean, Edm.DateTime, Edm.Double, Edm.Guid, \
         Edm.Int32, Edm.Int64, Edm.String"
    ));
}
