//! The commands the connection card shows, ready to copy: `ratelockr serve`, the example
//! service and `redis-cli`, each pointed at the Redis the app uses and the policies file the
//! Policies view has open. A password never appears: the URL is the redacted one (`***`), and
//! `redis-cli` asks for it (`--askpass`).

use ratelockr::RedisTarget;
use serde::Serialize;
use std::path::Path;
use ts_rs::TS;

/// The policies file named when none is open, and the example's default policy.
const NO_FILE: &str = "policies.toml";
const NO_POLICY: &str = "api";

/// Three shell commands, whole (the window wraps them, never cuts them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CopyCommands {
    /// `ratelockr serve --redis <url> --policies <file>`.
    pub serve: String,
    /// The tower layer's example service on the same Redis and policy.
    pub example: String,
    /// `redis-cli` at the same server (a cluster's first seed, in cluster mode).
    pub cli: String,
    /// What to do before running them (a password shown as `***`, no file open).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The commands for `target`, the open `policies_file` and its first `policy`.
pub fn for_target(
    target: &RedisTarget,
    policies_file: Option<&Path>,
    policy: Option<&str>,
) -> CopyCommands {
    let url = quote(target.redacted());
    let file = policies_file
        .map(|p| quote(&p.display().to_string()))
        .unwrap_or_else(|| NO_FILE.to_string());
    let policy = quote(policy.unwrap_or(NO_POLICY));
    let tls = tls_flags(target);
    let serve = format!("ratelockr serve --redis {url}{tls} --policies {file}");
    let example = format!(
        "cargo run -p ratelockr-tower --example api_key_service -- --redis {url} --policies {file} --policy {policy}"
    );
    let mut notes = Vec::new();
    if target.has_password() {
        notes.push("the password is shown as ***: put it in the URL before running serve or the example (redis-cli asks for it)");
    }
    if policies_file.is_none() {
        notes
            .push("no policies file is open: open or make one in the Policies view, or name yours");
    }
    CopyCommands {
        serve,
        example,
        cli: cli(target),
        note: (!notes.is_empty()).then(|| {
            let mut text = notes.join("; ");
            text[..1].make_ascii_uppercase();
            text + "."
        }),
    }
}

/// `--tls-ca FILE ...` for serve, from the TLS files the connection uses.
fn tls_flags(target: &RedisTarget) -> String {
    let Some(options) = target.tls_options() else {
        return String::new();
    };
    let mut flags = String::new();
    for (flag, file) in [
        ("--tls-ca", &options.ca),
        ("--tls-cert", &options.cert),
        ("--tls-key", &options.key),
    ] {
        if let Some(file) = file {
            flags += &format!(" {flag} {}", quote(&file.display().to_string()));
        }
    }
    flags
}

/// `redis-cli -p <port>` for a server on this machine, `-h <host>` for another, `-s` for a
/// socket; with `-c` for a cluster, `--tls` (and its files), `-n` for a database, and
/// `--user`/`--askpass` where the URL has them.
fn cli(target: &RedisTarget) -> String {
    let url = target.redacted();
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((info, rest)) => (Some(info), rest),
        None => (None, rest),
    };
    let mut args = vec!["redis-cli".to_string()];
    if target.is_cluster() {
        args.push("-c".into());
    }
    if scheme.contains("unix") {
        args.extend(["-s".into(), quote(rest.split('?').next().unwrap_or(rest))]);
    } else {
        // The first seed of a cluster; the host and port before a database or a fragment.
        let address = rest.split([',', '/', '#', '?']).next().unwrap_or(rest);
        let (host, port) = split_host_port(address);
        if !matches!(host, "127.0.0.1" | "localhost") {
            args.extend(["-h".into(), quote(host.trim_matches(['[', ']']))]);
        }
        if port != "6379" || args.len() == 1 || target.is_cluster() {
            args.extend(["-p".into(), port.to_string()]);
        }
        let db = rest
            .split_once('/')
            .map(|(_, db)| db.split(['#', '?']).next().unwrap_or(""))
            .unwrap_or("");
        if !db.is_empty() && db != "0" {
            args.extend(["-n".into(), db.to_string()]);
        }
    }
    if target.is_tls() {
        args.push("--tls".into());
        if let Some(options) = target.tls_options() {
            for (flag, file) in [
                ("--cacert", &options.ca),
                ("--cert", &options.cert),
                ("--key", &options.key),
            ] {
                if let Some(file) = file {
                    args.extend([flag.to_string(), quote(&file.display().to_string())]);
                }
            }
            if options.insecure {
                args.push("--insecure".into());
            }
        }
    }
    if let Some((user, _)) = userinfo.map(|i| i.split_once(':').unwrap_or((i, ""))) {
        if !user.is_empty() {
            args.extend(["--user".into(), quote(user)]);
        }
    }
    if target.has_password() {
        args.push("--askpass".into());
    }
    args.join(" ")
}

