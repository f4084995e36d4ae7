//! Policy files: TOML (`[[policies]]`) or JSON (`{"policies": [...]}`), and today's rules
//! files (a JSON list, `{"rules": [...]}`, TOML `[[rules]]`), whose rules load as policies of
//! one limit. A file may hold both `policies` and `rules`; every name is unique across them.
//!
//! A file is read into a tree that keeps each TOML value's place in the text, then walked by
//! hand: every error knows its path (`policies[0].limits[1].capacity`), and in TOML its line.
//! An invalid file is refused whole. Unknown fields are refused (a typo is not a default).

use super::{Limit, Mode, Override, Policy, PolicyError};
use crate::rule::{Algorithm, AlgorithmKind};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// How a file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

impl Format {
    /// TOML for a `.toml` file, JSON for anything else.
    pub fn of(path: &Path) -> Format {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
        {
            Format::Toml
        } else {
            Format::Json
        }
    }
}

/// What is wrong in a file's text, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The 1-based line: always for TOML, for JSON when its syntax is wrong.
    pub line: Option<usize>,
    /// The path of the offending value (`policies[0].limits[1].capacity`); empty when the
    /// text could not be read as TOML or JSON at all.
    pub at: String,
    pub message: String,
}

impl Invalid {
    /// The offending field's own name (`capacity`), when there is one.
    pub fn field(&self) -> Option<&str> {
        let last = self.at.rsplit('.').next()?;
        let name = last.split('[').next().unwrap_or(last);
        (!name.is_empty()).then_some(name)
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if !self.at.is_empty() {
            write!(f, "{}: ", self.at)?;
        }
        f.write_str(&self.message)
    }
}

/// Why a policies file was refused; the message names the file, the line or path, and the
/// field.
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    #[error("cannot read policies file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid policies file {path}: {invalid}")]
    Invalid { path: PathBuf, invalid: Invalid },
}

/// Checks a policy's `key` expression; the fronts that evaluate keys pass their parser.
pub type KeyCheck<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// Reads and validates the policies of `path` (TOML by the `.toml` extension, else JSON).
pub fn load_policies_file(path: &Path) -> Result<Vec<Policy>, PolicyFileError> {
    load_policies_file_with(path, None)
}

/// [`load_policies_file`], with each policy's `key` expression checked by `key_check`.
pub fn load_policies_file_with(
    path: &Path,
    key_check: Option<KeyCheck<'_>>,
) -> Result<Vec<Policy>, PolicyFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_policies_with(&text, Format::of(path), key_check).map_err(|invalid| {
        PolicyFileError::Invalid {
            path: path.to_path_buf(),
            invalid,
        }
    })
}

/// Parses and validates policies (and rules, as policies of one limit) from text.
pub fn parse_policies(text: &str, format: Format) -> Result<Vec<Policy>, Invalid> {
    parse_policies_with(text, format, None)
}

/// [`parse_policies`], with each policy's `key` expression checked by `key_check`.
pub fn parse_policies_with(
    text: &str,
    format: Format,
    key_check: Option<KeyCheck<'_>>,
) -> Result<Vec<Policy>, Invalid> {
    let root = match format {
        Format::Toml => toml_tree(text)?,
        Format::Json => json_tree(text)?,
    };
    file_policies(&root, key_check).map_err(|err| Invalid {
        line: locate(&root, &err.at).map(|span| line_of(text, span.start)),
        at: err.at,
        message: err.message,
    })
}

/// One policy from its JSON form, or what is wrong with it and where
/// (`limits[1].capacity`): what an editor shows beside the field.
pub fn parse_policy_json(value: &serde_json::Value) -> Result<Policy, PolicyError> {
    policy_from_json(value)
}

/// One policy from its JSON form (what [`Policy`]'s `Deserialize` reads).
pub(crate) fn policy_from_json(value: &serde_json::Value) -> Result<Policy, PolicyError> {
    policy(&from_json(value), None)
}

// --- the tree ---------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Table(Vec<(String, Node)>),
    Array(Vec<Node>),
    Str(String),
    Int(i128),
    Float(f64),
    Bool(bool),
}

#[derive(Debug, Clone, PartialEq)]
struct Node {
    /// Where the value is in the text (TOML only).
    span: Option<Range<usize>>,
    val: Val,
}

impl Node {
    fn what(&self) -> &'static str {
        match self.val {
            Val::Table(_) => "a table",
            Val::Array(_) => "a list",
            Val::Str(_) => "a string",
            Val::Int(_) => "an integer",
            Val::Float(_) => "a number",
            Val::Bool(_) => "a boolean",
        }
    }

    fn get(&self, name: &str) -> Option<&Node> {
        match &self.val {
            Val::Table(entries) => entries.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A TOML value as the tree holds it: toml's deserializer hands out each value's span.
struct TomlVal(Val);

impl<'de> serde::Deserialize<'de> for TomlVal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TomlVisitor)
    }
}

