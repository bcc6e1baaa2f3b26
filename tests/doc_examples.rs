//! The documentation keeps telling the truth: `README.md` and every page of `docs/`.
//!
//! * **Examples run.** Every ```` ```console ```` block is run with the built `tableq`
//!   (from the repository root, `NO_COLOR=1`): each `$ ` line is one command, the lines after
//!   it are what it prints — stdout, then stderr (a line ending in `(stderr)`, with the
//!   marker removed). A line `...` (or `…`) stands for any number of lines, and `…` inside a
//!   line for any text. `$ echo $?` prints the previous command's exit status. A block that
//!   cannot run here (it starts a server, needs PostgreSQL, writes hundreds of megabytes)
//!   says so in a `<!-- not run: REASON -->` line just above it, naming where it is tested.
//!   A console example may run nothing but `tableq` and `echo $?`.
//! * **Links resolve.** Every relative link and image of those pages names a file that
//!   exists, and a `#fragment` into a Markdown file names one of its headings (GitHub's
//!   anchors).
//! * **Usage lines agree.** The `Usage:` of every command's `--help` appears in
//!   `docs/commands.md`, and a usage line written by hand (`cli::help::*_USAGE`, the
//!   commands without clap's `[OPTIONS]`) names every option `--help` lists.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and docs/*.md, relative to the repository root.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("read docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            p.strip_prefix(root())
                .expect("under the root")
                .to_path_buf()
        })
        .collect();
    docs.sort();
    assert!(
        docs.len() >= 10,
        "docs/ holds the reference pages: {docs:?}"
    );
    pages.extend(docs);
    pages
}

fn read(page: &Path) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("read {page:?}: {e}"))
}

/// A fenced code block: its info string, its lines (the fence's indentation removed), the
/// line number of its opening fence, and the last non-blank line before it.
struct Block {
    info: String,
    lines: Vec<String>,
    line: usize,
    before: String,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(Block, usize, String)> = None;
    let mut last_text = String::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            Some((block, fence_indent, fence)) => {
                if trimmed.starts_with(fence.as_str()) && trimmed.trim_end() == fence.as_str() {
                    out.push(open.take().expect("open").0);
                } else {
                    let cut = line.len().min(*fence_indent);
                    let keep = if line[..cut].trim().is_empty() {
                        &line[cut..]
                    } else {
                        line
                    };
                    block.lines.push(keep.to_string());
                }
            }
            None => {
                if let Some(rest) = trimmed.strip_prefix("```") {
                    let block = Block {
                        info: rest.trim().to_string(),
                        lines: Vec::new(),
                        line: n + 1,
                        before: last_text.clone(),
                    };
                    open = Some((block, indent, "```".to_string()));
                } else if !trimmed.is_empty() {
                    last_text = trimmed.to_string();
                }
            }
        }
    }
    assert!(open.is_none(), "a code block is never closed");
    out
}

/// `…`/`...` alone: any lines; `…` inside a line: any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    if parts.len() == 1 {
        return pattern == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

fn lines_match(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." || first == "…" => {
            (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            !actual.is_empty() && line_matches(first, &actual[0]) && lines_match(rest, &actual[1..])
        }
    }
}

/// Runs one console block; returns the commands run.
fn run_block(page: &Path, block: &Block) -> usize {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tableq"));
    let path = format!(
        "{}:{}",
        bin.parent().expect("the binary's directory").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for line in &block.lines {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push((command.to_string(), Vec::new()));
        } else {
            let (_, expected) = steps.last_mut().unwrap_or_else(|| {
                panic!("{page:?}:{}: a console block starts with `$ `", block.line)
            });
            let line = line.trim_end();
            let line = line.strip_suffix("(stderr)").map_or(line, str::trim_end);
            expected.push(line.to_string());
        }
    }
    let mut status = 0;
    for (command, expected) in &steps {
        let actual: Vec<String> = if command == "echo $?" {
            vec![status.to_string()]
        } else {
            assert!(
                command.starts_with("tableq "),
                "{page:?}:{}: a console example runs only `tableq` (and `echo $?`); mark \
                 `{command}` with <!-- not run: REASON --> or make it `tableq …`",
                block.line
            );
            let output = Command::new("sh")
                .arg("-c")
                .arg(command)
                .current_dir(root())
                .env("PATH", &path)
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .output()
                .expect("run sh");
            status = output.status.code().unwrap_or(-1);
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .chain(String::from_utf8_lossy(&output.stderr).lines())
                .map(|l| l.trim_end().to_string())
                .collect()
        };
        assert!(
            lines_match(expected, &actual),
            "{page:?}:{}: `$ {command}` printed something else.\n--- the page says:\n{}\n--- it \
             printed (stdout, then stderr):\n{}",
            block.line,
            expected.join("\n"),
            actual.join("\n")
        );
    }
    steps.len()
}

