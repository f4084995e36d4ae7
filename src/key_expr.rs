//! Client keys: the key expression a policy names (`key = "ip+path[1]"`), read by every front
//! that finds a request's key itself: replay from a log line, the tower layer from an HTTP
//! request.
//!
//! A key expression is one or more terms joined by `+`; their values are joined by `|`:
//!
//! | term | value |
//! | --- | --- |
//! | `ip` | the client address |
//! | `method` | the request method |
//! | `path` | the request path, without the query |
//! | `path[N]` | the path's N-th segment, from 1 (`/api/v1/users`: `path[1]` is `api`) |
//! | `field:NAME` | a field of a log line (replay only) |
//! | `header:NAME` | a request header |
//!
//! `ip+path[1]` keys `203.0.113.9|api`. A request whose term is missing, empty or `-` has no
//! key: it is never lumped under a made-up key.

use std::borrow::Cow;
use std::fmt;

/// One term of a key expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyTerm {
    Ip,
    Method,
    Path,
    Segment(usize),
    Field(String),
    Header(String),
}

/// A term that is none of the table's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --key term {term:?}: use ip, method, path, path[N] (N from 1), field:NAME or header:NAME, joined by +")]
pub struct KeyExprError {
    /// The term as written.
    pub term: String,
}

/// Why a request has no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoKey {
    /// A term's value is missing, empty or `-` (the term in words: [`KeyTerm::name`]).
    #[error("no key: {0} is missing")]
    Missing(String),
    /// The joined key is longer than a script takes.
    #[error("key longer than {0} bytes")]
    TooLong(usize),
}

/// A parsed key expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyExpr {
    terms: Vec<KeyTerm>,
    source: String,
}

impl Default for KeyExpr {
    fn default() -> Self {
        KeyExpr {
            terms: vec![KeyTerm::Ip],
            source: "ip".into(),
        }
    }
}

impl fmt::Display for KeyExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for KeyExpr {
    type Err = KeyExprError;

    fn from_str(s: &str) -> Result<Self, KeyExprError> {
        let terms = s
            .split('+')
            .map(|t| parse_term(t.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KeyExpr {
            terms,
            source: s.to_string(),
        })
    }
}

fn parse_term(t: &str) -> Result<KeyTerm, KeyExprError> {
    let named = |prefix: &str| {
        t.strip_prefix(prefix)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    };
    if let Some(name) = named("field:") {
        return Ok(KeyTerm::Field(name));
    }
    if let Some(name) = named("header:") {
        return Ok(KeyTerm::Header(name));
    }
    match t {
        "ip" => return Ok(KeyTerm::Ip),
        "method" => return Ok(KeyTerm::Method),
        "path" => return Ok(KeyTerm::Path),
        _ => {}
    }
    if let Some(n) = t.strip_prefix("path[").and_then(|r| r.strip_suffix(']')) {
        if let Ok(n) = n.parse::<usize>() {
            if n >= 1 {
                return Ok(KeyTerm::Segment(n));
            }
        }
    }
    Err(KeyExprError {
        term: t.to_string(),
    })
}

impl KeyExpr {
    /// The terms, in order.
    pub fn terms(&self) -> &[KeyTerm] {
        &self.terms
    }

    /// The key: each term's value (from `value_of`) joined by `|`, or why there is none (a
    /// term missing, empty or `-`; a key longer than a script takes).
    pub fn join<'a>(
        &self,
        mut value_of: impl FnMut(&KeyTerm) -> Option<Cow<'a, str>>,
    ) -> Result<String, NoKey> {
        let mut key = String::new();
        for (i, term) in self.terms.iter().enumerate() {
            let value = value_of(term)
                .filter(|v| !v.is_empty() && v != "-")
                .ok_or_else(|| NoKey::Missing(term.name()))?;
            if i > 0 {
                key.push('|');
            }
            key.push_str(&value);
        }
        if key.len() > crate::rule::MAX_CLIENT_KEY_LEN {
            return Err(NoKey::TooLong(crate::rule::MAX_CLIENT_KEY_LEN));
        }
        Ok(key)
    }
}

impl KeyTerm {
    /// The term in words, for the reason a request has no key.
    pub fn name(&self) -> String {
        match self {
            KeyTerm::Ip => "the client address".into(),
            KeyTerm::Method => "the method".into(),
            KeyTerm::Path => "the path".into(),
            KeyTerm::Segment(n) => format!("path segment {n}"),
            KeyTerm::Field(n) => format!("field {n:?}"),
            KeyTerm::Header(n) => format!("header {n:?}"),
        }
    }
}

/// `path` without its query or fragment.
pub fn strip_query(path: &str) -> &str {
    path.split(['?', '#']).next().unwrap_or(path)
}

/// The `n`-th segment of `path` (from 1), without the query.
pub fn segment(path: &str, n: usize) -> Option<&str> {
    strip_query(path)
        .split('/')
        .filter(|s| !s.is_empty())
        .nth(n.checked_sub(1)?)
}
