//! Which server a connection is on: Redis, Valkey or Dragonfly, its version, and whether it can
//! run Lua scripts. Every decision is a script, so a server without scripting (Valkey ≥ 9.1 can
//! be built or run without its `lua` module; an ACL can take scripts away) must be refused when
//! the engine connects, with a message saying so, rather than failing every decision open.
//!
//! Read from `INFO server` (Valkey names itself in `server_name` and `valkey_version`,
//! Dragonfly in `dragonfly_version`; both also report a `redis_version` for old clients) and
//! one `EVAL "return 1" 0`, which writes nothing.

use crate::error::{FailureKind, RedisFailure};
use std::collections::HashMap;

/// The server's family, as its `INFO server` names it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    Redis,
    Valkey,
    Dragonfly,
}

impl ServerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Redis => "Redis",
            ServerKind::Valkey => "Valkey",
            ServerKind::Dragonfly => "Dragonfly",
        }
    }
}

/// Whether the server runs the engine's scripts.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scripting {
    /// `EVAL "return 1" 0` answered 1.
    Available,
    /// The server has no scripting engine (or no EVAL command): no decision can be made here.
    Missing,
    /// The probe was refused for another reason (an ACL user without EVAL but with EVALSHA
    /// may still decide, see `crate::acl`): not a reason to refuse the server.
    Unknown,
}

/// The server a connection is on.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServerInfo {
    pub kind: ServerKind,
    /// The server's own version (Valkey's `valkey_version`, not the `redis_version` it reports
    /// for compatibility).
    pub version: String,
    pub scripting: Scripting,
    /// What the server said to the scripting probe, when it did not answer 1.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scripting_error: Option<String>,
}

impl std::fmt::Display for ServerInfo {
    /// `Valkey 9.1.2, scripting available`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scripting = match self.scripting {
            Scripting::Available => "scripting available",
            Scripting::Missing => "no scripting",
            Scripting::Unknown => "scripting not checked (EVAL refused)",
        };
        write!(f, "{} {}, {scripting}", self.kind.as_str(), self.version)
    }
}

impl ServerInfo {
    /// The server, or why the engine cannot decide on it: a server without scripting is a
    /// misconfiguration that no retry heals.
    pub fn require_scripting(self) -> Result<Self, RedisFailure> {
        if self.scripting != Scripting::Missing {
            return Ok(self);
        }
        let said = self.scripting_error.as_deref().unwrap_or("no reply");
        Err(RedisFailure::new(
            FailureKind::Misconfiguration,
            format!(
                "{} {} cannot run Lua scripts, and every RateLockr decision is one: refusing it \
                 rather than failing every decision open. Load its Lua engine (Valkey: the `lua` \
                 module) or use a server with scripting ({said})",
                self.kind.as_str(),
                self.version
            ),
        ))
    }
}

/// Reads the server over `conn`: `INFO server`, then the scripting probe.
pub async fn read<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
) -> Result<ServerInfo, RedisFailure> {
    let info: redis::Value = redis::cmd("INFO")
        .arg("server")
        .query_async(conn)
        .await
        .map_err(RedisFailure::from)?;
    let text = first_text(&info).ok_or_else(|| {
        RedisFailure::new(FailureKind::Reply, format!("INFO server answered {info:?}"))
    })?;
    let (kind, version) = identify(&parse_info(&text));
    let probe: redis::RedisResult<i64> = redis::cmd("EVAL")
        .arg("return 1")
        .arg(0)
        .query_async(conn)
        .await;
    let (scripting, scripting_error) = match probe {
        Ok(1) => (Scripting::Available, None),
        Ok(other) => (
            Scripting::Missing,
            Some(format!("EVAL return 1 gave {other}")),
        ),
        Err(err) if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() => {
            return Err(err.into())
        }
        Err(err) => (scripting_failure(&err), Some(err.to_string())),
    };
    Ok(ServerInfo {
        kind,
        version,
        scripting,
        scripting_error,
    })
}

impl crate::Limiter {
    /// The server this limiter decides on ([`read`] over its connection, within its deadline;
    /// a failure is [diagnosed](crate::Limiter::diagnose)). The CLI and the app call it when
    /// they connect, and refuse a server without scripting ([`ServerInfo::require_scripting`]).
    pub async fn server(&self) -> Result<ServerInfo, RedisFailure> {
        let deadline = self.options().deadline;
        let mut conn = self.connection();
        match tokio::time::timeout(deadline, read(&mut conn)).await {
            Ok(Ok(info)) => Ok(info),
            Ok(Err(failure)) => Err(self.diagnose(failure).await),
            Err(_) => Err(self.diagnose(RedisFailure::timeout(deadline)).await),
        }
    }
}