#[test]
fn every_console_example_runs_as_written() {
    let mut ran = Vec::new();
    let mut not_run = Vec::new();
    for page in pages() {
        let text = read(&page);
        for block in blocks(&text).iter().filter(|b| b.info == "console") {
            if let Some(reason) = block.before.strip_prefix("<!-- not run:") {
                let reason = reason.trim_end_matches("-->").trim();
                assert!(
                    !reason.is_empty(),
                    "{page:?}:{}: say why it is not run",
                    block.line
                );
                not_run.push(format!("{}:{}", page.display(), block.line));
                continue;
            }
            let commands = run_block(&page, block);
            ran.push(format!(
                "{}:{} ({commands} commands)",
                page.display(),
                block.line
            ));
        }
    }
    eprintln!("ran {} console examples: {ran:?}", ran.len());
    eprintln!("not run (each says why): {not_run:?}");
    // The examples of the README's quick start and of every command that needs no server.
    for page in ["README.md", "docs/commands.md"] {
        assert!(
            ran.iter().any(|r| r.starts_with(page)),
            "no example of {page} ran: {ran:?}"
        );
    }
    assert!(ran.len() >= 7, "the console examples that run: {ran:?}");
}

/// GitHub's anchor of a heading: lower case; letters, digits, `-` and `_` kept, spaces
/// become `-`, everything else dropped; a repeated anchor gets `-1`, `-2`, ….
fn anchors(text: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut bases: Vec<String> = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        if fence || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let repeats = bases.iter().filter(|s| **s == slug).count();
        seen.push(if repeats == 0 {
            slug.clone()
        } else {
            format!("{slug}-{repeats}")
        });
        bases.push(slug);
    }
    seen
}

/// The targets of `[text](target)` and `![alt](target)` outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        // Inline code spans are not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        let dir = page.parent().unwrap_or(Path::new(""));
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let file_path = if file.is_empty() {
                page.clone()
            } else {
                dir.join(file)
            };
            assert!(
                root().join(&file_path).exists(),
                "{page:?}: the link `{target}` names {file_path:?}, which does not exist"
            );
            if let Some(fragment) = fragment {
                assert!(
                    file_path.extension().is_some_and(|e| e == "md"),
                    "{page:?}: `{target}`: a fragment into a file that is not Markdown"
                );
                let headings = anchors(&read(&file_path));
                assert!(
                    headings.iter().any(|h| h == fragment),
                    "{page:?}: the link `{target}` names no heading of {file_path:?}; its \
                     anchors: {headings:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} links found");
}

/// The text after `Usage: ` in `tableq ARGS --help`, whitespace collapsed, and the long
/// options it lists (but `--help` and the global `--color`).
fn usage_and_options(args: &[&str]) -> (String, Vec<String>) {
    let output = Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run tableq --help");
    assert!(output.status.success(), "tableq {args:?} --help failed");
    let help = String::from_utf8(output.stdout).expect("UTF-8 help");
    let start = help.find("Usage: ").expect("a Usage: line") + "Usage: ".len();
    let end = help[start..].find("\n\n").map_or(help.len(), |e| start + e);
    let usage = collapse(&help[start..end]);
    let options = help
        .lines()
        .skip_while(|l| *l != "Options:")
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            let l = if l.len() > 4 && l.as_bytes()[0] == b'-' && &l[2..4] == ", " {
                &l[4..]
            } else {
                l
            };
            l.strip_prefix("--")
                .map(|o| format!("--{}", o.split([' ', '=']).next().unwrap_or("")))
        })
        .filter(|o| o != "--help" && o != "--color" && o != "--version")
        .collect();
    (usage, options)
}

/// Whether `usage` names `option` as a whole word (`--body-budget` is not `--body-budget-wait`).
fn names(usage: &str, option: &str) -> bool {
    usage.match_indices(option).any(|(at, _)| {
        !usage[at + option.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
    })
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_usage_line_is_in_the_commands_page() {
    let page = collapse(&read(Path::new("docs/commands.md")));
    let commands: &[&[&str]] = &[
        &["validate"],
        &["eval"],
        &["explain"],
        &["gen"],
        &["serve"],
        &["token"],
        &["check"],
        &["import"],
        &["bench-http"],
        &["debug", "tokens"],
        &["debug", "ast"],
        &["debug", "plan"],
    ];
    for args in commands {
        let (usage, options) = usage_and_options(args);
        assert!(
            page.contains(&usage),
            "docs/commands.md lacks the usage of `tableq {}`: {usage}",
            args.join(" ")
        );
        if !usage.contains("[OPTIONS]") {
            let missing: Vec<&String> = options.iter().filter(|o| !names(&usage, o)).collect();
            assert!(
                missing.is_empty(),
                "the usage line of `tableq {}` omits {missing:?}: {usage}",
                args.join(" ")
            );
        }
    }
}
