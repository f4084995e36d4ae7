//! Redis ACL users and the scripts: which permission is missing, in words, and the EVAL
//! fallback for a user that may run scripts but not `SCRIPT LOAD` them.

use crate::error::{FailureKind, RedisFailure};

/// Said once (a log line, and the app's connection status) when the fallback starts.
pub const EVAL_FALLBACK_NOTE: &str = "this Redis user may not run SCRIPT LOAD (NOPERM): scripts are loaded by EVAL instead, which sends a script's source once after each NOSCRIPT (grant +script|load to avoid it)";

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
            "the Redis user may not run this decision's script: grant it +evalsha (and +eval or +script|load to load scripts) and the keys under the prefix, e.g. ACL SETUSER <user> +evalsha +eval ~ratelockr:* ({err})"
        ),
    )
}

/// Neither SCRIPT LOAD nor EVAL is allowed: the script can never be loaded by this user.
pub(crate) fn cannot_load(err: &redis::RedisError) -> RedisFailure {
    RedisFailure::new(
        FailureKind::Misconfiguration,
        format!(
            "the Redis user may run EVALSHA but neither SCRIPT LOAD nor EVAL, so a missing script cannot be loaded: grant +script|load or +eval, or load the scripts as another user ({err})"
        ),
    )
}
