//! The import graph of every crate in the workspace has no cycle, at any depth.
//!
//! Each `.rs` file is a node. An edge goes from a file to the file that defines the module a
//! path names (`use crate::sim::Record` → `src/sim/mod.rs`, `super::style::bin_ms` →
//! `src/export/style.rs`); `mod x;` declares and is no edge. The graph must be acyclic file by
//! file, and also once files are collapsed to their module at every depth (`src/sim/*` to
//! `sim`): so `sim` may use `export` or `export` may use `sim`, never both, and a file never
//! imports from a module that imports it back, however indirectly. A child that uses its
//! parent's items is fine as long as the parent only declares the child.
//!
//! The core crate (`src/`, what a service links) depends on neither the lab nor the CLI:
//! no path of theirs in its code, and none of the packages only they need in its dependency
//! tree (`cargo tree -p ratelockr -e normal`).
//!
//! No Redis: this reads the sources only (and asks cargo for the core's dependency tree).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate roots checked: (the directory the module tree starts in, the root file).
fn crate_roots() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots = vec![
        (root.join("src"), root.join("src/lib.rs")),
        (
            root.join("src-tauri/src"),
            root.join("src-tauri/src/lib.rs"),
        ),
    ];
    if let Ok(dir) = std::fs::read_dir(root.join("crates")) {
        for entry in dir.flatten() {
            let src = entry.path().join("src");
            if src.join("lib.rs").is_file() {
                roots.push((src.clone(), src.join("lib.rs")));
            }
        }
    }
    roots
}

/// Every file of a crate, with its module path (`src/sim/mod.rs` → `["sim"]`).
fn crate_files(dir: &Path, root_file: &Path) -> BTreeMap<PathBuf, Vec<String>> {
    let mut files = BTreeMap::new();
    files.insert(root_file.to_path_buf(), Vec::new());
    walk(dir, dir, root_file, &mut files);
    files
}

fn walk(base: &Path, dir: &Path, root_file: &Path, files: &mut BTreeMap<PathBuf, Vec<String>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            // Another binary's tree (src/bin) is a crate of its own.
            if path.file_name().is_some_and(|n| n == "bin") && dir == base {
                continue;
            }
            walk(base, &path, root_file, files);
        } else if path.extension().is_some_and(|e| e == "rs") && path != root_file {
            let rel = path.strip_prefix(base).expect("under base");
            let mut segments: Vec<String> = rel
                .iter()
                .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if segments.last().is_some_and(|s| s == "mod") {
                segments.pop();
            }
            if segments.len() == 1 && (segments[0] == "main" || segments[0] == "lib") {
                continue;
            }
            files.insert(path, segments);
        }
    }
}

