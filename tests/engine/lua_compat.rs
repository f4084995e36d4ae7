//! Every script in `lua/` holds on the servers teams run besides Redis: Lua 5.4 (Dragonfly's
//! interpreter) and strict key declaration (Dragonfly refuses keys a script did not declare,
//! Redis Cluster needs them declared to route). A script fails here when it:
//! - does not parse under Debian's `luac5.4 -p`;
//! - uses a name only Lua 5.1 has (`table.maxn`, `getn`, `setfenv`, `loadstring`, global
//!   `unpack` other than as the fallback in `(table.unpack or unpack)`), or `string.pack`
//!   (5.3+, not in the Lua 5.1 of Redis and Valkey); or reads or writes a global outside the
//!   scripting environment's (the globals are read from the 5.4 bytecode, not guessed);
//! - passes a key to `redis.call` that is not a `KEYS[...]` element (statically: the argument
//!   is `KEYS[...]` or a local assigned only from `KEYS[...]`);
//! - replies a number with a fraction where the contract means an integer: that one needs a
//!   server, and is checked in tests/engine/lua_scripts.rs (on Redis and on Valkey);
//! - replies a number that Lua 5.4 may hold as a float (Dragonfly sends those as doubles).
//!
//! Kept: `struct.pack`/`struct.unpack` for the token bucket's and GCRA's packed doubles. Redis,
//! Valkey and (by its source) Dragonfly load the `struct` library into their Lua; no Dragonfly
//! runs here, see the README's compatibility table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scripts() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("lua/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "lua"))
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("read"))
        })
        .collect();
    out.sort();
    assert!(
        out.len() >= 7,
        "the five algorithms, policy and refund: {out:?}"
    );
    out
}

fn luac() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("luac5.4"))
        .find(|candidate| candidate.is_file())
        .expect("luac5.4 is not installed: `sudo apt-get install lua5.4` (scripts/deps.sh engine)")
}

#[test]
fn every_script_parses_under_lua_5_4() {
    let luac = luac();
    for (name, _) in scripts() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("lua")
            .join(&name);
        let out = Command::new(&luac)
            .arg("-p")
            .arg(&path)
            .output()
            .expect("run luac5.4");
        assert!(
            out.status.success(),
            "{name} does not parse under Lua 5.4: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The source without comments and string literals, so that words in them do not count. Line
/// breaks are kept, so that a line of the result is the same line of the source.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    // `[[`, `[=[`, ...: the closing bracket for a long string or comment opening at `at`.
    let long_close = |at: usize| -> Option<String> {
        let rest = &source[at..];
        let level = rest[1..].bytes().take_while(|b| *b == b'=').count();
        (rest.as_bytes().get(1 + level) == Some(&b'[')).then(|| format!("]{}]", "=".repeat(level)))
    };
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("--") {
            let skip = match (bytes.get(i + 2) == Some(&b'['))
                .then(|| long_close(i + 2))
                .flatten()
            {
                Some(close) => rest.find(&close).map_or(rest.len(), |e| e + close.len()),
                None => rest.find('\n').unwrap_or(rest.len()),
            };
            out.push_str(&"\n".repeat(rest[..skip].matches('\n').count()));
            i += skip;
        } else if bytes[i] == b'\'' || bytes[i] == b'"' {
            let quote = bytes[i];
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != quote {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("''");
            i = j + 1;
        } else if let Some(close) = (bytes[i] == b'[').then(|| long_close(i)).flatten() {
            let skip = rest.find(&close).map_or(rest.len(), |e| e + close.len());
            out.push_str("''");
            out.push_str(&"\n".repeat(rest[..skip].matches('\n').count()));
            i += skip;
        } else {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    out
}

/// Whole-word occurrences of `word` (a dotted name counts as one word).
fn uses(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after) && before != Some('.') && before != Some(':')
    })
}

#[test]
fn no_lua_5_1_only_names_and_no_string_pack() {
    let forbidden = [
        "table.maxn",
        "table.getn",
        "getn",
        "setfenv",
        "getfenv",
        "loadstring",
        "string.pack",
        "string.unpack",
        "math.pow",
        "math.mod",
    ];
    for (name, source) in scripts() {
        let code = code_only(&source);
        for word in forbidden {
            assert!(!uses(&code, word), "{name} uses {word}");
        }
        let global_unpack = code.matches("unpack").count()
            - code.matches(".unpack").count()
            - code.matches("(table.unpack or unpack)").count();
        assert_eq!(
            global_unpack, 0,
            "{name} calls the global unpack (Lua 5.1 only): use (table.unpack or unpack)"
        );
    }
}

