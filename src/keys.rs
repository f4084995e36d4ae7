//! Where everything lives in Redis.
//!
//! ```text
//! <prefix>:tb:{<rule>}:<client key>              token bucket: tokens, last_refill (2 doubles)
//! <prefix>:gc:{<rule>}:<client key>              GCRA: the TAT (tat_ms, frac, limit: 3 doubles)
//! <prefix>:sw:{<rule>}:<client key>              sliding window log sorted set
//! <prefix>:sc:{<rule>}:<client key>              sliding window counter hash: w, c, p, t
//! <prefix>:fw:{<rule>}:<client key>              fixed window counter
//! <prefix>:cc:{<rule>}:<client key>              concurrency: the leases (sorted set by expiry)
//! <prefix>:cal:{<rule>}:<client key>             calendar quota: start_ms, end_ms, count (3 doubles)
//! <prefix>:naive:{<rule>}:<client key>           the naive race demo's counter
//! <prefix>:tb:{<rule>}:<run scope>:<client key>  a simulation run's own, fresh namespace
//! <prefix>:stats:{<rule>}:<unix second>:allowed  telemetry counters, 120 s TTL
//! <prefix>:stats:{<rule>}:<unix second>:denied
//! <prefix>:<tag>:{<policy>}.<limit>:<client key>  a policy's limit (src/policy/)
//! <prefix>:<tag>:{<policy>}:<client key>          a limit named as its policy: the rule's key
//! <prefix>:stats:{<policy>}:<unix second>:shadow_denied  a shadow policy's would-be denials
//! <prefix>:stats:{<policy>}:<unix second>:delayed  admissions given a delay (max_delay_ms)
//! <prefix>:stats:{<name>}:<unix second>:released  leases given back while live (lease.lua)
//! <prefix>:stats:{<name>}:<unix second>:settled   settlements that changed a limit (settle.lua)
//! ```
//!
//! The rule name is always wrapped in a hash tag, so a rule's limiters and its counters share one
//! Redis Cluster slot and a script's KEYS never cross slots. A simulation run that starts
//! from fresh state decides its clients as `<run scope>:<client key>`, so its keys stay under
//! the rule's tag (one slot, one reset) and its telemetry still counts under the rule.

use crate::decision::PolicyOutcome;
use crate::rule::{AlgorithmKind, Rule};
use crate::Outcome;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "ratelockr";

/// Builds key names under one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpace {
    prefix: String,
}

impl Default for KeySpace {
    fn default() -> Self {
        KeySpace::new(DEFAULT_PREFIX)
    }
}

