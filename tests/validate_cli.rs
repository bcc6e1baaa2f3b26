//! Golden tests of `tableq validate`: run the built binary on files and standard input that
//! cover every kind of violation, and compare stdout exactly.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn tableq(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .arg("validate")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tableq binary runs");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        pipe.write_all(bytes).expect("write stdin");
    }
    let out = child.wait_with_output().expect("tableq finishes");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// A scratch file under the target directory, unique per test.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("validate_cli");
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    path
}

const INVALID_EXPECTED: &str = "\
line 2: InvalidInput: the entity is not valid JSON: expected `true`, `false` or `null` (text values need double quotes), at byte 1 (found `h`)
line 3: InvalidInput: the entity is an array, not a JSON object: an entity is one JSON object
line 5: PropertiesNeedValue: the entity has no RowKey: every entity needs both keys (as JSON strings)
line 6: InvalidInput: PartitionKey `demo/2024` contains the forbidden character `/` (U+002F) at character 5: keys may not contain `/`, `\\`, `#`, `?` or control characters U+0000-U+001F, U+007F-U+009F
line 7: KeyValueTooLarge: RowKey `rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr…` is 1025 UTF-16 code units long: the limit is 1024 (1 KiB)
line 8: InvalidInput: PartitionKey must be a JSON string, not 42
line 9: PropertyNameInvalid: property name `first-name` contains `-` (U+002D) at character 6: a name may contain only letters, decimal digits and `_`
line 10: PropertyNameTooLong: property name `Nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn…` is 256 UTF-16 code units long: the limit is 255
line 11: DuplicatePropertiesSpecified: `Count` appears more than once in the entity: each property (and annotation) may be given only once
line 12: TooManyProperties: the entity has 253 custom properties (256 with the 3 system properties): the limit is 252 (255 in all)
line 13: PropertyValueTooLarge: property `Text`: String value is 32769 UTF-16 code units long: the limit is 32768 (64 KiB)
line 14: InvalidInput: property `Big`: 9223372036854775808 is out of range for Edm.Int64 (-9223372036854775808 to 9223372036854775807)
line 15: OutOfRangeInput: property `When`: DateTime \"1600-12-31T23:59:59Z\" is out of range (allowed: 1601-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z)
line 16: InvalidInput: annotation `Size@odata.type`: unknown type `Edm.Int16`: expected one of Edm.Binary, Edm.Boolean, Edm.DateTime, Edm.Double, Edm.Guid, Edm.Int32, Edm.Int64, Edm.String
line 17: InvalidInput: property `Id`: \"{c9da6455-213d-42c9-9a79-3e9149a57833}\" cannot be read as Edm.Guid (expected a string in the dashed 8-4-4-4-12 hex form)
line 18: InvalidInput: property `Blob`: \"AQ\" cannot be read as Edm.Binary (expected a padded base64 string)
line 19: InvalidInput: property `Address`: a JSON object is not a property value (values are strings, numbers or booleans)
line 20: InvalidInput: property `Name`: a string contains a lone surrogate escape (an unpaired \\uD800-\\uDFFF): strings must be valid Unicode
line 21: PropertyNameInvalid: property name `e\u{301}t\u{e9}` contains `\\u{301}` (U+0301) at character 2: a name may contain only letters, decimal digits and `_`
line 23: InvalidInput: property `Active`: \"yes\" cannot be read as Edm.Boolean (expected true, false, or the string \"true\"/\"false\" in any case)
line 24: InvalidInput: RowKey `r18\\t` contains the forbidden character (control) (U+0009) at character 4: keys may not contain `/`, `\\`, `#`, `?` or control characters U+0000-U+001F, U+007F-U+009F
";