struct TomlVisitor;

fn spanned(v: toml::Spanned<TomlVal>) -> Node {
    let span = v.span();
    Node {
        span: Some(span),
        val: v.into_inner().0,
    }
}

impl<'de> serde::de::Visitor<'de> for TomlVisitor {
    type Value = TomlVal;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a TOML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<TomlVal, E> {
        Ok(TomlVal(Val::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<TomlVal, E> {
        Ok(TomlVal(Val::Int(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<TomlVal, E> {
        Ok(TomlVal(Val::Int(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<TomlVal, E> {
        Ok(TomlVal(Val::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<TomlVal, E> {
        Ok(TomlVal(Val::Str(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<TomlVal, E> {
        Ok(TomlVal(Val::Str(v)))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<TomlVal, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<toml::Spanned<TomlVal>>()? {
            items.push(spanned(item));
        }
        Ok(TomlVal(Val::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<TomlVal, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<toml::Spanned<TomlVal>>()?;
            entries.push((key, spanned(value)));
        }
        Ok(TomlVal(Val::Table(entries)))
    }
}

fn toml_tree(text: &str) -> Result<Node, Invalid> {
    match toml::from_str::<TomlVal>(text) {
        Ok(root) => Ok(Node {
            span: None,
            val: root.0,
        }),
        Err(err) => Err(Invalid {
            line: err.span().map(|span| line_of(text, span.start)),
            at: String::new(),
            message: format!("not TOML: {}", err.message()),
        }),
    }
}

fn json_tree(text: &str) -> Result<Node, Invalid> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => Ok(from_json(&value)),
        Err(err) => Err(Invalid {
            line: Some(err.line()),
            at: String::new(),
            message: format!("not JSON: {err}"),
        }),
    }
}

fn from_json(value: &serde_json::Value) -> Node {
    use serde_json::Value;
    let val = match value {
        Value::Object(map) => {
            Val::Table(map.iter().map(|(k, v)| (k.clone(), from_json(v))).collect())
        }
        Value::Array(items) => Val::Array(items.iter().map(from_json).collect()),
        Value::String(s) => Val::Str(s.clone()),
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Val::Int(u.into()),
            (None, Some(i)) => Val::Int(i.into()),
            _ => Val::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        // JSON's null: a value of no use anywhere in a policy.
        Value::Null => Val::Str("null".into()),
    };
    Node { span: None, val }
}

/// The span of the deepest value `path` reaches from `root`.
fn locate(root: &Node, path: &str) -> Option<Range<usize>> {
    let mut node = root;
    let mut found = None;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let mut parts = segment.split('[');
        let name = parts.next().unwrap_or_default();
        if !name.is_empty() {
            let Some(next) = node.get(name) else { break };
            node = next;
            found = node.span.clone().or(found);
        }
        for index in parts {
            let Some(i) = index.trim_end_matches(']').parse::<usize>().ok() else {
                return found;
            };
            let Val::Array(items) = &node.val else {
                return found;
            };
            let Some(next) = items.get(i) else {
                return found;
            };
            node = next;
            found = node.span.clone().or(found);
        }
    }
    found
}

fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

// --- the walk ----------------------------------------------------------------------------------

type Fields<'a> = &'a [(String, Node)];

fn table<'a>(node: &'a Node, what: &str) -> Result<Fields<'a>, PolicyError> {
    match &node.val {
        Val::Table(entries) => Ok(entries),
        _ => Err(PolicyError::at(
            "",
            format!("expected {what} (a table), got {}", node.what()),
        )),
    }
}

/// Refuses fields not in `known`.
fn only(fields: Fields<'_>, known: &[&str], what: &str) -> Result<(), PolicyError> {
    for (name, _) in fields {
        if !known.contains(&name.as_str()) {
            return Err(PolicyError::at(
                name.as_str(),
                format!(
                    "unknown field {name:?} of {what}; expected one of: {}",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn field<'a>(fields: Fields<'a>, name: &str) -> Option<&'a Node> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn string(fields: Fields<'_>, name: &str) -> Result<Option<String>, PolicyError> {
    match field(fields, name) {
        None => Ok(None),
        Some(Node {
            val: Val::Str(s), ..
        }) => Ok(Some(s.clone())),
        Some(other) => Err(PolicyError::at(
            name,
            format!("expected a string, got {}", other.what()),
        )),
    }
}

fn required_string(fields: Fields<'_>, name: &str) -> Result<String, PolicyError> {
    string(fields, name)?.ok_or_else(|| PolicyError::at(name, "is required"))
}

fn list<'a>(fields: Fields<'a>, name: &str) -> Result<Option<&'a [Node]>, PolicyError> {
    match field(fields, name) {
        None => Ok(None),
        Some(Node {
            val: Val::Array(items),
            ..
        }) => Ok(Some(items)),
        Some(other) => Err(PolicyError::at(
            name,
            format!("expected a list, got {}", other.what()),
        )),
    }
}

fn whole(fields: Fields<'_>, name: &str) -> Result<Option<u64>, PolicyError> {
    match field(fields, name) {
        None => Ok(None),
        Some(Node {
            val: Val::Int(n), ..
        }) => u64::try_from(*n).map(Some).map_err(|_| {
            PolicyError::at(
                name,
                format!("invalid {name}: must be a whole number >= 1, got {n}"),
            )
        }),
        Some(other) => Err(PolicyError::at(
            name,
            format!(
                "invalid {name}: expected a whole number, got {}",
                other.what()
            ),
        )),
    }
}

fn number(fields: Fields<'_>, name: &str) -> Result<Option<f64>, PolicyError> {
    match field(fields, name) {
        None => Ok(None),
        Some(Node {
            val: Val::Int(n), ..
        }) => Ok(Some(*n as f64)),
        Some(Node {
            val: Val::Float(x), ..
        }) => Ok(Some(*x)),
        Some(other) => Err(PolicyError::at(
            name,
            format!("invalid {name}: expected a number, got {}", other.what()),
        )),
    }
}

/// The parameters each algorithm takes (GCRA's burst is optional: it defaults to the limit,
/// as on the command line).
fn parameters(kind: AlgorithmKind) -> &'static [&'static str] {
    match kind {
        AlgorithmKind::TokenBucket => &["capacity", "refill_per_sec"],
        AlgorithmKind::Gcra => &["limit", "window_ms", "burst"],
        AlgorithmKind::SlidingWindowLog
        | AlgorithmKind::SlidingWindowCounter
        | AlgorithmKind::FixedWindow => &["limit", "window_ms"],
        AlgorithmKind::Concurrency => &["limit", "lease_ms"],
    }
}

const ALL_PARAMETERS: [&str; 6] = [
    "capacity",
    "refill_per_sec",
    "limit",
    "window_ms",
    "burst",
    "lease_ms",
];

/// A limit, or a rule: `{name, algorithm, parameters}`.
fn limit(node: &Node) -> Result<Limit, PolicyError> {
    let fields = table(node, "a limit")?;
    let mut known = vec!["name", "algorithm"];
    known.extend(ALL_PARAMETERS);
    only(fields, &known, "a limit")?;
    let name = required_string(fields, "name")?;
    let algorithm = required_string(fields, "algorithm")?;
    let kind: AlgorithmKind = algorithm
        .parse()
        .map_err(|err: crate::rule::RuleError| PolicyError::at("algorithm", err.to_string()))?;
    let takes = parameters(kind);
    for (field_name, _) in fields {
        if ALL_PARAMETERS.contains(&field_name.as_str()) && !takes.contains(&field_name.as_str()) {
            return Err(PolicyError::at(
                field_name.as_str(),
                format!(
                    "{field_name} is not a parameter of {}; it takes {}",
                    kind.cli_name(),
                    takes.join(", ")
                ),
            ));
        }
    }
    let need = |name: &str| -> Result<u64, PolicyError> {
        whole(fields, name)?
            .ok_or_else(|| PolicyError::at(name, format!("is required by {}", kind.cli_name())))
    };
    let algorithm = match kind {
        AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
            capacity: need("capacity")?,
            refill_per_sec: number(fields, "refill_per_sec")?
                .ok_or_else(|| PolicyError::at("refill_per_sec", "is required by token-bucket"))?,
        },
        AlgorithmKind::Gcra => {
            let limit = need("limit")?;
            Algorithm::Gcra {
                limit,
                window_ms: need("window_ms")?,
                burst: whole(fields, "burst")?.unwrap_or(limit),
            }
        }
        AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog {
            limit: need("limit")?,
            window_ms: need("window_ms")?,
        },
        AlgorithmKind::SlidingWindowCounter => Algorithm::SlidingWindowCounter {
            limit: need("limit")?,
            window_ms: need("window_ms")?,
        },
        AlgorithmKind::FixedWindow => Algorithm::FixedWindow {
            limit: need("limit")?,
            window_ms: need("window_ms")?,
        },
        AlgorithmKind::Concurrency => Algorithm::Concurrency {
            limit: need("limit")?,
            lease_ms: whole(fields, "lease_ms")?.unwrap_or(crate::rule::DEFAULT_LEASE_MS),
        },
    };
    Limit::new(name, algorithm)
}

fn limits(fields: Fields<'_>) -> Result<Vec<Limit>, PolicyError> {
    let items = list(fields, "limits")?
        .ok_or_else(|| PolicyError::at("limits", "is required: a policy holds 1 to 8 limits"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, node)| limit(node).map_err(|e| e.under(&format!("limits[{i}]"))))
        .collect()
}

fn over(node: &Node) -> Result<Override, PolicyError> {
    let fields = table(node, "an override")?;
    only(fields, &["tier", "keys", "limits"], "an override")?;
    let tier = required_string(fields, "tier")?;
    let keys = list(fields, "keys")?
        .ok_or_else(|| PolicyError::at("keys", "is required: exact keys or globs (* and ?)"))?
        .iter()
        .enumerate()
        .map(|(i, node)| match &node.val {
            Val::Str(s) => Ok(s.clone()),
            _ => Err(PolicyError::at(
                format!("keys[{i}]"),
                format!("expected a string, got {}", node.what()),
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Override::new(tier, keys, limits(fields)?)
}

fn policy(node: &Node, key_check: Option<KeyCheck<'_>>) -> Result<Policy, PolicyError> {
    let fields = table(node, "a policy")?;
    only(
        fields,
        &["name", "key", "mode", "limits", "overrides"],
        "a policy",
    )?;
    let name = required_string(fields, "name")?;
    let mode = match string(fields, "mode")?.as_deref() {
        None | Some("enforce") => Mode::Enforce,
        Some("shadow") => Mode::Shadow,
        Some(other) => {
            return Err(PolicyError::at(
                "mode",
                format!("invalid mode {other:?}: use \"enforce\" or \"shadow\""),
            ))
        }
    };
    let limits = limits(fields)?;
    let mut policy = Policy::new(name, limits)?.with_mode(mode);
    if let Some(key) = string(fields, "key")? {
        if let Some(check) = key_check {
            check(&key).map_err(|message| PolicyError::at("key", message))?;
        }
        policy = policy.with_key(key)?;
    }
    if let Some(items) = list(fields, "overrides")? {
        let overrides = items
            .iter()
            .enumerate()
            .map(|(i, node)| over(node).map_err(|e| e.under(&format!("overrides[{i}]"))))
            .collect::<Result<Vec<_>, _>>()?;
        policy = policy.with_overrides(overrides)?;
    }
    Ok(policy)
}

fn file_policies(root: &Node, key_check: Option<KeyCheck<'_>>) -> Result<Vec<Policy>, PolicyError> {
    let (policies, rules): (&[Node], &[Node]) = match &root.val {
        // Today's JSON rules file: a list of rules.
        Val::Array(rules) => (&[], rules),
        Val::Table(fields) => {
            only(fields, &["policies", "rules"], "a policies file")?;
            (
                list(fields, "policies")?.unwrap_or_default(),
                list(fields, "rules")?.unwrap_or_default(),
            )
        }
        _ => {
            return Err(PolicyError::at(
                "",
                format!("expected {{\"policies\": [...]}}, got {}", root.what()),
            ))
        }
    };
    let in_list = matches!(root.val, Val::Array(_));
    let mut out = Vec::with_capacity(policies.len() + rules.len());
    for (i, node) in policies.iter().enumerate() {
        let at = format!("policies[{i}]");
        out.push(policy(node, key_check).map_err(|e| e.under(&at))?);
    }
    for (i, node) in rules.iter().enumerate() {
        let at = if in_list {
            format!("[{i}]")
        } else {
            format!("rules[{i}]")
        };
        let limit = limit(node).map_err(|e| e.under(&at))?;
        let policy =
            Policy::new(limit.name().to_string(), vec![limit]).map_err(|e| e.under(&at))?;
        out.push(policy);
    }
    if out.is_empty() {
        return Err(PolicyError::at(
            "",
            "it defines no policy: add [[policies]] (or rules)",
        ));
    }
    for (i, p) in out.iter().enumerate() {
        if out[..i].iter().any(|q| q.name() == p.name()) {
            let at = if i < policies.len() {
                format!("policies[{i}].name")
            } else if in_list {
                format!("[{}].name", i - policies.len())
            } else {
                format!("rules[{}].name", i - policies.len())
            };
            return Err(PolicyError::at(
                at,
                format!(
                    "{:?} is used twice; policy and rule names must be unique",
                    p.name()
                ),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
