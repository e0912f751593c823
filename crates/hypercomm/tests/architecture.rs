//! ARCHITECTURE.md matches the code (issue 21): every file or directory it names in
//! backticks (`crates/hypercomm-cli/src/main.rs`, `schedule/json.rs` relative to a
//! crate's `src`, `state.rs` inside the module its paragraph describes) exists; every
//! Rust name it gives in backticks (`Region::check`, `place_strided`) is an identifier
//! of the crates' sources; and the library's runtime dependencies are those its
//! invariant lists.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file and directory of the repository (without `target` and `.git`), as
/// `/`-separated paths relative to its root.
fn tree() -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name == "target" || name.starts_with('.') {
                continue;
            }
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if p.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &p, out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo(), &repo(), &mut out);
    out
}

/// The backticked spans of `text` that name a file or a directory: a name with a
/// `/` or a file extension (`.rs`, `.md`, `.toml`, `.sh`, `.json`), and no spaces,
/// `::`, `:` or `(`.
fn paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.is_empty() && !s.contains([' ', ':', '(', '*', '<']))
        .filter(|s| {
            s.contains('/')
                || [".rs", ".md", ".toml", ".sh", ".json"]
                    .iter()
                    .any(|x| s.ends_with(x))
        })
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `p` names something in the tree: from the root, or as the tail of a path
/// (`schedule/json.rs` is `crates/hypercomm/src/schedule/json.rs`; a directory may be
/// written with or without its trailing `/`).
fn exists(tree: &[String], p: &str) -> bool {
    let p = p.trim_start_matches("./");
    let dir = format!("{}/", p.trim_end_matches('/'));
    tree.iter().any(|t| {
        let t = t.as_str();
        t == p || t == dir || t.ends_with(&format!("/{p}")) || t.ends_with(&format!("/{dir}"))
    })
}

#[test]
fn the_paths_it_recognises() {
    let text = "`crates/a.rs`, `schedule/json.rs`, `state.rs`, `runtime/`, `hypercube:N`, \
                `Program::expand_strided`, `in`, `--len`, `mpirun -n 4`";
    assert_eq!(
        paths(text),
        vec!["crates/a.rs", "runtime/", "schedule/json.rs", "state.rs"]
    );
    let tree = vec![
        "crates/".to_string(),
        "crates/x/src/schedule/json.rs".into(),
        "crates/x/src/runtime/".into(),
    ];
    assert!(exists(&tree, "schedule/json.rs"));
    assert!(exists(&tree, "runtime/"));
    assert!(exists(&tree, "runtime"));
    assert!(!exists(&tree, "chedule/json.rs"));
    assert!(!exists(&tree, "schedule/yaml.rs"));
}

#[test]
fn every_path_architecture_md_names_exists() {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let tree = tree();
    let names = paths(&text);
    assert!(names.len() > 40, "{names:?}");
    let missing: Vec<&String> = names.iter().filter(|p| !exists(&tree, p)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// The invariant "the library … has no runtime dependency beyond …" lists every
/// dependency of `crates/hypercomm/Cargo.toml`.
#[test]
fn the_library_dependencies_are_those_the_invariant_lists() {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let invariant = text
        .split("**The library never links MPI**")
        .nth(1)
        .and_then(|t| t.split("\n- ").next())
        .expect("the invariant");
    let manifest = std::fs::read_to_string(repo().join("crates/hypercomm/Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for dep in deps
        .lines()
        .filter_map(|l| l.split(['.', ' ', '=']).next())
        .filter(|d| !d.is_empty())
    {
        assert!(
            invariant.contains(dep),
            "`{dep}` is not in the invariant:{invariant}"
        );
    }
}

/// The identifiers of every `.rs` file under `crates/`.
fn identifiers() -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for p in tree()
        .iter()
        .filter(|p| p.starts_with("crates/") && p.ends_with(".rs"))
    {
        let text = std::fs::read_to_string(repo().join(p)).unwrap();
        for w in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !w.is_empty() {
                out.insert(w.to_string());
            }
        }
    }
    out
}

/// `Type::item` paths and `snake_case` names in backticks.
fn rust_names(text: &str) -> Vec<String> {
    let is_ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.split('(').next().unwrap())
        .filter(|s| {
            let parts: Vec<&str> = s.split("::").collect();
            (parts.len() > 1 && parts.iter().all(|p| is_ident(p)))
                || (is_ident(s) && s.contains('_') && s.chars().all(|c| !c.is_uppercase()))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_rust_name_architecture_md_gives_exists() {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let known = identifiers();
    let names = rust_names(&text);
    assert!(names.len() > 30, "{names:?}");
    assert!(rust_names("`Region::check`, `a_b`, `A`, `x y`, `f(x)`").len() == 2);
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| n.split("::").any(|part| !known.contains(part)))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what the code does not: {missing:?}"
    );
}

/// BENCHMARKS.md is a short page of today's figures (issue 21: under 30 KB); full tables
/// and history go to docs/perf-log/.
#[test]
fn benchmarks_md_stays_a_short_page() {
    let len = std::fs::metadata(repo().join("BENCHMARKS.md"))
        .unwrap()
        .len();
    assert!(
        len < 30_000,
        "BENCHMARKS.md is {len} bytes: move full tables to docs/perf-log/"
    );
}