/// `host:port` (an IPv6 host in brackets) → (host, port); port 6379 when none is written.
fn split_host_port(address: &str) -> (&str, &str) {
    match address.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') && !port.is_empty() => (host, port),
        _ => (address, "6379"),
    }
}

/// `text` as one shell word: as it is when it holds nothing a shell reads, else in single
/// quotes.
pub fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.,/:@%+=".contains(c));
    match plain {
        true => text.to_string(),
        false => format!("'{}'", text.replace('\'', r"'\''")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> RedisTarget {
        RedisTarget::parse(url).expect("valid")
    }

    #[test]
    fn the_embedded_redis_gets_its_port_and_the_open_file() {
        let c = for_target(
            &target("redis://127.0.0.1:41234"),
            Some(Path::new("/home/me/rate limits/policies.toml")),
            Some("api-keys"),
        );
        assert_eq!(
            c.serve,
            "ratelockr serve --redis redis://127.0.0.1:41234 --policies '/home/me/rate limits/policies.toml'"
        );
        assert_eq!(
            c.example,
            "cargo run -p ratelockr-tower --example api_key_service -- --redis redis://127.0.0.1:41234 --policies '/home/me/rate limits/policies.toml' --policy api-keys"
        );
        assert_eq!(c.cli, "redis-cli -p 41234");
        assert_eq!(c.note, None);
    }

    #[test]
    fn a_password_is_never_shown_and_redis_cli_asks_for_it() {
        let c = for_target(
            &target("redis://app:s3cret@redis.internal:6390/2"),
            None,
            None,
        );
        for text in [&c.serve, &c.example, &c.cli] {
            assert!(!text.contains("s3cret"), "{text}");
        }
        assert!(
            c.serve.contains("'redis://app:***@redis.internal:6390/2'"),
            "{}",
            c.serve
        );
        assert_eq!(
            c.cli,
            "redis-cli -h redis.internal -p 6390 -n 2 --user app --askpass"
        );
        let note = c.note.expect("a note");
        assert!(
            note.contains("***") && note.contains("Policies view"),
            "{note}"
        );
        assert!(c.example.ends_with("--policies policies.toml --policy api"));
    }

    #[test]
    fn a_cluster_and_tls_are_named() {
        let c = for_target(
            &target("redis+cluster://127.0.0.1:7000,127.0.0.1:7001"),
            None,
            None,
        );
        assert_eq!(c.cli, "redis-cli -c -p 7000");
        let c = for_target(&target("rediss://db.example.com#insecure"), None, None);
        assert_eq!(c.cli, "redis-cli -h db.example.com --tls --insecure");
    }

    #[test]
    fn quoting_keeps_one_word() {
        assert_eq!(quote("a/b.toml"), "a/b.toml");
        assert_eq!(quote("it's here"), r"'it'\''s here'");
        assert_eq!(quote(""), "''");
    }
}
