//! Reading the conformance corpus (`tests/conformance/`, format in its README).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The corpus directory.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// What a case expects.
#[derive(Debug, Clone)]
pub enum Expect {
    /// The matching entities' keys in result order, and (with `$select`) the printed rows.
    Matches {
        keys: Vec<(String, String)>,
        rows: Vec<serde_json::Value>,
    },
    /// The query is rejected.
    Error {
        kinds: Vec<String>,
        /// Byte offset range the error must point into (end exclusive).
        at: Option<(usize, usize)>,
        messages: Vec<String>,
    },
}

/// The comparison limit of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Default,
    Unlimited,
    Max(usize),
}

/// One case.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// `file:line` of the case.
    pub origin: String,
    pub spec: Option<String>,
    pub set: String,
    pub filter: Option<String>,
    pub select: Option<String>,
    pub top: Option<String>,
    pub limit: Limit,
    pub expect: Expect,
}

impl Case {
    /// A one-line description for failure reports.
    pub fn describe(&self) -> String {
        let mut s = format!("[{}] {} (set {}", self.origin, self.name, self.set);
        if let Some(f) = &self.filter {
            let shown: String = f.chars().take(120).collect();
            let more = if shown.len() < f.len() { "…" } else { "" };
            s.push_str(&format!(", filter {shown:?}{more}"));
        }
        if let Some(sel) = &self.select {
            let shown: String = sel.chars().take(60).collect();
            s.push_str(&format!(", select {shown:?}"));
        }
        if let Some(t) = &self.top {
            s.push_str(&format!(", top {t:?}"));
        }
        s.push(')');
        if let Some(spec) = &self.spec {
            s.push_str(&format!("\n      spec: {spec}"));
        }
        s
    }
}

/// Every case of `cases/*.txt`, in file then line order.
pub fn cases() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir().join("cases"))
        .expect("tests/conformance/cases exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable case file");
        let file_name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_owned();
        parse_cases(&file_name, &text, &mut out);
    }
    let mut seen = HashSet::new();
    for c in &out {
        assert!(
            seen.insert(c.name.clone()),
            "duplicate case name {} ({})",
            c.name,
            c.origin
        );
    }
    out
}

/// The entity sets: `sets/NAME.jsonl` → its lines (line number, text), blank lines skipped.
pub fn sets() -> BTreeMap<String, Vec<(usize, String)>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir().join("sets")).expect("tests/conformance/sets exists") {
        let path = entry.expect("readable directory entry").path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8 name")
            .to_owned();
        let text = std::fs::read_to_string(&path).expect("readable set");
        let lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (i + 1, l.to_owned()))
            .collect();
        out.insert(name, lines);
    }
    out
}

/// The path of a set's file.
pub fn set_path(name: &str) -> PathBuf {
    dir().join("sets").join(format!("{name}.jsonl"))
}

/// Parsed `error:` field: the accepted kinds and the offset range.
type ErrorSpec = (Vec<String>, Option<(usize, usize)>);

#[derive(Default)]
struct Draft {
    name: Option<String>,
    origin: String,
    spec: Option<String>,
    set: Option<String>,
    filter: Option<String>,
    select: Option<String>,
    top: Option<String>,
    limit: Option<Limit>,
    keys: Option<Vec<(String, String)>>,
    rows: Vec<serde_json::Value>,
    error: Option<ErrorSpec>,
    messages: Vec<String>,
}

impl Draft {
    fn finish(self) -> Case {
        let name = self
            .name
            .unwrap_or_else(|| panic!("{}: a case needs `case:`", self.origin));
        let at = format!("{} ({name})", self.origin);
        let expect = match (self.keys, self.error) {
            (Some(keys), None) => {
                assert!(self.messages.is_empty(), "{at}: `message` needs `error`");
                if !self.rows.is_empty() {
                    assert_eq!(
                        self.rows.len(),
                        keys.len(),
                        "{at}: one `row` per expected key"
                    );
                    assert!(self.select.is_some(), "{at}: `row` needs `select`");
                }
                Expect::Matches {
                    keys,
                    rows: self.rows,
                }
            }
            (None, Some((kinds, at_range))) => {
                assert!(self.rows.is_empty(), "{at}: `row` with `error`");
                Expect::Error {
                    kinds,
                    at: at_range,
                    messages: self.messages,
                }
            }
            _ => panic!("{at}: a case needs exactly one of `expect` and `error`"),
        };
        Case {
            name,
            origin: self.origin,
            spec: self.spec,
            set: self
                .set
                .unwrap_or_else(|| panic!("{at}: a case needs `set:`")),
            filter: self.filter,
            select: self.select,
            top: self.top,
            limit: self.limit.unwrap_or(Limit::Default),
            expect,
        }
    }
}

