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
