//! No product file is over 650 lines: a file that long holds two ideas and is split by idea
//! (issue 18). Product files are the engine's, the CLI's, the crates', the app's, the UI's and
//! the scripts; tests (`tests/`, `*.test.ts`, `e2e/`) may be longer.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 650;

fn product_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "tests" | "node_modules" | "e2e" | "dist" | "target"
            ) {
                product_files(&path, out);
            }
        } else if (name.ends_with(".rs") || name.ends_with(".ts") || name.ends_with(".lua"))
            && !name.ends_with(".test.ts")
            && !name.ends_with("_tests.rs")
        {
            out.push(path);
        }
    }
}

#[test]
fn no_product_file_is_over_650_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "lua", "src-tauri/src", "ui/src"] {
        product_files(&root.join(dir), &mut files);
    }
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        for krate in crates.flatten() {
            product_files(&krate.path().join("src"), &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "the walk found the tree: {}",
        files.len()
    );
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > MAX_LINES).then(|| {
                format!(
                    "{} ({lines} lines)",
                    f.strip_prefix(root).unwrap_or(f).display()
                )
            })
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines, split by idea:\n{}",
        long.join("\n")
    );
}
