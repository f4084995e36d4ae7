//! A rules file: a list of rules in their serde form (`{"name", "algorithm", parameters}`),
//! for `serve --rules` and `replay --rules`.
//!
//! Accepted shapes: a JSON list, a JSON object `{"rules": [...]}`, or TOML `[[rules]]` tables
//! (by the `.toml` extension). Every rule is validated as [`Rule`] deserialization validates;
//! an empty list and two rules of one name are refused.

use crate::rule::Rule;
use std::path::{Path, PathBuf};

/// Why a rules file was refused; the message names the file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    #[error("invalid --rules: cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid --rules {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(serde::Deserialize)]
struct File {
    rules: Vec<Rule>,
}

/// Reads and validates the rules of `path`.
pub fn load_rules_file(path: &Path) -> Result<Vec<Rule>, RulesFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| RulesFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    parse_rules(&text, toml).map_err(|message| RulesFileError::Invalid {
        path: path.to_path_buf(),
        message,
    })
}

/// Parses rules from JSON (a list or `{"rules": [...]}`) or TOML (`[[rules]]`).
pub(crate) fn parse_rules(text: &str, toml: bool) -> Result<Vec<Rule>, String> {
    let rules = if toml {
        toml::from_str::<File>(text)
            .map(|f| f.rules)
            .map_err(|e| e.to_string())?
    } else {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if value.is_array() {
            serde_json::from_value::<Vec<Rule>>(value)
        } else {
            serde_json::from_value::<File>(value).map(|f| f.rules)
        }
        .map_err(|e| e.to_string())?
    };
    if rules.is_empty() {
        return Err("it lists no rule".into());
    }
    for (i, rule) in rules.iter().enumerate() {
        if rules[..i].iter().any(|r| r.name() == rule.name()) {
            return Err(format!(
                "rules[{i}].name: {:?} is used twice; rule names must be unique",
                rule.name()
            ));
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_list_json_object_and_toml_give_the_same_rules() {
        let list = r#"[{"name":"api","algorithm":"token_bucket","capacity":10,"refill_per_sec":2.5},
                       {"name":"login","algorithm":"fixed_window","limit":5,"window_ms":60000}]"#;
        let object = format!(r#"{{"rules": {list}}}"#);
        let toml = r#"
            [[rules]]
            name = "api"
            algorithm = "token_bucket"
            capacity = 10
            refill_per_sec = 2.5

            [[rules]]
            name = "login"
            algorithm = "fixed_window"
            limit = 5
            window_ms = 60000
        "#;
        let a = parse_rules(list, false).expect("list");
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].name(), "login");
        assert_eq!(parse_rules(&object, false).expect("object"), a);
        assert_eq!(parse_rules(toml, true).expect("toml"), a);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let bad = r#"[{"name":"api","algorithm":"fixed_window","limit":0,"window_ms":10}]"#;
        assert!(parse_rules(bad, false)
            .expect_err("limit 0")
            .contains("limit"));
        assert!(parse_rules("[]", false)
            .expect_err("empty")
            .contains("no rule"));
        let twice = r#"[{"name":"a","algorithm":"fixed_window","limit":1,"window_ms":10},
                        {"name":"a","algorithm":"fixed_window","limit":2,"window_ms":10}]"#;
        assert!(parse_rules(twice, false)
            .expect_err("duplicate")
            .contains("rules[1].name"));
        assert!(parse_rules("{", false).is_err());
        let err = load_rules_file(Path::new("/nonexistent/rules.json")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/rules.json"), "{err}");
    }
}
