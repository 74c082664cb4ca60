//! The layers of the workspace (`docs/semantics.md#layers`), printed and checked:
//!
//! * the core's crates form a stack, each depending only on crates below it, and every
//!   other crate (policies, host, test host, CLI) depends on crates of a lower rank only
//!   ([`RANKS`]);
//! * in every crate, no two sibling modules import each other, directly or through others
//!   (a module imports a sibling when its non-test code names `crate::…`, `super::…` or
//!   `self::…` paths into it);
//! * no module folder (a crate's `src/` included) holds more than [`MAX_MODULES`] modules.

// A test file: its helpers index, unwrap and panic like the tests they serve.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
];

/// The rank of a policy crate.
const POLICY_RANK: u8 = 4;

fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

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
                toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
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
    collect(&src, &mut files);
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

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
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
