//! Policies: what one request is held to. A name, a stack of limits (any of the five
//! algorithms, each with its parameters) decided all or nothing in one script call, a mode
//! (enforce, or shadow: decide and count, but admit), and overrides that give matching keys
//! (a tier) other limits. A rule is a policy of one limit.
//!
//! - [`file`]     policy files (TOML `[[policies]]`, JSON `{"policies": [...]}`) and today's rules
//!   files, refused whole with the file, the line or JSON path, and the field
//! - [`script`]   `lua/policy.lua`: the stacked decision, its call and its reply
//! - [`decision`] a policy's decision when Redis could not be asked ([`NoAnswer`])
//! - [`check`]    [`crate::Limiter::check_policy`]: deadline, fail-open, telemetry, metrics
//! - [`stats`]    the per-second allowed, denied and shadow_denied counters of many policies,
//!   read in one pipeline
//! - [`write`]    policies as a file the loaders read back unchanged (TOML or JSON)
//! - [`watch`]    a policies file in force, reloaded live when it changes (atomic swap; a bad
//!   file keeps the policies in force)
//!
//! **Keys.** Every key of a policy carries its name as the hash tag, so a stack is one Redis
//! Cluster slot. A limit's state lives at `<prefix>:<tag>:{<policy>}.<limit>:<client key>`,
//! in the format its standalone script keeps; a limit named as its policy (a rule loaded as a
//! policy) keeps the rule's own key, `<prefix>:<tag>:{<policy>}:<client key>`, so a rule and
//! the policy it becomes share their state ([`crate::KeySpace::policy_limit`]).
//!
//! **Tiers.** A key matching an override's `keys` (first match in file order) is held to the
//! override's limits instead of the policy's. State is per limit name and algorithm, not per
//! tier: a key that moves between tiers keeps the state of every limit that has the same name
//! and algorithm in both (read under the new parameters, as each script reads a state written
//! under other parameters: a bucket's tokens are capped at the new capacity, a window's count
//! is held to the new limit), and the state of limits the new tier lacks is left to expire.

pub mod changes;
pub mod check;
pub mod decision;
mod delay;
pub mod file;
mod glob;
pub mod script;
pub mod stats;
pub mod watch;
pub mod write;

pub use crate::decision::{LimitResult, PolicyDecisionJson, PolicyVerdict};
pub use check::PolicyCheckError;
pub use decision::NoAnswer;
pub use file::{load_policies_file, parse_policies, parse_policy_json, Format, PolicyFileError};
pub use stats::PolicyStatsPoint;
pub use watch::{LoadedPolicies, PolicyWatch, Reload, POLL_EVERY};

use crate::rule::{validate_client_key, Algorithm, AlgorithmKind, Rule, RuleError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The most limits a policy (or an override) holds: what one script call decides.
pub const MAX_LIMITS: usize = 8;

/// Whether a policy's denials are enforced.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A request the limits deny is denied.
    #[default]
    Enforce,
    /// A request the limits deny is admitted all the same, counted as `shadow_denied` and
    /// marked `would_deny`; the state changes exactly as under enforcement (it charges
    /// nothing). How a new limit is rolled out: watch what it would deny, then enforce it.
    Shadow,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Shadow => "shadow",
        }
    }
}

/// One limit of a stack: a name unique within its policy, and an algorithm with parameters.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    name: String,
    #[serde(flatten)]
    algorithm: Algorithm,
}

impl Limit {
    /// A limit, validated as a rule is: the name (1–64 of `A-Z a-z 0-9 _ . -`) and the
    /// algorithm's parameters. The error names the field (`name`, `capacity`, ...).
    pub fn new(name: impl Into<String>, algorithm: Algorithm) -> Result<Self, PolicyError> {
        let name = name.into();
        Rule::new(name.clone(), algorithm).map_err(Limit::error_of)?;
        Ok(Limit { name, algorithm })
    }