impl KeySpace {
    pub fn new(prefix: impl Into<String>) -> Self {
        KeySpace {
            prefix: prefix.into(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A key space for a prefix a user typed: refused when a `{` or `}` in it would take the
    /// hash tag's place (Redis hashes the first `{…}` of a key), which on a cluster would
    /// scatter a rule's keys over slots and fail every decision with CROSSSLOT.
    pub fn checked(prefix: &str) -> Result<Self, PrefixError> {
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(PrefixError(prefix.to_string()));
        }
        Ok(KeySpace::new(prefix))
    }

    /// The limiter's state for one client of one rule.
    pub fn limiter(&self, rule: &Rule, client_key: &str) -> String {
        self.limiter_for(rule.kind(), rule.name(), client_key)
    }

    pub fn limiter_for(&self, kind: AlgorithmKind, rule: &str, client_key: &str) -> String {
        format!("{}:{}:{{{rule}}}:{client_key}", self.prefix, kind.key_tag())
    }

    /// The naive demo limiter's counter (the race demo; never a real limiter).
    pub fn naive(&self, rule: &str, client_key: &str) -> String {
        format!("{}:naive:{{{rule}}}:{client_key}", self.prefix)
    }

    /// The SCAN pattern of every limiter key of `rule` under the key tag `tag` (`tb`, `sw`,
    /// `fw`, `naive`...): every client and every run scope. Glob characters in the prefix are
    /// escaped, so a prefix like `a*` matches only itself.
    pub fn rule_pattern(&self, tag: &str, rule: &str) -> String {
        format!(
            "{}:{tag}:{{{}}}:*",
            escape_glob(&self.prefix),
            escape_glob(rule)
        )
    }

    /// A telemetry counter: decisions of `outcome` (allowed or denied) for `rule` in `second`.
    pub fn stats(&self, rule: &str, unix_second: u64, outcome: Outcome) -> String {
        format!(
            "{}:stats:{{{rule}}}:{unix_second}:{}",
            self.prefix,
            outcome.as_str()
        )
    }
}

impl KeySpace {
    /// The state of one limit of a policy for one client. Every key of a policy carries the
    /// policy's name as its hash tag, so a stack is one Redis Cluster slot; the limit's name
    /// follows the tag after a dot, which no rule key has there (a rule's tag is followed by
    /// `:`), so a limit never meets another limit's or a rule's state. A limit named as its
    /// policy (a rule loaded as a policy) keeps the rule's key, and with it the rule's state.
    pub fn policy_limit(
        &self,
        kind: AlgorithmKind,
        policy: &str,
        limit: &str,
        client_key: &str,
    ) -> String {
        if limit == policy {
            self.limiter_for(kind, policy, client_key)
        } else {
            format!(
                "{}:{}:{{{policy}}}.{limit}:{client_key}",
                self.prefix,
                kind.key_tag()
            )
        }
    }

    /// A rule's or policy's telemetry counter of what follows its decisions in `second`:
    /// leases given back ([`crate::telemetry::RELEASED`], by `lua/lease.lua`) and requests
    /// settled ([`crate::telemetry::SETTLED`], by `lua/settle.lua`). Beside its decisions'
    /// counters, under the same hash tag.
    pub fn after_stats(&self, name: &str, unix_second: u64, counter: &str) -> String {
        format!("{}:stats:{{{name}}}:{unix_second}:{counter}", self.prefix)
    }

    /// The name a rule's or policy's key carries as its hash tag (`{name}`): the prefix holds
    /// no brace, so the first pair is the tag.
    pub fn tag_of(key: &str) -> Option<&str> {
        let start = key.find('{')? + 1;
        let len = key[start..].find('}')?;
        Some(&key[start..start + len])
    }

    /// A policy's telemetry counter: decisions of `outcome` (allowed, denied, shadow_denied)
    /// in `second`. The same names as a rule's counters for allowed and denied.
    pub fn policy_stats(&self, policy: &str, unix_second: u64, outcome: PolicyOutcome) -> String {
        format!(
            "{}:stats:{{{policy}}}:{unix_second}:{}",
            self.prefix,
            outcome.as_str()
        )
    }
}

/// A key prefix that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid key prefix {0:?}: it must be non-empty and hold no '{{' or '}}' (the rule's hash tag \
     must be the first braces of every key, so that a rule's keys share one Redis Cluster slot)"
)]
pub struct PrefixError(pub String);

/// Escapes the characters SCAN's MATCH treats as a pattern.
fn escape_glob(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_documented_one() {
        let keys = KeySpace::default();
        let rule = Rule::token_bucket("api", 10, 1.0).expect("valid");
        assert_eq!(keys.limiter(&rule, "user:42"), "ratelockr:tb:{api}:user:42");
        assert_eq!(
            keys.stats("api", 1_700_000_000, Outcome::Denied),
            "ratelockr:stats:{api}:1700000000:denied"
        );
        assert_eq!(
            KeySpace::new("t1").limiter_for(AlgorithmKind::FixedWindow, "r", "k"),
            "t1:fw:{r}:k"
        );
        let tags: Vec<String> = AlgorithmKind::ALL
            .map(|kind| keys.limiter_for(kind, "r", "k"))
            .to_vec();
        assert_eq!(
            tags,
            [
                "ratelockr:tb:{r}:k",
                "ratelockr:gc:{r}:k",
                "ratelockr:sw:{r}:k",
                "ratelockr:sc:{r}:k",
                "ratelockr:fw:{r}:k",
                "ratelockr:cc:{r}:k",
                "ratelockr:cal:{r}:k",
            ]
        );
        assert_eq!(keys.rule_pattern("tb", "api"), "ratelockr:tb:{api}:*");
        assert_eq!(
            keys.policy_limit(AlgorithmKind::FixedWindow, "api", "daily", "u:1"),
            "ratelockr:fw:{api}.daily:u:1"
        );
        assert_eq!(
            keys.policy_limit(AlgorithmKind::TokenBucket, "api", "api", "u:1"),
            keys.limiter_for(AlgorithmKind::TokenBucket, "api", "u:1")
        );
        assert_eq!(
            keys.policy_stats("api", 7, PolicyOutcome::ShadowDenied),
            "ratelockr:stats:{api}:7:shadow_denied"
        );
        assert_eq!(
            keys.policy_stats("api", 7, PolicyOutcome::Denied),
            keys.stats("api", 7, Outcome::Denied)
        );
        assert!(KeySpace::checked("app-1:rl").is_ok());
        for bad in ["", "a{b", "}", "{x}"] {
            let err = KeySpace::checked(bad).expect_err(bad);
            assert!(err.to_string().contains("hash tag"), "{err}");
        }
        assert_eq!(
            KeySpace::new("a*b?[c]").rule_pattern("fw", "r"),
            r"a\*b\?\[c\]:fw:{r}:*"
        );
    }
}