/// The source without comments, strings and `#[cfg(test)]` modules (whose `super` is the file).
fn code_of(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = rest.strip_prefix("r#\"") {
            i += 3 + raw.find("\"#").map_or(raw.len(), |e| e + 2);
            out.push_str("\"\"");
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            out.push_str("\"\"");
        } else if rest.starts_with("'\\") {
            // An escaped char literal ('\'', '\\', '\n').
            i += 3 + rest[3..].find('\'').map_or(rest.len() - 3, |e| e + 1);
        } else if bytes[i] == b'\'' && rest[1..].chars().nth(1) == Some('\'') {
            // A char literal ('"'), not a lifetime.
            i += 2 + rest[1..].chars().next().map_or(0, char::len_utf8);
        } else {
            let ch = rest.chars().next().expect("non-empty");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    strip_test_modules(&out)
}

fn strip_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        if trimmed.starts_with("mod ") {
            if let Some(open) = trimmed.find('{') {
                let mut depth = 0;
                let mut end = trimmed.len();
                for (k, c) in trimmed[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &trimmed[end..];
                continue;
            }
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A path a file names. `alias` is the name a `use` binds (the last segment, or `as`'s).
#[derive(Debug, Clone, PartialEq)]
struct Named {
    path: Vec<String>,
    alias: String,
    /// A `pub use` (or `pub(crate) use`): a re-export, which passes a name through and is no
    /// dependency of the file itself.
    reexport: bool,
}

/// The paths a file names: each `use` tree expanded, and every other `crate::`, `super::` or
/// `self::` path.
fn named_paths(code: &str) -> Vec<Named> {
    let mut named = Vec::new();
    let mut rest = code;
    let mut others = String::new();
    while let Some(at) = find_use(rest) {
        others.push_str(&rest[..at]);
        let head = rest[..at].trim_end();
        let reexport = head.ends_with("pub") || head.ends_with(')') && head.contains("pub(");
        let stmt_start = at + "use ".len();
        let Some(end) = rest[stmt_start..].find(';') else {
            break;
        };
        let tree = rest[stmt_start..stmt_start + end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let mut paths = Vec::new();
        expand(&tree, &mut Vec::new(), &mut paths);
        named.extend(paths.into_iter().map(|(path, alias)| Named {
            path,
            alias,
            reexport,
        }));
        rest = &rest[stmt_start + end + 1..];
    }
    others.push_str(rest);
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = others[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = others[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: Vec<String> = others[at..]
                .split("::")
                .map(|s| {
                    s.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .take_while(|s| !s.is_empty())
                .collect();
            named.push(Named {
                alias: path.last().cloned().unwrap_or_default(),
                path,
                reexport: false,
            });
        }
    }
    named
}

/// The next `use` keyword at the start of a statement.
fn find_use(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = code[from..].find("use ") {
        let at = from + at;
        let before = code[..at].chars().next_back();
        if before.is_none_or(|c| c.is_whitespace() || c == ';' || c == '{' || c == '}') {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// Expands a use tree (`a::{b, c::{d as e}}`) into its paths, each with the name it binds.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim().trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let depth = prefix.len();
        prefix.extend(head);
        let mut level = 0;
        let mut start = 0;
        for (k, c) in inner.char_indices() {
            match c {
                '{' => level += 1,
                '}' => level -= 1,
                ',' if level == 0 => {
                    expand(&inner[start..k], prefix, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        if start < inner.len() {
            expand(&inner[start..], prefix, out);
        }
        prefix.truncate(depth);
    } else if !tree.is_empty() {
        let (item, alias) = match tree.split_once(" as ") {
            Some((item, alias)) => (item, Some(alias.trim().to_string())),
            None => (tree, None),
        };
        let mut path = prefix.clone();
        path.extend(
            item.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "*")
                .map(str::to_string),
        );
        // `use a::b::{self}` binds `b`.
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        let alias = alias.unwrap_or_else(|| path.last().cloned().unwrap_or_default());
        out.push((path, alias));
    }
}

/// One crate's modules and what each file re-exports.
struct Crate {
    files: BTreeMap<PathBuf, Vec<String>>,
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// Per file: a re-exported name and the absolute path it stands for.
    reexports: BTreeMap<PathBuf, BTreeMap<String, Vec<String>>>,
}

impl Crate {
    /// `path` as seen from the module `here`, made absolute (`None`: another crate's path).
    fn absolute(&self, path: &[String], here: &[String]) -> Option<Vec<String>> {
        let (mut absolute, rest): (Vec<String>, &[String]) = match path.first().map(String::as_str)
        {
            Some("crate") => (Vec::new(), &path[1..]),
            Some("self") => (here.to_vec(), &path[1..]),
            Some("super") => {
                let mut base = here.to_vec();
                let mut k = 0;
                while path.get(k).is_some_and(|s| s == "super") {
                    base.pop();
                    k += 1;
                }
                (base, &path[k..])
            }
            // 2018 paths: a child module of this one, or a name this module re-exports,
            // without `self::`.
            Some(first) => {
                let mut child = here.to_vec();
                child.push(first.to_string());
                let own = self.modules.get(here).and_then(|f| self.reexports.get(f));
                if !self.modules.contains_key(&child) && !own.is_some_and(|r| r.contains_key(first))
                {
                    return None;
                }
                (here.to_vec(), path)
            }
            None => return None,
        };
        absolute.extend(rest.iter().cloned());
        Some(absolute)
    }

    /// The file that defines what the absolute `path` names, through re-exports.
    fn defining_file(&self, path: &[String], hops: usize) -> Option<PathBuf> {
        let mut module = path.to_vec();
        while !module.is_empty() && !self.modules.contains_key(&module) {
            module.pop();
        }
        let file = self.modules.get(&module)?.clone();
        if let Some(name) = path.get(module.len()) {
            if let Some(target) = self.reexports.get(&file).and_then(|r| r.get(name)) {
                if hops < 8 && target.as_slice() != path {
                    let mut target = target.clone();
                    target.extend(path[module.len() + 1..].iter().cloned());
                    return self.defining_file(&target, hops + 1);
                }
            }
        }
        Some(file)
    }
}

/// Strongly connected components of more than one node (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// Every cycle of every crate, at every depth, as readable lines.
fn all_cycles() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    for (dir, root_file) in crate_roots() {
        if !root_file.is_file() {
            continue;
        }
        let files = crate_files(&dir, &root_file);
        let modules: BTreeMap<Vec<String>, PathBuf> =
            files.iter().map(|(f, m)| (m.clone(), f.clone())).collect();
        let named: BTreeMap<PathBuf, Vec<Named>> = files
            .keys()
            .map(|f| {
                let source = std::fs::read_to_string(f).expect("read source");
                (f.clone(), named_paths(&code_of(&source)))
            })
            .collect();
        let mut krate = Crate {
            files: files.clone(),
            modules,
            reexports: BTreeMap::new(),
        };
        // Re-exports refer to each other (`crate::X` re-exported from a module that re-exports
        // it from a child), so they are made absolute in rounds.
        for _ in 0..2 {
            let mut reexports = BTreeMap::new();
            for (file, here) in &krate.files {
                let mut names = BTreeMap::new();
                for n in named[file].iter().filter(|n| n.reexport) {
                    if let Some(absolute) = krate.absolute(&n.path, here) {
                        names.insert(n.alias.clone(), absolute);
                    }
                }
                reexports.insert(file.clone(), names);
            }
            krate.reexports = reexports;
        }
        let mut file_edges: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        for (file, here) in &krate.files {
            for n in named[file].iter().filter(|n| !n.reexport) {
                let target = krate
                    .absolute(&n.path, here)
                    .and_then(|p| krate.defining_file(&p, 0));
                if let Some(target) = target {
                    if &target != file {
                        file_edges.push((here.clone(), krate.files[&target].clone()));
                    }
                }
            }
        }
        let depth = files.values().map(Vec::len).max().unwrap_or(0);
        for d in (1..=depth).rev() {
            let name = |m: &[String]| {
                let cut = &m[..m.len().min(d)];
                if cut.is_empty() {
                    "(root)".to_string()
                } else {
                    cut.join("::")
                }
            };
            let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (from, to) in &file_edges {
                let (a, b) = (name(from), name(to));
                if a != b {
                    edges.entry(a).or_default().insert(b);
                }
            }
            for component in cycles(&edges) {
                report.push(format!(
                    "{} (depth {d}): {}",
                    dir.strip_prefix(root).unwrap_or(&dir).display(),
                    component.join(" <-> ")
                ));
            }
        }
    }
    report.sort();
    report.dedup();
    report
}

#[test]
fn no_import_cycles() {
    let found = all_cycles();
    assert!(
        found.is_empty(),
        "import cycles (each line: the files or modules that import each other, directly or not):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checker_sees_a_cycle() {
    // The checker itself: two files that name each other form one component.
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("a".into());
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycles(&edges), vec![vec!["a".to_string(), "b".to_string()]]);
    let mut paths = Vec::new();
    expand(
        "crate::sim::{self, Record, export::{csv::CsvSink as Sink}}",
        &mut Vec::new(),
        &mut paths,
    );
    assert_eq!(paths.len(), 3);
    assert_eq!(paths[0].1, "sim");
    assert_eq!(paths[2].0, ["crate", "sim", "export", "csv", "CsvSink"]);
    assert_eq!(paths[2].1, "Sink");
}

/// The packages only the lab (charts, gzip, histograms) and the CLI (arguments, progress bars,
/// anyhow) need: a service linking the core compiles none of them.
const LAB_AND_CLI_ONLY: [&str; 9] = [
    "ratelockr-lab",
    "ratelockr-cli",
    "plotters",
    "image",
    "clap",
    "indicatif",
    "hdrhistogram",
    "flate2",
    "anyhow",
];

#[test]
fn the_core_uses_neither_the_lab_nor_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = crate_files(&root.join("src"), &root.join("src/lib.rs"));
    files.insert(root.join("src/lib.rs"), Vec::new());
    let mut found = Vec::new();
    for path in files.keys() {
        let code = code_of(&std::fs::read_to_string(path).expect("a source file"));
        for name in ["ratelockr_lab", "ratelockr_cli"] {
            if code.contains(name) {
                found.push(format!("{} names {name}", path.display()));
            }
        }
    }
    assert!(files.len() > 40, "the walk found the core: {}", files.len());
    assert!(found.is_empty(), "the core reaches up: {found:?}");
}

#[test]
fn the_cores_dependency_tree_has_no_lab_or_cli_package() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-p", "ratelockr", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(root)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let packages: BTreeSet<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(
        packages.contains("redis") && packages.contains("tokio"),
        "the tree was read: {packages:?}"
    );
    let reached: Vec<&&str> = LAB_AND_CLI_ONLY
        .iter()
        .filter(|name| packages.contains(**name))
        .collect();
    assert!(reached.is_empty(), "the core's tree holds {reached:?}");
}
