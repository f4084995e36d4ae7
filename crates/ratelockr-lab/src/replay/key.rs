//! Client keys of log lines: a [`KeyExpr`] (the core's, as every front reads it) evaluated on
//! a parsed line.

use super::format::{LogParser, Parsed};
pub use ratelockr::key_expr::KeyExpr;
use ratelockr::key_expr::{segment, strip_query, KeyTerm, NoKey};

/// The key of one line, or why it has none.
pub fn eval(expr: &KeyExpr, parser: &LogParser, line: &Parsed<'_>) -> Result<String, NoKey> {
    expr.join(|term| match term {
        KeyTerm::Ip => parser.ip(line),
        KeyTerm::Method => parser.method(line),
        KeyTerm::Path => parser
            .path(line)
            .map(|p| strip_query(&p).to_string().into()),
        KeyTerm::Segment(n) => parser
            .path(line)
            .and_then(|p| segment(&p, *n).map(|s| s.to_string().into())),
        KeyTerm::Field(name) => parser.field(line, name),
        KeyTerm::Header(name) => parser.header(line, name),
    })
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
        let key = |expr: &str| eval(&expr.parse::<KeyExpr>().expect(expr), &parser, &r.line);
        assert_eq!(key("ip").as_deref(), Ok("2001:db8::1"));
        assert_eq!(key("ip+path[1]").as_deref(), Ok("2001:db8::1|api"));
        assert_eq!(key("path[3] + method").as_deref(), Ok("users|GET"));
        assert_eq!(key("path").as_deref(), Ok("/api/v1/users"));
        assert_eq!(key("field:user").as_deref(), Ok("alice"));
        assert_eq!(
            key("header:x-api-key").map_err(|e| e.to_string()),
            Err("no key: header \"x-api-key\" is missing".to_string())
        );
        assert!(key("path[4]")
            .expect_err("no 4th segment")
            .to_string()
            .contains("segment 4"));
        for bad in ["", "ip+", "path[0]", "cookie", "field:"] {
            let err = bad.parse::<KeyExpr>().expect_err(bad);
            assert!(err.to_string().contains("--key"), "{err}");
        }
    }
}
