//! `lua/policy.lua` decides each limit exactly as that limit's standalone script does (its
//! header: "a stack of one limit is that script, bit for bit"), so it repeats the scripts'
//! arithmetic. Every repeated piece is marked in both files,
//!
//! ```lua
//! -- shared: token_bucket.refill
//! local stored = tokens
//! ...
//! -- end shared
//! ```
//!
//! and this test holds each block of policy.lua to its one twin in the script its name starts
//! with (`lua/token_bucket.lua`), line by line. Any script may copy another's blocks the same
//! way (settle.lua gives back what refund.lua gives back, in blocks `refund.tb` ...). Only the
//! leading indentation may differ: the blocks sit deeper in policy.lua's loop. A block that drifts fails here with its name and its
//! first differing line, so the two copies stay one text without anyone comparing them by hand.

use std::collections::BTreeMap;
use std::path::Path;

/// The standalone scripts policy.lua repeats; each shares at least one block with it.
const ALGORITHMS: [&str; 7] = [
    "token_bucket",
    "gcra",
    "sliding_window_log",
    "sliding_window_counter",
    "fixed_window",
    "concurrency",
    "calendar",
];

const OPEN: &str = "-- shared:";
const CLOSE: &str = "-- end shared";

/// One marked block: its name, where its opening marker is, and the lines between the markers.
#[derive(Debug)]
struct Block {
    name: String,
    /// `lua/policy.lua:123`, the opening marker's line.
    at: String,
    /// The first line inside the block, 1-based.
    first_line: usize,
    lines: Vec<String>,
}

/// The marked blocks of one script, or what is wrong with its markers.
fn blocks(file: &str, source: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in source.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix(OPEN) {
            if let Some(block) = &open {
                return Err(format!(
                    "{file}:{line_no}: a block opens inside `{}` (opened at {}): close it first",
                    block.name, block.at
                ));
            }
            let name = name.trim();
            if name
                .split_once('.')
                .is_none_or(|(a, b)| a.is_empty() || b.is_empty())
            {
                return Err(format!(
                    "{file}:{line_no}: a block's name is <script>.<piece>, got {name:?}"
                ));
            }
            open = Some(Block {
                name: name.to_string(),
                at: format!("{file}:{line_no}"),
                first_line: line_no + 1,
                lines: Vec::new(),
            });
        } else if trimmed == CLOSE {
            match open.take() {
                Some(block) => out.push(block),
                None => return Err(format!("{file}:{line_no}: `{CLOSE}` with no block open")),
            }
        } else if let Some(block) = &mut open {
            block.lines.push(line.to_string());
        }
    }
    match open {
        Some(block) => Err(format!(
            "{}: block `{}` is never closed with `{CLOSE}`",
            block.at, block.name
        )),
        None => Ok(out),
    }
}

/// None when the two blocks are one text (leading indentation aside), else the first line
/// where they part.
fn first_difference(
    policy: &Block,
    policy_file: &str,
    twin: &Block,
    twin_file: &str,
) -> Option<String> {
    let n = policy.lines.len().max(twin.lines.len());
    (0..n).find_map(|i| {
        let a = policy.lines.get(i).map(|l| l.trim_start());
        let b = twin.lines.get(i).map(|l| l.trim_start());
        if a == b {
            return None;
        }
        let show = |line: Option<&str>, file: &str, block: &Block| match line {
            Some(text) => format!("{file}:{} has   {text}", block.first_line + i),
            None => format!("{file}:{} ends the block", block.first_line + i),
        };
        Some(format!(
            "block `{}` differs at its line {}:\n    {}\n    {}",
            policy.name,
            i + 1,
            show(a, policy_file, policy),
            show(b, twin_file, twin),
        ))
    })
}

/// Every problem with the blocks of `sources` (file name → text; policy.lua among them).
/// A block named after another script is a copy (policy.lua's, settle.lua's of refund.lua):
/// it has one twin there. A block named after its own script is the original: some other
/// script holds its copy.
fn check(sources: &BTreeMap<String, String>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut all: BTreeMap<&str, Vec<Block>> = BTreeMap::new();
    for (file, text) in sources {
        match blocks(file, text) {
            Ok(found) => {
                all.insert(file, found);
            }
            Err(e) => problems.push(e),
        }
    }
    let stem = |file: &str| {
        file.trim_start_matches("lua/")
            .trim_end_matches(".lua")
            .to_string()
    };
    for (file, found) in &all {
        for block in found {
            let script = block.name.split_once('.').map_or("", |(s, _)| s);
            if script == stem(file) {
                // An original: a marker left behind when every copy went would guard nothing.
                let copied = all.iter().any(|(other, theirs)| {
                    other != file && theirs.iter().any(|b| b.name == block.name)
                });
                if !copied {
                    problems.push(format!(
                        "{}: block `{}` has no twin in lua/policy.lua or any other script",
                        block.at, block.name
                    ));
                }
                continue;
            }
            let script_file = format!("lua/{script}.lua");
            let twins: Vec<&Block> = all
                .get(script_file.as_str())
                .map(|b| b.iter().filter(|t| t.name == block.name).collect())
                .unwrap_or_default();
            let here = found.iter().filter(|b| b.name == block.name).count();
            if here > 1 {
                problems.push(format!(
                    "{}: block `{}` is marked {here} times in {file}; a name is one block",
                    block.at, block.name
                ));
            }
            match twins.as_slice() {
                [twin] => problems.extend(first_difference(block, file, twin, &script_file)),
                [] => problems.push(format!(
                    "{}: block `{}` has no twin in {script_file}",
                    block.at, block.name
                )),
                many => problems.push(format!(
                    "{}: block `{}` has {} twins in {script_file}, where a name is one block",
                    block.at,
                    block.name,
                    many.len()
                )),
            }
        }
    }
    problems
}