#[test]
fn sample_entities_are_valid() {
    let run = tableq(&["samples/entities.jsonl"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("39 entities checked, 0 invalid"),
        "{}",
        run.stderr
    );
}

#[test]
fn every_violation_kind_in_the_invalid_sample() {
    let run = tableq(&["samples/invalid.jsonl"], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, INVALID_EXPECTED);
    assert_eq!(
        run.stderr,
        "samples/invalid.jsonl: 24 entities checked, 21 invalid (the first problem of each line is shown)\n"
    );
}

#[test]
fn standard_input_dash_or_nothing() {
    let input = std::fs::read("samples/invalid.jsonl").expect("sample exists");
    for args in [&["-"][..], &[][..]] {
        let run = tableq(args, Some(&input));
        assert_eq!(run.code, 1);
        assert_eq!(run.stdout, INVALID_EXPECTED);
        assert!(
            run.stderr.starts_with("<stdin>: 24 entities"),
            "{}",
            run.stderr
        );
    }
    let run = tableq(&[], Some(b""));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert!(run.stderr.contains("0 entities checked"), "{}", run.stderr);
}

#[test]
fn table_name_option() {
    let valid = br#"{"PartitionKey":"p","RowKey":"r"}"#;
    let run = tableq(&["--table", "Orders2024"], Some(valid));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert!(
        run.stderr.contains("the table name is valid"),
        "{}",
        run.stderr
    );
    for (name, expected) in [
        (
            "ab",
            "table: OutOfRangeInput: table name `ab` is 2 characters long: a table name must be 3 to 63 characters\n",
        ),
        (
            "tables",
            "table: InvalidResourceName: table name `tables` is reserved (`tables` in any case)\n",
        ),
        (
            "TABLES",
            "table: InvalidResourceName: table name `TABLES` is reserved (`tables` in any case)\n",
        ),
        (
            "9lives",
            "table: InvalidResourceName: table name `9lives` must start with a letter A-Z or a-z\n",
        ),
        (
            "my-table",
            "table: InvalidResourceName: table name `my-table` contains `-`: only letters A-Z, a-z and digits 0-9 are allowed\n",
        ),
    ] {
        let run = tableq(&["--table", name], Some(valid));
        assert_eq!(run.code, 1, "{name}");
        assert_eq!(run.stdout, expected);
        assert!(
            run.stderr.contains("the table name is invalid"),
            "{}",
            run.stderr
        );
    }
    // The table report comes first, then the lines.
    let run = tableq(&["--table", "x", "-"], Some(b"[]\n"));
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "table: OutOfRangeInput: table name `x` is 1 characters long: a table name must be 3 to 63 characters\n\
         line 1: InvalidInput: the entity is an array, not a JSON object: an entity is one JSON object\n"
    );
}

