//! A script called as any Redis client would call it: its source from lua/, a plain
//! connection of its own, SCRIPT LOAD and EVALSHA. Shared by the tests of concurrency.lua and
//! of policy.lua's in-flight kind.

use redis::aio::MultiplexedConnection;
use redis::{RedisResult, ToRedisArgs};
use std::path::Path;

/// A script's source, from lua/.
pub fn source(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// A connection of its own to `server`.
pub async fn connect(server: &ratelockr::EmbeddedRedis) -> MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("a valid URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

/// SCRIPT LOAD of a script of lua/: its SHA1.
pub async fn load(conn: &mut MultiplexedConnection, name: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source(name))
        .query_async(conn)
        .await
        .expect("SCRIPT LOAD")
}

/// One EVALSHA of a loaded script.
pub async fn evalsha<T: redis::FromRedisValue, A: ToRedisArgs>(
    conn: &mut MultiplexedConnection,
    sha: &str,
    keys: &[&str],
    argv: &[A],
) -> RedisResult<T> {
    redis::cmd("EVALSHA")
        .arg(sha)
        .arg(keys.len())
        .arg(keys)
        .arg(argv)
        .query_async(conn)
        .await
}
