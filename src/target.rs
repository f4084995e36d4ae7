//! A Redis URL that can be shown: its password never leaves this type in clear.

use std::fmt;

/// The default Redis when neither `--redis` nor `$REDIS_URL` says otherwise.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// A validated Redis URL. `Display` and `Debug` show it with the password replaced by `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisTarget {
    url: String,
    redacted: String,
    /// A Redis Cluster's seed nodes (`redis+cluster://`), each as a `redis://` URL carrying
    /// the user and password; empty for a single Redis.
    seeds: Vec<String>,
}

/// Why a Redis URL was refused. Holds only the redacted form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Redis URL {shown}: {reason}")]
pub struct TargetError {
    pub shown: String,
    pub reason: String,
}

impl RedisTarget {
    pub fn parse(input: &str) -> Result<Self, TargetError> {
        let input = input.trim();
        if let Some(seeds) = crate::cluster::seed_urls(input)? {
            return Ok(RedisTarget {
                url: input.to_string(),
                redacted: crate::cluster::redact_seeds(input),
                seeds,
            });
        }
        let fail = |shown: String, reason: &str| TargetError {
            shown,
            reason: reason.to_string(),
        };
        let parsed = url::Url::parse(input).map_err(|_| {
            fail(
                "(unparsable, not shown)".into(),
                "expected redis://[user:password@]host[:port][/db]",
            )
        })?;
        let redacted = redact(&parsed);
        match parsed.scheme() {
            "redis" => {}
            "unix" | "redis+unix" => {}
            "rediss" => return Err(fail(
                redacted,
                "TLS (rediss://) is not supported by this build; use redis:// through a TLS tunnel",
            )),
            _ => {
                return Err(fail(
                    redacted,
                    "the scheme must be redis:// (or redis+cluster:// for a Redis Cluster, or unix:// for a socket)",
                ))
            }
        }
        if parsed.scheme() == "redis" && parsed.host_str().is_none_or(str::is_empty) {
            return Err(fail(redacted, "it names no host"));
        }
        redis::Client::open(input)
            .map_err(|_| fail(redacted.clone(), "the Redis client refused it"))?;
        Ok(RedisTarget {
            url: input.to_string(),
            redacted,
            seeds: Vec::new(),
        })
    }

    /// The URL with any password replaced by `***`: safe for logs, errors and the UI.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    pub(crate) fn client(&self) -> redis::Client {
        // parse() already opened a client from this very string (or, for a cluster, from its
        // first seed: a single-node client of a cluster reaches one node only).
        let url = self.seeds.first().unwrap_or(&self.url);
        redis::Client::open(url.as_str()).expect("validated in RedisTarget::parse")
    }

    /// True for a Redis Cluster (`redis+cluster://`).
    pub fn is_cluster(&self) -> bool {
        !self.seeds.is_empty()
    }

    /// A Redis Cluster's seed nodes as `redis://` URLs (empty for a single Redis).
    pub(crate) fn cluster_seeds(&self) -> &[String] {
        &self.seeds
    }

    /// True when the URL carries a password.
    pub fn has_password(&self) -> bool {
        self.url != self.redacted
    }
}

fn redact(url: &url::Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

impl fmt::Display for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RedisTarget").field(&self.redacted).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_shows_the_password() {
        let t = RedisTarget::parse("redis://app:s3cr3t@10.0.0.5:6380/2").expect("valid");
        assert_eq!(t.redacted(), "redis://app:***@10.0.0.5:6380/2");
        assert!(!format!("{t} {t:?}").contains("s3cr3t"));
        assert!(t.has_password());
        let t = RedisTarget::parse("redis://:only-pass@localhost").expect("valid");
        assert!(!t.to_string().contains("only-pass"));
    }

    #[test]
    fn refuses_bad_urls_without_echoing_secrets() {
        for bad in [
            "http://user:hunter2@localhost",
            "localhost:6379",
            "redis://",
            "rediss://x:hunter2@h",
        ] {
            let err = RedisTarget::parse(bad).expect_err(bad);
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
    }
}