#[test]
fn entity_too_large() {
    // 17 Strings of 32,768 units: 4 + 2 + 2 + 17·(8 + 2·3 + 65,540) = 1,114,426 bytes.
    let big = "x".repeat(32 * 1024);
    let props: Vec<String> = (0..17).map(|i| format!(r#""S{i:02}":"{big}""#)).collect();
    let line = format!(r#"{{"PartitionKey":"p","RowKey":"r",{}}}"#, props.join(","));
    let path = scratch("too_large.jsonl", format!("{line}\n").as_bytes());
    let run = tableq(&[path.to_str().expect("UTF-8 path")], None);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "line 1: EntityTooLarge: the entity is 1114426 bytes by the service's size formula: the limit is 1048576 bytes (1 MiB)\n"
    );
    // One property fewer is fine (16 · 65,554 + 8 = 1,048,872 > 1 MiB, so 15 + a small one).
    let props: Vec<String> = (0..15).map(|i| format!(r#""S{i:02}":"{big}""#)).collect();
    let line = format!(r#"{{"PartitionKey":"p","RowKey":"r",{}}}"#, props.join(","));
    let run = tableq(&["-"], Some(line.as_bytes()));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{}", run.stderr);
}

#[test]
fn blank_lines_crlf_and_bom() {
    let input = b"\xEF\xBB\xBF{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}\r\n\r\n   \n\t\n{\"PartitionKey\":\"p\"}\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"3\"}";
    let run = tableq(&[], Some(input));
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "line 5: PropertiesNeedValue: the entity has no RowKey: every entity needs both keys (as JSON strings)\n"
    );
    assert!(
        run.stderr.contains("3 entities checked, 1 invalid"),
        "{}",
        run.stderr
    );
}

#[test]
fn lines_that_are_not_objects_do_not_stop_the_run() {
    let input = b"42\n\"text\"\nnull\n{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}\n{broken\n";
    let run = tableq(&[], Some(input));
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "line 1: InvalidInput: the entity is a number, not a JSON object: an entity is one JSON object\n\
         line 2: InvalidInput: the entity is a string, not a JSON object: an entity is one JSON object\n\
         line 3: InvalidInput: the entity is null, not a JSON object: an entity is one JSON object\n\
         line 5: InvalidInput: the entity is not valid JSON: expected a property name in double quotes, at byte 1 (found `b`)\n"
    );
}

#[test]
fn unreadable_input_exits_2() {
    let run = tableq(&["no/such/file.jsonl"], None);
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .starts_with("error: cannot read `no/such/file.jsonl`:"),
        "{}",
        run.stderr
    );

    // A directory is named as one (`a_directory_is_named_as_one`).
    let run = tableq(&["samples"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with("error: `samples` is a directory"),
        "{}",
        run.stderr
    );

    // Bytes that are not UTF-8: not JSON lines at all. Earlier reports stay on stdout.
    let run = tableq(&[], Some(b"[]\n{\"PartitionKey\":\"\xff\"}\n"));
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stdout,
        "line 1: InvalidInput: the entity is an array, not a JSON object: an entity is one JSON object\n"
    );
    assert_eq!(
        run.stderr,
        "error: cannot read <stdin>: line 2 is not valid UTF-8 (at byte 17 of the line)\n"
    );
}

#[test]
fn a_payload_timestamp_is_ignored_as_an_insert_ignores_it() {
    let input = b"{\"PartitionKey\":\"p\",\"RowKey\":\"1\",\"Timestamp\":\"not a date\"}\n\
                  {\"PartitionKey\":\"p\",\"RowKey\":\"2\",\"Timestamp\":42}\n";
    let run = tableq(&[], Some(input));
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{}", run.stderr);
    assert!(
        run.stderr.contains("2 entities checked, 0 invalid"),
        "{}",
        run.stderr
    );
}

#[test]
fn json_errors_in_the_users_terms_and_a_bom_mid_file() {
    let input = "{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}\n\
                 \u{FEFF}{\"PartitionKey\":\"p\",\"RowKey\":\"2\"}\n\
                 {\"PartitionKey\":\"p\" \"RowKey\":\"3\"}\n\
                 {\"PartitionKey\":\"p\",\"RowKey\":\"4\"\n";
    let run = tableq(&[], Some(input.as_bytes()));
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "line 2: InvalidInput: the entity starts with a byte-order mark (U+FEFF): only the very start of a file may carry one; remove it\n\
         line 3: InvalidInput: the entity is not valid JSON: expected `,` or `}` after a value, at byte 20 (found `\"`)\n\
         line 4: InvalidInput: the entity is not valid JSON: the text ends before the JSON object does (a missing `}` or `\"`?)\n"
    );
    assert!(
        run.stderr
            .contains("(the first problem of each line is shown)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_line_over_4_mib_is_reported_without_reading_it() {
    let mut input = b"{\"PartitionKey\":\"p\",\"RowKey\":\"1\",\"S\":\"".to_vec();
    input.extend(std::iter::repeat_n(b'x', (4 << 20) + 10));
    input.extend_from_slice(b"\"}\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"2\"}\n");
    let path = scratch("long_line.jsonl", &input);
    let run = tableq(&[path.to_str().expect("UTF-8 path")], None);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "line 1: RequestBodyTooLarge: the line is 4194354 bytes long: the limit is 4194304 bytes (4 MiB, the service's request limit); the line was skipped unread\n"
    );
    assert!(
        run.stderr.contains("2 entities checked, 1 invalid"),
        "{}",
        run.stderr
    );
}

/// A directory is not a file of entities: the message says so (not "line 1: Is a directory").
#[test]
fn a_directory_is_named_as_one() {
    let run = tableq(&["samples"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("`samples` is a directory"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("line 1"), "{}", run.stderr);
}
