//! A policies file read into a tree that keeps each TOML value's place in the text, and the
//! typed readers of its fields: each refuses a wrong type naming the field.

use crate::policy::PolicyError;
use std::fmt;
use std::ops::Range;

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

// --- the tree ---------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val {
    Table(Vec<(String, Node)>),
    Array(Vec<Node>),
    Str(String),
    Int(i128),
    Float(f64),
    Bool(bool),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Node {
    /// Where the value is in the text (TOML only).
    pub(super) span: Option<Range<usize>>,
    pub(super) val: Val,
}

impl Node {
    pub(super) fn what(&self) -> &'static str {
        match self.val {
            Val::Table(_) => "a table",
            Val::Array(_) => "a list",
            Val::Str(_) => "a string",
            Val::Int(_) => "an integer",
            Val::Float(_) => "a number",
            Val::Bool(_) => "a boolean",
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Node> {
        match &self.val {
            Val::Table(entries) => entries.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A TOML value as the tree holds it: toml's deserializer hands out each value's span.
pub(super) struct TomlVal(Val);

impl<'de> serde::Deserialize<'de> for TomlVal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TomlVisitor)
    }
}

pub(super) struct TomlVisitor;

pub(super) fn spanned(v: toml::Spanned<TomlVal>) -> Node {
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

pub(super) fn toml_tree(text: &str) -> Result<Node, Invalid> {
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

pub(super) fn json_tree(text: &str) -> Result<Node, Invalid> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => Ok(from_json(&value)),
        Err(err) => Err(Invalid {
            line: Some(err.line()),
            at: String::new(),
            message: format!("not JSON: {err}"),
        }),
    }
}

pub(super) fn from_json(value: &serde_json::Value) -> Node {
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
pub(super) fn locate(root: &Node, path: &str) -> Option<Range<usize>> {
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

pub(super) fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

// --- the walk ----------------------------------------------------------------------------------

pub(super) type Fields<'a> = &'a [(String, Node)];

pub(super) fn table<'a>(node: &'a Node, what: &str) -> Result<Fields<'a>, PolicyError> {
    match &node.val {
        Val::Table(entries) => Ok(entries),
        _ => Err(PolicyError::at(
            "",
            format!("expected {what} (a table), got {}", node.what()),
        )),
    }
}

/// Refuses fields not in `known`.
pub(super) fn only(fields: Fields<'_>, known: &[&str], what: &str) -> Result<(), PolicyError> {
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

pub(super) fn field<'a>(fields: Fields<'a>, name: &str) -> Option<&'a Node> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

pub(super) fn string(fields: Fields<'_>, name: &str) -> Result<Option<String>, PolicyError> {
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

pub(super) fn required_string(fields: Fields<'_>, name: &str) -> Result<String, PolicyError> {
    string(fields, name)?.ok_or_else(|| PolicyError::at(name, "is required"))
}

pub(super) fn list<'a>(fields: Fields<'a>, name: &str) -> Result<Option<&'a [Node]>, PolicyError> {
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

pub(super) fn whole(fields: Fields<'_>, name: &str) -> Result<Option<u64>, PolicyError> {
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

pub(super) fn number(fields: Fields<'_>, name: &str) -> Result<Option<f64>, PolicyError> {
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