    /// A rule's validation error as a limit's, naming the field.
    fn error_of(err: RuleError) -> PolicyError {
        match err {
            RuleError::InvalidParameter { parameter, reason } => {
                PolicyError::at(parameter, format!("invalid {parameter}: {reason}"))
            }
            other => PolicyError::at("name", other.to_string().replace("rule name", "limit name")),
        }
    }

    /// A window given as a [`Duration`], in whole milliseconds (a fraction is refused).
    fn window_ms(window: Duration) -> Result<u64, PolicyError> {
        crate::rule::window_ms_of(window).map_err(Limit::error_of)
    }

    /// A token bucket of `capacity` refilling `refill_per_sec` tokens a second.
    pub fn token_bucket(
        name: impl Into<String>,
        capacity: u64,
        refill_per_sec: f64,
    ) -> Result<Self, PolicyError> {
        Limit::new(
            name,
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec,
            },
        )
    }

    /// GCRA: `limit` per `window`, bursts of up to `burst`.
    pub fn gcra(
        name: impl Into<String>,
        limit: u64,
        window: Duration,
        burst: u64,
    ) -> Result<Self, PolicyError> {
        let window_ms = Limit::window_ms(window)?;
        Limit::new(
            name,
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            },
        )
    }

    /// `limit` per sliding `window`, exact (a log of the window's requests).
    pub fn sliding_window_log(
        name: impl Into<String>,
        limit: u64,
        window: Duration,
    ) -> Result<Self, PolicyError> {
        let window_ms = Limit::window_ms(window)?;
        Limit::new(name, Algorithm::SlidingWindowLog { limit, window_ms })
    }

    /// `limit` per sliding `window`, estimated from two aligned windows' counts.
    pub fn sliding_window_counter(
        name: impl Into<String>,
        limit: u64,
        window: Duration,
    ) -> Result<Self, PolicyError> {
        let window_ms = Limit::window_ms(window)?;
        Limit::new(name, Algorithm::SlidingWindowCounter { limit, window_ms })
    }

    /// `limit` per fixed `window`, opened by a client's first request.
    pub fn fixed_window(
        name: impl Into<String>,
        limit: u64,
        window: Duration,
    ) -> Result<Self, PolicyError> {
        let window_ms = Limit::window_ms(window)?;
        Limit::new(name, Algorithm::FixedWindow { limit, window_ms })
    }

    /// At most `limit` requests in flight at once, each lease living `lease` unless released.
    pub fn concurrency(
        name: impl Into<String>,
        limit: u64,
        lease: Duration,
    ) -> Result<Self, PolicyError> {
        let lease_ms = crate::rule::lease_ms_of(lease).map_err(Limit::error_of)?;
        Limit::new(name, Algorithm::Concurrency { limit, lease_ms })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn algorithm(&self) -> &Algorithm {
        &self.algorithm
    }

    pub fn kind(&self) -> AlgorithmKind {
        self.algorithm.kind()
    }
}

/// A tier: keys matching any of `keys` (exact keys, or globs with `*` and `?`) are held to
/// `limits` instead of the policy's.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Override {
    tier: String,
    keys: Vec<String>,
    limits: Vec<Limit>,
}

impl Override {
    /// An override: the tier named as a limit is (1–64 of `A-Z a-z 0-9 _ . -`), at least one
    /// key pattern (each a valid client key), and 1 to 8 limits of distinct names.
    pub fn new(
        tier: impl Into<String>,
        keys: Vec<String>,
        limits: Vec<Limit>,
    ) -> Result<Self, PolicyError> {
        let tier = tier.into();
        check_name(&tier, "tier")?;
        if keys.is_empty() {
            return Err(PolicyError::at(
                "keys",
                "lists no key: give exact keys or globs (* and ?)",
            ));
        }
        for (i, key) in keys.iter().enumerate() {
            validate_client_key(key)
                .map_err(|err| PolicyError::at(format!("keys[{i}]"), err.to_string()))?;
        }
        check_limits(&limits)?;
        Ok(Override { tier, keys, limits })
    }

