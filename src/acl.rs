//! Redis ACL users and the scripts: which permission is missing, in words. The engine never
//! needs `SCRIPT LOAD` to decide: after NOSCRIPT it sends the same call as EVAL (`Limiter`), so a
//! user that may run scripts but not `SCRIPT LOAD` them is served as any other.

use crate::error::{FailureKind, RedisFailure};

pub(crate) fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

pub(crate) fn is_noperm(err: &redis::RedisError) -> bool {
    err.code() == Some("NOPERM")
        || err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm)
}

/// EVALSHA itself was refused: the user may not run scripts (or not on these keys).
pub(crate) fn no_script_permission(err: &redis::RedisError) -> RedisFailure {
    RedisFailure::new(
        FailureKind::Misconfiguration,
        format!(
            "the Redis user may not run this decision's script: grant it +evalsha and +eval and the keys under the prefix, e.g. ACL SETUSER <user> +evalsha +eval ~ratelockr:* ({err})"
        ),
    )
}

/// EVAL (after NOSCRIPT) was refused: this user can never put a script in Redis's cache.
pub(crate) fn cannot_load(err: &redis::RedisError) -> RedisFailure {
    RedisFailure::new(
        FailureKind::Misconfiguration,
        format!(
            "the Redis user may run EVALSHA but not EVAL, so a script missing from Redis's cache (after a restart, a failover or SCRIPT FLUSH) cannot be loaded: grant +eval, or load the scripts as another user with SCRIPT LOAD ({err})"
        ),
    )
}

/// A command a script calls was refused by the user's ACL. Redis says only "can't run this
/// command or subcommand script: <sha>, on @user_script:<line>"; `line` is that line of the
/// script's source (found by the caller from the sha), whose `redis.call` names the command.
/// Valkey says "ACL failure in script: User <u> has no permissions to run the '<cmd>' command
/// script: on @user_script:<line>", without the sha.
pub(crate) fn is_refused_in_script(err: &redis::RedisError) -> bool {
    let text = err.to_string();
    text.contains("can't run this command or subcommand script")
        || text.contains("ACL failure in script")
}

/// The refused command's line number and the script's sha, from Redis's message (the sha is
/// empty in Valkey's, which does not give it).
pub(crate) fn refused_at(err: &redis::RedisError) -> Option<(String, usize)> {
    let text = err.to_string();
    let sha = text
        .split("script: ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_hexdigit())
        .next()?
        .to_string();
    let line = text
        .split("@user_script:")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some((sha, line))
}

/// The refusal in words: the command, from the script's own line (`script` names it), and the
/// permission to grant.
pub(crate) fn refused_in_script(
    err: &redis::RedisError,
    script: &str,
    line: Option<&str>,
) -> RedisFailure {
    let command = line.and_then(|l| {
        let after = l.split("call(").nth(1)?;
        let name: String = after
            .trim_start_matches([' ', '\'', '"'])
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        (!name.is_empty()).then(|| name.to_ascii_lowercase())
    });
    let what = match &command {
        Some(c) => format!(
            "the Redis user may not run {}, which {script} calls: grant +{c} (README.md lists every command the scripts call)",
            c.to_ascii_uppercase()
        ),
        None => format!(
            "the Redis user may not run a command {script} calls (README.md lists every command the scripts call)"
        ),
    };
    RedisFailure::new(FailureKind::Misconfiguration, format!("{what} ({err})"))
}