#[test]
fn scripts_use_only_the_scripting_environment_s_globals() {
    let allowed: BTreeSet<&str> = [
        "redis", "KEYS", "ARGV", "math", "string", "table", "tonumber", "tostring", "type",
        "struct", "pairs", "ipairs", "select", "error", "unpack",
    ]
    .into();
    let luac = luac();
    for (name, _) in scripts() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("lua")
            .join(&name);
        let out = Command::new(&luac)
            .args(["-l", "-p"])
            .arg(&path)
            .output()
            .expect("run luac5.4 -l");
        let listing = String::from_utf8_lossy(&out.stdout);
        for line in listing.lines() {
            let Some((_, global)) = line.split_once("_ENV \"") else {
                continue;
            };
            let global = global.split('"').next().unwrap_or_default();
            assert!(
                !line.contains("SETTABUP"),
                "{name} assigns the global {global:?}: {line}"
            );
            assert!(
                allowed.contains(global),
                "{name} reads the global {global:?}, which Lua 5.4 or Redis's environment lacks: {line}"
            );
        }
    }
}

/// The expressions assigned to `var` anywhere in `code` (`local a, b = x, y` gives `y` for b).
fn assignments<'a>(code: &'a str, var: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    for line in code.lines() {
        let line = line.trim().trim_start_matches("local ");
        let Some((lhs, rhs)) = line.split_once(" = ") else {
            continue;
        };
        if lhs.contains(['(', '=', '~', '<', '>']) || lhs.starts_with("if ") {
            continue;
        }
        let names: Vec<&str> = lhs.split(',').map(str::trim).collect();
        let Some(at) = names.iter().position(|n| *n == var) else {
            continue;
        };
        if let Some(expr) = split_top_level(rhs).get(at) {
            found.push(*expr);
        }
    }
    found
}

/// `a, f(b, c), d` → `["a", "f(b, c)", "d"]`.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out
}

#[test]
fn every_key_a_script_touches_is_declared_in_keys() {
    // Commands whose first argument is not a key.
    let keyless = ["TIME"];
    for (name, source) in scripts() {
        let code = code_only(&source);
        let mut calls = 0;
        for (at, _) in code
            .match_indices("redis.call(")
            .chain(code.match_indices("redis.pcall("))
        {
            let args = &code[at..];
            let args = &args[args.find('(').expect("(") + 1..];
            let end = args.find(')').unwrap_or(args.len());
            let parts = split_top_level(&args[..end]);
            let command = source_command(&source, &code, at);
            if keyless.contains(&command.as_str()) {
                continue;
            }
            let key = parts.get(1).copied().unwrap_or_default();
            calls += 1;
            let declared = key.starts_with("KEYS[")
                || (!key.is_empty()
                    && key.chars().all(|c| c.is_alphanumeric() || c == '_')
                    && !assignments(&code, key).is_empty()
                    && assignments(&code, key)
                        .iter()
                        .all(|e| e.starts_with("KEYS[")));
            assert!(
                declared,
                "{name}: redis.call('{command}', {key}, ...) touches a key that is not a KEYS element"
            );
        }
        assert!(calls > 0, "{name}: no redis.call found");
    }
}

/// The command name of the call at `at` (`code_only` blanked the string literal, so it is read
/// from the source line that holds the same call).
fn source_command(source: &str, code: &str, at: usize) -> String {
    let line_no = code[..at].matches('\n').count();
    let line = source.lines().nth(line_no).unwrap_or_default();
    let nth = code[..at]
        .rsplit('\n')
        .next()
        .map_or(0, |l| l.matches("redis.").count());
    let call = line
        .match_indices("redis.")
        .nth(nth)
        .map_or("", |(i, _)| &line[i..]);
    call.split(['\'', '"'])
        .nth(1)
        .unwrap_or_default()
        .to_uppercase()
}

/// Lua 5.4 has an integer subtype, and a 5.4 server (Dragonfly) replies a float-typed number
/// as a double even when it is whole (`4 / 2` is `2.0`). Each reply is therefore made of
/// integers by construction: every element of a returned table is an integer literal, a
/// `math.floor(...)`/`math.ceil(...)` (integers in 5.4), or a name only ever assigned integer
/// literals; policy.lua floors its whole reply just before returning it.
#[test]
fn every_reply_element_is_an_integer_in_lua_5_4() {
    let integer = |e: &str| !e.is_empty() && e.chars().all(|c| c.is_ascii_digit());
    for (name, source) in scripts() {
        let code = code_only(&source);
        for (at, _) in code.match_indices("return {") {
            let body = &code[at + "return {".len()..];
            let body = &body[..body.find('}').expect("a closing brace")];
            for element in split_top_level(body) {
                let ok = integer(element)
                    || element.starts_with("math.floor(")
                    || element.starts_with("math.ceil(")
                    || (!assignments(&code, element).is_empty()
                        && assignments(&code, element).iter().all(|e| integer(e)));
                assert!(ok, "{name}: `return {{{body}}}` replies {element:?}, which may be a float in Lua 5.4: wrap it in math.floor");
            }
        }
        if code.contains("return reply") {
            assert!(
                code.contains(
                    "for i = 1, #reply do reply[i] = math.floor(reply[i]) end\nreturn reply"
                ),
                "{name} returns its reply table without making every element an integer"
            );
        }
    }
}
