//! The repository's structure rules, checked over every Rust file of `crates/` and
//! `policies/` (tests and test modules excepted where a rule says so):
//!
//! * no non-test function longer than [`MAX_FUNCTION_LINES`] lines (the longest are printed,
//!   so the margin is visible in every run);
//! * no comment cites "SPEC", a document outside the repository: rules are cited as
//!   `README rule N` or `docs/semantics.md#<anchor>`;
//! * every `docs/semantics.md#<anchor>` cited exists as a heading of that page;
//! * the workspace keeps its layers ([`layers`], `docs/semantics.md#layers`): crates depend
//!   downward only, no two sibling modules import each other, no folder holds more than 15
//!   modules.

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

/// The layers of the workspace (`docs/semantics.md#layers`), printed and checked:
///
/// * the core's crates form a stack, each depending only on crates below it, and every
///   other crate (policies, host, test host, CLI) depends on crates of a lower rank only
///   ([`RANKS`]);
/// * in every crate, no two sibling modules import each other, directly or through others
///   (a module imports a sibling when its non-test code names `crate::…`, `super::…` or
///   `self::…` paths into it);
/// * no module folder (a crate's `src/` included) holds more than [`MAX_MODULES`] modules.
mod layers {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use super::{root, rust_files};

    /// The most modules one folder may hold.
    const MAX_MODULES: usize = 15;

    /// Every workspace crate's rank: a crate may depend on crates of a lower rank only. The
    /// core's four layers come first, one rank each; a crate not named here is a policy.
    const RANKS: &[(&str, u8)] = &[
        ("policy-decode", 0),
        ("kube-values", 1),
        ("policy-admission", 2),
        ("tenancy-rules", 3),
        // a policy crate (rank 4)
        ("policy-host", 5),
        ("capsule-bindings", 6),
        ("testdrive", 7),
        // the harness of the real control plane, on the test host
        ("control-plane", 8),
    ];

    /// The rank of a policy crate.
    const POLICY_RANK: u8 = 4;