fn read_scripts() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("lua/") {
        let path = entry.expect("an entry of lua/").path();
        if path.extension().is_some_and(|e| e == "lua") {
            let name = path.file_name().expect("a file name").to_string_lossy();
            let text = std::fs::read_to_string(&path).expect("a readable script");
            out.insert(format!("lua/{name}"), text);
        }
    }
    out
}

#[test]
fn every_block_policy_lua_shares_is_its_scripts_text() {
    let sources = read_scripts();
    assert!(
        sources.contains_key("lua/policy.lua"),
        "lua/policy.lua is missing: {:?}",
        sources.keys()
    );
    let problems = check(&sources);
    assert!(
        problems.is_empty(),
        "policy.lua and the standalone scripts part ways (make both copies one text again):\n{}",
        problems.join("\n")
    );
}

/// Without this, deleting the markers would pass the test above: no blocks, nothing to differ.
#[test]
fn every_algorithm_shares_a_block_with_policy_lua() {
    let sources = read_scripts();
    let policy = blocks("lua/policy.lua", &sources["lua/policy.lua"]).expect("well-formed markers");
    for algorithm in ALGORITHMS {
        let count = policy
            .iter()
            .filter(|b| b.name.starts_with(&format!("{algorithm}.")))
            .count();
        assert!(
            count >= 1,
            "lua/policy.lua marks no block shared with lua/{algorithm}.lua"
        );
    }
    assert!(policy.len() >= 10, "the blocks found: {policy:?}");
}

fn sources(policy: &str, script: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("lua/policy.lua".to_string(), policy.to_string()),
        ("lua/gcra.lua".to_string(), script.to_string()),
    ])
}

#[test]
fn the_check_ignores_indentation_and_names_the_first_differing_line() {
    let policy = "for i = 1, n do\n  -- shared: gcra.x\n  local a = 1\n  if a then\n    a = 2\n  end\n  -- end shared\nend\n";
    let same = "-- shared: gcra.x\nlocal a = 1\nif a then\n  a = 2\nend\n-- end shared\n";
    assert_eq!(check(&sources(policy, same)), Vec::<String>::new());

    let changed = same.replace("a = 2", "a = 3");
    let problems = check(&sources(policy, &changed));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("block `gcra.x` differs at its line 3")
            && problems[0].contains("lua/policy.lua:5 has   a = 2")
            && problems[0].contains("lua/gcra.lua:4 has   a = 3"),
        "{}",
        problems[0]
    );

    let shorter = "-- shared: gcra.x\nlocal a = 1\nif a then\n  a = 2\n-- end shared\n";
    let problems = check(&sources(policy, shorter));
    assert!(
        problems.len() == 1 && problems[0].contains("lua/gcra.lua:5 ends the block"),
        "{problems:?}"
    );
}

#[test]
fn a_block_without_its_twin_or_its_end_is_named() {
    let policy = "-- shared: gcra.x\nlocal a = 1\n-- end shared\n";
    let problems = check(&sources(policy, "local a = 1\n"));
    assert!(
        problems.len() == 1 && problems[0].contains("`gcra.x` has no twin in lua/gcra.lua"),
        "{problems:?}"
    );

    let stale = "-- shared: gcra.y\nlocal b = 1\n-- end shared\n";
    let problems = check(&sources("local a = 1\n", stale));
    assert!(
        problems.len() == 1 && problems[0].contains("`gcra.y` has no twin in lua/policy.lua"),
        "{problems:?}"
    );

    let unclosed = "-- shared: gcra.x\nlocal a = 1\n";
    let problems = check(&sources(policy, unclosed));
    assert!(
        problems
            .iter()
            .any(|p| p.contains("lua/gcra.lua:1: block `gcra.x` is never closed")),
        "{problems:?}"
    );

    let twice = format!("{policy}{policy}");
    let problems = check(&sources(&twice, policy));
    assert!(
        problems.iter().any(|p| p.contains("is marked 2 times")),
        "{problems:?}"
    );
}
