//! Policy files: TOML (`[[policies]]`) or JSON (`{"policies": [...]}`), and today's rules
//! files (a JSON list, `{"rules": [...]}`, TOML `[[rules]]`), whose rules load as policies of
//! one limit. A file may hold both `policies` and `rules`; every name is unique across them.
//!
//! A file is read into a tree that keeps each TOML value's place in the text, then walked by
//! hand: every error knows its path (`policies[0].limits[1].capacity`), and in TOML its line.
//! An invalid file is refused whole. Unknown fields are refused (a typo is not a default).

use super::{Mode, Override, Policy, PolicyError};
use limits::{limit, limits};
use std::path::{Path, PathBuf};
pub use tree::Invalid;
use tree::{
    from_json, json_tree, line_of, list, locate, only, required_string, string, table, toml_tree,
    whole, Node, Val,
};

mod limits;
mod tree;

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
        &["name", "key", "mode", "limits", "overrides", "max_delay_ms"],
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
    let max_delay = whole(fields, "max_delay_ms").map_err(|_| {
        PolicyError::at(
            "max_delay_ms",
            "invalid max_delay_ms: expected a whole number of milliseconds >= 0 (0: deny at once)",
        )
    })?;
    if let Some(ms) = max_delay {
        policy = policy.with_max_delay_ms(ms)?;
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