/// What a failed `EVAL "return 1" 0` says about scripting (connection failures are returned
/// as failures before this is asked).
fn scripting_failure(err: &redis::RedisError) -> Scripting {
    if crate::acl::is_noperm(err) {
        return Scripting::Unknown;
    }
    let text = err.to_string().to_ascii_lowercase();
    // Valkey without its lua module: "Could not find scripting engine 'lua'"; a server without
    // the command: "unknown command 'EVAL'"; Redis built without scripting: "scripting is
    // disabled".
    let missing = [
        "scripting engine",
        "unknown command",
        "disabled",
        "not supported",
    ];
    if missing.iter().any(|m| text.contains(m)) {
        Scripting::Missing
    } else {
        Scripting::Unknown
    }
}

/// INFO's text (a cluster connection may answer with one entry per node: the first is taken).
fn first_text(value: &redis::Value) -> Option<String> {
    match value {
        redis::Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        redis::Value::SimpleString(s) | redis::Value::VerbatimString { text: s, .. } => {
            Some(s.clone())
        }
        redis::Value::Map(entries) => entries.iter().find_map(|(_, v)| first_text(v)),
        redis::Value::Array(items) => items.iter().find_map(first_text),
        _ => None,
    }
}

/// `field:value` lines, comments and blank lines skipped.
fn parse_info(text: &str) -> HashMap<&str, &str> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.trim_end().split_once(':'))
        .collect()
}

fn identify(fields: &HashMap<&str, &str>) -> (ServerKind, String) {
    let field = |name: &str| fields.get(name).map(|v| v.to_string());
    if let Some(version) = field("valkey_version") {
        return (ServerKind::Valkey, version);
    }
    if let Some(version) = field("dragonfly_version") {
        return (ServerKind::Dragonfly, version);
    }
    if fields
        .get("server_name")
        .is_some_and(|n| n.eq_ignore_ascii_case("valkey"))
    {
        // Valkey 7.2 and 8 report only redis_version (their own number) and server_name.
        return (
            ServerKind::Valkey,
            field("redis_version").unwrap_or_default(),
        );
    }
    (
        ServerKind::Redis,
        field("redis_version").unwrap_or_else(|| "unknown".into()),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A Valkey 9.1.2 with scripting, for other modules' tests.
    pub(crate) fn valkey() -> ServerInfo {
        ServerInfo {
            kind: ServerKind::Valkey,
            version: "9.1.2".into(),
            scripting: Scripting::Available,
            scripting_error: None,
        }
    }

    #[test]
    fn names_each_family_by_its_own_version() {
        let valkey =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n";
        let redis = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
        let dragonfly = "# Server\r\nredis_version:7.4.0\r\ndragonfly_version:df-v1.25.0\r\n";
        let old_valkey = "redis_version:8.0.1\r\nserver_name:valkey\r\n";
        let cases = [
            (valkey, ServerKind::Valkey, "9.1.2"),
            (redis, ServerKind::Redis, "7.0.15"),
            (dragonfly, ServerKind::Dragonfly, "df-v1.25.0"),
            (old_valkey, ServerKind::Valkey, "8.0.1"),
        ];
        for (text, kind, version) in cases {
            assert_eq!(identify(&parse_info(text)), (kind, version.to_string()));
        }
    }

    #[test]
    fn a_server_without_scripting_is_refused_naming_it() {
        let info = ServerInfo {
            kind: ServerKind::Valkey,
            version: "9.1.2".into(),
            scripting: Scripting::Missing,
            scripting_error: Some("Could not find scripting engine 'lua'".into()),
        };
        assert_eq!(info.to_string(), "Valkey 9.1.2, no scripting");
        let err = info.require_scripting().expect_err("refused");
        assert_eq!(err.kind, FailureKind::Misconfiguration);
        assert!(
            err.message.contains("Valkey 9.1.2 cannot run Lua scripts"),
            "{err}"
        );
        assert!(err.message.contains("scripting engine 'lua'"), "{err}");
    }
}