    /// The workspace's crates: name and directory.
    fn crates() -> Vec<(String, PathBuf)> {
        let mut out = Vec::new();
        for group in ["crates", "policies"] {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join(group))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("Cargo.toml").is_file())
                .collect();
            dirs.sort();
            for dir in dirs {
                let manifest: toml::Table =
                    toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap())
                        .unwrap();
                let name = manifest["package"]["name"].as_str().unwrap().to_owned();
                out.push((name, dir));
            }
        }
        out
    }

    fn rank(name: &str) -> u8 {
        RANKS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(POLICY_RANK, |(_, r)| *r)
    }

    /// The workspace crates `dir`'s crate depends on (dependencies and dev-dependencies).
    fn dependencies(dir: &Path, members: &BTreeSet<String>) -> BTreeSet<String> {
        let manifest: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        ["dependencies", "dev-dependencies"]
            .iter()
            .filter_map(|t| manifest.get(*t).and_then(|v| v.as_table()))
            .flat_map(|t| t.keys().cloned())
            .filter(|k| members.contains(k))
            .collect()
    }

    #[test]
    fn crates_depend_only_on_lower_layers() {
        let crates = crates();
        let members: BTreeSet<String> = crates.iter().map(|(n, _)| n.clone()).collect();
        let mut violations = Vec::new();
        println!("crate graph (rank: crate -> workspace dependencies):");
        let mut by_rank: Vec<&(String, PathBuf)> = crates.iter().collect();
        by_rank.sort_by_key(|(n, _)| (rank(n), n.clone()));
        for (name, dir) in by_rank {
            let deps = dependencies(dir, &members);
            let shown: Vec<&str> = deps.iter().map(String::as_str).collect();
            println!("  {}: {name} -> {}", rank(name), shown.join(", "));
            for dep in &deps {
                if rank(dep) >= rank(name) {
                    violations.push(format!(
                        "{name} (rank {}) depends on {dep} (rank {})",
                        rank(name),
                        rank(dep)
                    ));
                }
            }
        }
        assert!(
            violations.is_empty(),
            "imports against the layers: {violations:#?}"
        );
    }

    /// A crate's source: each library module's path (`["limit_range", "items"]`) and the
    /// non-test, non-comment text of its file.
    fn modules(dir: &Path) -> Vec<(Vec<String>, String)> {
        let src = dir.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files
            .into_iter()
            .filter_map(|file| {
                let rel = file.strip_prefix(&src).unwrap();
                let mut path: Vec<String> = rel
                    .iter()
                    .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
                    .collect();
                // binaries are crates of their own
                if path.first().map(String::as_str) == Some("bin") {
                    return None;
                }
                if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
                    path.pop();
                }
                let text = std::fs::read_to_string(&file).unwrap();
                Some((path, production_code(&text)))
            })
            .collect()
    }

    /// `text` without comments and without `#[cfg(test)]` items (rustfmt's layout: the item
    /// ends at the first line at its own indentation that closes it).
    fn production_code(text: &str) -> String {
        let mut out = String::new();
        let mut skip_until: Option<usize> = None;
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            if let Some(level) = skip_until {
                if indent == level && (trimmed.starts_with('}') || trimmed.ends_with(';')) {
                    skip_until = None;
                }
                continue;
            }
            if trimmed.starts_with("#[cfg(test)]") {
                // a one-line item (`mod tests;`) ends at once
                if lines.peek().is_some_and(|l| l.trim_end().ends_with(';')) {
                    lines.next();
                } else {
                    skip_until = Some(indent);
                }
                continue;
            }
            if trimmed.starts_with("//") {
                continue;
            }
            let code = match line.find(" //") {
                Some(i) if !line[..i].contains('"') => &line[..i],
                _ => line,
            };
            out.push_str(code);
            out.push('\n');
        }
        out
    }

    /// The absolute module paths `text` (the code of module `at`) names: `crate::a::b`,
    /// `super::x`, `self::y`, grouped imports expanded.
    fn references(at: &[String], text: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for start in ["crate::", "super::", "self::"] {
            let mut from = 0;
            while let Some(i) = text[from..].find(start).map(|i| i + from) {
                from = i + start.len();
                let before = text[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                    continue;
                }
                // the base the path is relative to
                let mut base: Vec<String> = match start {
                    "crate::" => Vec::new(),
                    "self::" => at.to_vec(),
                    _ => at[..at.len().saturating_sub(1)].to_vec(),
                };
                let mut rest = &text[from..];
                // `super::super::`
                while start == "super::" && rest.starts_with("super::") {
                    base.pop();
                    rest = &rest["super::".len()..];
                }
                let consumed = text.len() - rest.len();
                expand(&base, &text[consumed..], &mut out);
            }
        }
        out
    }

    /// Expands the path that begins `text` (after `base::`) into full paths.
    fn expand(base: &[String], text: &str, out: &mut Vec<Vec<String>>) {
        if let Some(inner) = text.strip_prefix('{') {
            let mut depth = 0;
            let mut end = inner.len();
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        end = i;
                        break;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            let mut depth = 0;
            let mut part = String::new();
            for c in inner[..end].chars().chain(std::iter::once(',')) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let item = part.trim();
                        if !item.is_empty() && item != "self" {
                            expand(base, item, out);
                        }
                        part.clear();
                        continue;
                    }
                    _ => {}
                }
                part.push(c);
            }
            return;
        }
        let mut path = base.to_vec();
        let mut rest = text;
        loop {
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() {
                break;
            }
            path.push(ident.clone());
            rest = &rest[ident.len()..];
            match rest.strip_prefix("::") {
                Some(next) if next.starts_with('{') => {
                    expand(&path, next, out);
                    return;
                }
                Some(next) => rest = next,
                None => break,
            }
        }
        out.push(path);
    }

    /// The sibling-import edges of a crate, by folder: folder path -> (module -> modules).
    type Edges = BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>;

    /// The sibling edges and the child modules of every folder of a crate.
    fn module_graph(dir: &Path) -> (Edges, BTreeMap<Vec<String>, BTreeSet<String>>) {
        let modules = modules(dir);
        let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
        for (path, _) in &modules {
            if let Some((last, parent)) = path.split_last() {
                children
                    .entry(parent.to_vec())
                    .or_default()
                    .insert(last.clone());
            }
        }
        let mut edges = Edges::new();
        for (path, text) in &modules {
            for target in references(path, text) {
                // the folder both live in, and the sibling on each side
                let common = path.iter().zip(&target).take_while(|(a, b)| a == b).count();
                let (Some(from), Some(to)) = (path.get(common), target.get(common)) else {
                    continue;
                };
                let folder = path[..common].to_vec();
                // a name that is not a module of the folder is an item of the folder's own file
                if !children.get(&folder).is_some_and(|c| c.contains(to)) {
                    continue;
                }
                edges
                    .entry(folder)
                    .or_default()
                    .entry(from.clone())
                    .or_default()
                    .insert(to.clone());
            }
        }
        (edges, children)
    }

    /// A cycle among `graph`'s nodes, if any (depth-first search).
    fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
        fn visit(
            node: &str,
            graph: &BTreeMap<String, BTreeSet<String>>,
            stack: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(i) = stack.iter().position(|n| n == node) {
                let mut found = stack[i..].to_vec();
                found.push(node.to_owned());
                return Some(found);
            }
            if done.contains(node) {
                return None;
            }
            stack.push(node.to_owned());
            for next in graph.get(node).into_iter().flatten() {
                if let Some(found) = visit(next, graph, stack, done) {
                    return Some(found);
                }
            }
            stack.pop();
            done.insert(node.to_owned());
            None
        }
        let mut done = BTreeSet::new();
        graph
            .keys()
            .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
    }

    #[test]
    fn no_module_imports_a_sibling_that_imports_it_back() {
        let mut violations = Vec::new();
        for (name, dir) in crates() {
            let (edges, _) = module_graph(&dir);
            // every crate but the policies (thin, and alike) is printed
            let shown = rank(&name) != POLICY_RANK;
            for (folder, graph) in &edges {
                if shown && folder.is_empty() {
                    println!("{name} (modules -> the modules they import):");
                    for (module, targets) in graph {
                        let shown: Vec<&str> = targets.iter().map(String::as_str).collect();
                        println!("  {module} -> {}", shown.join(", "));
                    }
                }
                if let Some(found) = cycle(graph) {
                    let at = match folder.is_empty() {
                        true => "src".to_owned(),
                        false => folder.join("::"),
                    };
                    violations.push(format!("{name} {at}: {}", found.join(" -> ")));
                }
            }
        }
        assert!(violations.is_empty(), "import cycles: {violations:#?}");
    }

    #[test]
    fn no_folder_holds_more_than_fifteen_modules() {
        let mut violations = Vec::new();
        for (name, dir) in crates() {
            let (_, children) = module_graph(&dir);
            for (folder, modules) in children {
                if modules.len() > MAX_MODULES {
                    violations.push(format!(
                        "{name} src/{}: {} modules",
                        folder.join("/"),
                        modules.len()
                    ));
                }
            }
        }
        assert!(
            violations.is_empty(),
            "folders over {MAX_MODULES} modules: {violations:#?}"
        );
    }

    #[test]
    fn the_checks_see_a_cycle_and_a_grouped_import() {
        let code = production_code(
            "use crate::{a::X, b::{Y, Z}};\n// use crate::c;\n#[cfg(test)]\nmod tests {\n    use crate::d;\n}\nfn f() { super::e::g(); }\n",
        );
        let found = references(&["m".to_owned(), "n".to_owned()], &code);
        assert_eq!(
            found,
            [
                vec!["a", "X"],
                vec!["b", "Y"],
                vec!["b", "Z"],
                vec!["m", "e", "g"]
            ]
        );
        let graph: BTreeMap<String, BTreeSet<String>> = [
            ("a", &["b"][..]),
            ("b", &["c"][..]),
            ("c", &["a"][..]),
            ("d", &[][..]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
        .collect();
        assert_eq!(cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    }
}
