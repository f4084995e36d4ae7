//! Client keys: what a rule would have limited by, built from each line.
//!
//! A key expression is one or more terms joined by `+`; their values are joined by `|`:
//!
//! | term | value |
//! | --- | --- |
//! | `ip` | the client address |
//! | `method` | the request method |
//! | `path` | the request path, without the query |
//! | `path[N]` | the path's N-th segment, from 1 (`/api/v1/users`: `path[1]` is `api`) |
//! | `field:NAME` | a field of the line (a JSON field, dotted for nesting; a CSV column; a combined-format field such as `user` or `status`, or an extra named by `--extra-fields`) |
//! | `header:NAME` | a request header the log captured (see [`LogParser::header`]) |
//!
//! `ip+path[1]` keys `203.0.113.9|api`. A line whose term is missing, empty or `-` has no key:
//! it is skipped and counted, never lumped under a made-up key.

use super::format::{LogParser, Parsed};
use std::fmt;

/// One term of a key expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Ip,
    Method,
    Path,
    Segment(usize),
    Field(String),
    Header(String),
}

/// A parsed key expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyExpr {
    terms: Vec<Term>,
    source: String,
}

impl Default for KeyExpr {
    fn default() -> Self {
        KeyExpr {
            terms: vec![Term::Ip],
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
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
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

fn parse_term(t: &str) -> Result<Term, String> {
    let named = |prefix: &str| {
        t.strip_prefix(prefix)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    };
    if let Some(name) = named("field:") {
        return Ok(Term::Field(name));
    }
    if let Some(name) = named("header:") {
        return Ok(Term::Header(name));
    }
    match t {
        "ip" => return Ok(Term::Ip),
        "method" => return Ok(Term::Method),
        "path" => return Ok(Term::Path),
        _ => {}
    }
    if let Some(n) = t.strip_prefix("path[").and_then(|r| r.strip_suffix(']')) {
        if let Ok(n) = n.parse::<usize>() {
            if n >= 1 {
                return Ok(Term::Segment(n));
            }
        }
    }
    Err(format!(
        "invalid --key term {t:?}: use ip, method, path, path[N] (N from 1), field:NAME or header:NAME, joined by +"
    ))
}

impl KeyExpr {
    /// The key of one line, or why it has none.
    pub fn eval(&self, parser: &LogParser, line: &Parsed<'_>) -> Result<String, String> {
        let mut key = String::new();
        for (i, term) in self.terms.iter().enumerate() {
            let value = match term {
                Term::Ip => parser.ip(line),
                Term::Method => parser.method(line),
                Term::Path => parser
                    .path(line)
                    .map(|p| strip_query(&p).to_string().into()),
                Term::Segment(n) => parser.path(line).and_then(|p| {
                    strip_query(&p)
                        .split('/')
                        .filter(|s| !s.is_empty())
                        .nth(n - 1)
                        .map(|s| s.to_string().into())
                }),
                Term::Field(name) => parser.field(line, name),
                Term::Header(name) => parser.header(line, name),
            };
            let value = value
                .filter(|v| !v.is_empty() && v != "-")
                .ok_or_else(|| format!("no key: {} is missing", self.term_name(i)))?;
            if i > 0 {
                key.push('|');
            }
            key.push_str(&value);
        }
        if key.len() > crate::rule::MAX_CLIENT_KEY_LEN {
            return Err(format!(
                "key longer than {} bytes",
                crate::rule::MAX_CLIENT_KEY_LEN
            ));
        }
        Ok(key)
    }

    fn term_name(&self, i: usize) -> String {
        match &self.terms[i] {
            Term::Ip => "the client address".into(),
            Term::Method => "the method".into(),
            Term::Path => "the path".into(),
            Term::Segment(n) => format!("path segment {n}"),
            Term::Field(n) => format!("field {n:?}"),
            Term::Header(n) => format!("header {n:?}"),
        }
    }
}

fn strip_query(path: &str) -> &str {
    path.split(['?', '#']).next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::format::{FieldNames, LogFormat};

    #[test]
    fn builds_keys_from_terms() {
        let mut parser = LogParser::new(
            LogFormat::Combined,
            FieldNames {
                extra: vec!["x-api-key".into()],
                ..FieldNames::default()
            },
        );
        let line = r#"2001:db8::1 - alice [10/Oct/2000:13:55:36 -0700] "GET /api/v1/users?id=3 HTTP/1.1" 200 1 "-" "ua" "-""#;
        let r = parser.parse(line).expect("parses").expect("request");
        let key = |expr: &str| expr.parse::<KeyExpr>().expect(expr).eval(&parser, &r.line);
        assert_eq!(key("ip").as_deref(), Ok("2001:db8::1"));
        assert_eq!(key("ip+path[1]").as_deref(), Ok("2001:db8::1|api"));
        assert_eq!(key("path[3] + method").as_deref(), Ok("users|GET"));
        assert_eq!(key("path").as_deref(), Ok("/api/v1/users"));
        assert_eq!(key("field:user").as_deref(), Ok("alice"));
        assert_eq!(
            key("header:x-api-key"),
            Err("no key: header \"x-api-key\" is missing".to_string())
        );
        assert!(key("path[4]")
            .expect_err("no 4th segment")
            .contains("segment 4"));
        for bad in ["", "ip+", "path[0]", "cookie", "field:"] {
            let err = bad.parse::<KeyExpr>().expect_err(bad);
            assert!(err.contains("--key"), "{err}");
        }
    }
}
