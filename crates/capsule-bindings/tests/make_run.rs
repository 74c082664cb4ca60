//! `make run` builds only the modules it evaluates (the Makefile's `RUN_POLICIES`): the seed
//! example's, named in its recipe, and those of the bindings converted from the solar Tenant.
//! The list must be exactly those, so that make run neither misses a module nor builds one
//! it never runs.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use capsule_bindings::convert::ownership_policy;
use capsule_bindings::{Options, parse_tenants, translate};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The words of the Makefile variable `name` (`NAME := a b \` continued lines).
fn make_variable(makefile: &str, name: &str) -> Vec<String> {
    let prefix = format!("{name} :=");
    let mut lines = makefile.lines().skip_while(|l| !l.starts_with(&prefix));
    let mut words = Vec::new();
    let mut line = lines
        .next()
        .unwrap_or_else(|| panic!("no {name} in the Makefile"))[prefix.len()..]
        .to_owned();
    loop {
        let continued = line.trim_end().ends_with('\\');
        words.extend(
            line.trim_end()
                .trim_end_matches('\\')
                .split_whitespace()
                .map(str::to_owned),
        );
        if !continued {
            return words;
        }
        line = lines.next().unwrap().to_owned();
    }
}

/// The modules the `run` recipe evaluates by name: `$(RUN_WASM_DIR)/<module>.wasm`.
fn recipe_modules(makefile: &str) -> BTreeSet<String> {
    let recipe: String = makefile
        .lines()
        .skip_while(|l| !l.starts_with("run:"))
        .skip(1)
        .take_while(|l| l.starts_with('\t'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!recipe.is_empty(), "no run recipe in the Makefile");
    recipe
        .split("$(RUN_WASM_DIR)/")
        .skip(1)
        .map(|rest| rest.split(".wasm").next().unwrap().replace('_', "-"))
        .collect()
}

/// The policies of the bindings `capsule-bindings convert` writes for the solar Tenant with
/// make run's options (the defaults; the registry only names the modules).
fn solar_policies() -> BTreeSet<String> {
    let path = root().join("test_data/capsule-bindings/tenants/solar.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let tenants = parse_tenants(&text, "solar.yaml").unwrap();
    let options = Options::default();
    let mut policies = BTreeSet::new();
    for tenant in &tenants {
        let translation = translate(tenant, &options);
        assert!(translation.errors.is_empty(), "{:?}", translation.errors);
        policies.extend(translation.planned.iter().map(|p| p.policy.name.to_owned()));
        if options.ownership && translation.owners.is_some() {
            policies.insert(ownership_policy().unwrap().name.to_owned());
        }
    }
    policies
}

#[test]
fn make_run_builds_exactly_the_modules_it_evaluates() {
    let makefile = std::fs::read_to_string(root().join("Makefile")).unwrap();
    assert!(
        makefile.contains("$(foreach p,$(RUN_POLICIES),-p $(p))"),
        "run-build no longer builds RUN_POLICIES"
    );
    let listed: BTreeSet<String> = make_variable(&makefile, "RUN_POLICIES")
        .into_iter()
        .collect();
    let mut used = recipe_modules(&makefile);
    assert!(used.contains("pod-toleration-policy"), "{used:?}");
    used.extend(solar_policies());
    assert_eq!(
        listed, used,
        "the Makefile's RUN_POLICIES must name exactly the modules make run evaluates"
    );
}

#[test]
fn make_variable_reads_continued_lines() {
    let makefile = "A := 1\nLIST := a b \\\n  c \\\n  d\nB := 2\n";
    assert_eq!(make_variable(makefile, "LIST"), ["a", "b", "c", "d"]);
    assert_eq!(make_variable(makefile, "A"), ["1"]);
}