    pub fn tier(&self) -> &str {
        &self.tier
    }

    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    pub fn limits(&self) -> &[Limit] {
        &self.limits
    }

    /// Does `client_key` belong to this tier?
    pub fn matches(&self, client_key: &str) -> bool {
        self.keys.iter().any(|p| glob::matches(p, client_key))
    }
}

/// A named, validated policy. Build with [`Policy::new`] and the `with_` methods, or load a
/// file ([`load_policies_file`]); deserializing validates too (from any self-describing
/// format, as JSON holds it).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Policy {
    name: String,
    /// The key expression of replay, serve and the layer (`ip`, `header:x-api-key`, ...);
    /// kept as written: each front parses it.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    mode: Mode,
    limits: Vec<Limit>,
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<Override>>"))]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    overrides: Vec<Override>,
    /// Delay instead of deny ([`Policy::with_max_delay_ms`]); 0, the default, denies at once.
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<u64>"))]
    #[serde(skip_serializing_if = "delay::is_zero")]
    max_delay_ms: u64,
}

impl Policy {
    /// A policy in enforce mode with no key expression and no override: the name (1–64 of
    /// `A-Z a-z 0-9 _ . -`, it becomes the hash tag of every key of the policy) and 1 to 8
    /// limits of distinct names.
    pub fn new(name: impl Into<String>, limits: Vec<Limit>) -> Result<Self, PolicyError> {
        let name = name.into();
        check_name(&name, "name")?;
        check_limits(&limits)?;
        Ok(Policy {
            name,
            key: None,
            mode: Mode::Enforce,
            limits,
            overrides: Vec::new(),
            max_delay_ms: 0,
        })
    }

    /// A rule as a policy of one limit, both named as the rule: it decides as the rule does,
    /// on the rule's own keys.
    pub fn from_rule(rule: &Rule) -> Self {
        Policy {
            name: rule.name().to_string(),
            key: None,
            mode: Mode::Enforce,
            limits: vec![Limit {
                name: rule.name().to_string(),
                algorithm: *rule.algorithm(),
            }],
            overrides: Vec::new(),
            max_delay_ms: 0,
        }
    }

    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the key expression; an empty one is refused.
    pub fn with_key(mut self, key: impl Into<String>) -> Result<Self, PolicyError> {
        let key = key.into();
        if key.trim().is_empty() {
            return Err(PolicyError::at(
                "key",
                "is empty: give a key expression such as ip or header:x-api-key",
            ));
        }
        self.key = Some(key);
        Ok(self)
    }