fn parse_cases(file: &str, text: &str, out: &mut Vec<Case>) {
    let mut draft: Option<Draft> = None;
    for (i, line) in text.lines().enumerate() {
        let origin = format!("{file}:{}", i + 1);
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            if let Some(d) = draft.take() {
                out.push(d.finish());
            }
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => panic!("{origin}: expected `field: value`, found {line:?}"),
        };
        if field == "case" {
            if let Some(d) = draft.take() {
                out.push(d.finish());
            }
            draft = Some(Draft {
                name: Some(value.to_owned()),
                origin,
                ..Draft::default()
            });
            continue;
        }
        let d = draft
            .as_mut()
            .unwrap_or_else(|| panic!("{origin}: field before `case:`"));
        match field {
            "spec" => d.spec = Some(value.to_owned()),
            "set" => d.set = Some(value.to_owned()),
            "filter" => d.filter = Some(value.to_owned()),
            "filter-json" => d.filter = Some(json_string(value, &origin)),
            "filter-gen" => d.filter = Some(generated(value, &origin)),
            "select" => d.select = Some(value.to_owned()),
            "select-gen" => d.select = Some(generated(value, &origin)),
            "top" => d.top = Some(value.to_owned()),
            "limit" => {
                d.limit = Some(match value {
                    "none" => Limit::Unlimited,
                    n => Limit::Max(n.parse().unwrap_or_else(|_| panic!("{origin}: bad limit"))),
                })
            }
            "expect" => d.keys = Some(keys(value, &origin)),
            "row" => d.rows.push(
                serde_json::from_str(value).unwrap_or_else(|e| panic!("{origin}: bad row: {e}")),
            ),
            "error" => d.error = Some(error_spec(value, &origin)),
            "message" => d.messages.push(value.to_owned()),
            other => panic!("{origin}: unknown field `{other}`"),
        }
    }
    if let Some(d) = draft.take() {
        out.push(d.finish());
    }
}

fn json_string(value: &str, origin: &str) -> String {
    serde_json::from_str(value).unwrap_or_else(|e| panic!("{origin}: bad JSON string: {e}"))
}

/// `"a" + "b" * 3 + …`: JSON strings, each optionally repeated.
fn generated(value: &str, origin: &str) -> String {
    let mut out = String::new();
    let mut rest = value.trim_start();
    while !rest.is_empty() {
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let piece = match stream.next() {
            Some(Ok(s)) => s,
            _ => panic!("{origin}: expected a JSON string in {rest:?}"),
        };
        rest = rest[stream.byte_offset()..].trim_start();
        let mut times = 1;
        if let Some(r) = rest.strip_prefix('*') {
            let r = r.trim_start();
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            times = r[..end]
                .parse()
                .unwrap_or_else(|_| panic!("{origin}: bad repeat count"));
            rest = r[end..].trim_start();
        }
        out.push_str(&piece.repeat(times));
        if let Some(r) = rest.strip_prefix('+') {
            rest = r.trim_start();
        } else {
            assert!(rest.is_empty(), "{origin}: expected `+` in {rest:?}");
        }
    }
    out
}

/// `pk/rk pk/rk …` or `none`; `\u{XXXX}` escapes a character.
fn keys(value: &str, origin: &str) -> Vec<(String, String)> {
    if value.trim() == "none" {
        return Vec::new();
    }
    value
        .split(' ')
        .filter(|t| !t.is_empty())
        .map(|token| {
            let token = unescape(token, origin);
            let (pk, rk) = token
                .split_once('/')
                .unwrap_or_else(|| panic!("{origin}: key {token:?} lacks `/`"));
            (pk.to_owned(), rk.to_owned())
        })
        .collect()
}

fn unescape(token: &str, origin: &str) -> String {
    let mut out = String::new();
    let mut rest = token;
    while let Some(i) = rest.find("\\u{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 3..];
        let end = after
            .find('}')
            .unwrap_or_else(|| panic!("{origin}: unclosed \\u{{"));
        let code = u32::from_str_radix(&after[..end], 16)
            .ok()
            .and_then(char::from_u32)
            .unwrap_or_else(|| panic!("{origin}: bad escape"));
        out.push(code);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `kind|kind [at N | at A..B]`.
fn error_spec(value: &str, origin: &str) -> ErrorSpec {
    let (kinds, at) = match value.split_once(" at ") {
        Some((k, a)) => (k, Some(a.trim())),
        None => (value, None),
    };
    const KINDS: [&str; 10] = [
        "syntax",
        "literal",
        "null",
        "operands",
        "unsupported",
        "too-many-comparisons",
        "too-deep",
        "too-long",
        "select",
        "top",
    ];
    let kinds: Vec<String> = kinds.trim().split('|').map(str::to_owned).collect();
    for k in &kinds {
        assert!(
            KINDS.contains(&k.as_str()),
            "{origin}: unknown error kind `{k}`"
        );
    }
    let num = |s: &str| -> usize { s.parse().unwrap_or_else(|_| panic!("{origin}: bad offset")) };
    let at = at.map(|a| match a.split_once("..") {
        Some((s, e)) => (num(s), num(e)),
        None => (num(a), num(a) + 1),
    });
    (kinds, at)
}
