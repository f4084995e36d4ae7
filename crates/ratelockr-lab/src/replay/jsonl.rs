//! JSON lines: one object per line, fields named by flags or found under their usual names
//! (nginx's `escape=json` log formats, Caddy, load-balancer exports). A dotted name (`req.ip`)
//! reaches into nested objects.

use super::line_error::LineError;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonLine(pub Map<String, Value>);

pub fn parse(line: &str) -> Result<JsonLine, LineError> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(JsonLine(map)),
        Ok(_) => Err(LineError::Malformed("not a JSON object")),
        Err(e) => Err(LineError::NotJson(e.to_string())),
    }
}

impl JsonLine {
    /// A field's text: strings as they are, numbers and booleans as JSON writes them; null,
    /// objects and arrays are no value.
    pub fn get(&self, name: &str) -> Option<Cow<'_, str>> {
        let mut parts = name.split('.');
        let mut value = self.0.get(parts.next()?)?;
        for part in parts {
            value = value.as_object()?.get(part)?;
        }
        match value {
            Value::String(s) => Some(Cow::Borrowed(s.as_str())),
            Value::Number(n) => Some(Cow::Owned(n.to_string())),
            Value::Bool(b) => Some(Cow::Owned(b.to_string())),
            _ => None,
        }
    }

    /// The raw value of a field (a timestamp may be a number).
    pub fn value(&self, name: &str) -> Option<&Value> {
        let mut parts = name.split('.');
        let mut value = self.0.get(parts.next()?)?;
        for part in parts {
            value = value.as_object()?.get(part)?;
        }
        Some(value)
    }

    /// The first of `names` that is present.
    pub fn first<'n>(&self, names: &[&'n str]) -> Option<(&'n str, Cow<'_, str>)> {
        names.iter().find_map(|n| self.get(n).map(|v| (*n, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_and_typed_fields() {
        let line = parse(
            r#"{"ts":1700000000.5,"req":{"ip":"::1","h":{"x-api-key":"k 1"}},"n":null,"ok":true}"#,
        )
        .expect("valid");
        assert_eq!(line.get("req.ip").as_deref(), Some("::1"));
        assert_eq!(line.get("req.h.x-api-key").as_deref(), Some("k 1"));
        assert_eq!(line.get("ts").as_deref(), Some("1700000000.5"));
        assert_eq!(line.get("ok").as_deref(), Some("true"));
        assert_eq!(line.get("n"), None);
        assert_eq!(line.get("req"), None);
        assert_eq!(
            line.first(&["nope", "req.ip"]).map(|(n, _)| n),
            Some("req.ip")
        );
        assert!(parse("[1,2]")
            .expect_err("array")
            .to_string()
            .contains("object"));
        assert!(parse("{\"a\":")
            .expect_err("cut")
            .to_string()
            .contains("not JSON"));
    }
}
