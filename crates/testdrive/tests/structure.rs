//! The repository's structure rules, checked over every Rust file of `crates/` and
//! `policies/` (tests and test modules excepted where a rule says so):
//!
//! * no non-test function longer than [`MAX_FUNCTION_LINES`] lines (the longest are printed,
//!   so the margin is visible in every run);
//! * no comment cites "SPEC", a document outside the repository: rules are cited as
//!   `README rule N` or `docs/semantics.md#<anchor>`;
//! * every `docs/semantics.md#<anchor>` cited exists as a heading of that page.

// A test file: its helpers index, unwrap and panic like the tests they serve.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The longest a non-test function may be, signature and closing brace included.
const MAX_FUNCTION_LINES: usize = 100;

/// The repository root (two levels above this crate).
fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Every `.rs` file under `dir`, skipping build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The Rust files the rules apply to.
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for top in ["crates", "policies"] {
        rust_files(&root().join(top), &mut files);
    }
    files.sort();
    assert!(files.len() > 50, "found only {} Rust files", files.len());
    files
}

/// A function found in a file: where it starts, its name and its length in lines.
#[derive(Debug)]
struct Function {
    file: PathBuf,
    line: usize,
    name: String,
    lines: usize,
}

/// The leading spaces of a line.
fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The name of the function a (trimmed) line declares, if it declares one.
fn declared_function(trimmed: &str) -> Option<&str> {
    let mut rest = trimmed;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

/// The non-test functions of a rustfmt-formatted file and their lengths: a function ends at
/// the first `}` at its own indentation; `#[cfg(test)]` modules and `#[test]` functions are
/// skipped.
fn functions(file: &Path, text: &str) -> Vec<Function> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut after_test_attribute = false;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let closing = |from: usize, at: usize| {
            (from + 1..lines.len())
                .find(|&j| indent(lines[j]) == at && lines[j].trim_start().starts_with('}'))
        };
        if trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[test]") {
            after_test_attribute = true;
            i += 1;
            continue;
        }
        if trimmed.starts_with("mod ") && trimmed.ends_with('{') && after_test_attribute {
            i = closing(i, indent(line)).unwrap_or(lines.len());
            after_test_attribute = false;
            continue;
        }
        if let Some(name) = declared_function(trimmed) {
            let is_test = after_test_attribute;
            after_test_attribute = false;
            let signature_end = (i..lines.len())
                .find(|&j| lines[j].ends_with('{') || lines[j].ends_with(';'))
                .unwrap_or(i);
            if lines[signature_end].ends_with(';') || trimmed.ends_with('}') {
                i = signature_end + 1;
                continue;
            }
            let end = closing(signature_end, indent(line)).unwrap_or(lines.len() - 1);
            if !is_test {
                out.push(Function {
                    file: file.to_path_buf(),
                    line: i + 1,
                    name: name.to_owned(),
                    lines: end - i + 1,
                });
            }
            i += 1;
            continue;
        }
        if !trimmed.starts_with("#[") && !trimmed.starts_with("//") && !trimmed.is_empty() {
            after_test_attribute = false;
        }
        i += 1;
    }
    out
}

/// Whether a file holds only tests (integration tests, fuzz targets' test helpers excepted).
fn is_test_file(file: &Path) -> bool {
    file.components().any(|c| c.as_os_str() == "tests")
}

#[test]
fn the_line_counter_sees_functions_and_skips_tests() {
    let text = "fn a() {\n    1;\n}\n\n#[cfg(test)]\nmod tests {\n    fn b() {\n    }\n}\n\n\
                impl X {\n    pub fn c(\n        x: u8,\n    ) -> u8 {\n        x\n    }\n    \
                fn d();\n    #[test]\n    fn e() {\n    }\n}\n";
    let found = functions(Path::new("x.rs"), text);
    let names: Vec<_> = found.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    assert_eq!(names, [("a", 3), ("c", 5)]);
}

#[test]
fn no_non_test_function_is_longer_than_the_limit() {
    let mut all = Vec::new();
    for file in sources().iter().filter(|f| !is_test_file(f)) {
        let text = std::fs::read_to_string(file).unwrap();
        all.extend(functions(file, &text));
    }
    all.sort_by_key(|f| std::cmp::Reverse(f.lines));
    println!("the longest non-test functions:");
    for f in all.iter().take(10) {
        println!("{:>5} {}:{} {}", f.lines, f.file.display(), f.line, f.name);
    }
    let over: Vec<String> = all
        .iter()
        .filter(|f| f.lines > MAX_FUNCTION_LINES)
        .map(|f| {
            format!(
                "{}:{} {} ({} lines)",
                f.file.display(),
                f.line,
                f.name,
                f.lines
            )
        })
        .collect();
    assert!(
        over.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        over.join("\n")
    );
}

#[test]
fn no_comment_cites_the_spec_and_every_cited_anchor_exists() {
    let page = std::fs::read_to_string(root().join("docs/semantics.md")).unwrap();
    let anchors: BTreeSet<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| {
            h.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect();
    let mut problems = Vec::new();
    // this file names the word it looks for
    for file in sources()
        .into_iter()
        .filter(|f| !f.ends_with("tests/structure.rs"))
    {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let at = format!("{}:{}", file.display(), n + 1);
            if line
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == "SPEC")
            {
                problems.push(format!("{at}: cites SPEC"));
            }
            for (i, _) in line.match_indices("docs/semantics.md#") {
                let anchor: String = line[i + "docs/semantics.md#".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '-')
                    .collect();
                if !anchors.contains(&anchor) {
                    problems.push(format!(
                        "{at}: no heading for #{anchor} in docs/semantics.md"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