    /// Sets the overrides, checked in order for each key; tiers must be distinct.
    pub fn with_overrides(mut self, overrides: Vec<Override>) -> Result<Self, PolicyError> {
        for (i, o) in overrides.iter().enumerate() {
            if overrides[..i].iter().any(|p| p.tier == o.tier) {
                return Err(PolicyError::at(
                    format!("overrides[{i}].tier"),
                    format!(
                        "{:?} is used twice; tiers must be unique within a policy",
                        o.tier
                    ),
                ));
            }
        }
        self.overrides = overrides;
        self.check_delay()?;
        Ok(self)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The policy's own limits (keys in no tier).
    pub fn limits(&self) -> &[Limit] {
        &self.limits
    }

    pub fn overrides(&self) -> &[Override] {
        &self.overrides
    }

    /// The tier of `client_key` (the first override that matches it, in file order) and the
    /// limits it is held to; `None` and the policy's limits when no override matches.
    pub fn limits_for(&self, client_key: &str) -> (Option<&str>, &[Limit]) {
        match self.tier_index(client_key) {
            0 => (None, &self.limits),
            i => (
                Some(&self.overrides[i - 1].tier),
                &self.overrides[i - 1].limits,
            ),
        }
    }

    /// The tier of `client_key` as a number: 0 for the policy's own limits, `i + 1` for
    /// override `i` (the first that matches, in file order).
    pub fn tier_index(&self, client_key: &str) -> usize {
        self.overrides
            .iter()
            .position(|o| o.matches(client_key))
            .map_or(0, |i| i + 1)
    }

    /// The limits of tier number `tier` ([`Policy::tier_index`]); the policy's own past the
    /// last override.
    pub fn tier_limits(&self, tier: usize) -> &[Limit] {
        match tier.checked_sub(1).and_then(|i| self.overrides.get(i)) {
            Some(o) => &o.limits,
            None => &self.limits,
        }
    }

    /// Every limit of the policy, its tiers' included.
    pub fn all_limits(&self) -> impl Iterator<Item = &Limit> {
        let tiers = self.overrides.iter().map(|o| o.limits.as_slice());
        std::iter::once(self.limits.as_slice())
            .chain(tiers)
            .flatten()
    }

    /// The same policy for client keys decided under a namespace (`<scope>:<client key>`, as a
    /// simulation's own key space decides them): every override's patterns get the prefix,
    /// so each client keeps its tier. `scope` must hold no `*` or `?` (it would match more
    /// than itself).
    pub fn in_scope(&self, scope: &str) -> Policy {
        let mut scoped = self.clone();
        for o in &mut scoped.overrides {
            for key in &mut o.keys {
                *key = format!("{scope}:{key}");
            }
        }
        scoped
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        file::policy_from_json(&value).map_err(serde::de::Error::custom)
    }
}

/// Why a policy (or one of its parts) was refused: where (`limits[1].capacity`, relative to
/// the value being built) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct PolicyError {
    /// The path of the offending field, `limits[1].capacity`.
    pub at: String,
    pub message: String,
}

impl PolicyError {
    pub(crate) fn at(at: impl Into<String>, message: impl Into<String>) -> Self {
        PolicyError {
            at: at.into(),
            message: message.into(),
        }
    }

    /// The same error under a parent: `limits[1]` + `capacity` = `limits[1].capacity`.
    pub(crate) fn under(mut self, parent: &str) -> Self {
        self.at = if self.at.is_empty() {
            parent.to_string()
        } else if self.at.starts_with('[') {
            format!("{parent}{}", self.at)
        } else {
            format!("{parent}.{}", self.at)
        };
        self
    }

    /// The offending field's own name: the last segment of the path, without an index.
    pub fn field(&self) -> &str {
        let last = self.at.rsplit('.').next().unwrap_or(&self.at);
        last.split('[').next().unwrap_or(last)
    }
}

fn check_name(name: &str, field: &str) -> Result<(), PolicyError> {
    crate::rule::validate_rule_name(name).map_err(|_| {
        PolicyError::at(
            field,
            format!("invalid {field} {name:?}: use 1 to 64 ASCII letters, digits, '_', '-' or '.'"),
        )
    })
}

