//! A replay's specification: how to read the log ([`ParseSpec`], checked and compiled into
//! [`Compiled`]), the rules side by side, the sweep, and the report's and the pipeline's sizes.

use super::error::ReplayError;
use super::format::{FieldNames, LogFormat};
use super::key;
use super::{keytable, order};
use crate::sweep::SweepAxis;
use ratelockr::policy::Policy;
use ratelockr::rule::Rule;
use serde::{Deserialize, Serialize};

/// How a log is read: its format, fields, client key and filters.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ParseSpec {
    /// None: detected from the first line.
    pub format: Option<LogFormat>,
    pub fields: FieldNames,
    /// A key expression ([`key`]); default `ip`.
    pub key: String,
    /// Only these methods (any case); empty: all.
    pub methods: Vec<String>,
    /// Only request targets (path and query, as logged) matching this regex.
    pub path: Option<String>,
    /// How far out of order requests may arrive and still be sorted ([`order`]).
    pub lookahead_ms: u64,
}

impl Default for ParseSpec {
    fn default() -> Self {
        ParseSpec {
            format: None,
            fields: FieldNames::default(),
            key: "ip".into(),
            methods: Vec::new(),
            path: None,
            lookahead_ms: order::DEFAULT_LOOKAHEAD_MS,
        }
    }
}

/// A [`ParseSpec`], checked and compiled.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub format: Option<LogFormat>,
    pub fields: FieldNames,
    pub key: key::KeyExpr,
    pub methods: Vec<String>,
    pub path: Option<regex::Regex>,
    pub lookahead_ms: u64,
}

impl ParseSpec {
    pub fn compile(&self) -> Result<Compiled, ReplayError> {
        let invalid = |parameter: &'static str, reason: String| ReplayError::InvalidSpec {
            parameter,
            reason,
        };
        let key = self
            .key
            .parse::<key::KeyExpr>()
            .map_err(|reason| invalid("key", reason.to_string()))?;
        let path = self
            .path
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| invalid("path", format!("not a regular expression: {e}")))?;
        // An empty filter would match nothing (or everything): never a silent empty replay.
        if self.methods.iter().any(|m| m.trim().is_empty()) {
            return Err(invalid(
                "method",
                "an empty method would filter out every line: name one (GET, POST, ...) or leave the filter out".into(),
            ));
        }
        if self.path.as_deref().is_some_and(str::is_empty) {
            return Err(invalid(
                "path",
                "an empty regular expression matches every line: leave the filter out instead"
                    .into(),
            ));
        }
        if self.lookahead_ms > 3_600_000 {
            return Err(invalid("lookahead", "at most an hour (3600 s)".into()));
        }
        // A field named "" is never in a line: every request would lose its time or cost.
        for (parameter, name) in [
            ("time-field", self.fields.time.as_deref()),
            ("cost-field", self.fields.cost.as_deref()),
            ("duration-field", self.fields.duration.as_deref()),
        ] {
            if name.is_some_and(|n| n.trim().is_empty()) {
                return Err(invalid(
                    parameter,
                    "an empty field name: name the field".into(),
                ));
            }
        }
        if self.fields.extra.iter().any(|n| n.trim().is_empty()) {
            return Err(invalid(
                "extra-fields",
                "an empty field name: name every field after the user agent, in order".into(),
            ));
        }
        Ok(Compiled {
            format: self.format,
            fields: self.fields.clone(),
            key,
            methods: self.methods.clone(),
            path,
            lookahead_ms: self.lookahead_ms,
        })
    }
}

/// A replay: how to read the log, the rules, and what to report.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplaySpec {
    pub parse: ParseSpec,
    /// The candidate rules, side by side.
    pub rules: Vec<Rule>,
    /// Or policies side by side (a policy and an edited copy, say), each decided all or
    /// nothing over its limits, keys under their tier's; not with rules or a sweep.
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<Policy>>"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<Policy>,
    /// A grid around the first rule (one or two axes).
    #[serde(default)]
    pub sweep: Vec<SweepAxis>,
    /// Top keys per rule.
    pub top: usize,
    /// The suggestion's target: at most this percentage of keys ever denied.
    pub suggest_max_keys_pct: f64,
    /// Keys held per rule for per-key figures ([`keytable`]).
    pub key_capacity: usize,
    /// Lanes (connections) deciding at once ([`decide`](super::decide)).
    pub lanes: usize,
    /// Decisions per pipeline round (requests × rules; at least 16 requests), split over the
    /// lanes.
    pub batch: usize,
}

/// The most lanes (each a Redis connection) a replay opens: past a few, Redis's one thread is
/// the limit, and each lane is a connection taken from a shared server.
pub const MAX_LANES: usize = 64;
/// The most top keys a report lists per rule.
pub const MAX_TOP: usize = 10_000;
/// The most keys held per rule for per-key figures (about 100 bytes each).
pub const MAX_KEY_CAPACITY: usize = 1 << 24;
/// The most decisions per pipeline round.
pub const MAX_BATCH: usize = 1 << 16;

impl ReplaySpec {
    /// The report's and the pipeline's sizes in range, each refused by name: what is checked
    /// before the log is opened or any connection made.
    pub fn check_sizes(&self) -> Result<(), ReplayError> {
        let invalid = |parameter: &'static str, reason: String| {
            Err(ReplayError::InvalidSpec { parameter, reason })
        };
        if !(1..=MAX_LANES).contains(&self.lanes) {
            let max = MAX_LANES;
            return invalid(
                "lanes",
                format!("must be from 1 to {max}, got {}", self.lanes),
            );
        }
        if self.top > MAX_TOP {
            return invalid(
                "top",
                format!("must be at most {MAX_TOP}, got {}", self.top),
            );
        }
        if !(1..=MAX_KEY_CAPACITY).contains(&self.key_capacity) {
            return invalid(
                "key-capacity",
                format!(
                    "must be from 1 to {MAX_KEY_CAPACITY} keys, got {}",
                    self.key_capacity
                ),
            );
        }
        if !(1..=MAX_BATCH).contains(&self.batch) {
            return invalid(
                "batch",
                format!("must be from 1 to {MAX_BATCH}, got {}", self.batch),
            );
        }
        if !(0.0..=100.0).contains(&self.suggest_max_keys_pct) {
            return invalid(
                "suggest-max-keys-pct",
                format!("must be from 0 to 100, got {}", self.suggest_max_keys_pct),
            );
        }
        Ok(())
    }
}

impl Default for ReplaySpec {
    fn default() -> Self {
        ReplaySpec {
            parse: ParseSpec::default(),
            rules: Vec::new(),
            policies: Vec::new(),
            sweep: Vec::new(),
            top: 10,
            suggest_max_keys_pct: 1.0,
            key_capacity: keytable::DEFAULT_CAPACITY,
            lanes: 4,
            batch: 1024,
        }
    }
}
