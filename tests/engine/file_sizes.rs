//! No product file is over 650 lines: a file that long holds two ideas and is split by idea
//! (issue 18). Product files are the engine's, the CLI's, the crates', the app's, the UI's and
//! the scripts; tests (`tests/`, `*.test.ts`, `e2e/`) may be longer. A Lua script is counted
//! from the end of its header comment: the header is its contract (keys, arguments, reply,
//! example) for any client that copies the one file, and a script cannot be split in two.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 650;
/// lua/policy.lua decides every kind of limit as its own script does, in the very blocks of
/// those scripts (held one text by lua_blocks.rs): its length is the sum of theirs, one idea
/// however many kinds there are, and one file by contract (a client copies one script). It
/// has a bound of its own so that it does not grow without anyone deciding it should.
const POLICY_LUA_MAX_LINES: usize = 900;

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

/// The lines that count: all of them, or a Lua script's after its `--[[ ... ]]` header.
fn code_lines(path: &Path, text: &str) -> usize {
    let is_lua = path.extension().is_some_and(|e| e == "lua");
    let body = match text
        .strip_prefix("--[[")
        .and_then(|rest| rest.split_once("]]"))
    {
        Some((_header, body)) if is_lua => body,
        _ => text,
    };
    body.lines().count()
}

#[test]
fn a_scripts_header_does_not_count_and_its_code_does() {
    let lua = Path::new("x.lua");
    assert_eq!(
        code_lines(lua, "--[[\na\nb\n]]\nlocal x = 1\nreturn x\n"),
        3
    );
    assert_eq!(code_lines(lua, "local x = 1\nreturn x\n"), 2);
    assert_eq!(code_lines(Path::new("x.rs"), "--[[\na\n]]\nb\n"), 4);
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
            let text = std::fs::read_to_string(f).ok()?;
            let lines = code_lines(f, &text);
            let most = if f.ends_with("lua/policy.lua") {
                POLICY_LUA_MAX_LINES
            } else {
                MAX_LINES
            };
            (lines > most).then(|| {
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