fn check_limits(limits: &[Limit]) -> Result<(), PolicyError> {
    if limits.is_empty() {
        return Err(PolicyError::at(
            "limits",
            "lists no limit: a policy holds 1 to 8",
        ));
    }
    if limits.len() > MAX_LIMITS {
        return Err(PolicyError::at(
            "limits",
            format!(
                "lists {} limits: a policy holds at most {MAX_LIMITS} (one script call decides them all)",
                limits.len()
            ),
        ));
    }
    for (i, limit) in limits.iter().enumerate() {
        if limits[..i].iter().any(|l| l.name == limit.name) {
            return Err(PolicyError::at(
                format!("limits[{i}].name"),
                format!(
                    "{:?} is used twice; limit names must be unique within a policy",
                    limit.name
                ),
            ));
        }
    }
    Ok(())
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.name, self.mode.as_str())?;
        for limit in &self.limits {
            write!(f, ", {} {}", limit.name, limit.kind())?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tb(name: &str, capacity: u64) -> Limit {
        Limit::new(
            name,
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec: 1.0,
            },
        )
        .expect("valid")
    }

    #[test]
    fn builders_validate_and_name_the_field() {
        let err = Limit::new(
            "x",
            Algorithm::FixedWindow {
                limit: 0,
                window_ms: 10,
            },
        )
        .expect_err("limit 0");
        assert_eq!((err.at.as_str(), err.field()), ("limit", "limit"));
        let err = Limit::new(
            "a b",
            Algorithm::FixedWindow {
                limit: 1,
                window_ms: 10,
            },
        )
        .expect_err("bad name");
        assert_eq!(err.field(), "name");
        assert!(err.message.contains("limit name"), "{err}");
        assert_eq!(
            Policy::new("", vec![tb("a", 1)]).expect_err("name").field(),
            "name"
        );
        assert_eq!(Policy::new("p", vec![]).expect_err("empty").at, "limits");
        let nine = (0..9).map(|i| tb(&format!("l{i}"), 1)).collect();
        assert!(Policy::new("p", nine)
            .expect_err("nine")
            .message
            .contains("at most 8"));
        let err = Policy::new("p", vec![tb("a", 1), tb("a", 2)]).expect_err("twice");
        assert_eq!(err.at, "limits[1].name");
        let err = Override::new("premium", vec![], vec![tb("a", 1)]).expect_err("no keys");
        assert_eq!(err.at, "keys");
        let err = Override::new("pre mium", vec!["k".into()], vec![tb("a", 1)]).expect_err("tier");
        assert_eq!(err.at, "tier");
        let err = Override::new("t", vec![String::new()], vec![tb("a", 1)]).expect_err("key");
        assert_eq!(err.at, "keys[0]");
        let o = Override::new("t", vec!["k".into()], vec![tb("a", 1)]).expect("valid");
        let err = Policy::new("p", vec![tb("a", 1)])
            .expect("valid")
            .with_overrides(vec![o.clone(), o])
            .expect_err("tier twice");
        assert_eq!(err.at, "overrides[1].tier");
        assert_eq!(
            Policy::new("p", vec![tb("a", 1)])
                .expect("valid")
                .with_key(" ")
                .expect_err("key")
                .at,
            "key"
        );
        assert_eq!(
            PolicyError::at("capacity", "x")
                .under("limits[1]")
                .under("policies[0]")
                .at,
            "policies[0].limits[1].capacity"
        );
        assert_eq!(PolicyError::at("[2]", "x").under("keys").at, "keys[2]");
    }

    #[test]
    fn the_first_matching_override_picks_the_limits() {
        let premium = Override::new(
            "premium",
            vec!["premium_*".into(), "alice".into()],
            vec![tb("per-second", 100)],
        )
        .expect("valid");
        let vip = Override::new(
            "vip",
            vec!["premium_vip*".into()],
            vec![tb("per-second", 1000)],
        )
        .expect("valid");
        let policy = Policy::new("api", vec![tb("per-second", 10), tb("burst", 3)])
            .expect("valid")
            .with_overrides(vec![premium, vip])
            .expect("valid");
        let (tier, limits) = policy.limits_for("bob");
        assert_eq!((tier, limits.len()), (None, 2));
        let (tier, limits) = policy.limits_for("alice");
        assert_eq!((tier, limits.len()), (Some("premium"), 1));
        // File order, not specificity: premium_* comes first.
        assert_eq!(policy.limits_for("premium_vip1").0, Some("premium"));
    }

    #[test]
    fn a_rule_is_a_policy_of_one_limit_named_as_it() {
        let rule = Rule::gcra("login", 5, Duration::from_secs(60), 5).expect("valid");
        let policy = Policy::from_rule(&rule);
        assert_eq!(policy.name(), "login");
        assert_eq!(policy.limits().len(), 1);
        assert_eq!(policy.limits()[0].name(), "login");
        assert_eq!(policy.limits()[0].algorithm(), rule.algorithm());
        assert_eq!(policy.mode(), Mode::Enforce);
    }
}
