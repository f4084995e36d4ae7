//! A check request as typed fields that borrow from the body: the key and a rule's or
//! policy's name are slices of the request (copied only when they hold JSON escapes), an
//! inline rule is kept as its raw JSON until it is built. Every refusal names its field.

use super::error::ApiError;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The fields of `{"rule" | "policy", "key", "cost"}`, each as its raw JSON (null: absent).
/// Any other field is refused by name ([`unknown_field`]): silently dropped, a typo of `cost`
/// or a field the endpoint does not take would decide something else than was asked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields<'a> {
    #[serde(borrow, default)]
    rule: Option<&'a RawValue>,
    #[serde(borrow, default)]
    policy: Option<&'a RawValue>,
    #[serde(borrow, default)]
    key: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cost: Option<&'a RawValue>,
}

/// What a check is asked against.
pub(crate) enum Target<'a> {
    /// A loaded rule, by name.
    RuleName(Cow<'a, str>),
    /// A rule given as JSON.
    RuleInline(&'a RawValue),
    /// A loaded policy, by name.
    Policy(Cow<'a, str>),
}

/// One check, borrowing from the body it was read from.
pub(crate) struct CheckRequest<'a> {
    pub target: Target<'a>,
    pub key: Cow<'a, str>,
    pub cost: u64,
}

const OBJECT: &str = "must be a JSON object {\"rule\" or \"policy\", \"key\", \"cost\"}";

impl<'a> CheckRequest<'a> {
    /// A request body.
    pub(crate) fn parse(body: &'a [u8]) -> Result<Self, ApiError> {
        if first_byte(body) != Some(b'{') {
            return Err(
                match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                    Ok(_) => ApiError::invalid_json(format!("the body {OBJECT}")),
                    Err(e) => not_json(body, e),
                },
            );
        }
        let fields: Fields<'a> = serde_json::from_slice(body).map_err(|e| not_json(body, e))?;
        Self::from_fields(fields)
    }

    /// One item of a batch (its index names it in the message).
    pub(crate) fn parse_item(item: &'a RawValue, index: usize) -> Result<Self, ApiError> {
        if first_byte(item.get().as_bytes()) != Some(b'{') {
            return Err(ApiError::invalid_json(format!("item {index} {OBJECT}")));
        }
        let fields: Fields<'a> = serde_json::from_str(item.get()).map_err(|e| {
            unknown_field(&e).unwrap_or_else(|| {
                ApiError::invalid_json(format!("item {index} is not a check request: {e}"))
            })
        })?;
        Self::from_fields(fields)
    }

    fn from_fields(fields: Fields<'a>) -> Result<Self, ApiError> {
        let target = match (fields.rule, fields.policy) {
            (Some(rule), None) => match rule.get().as_bytes().first() {
                Some(b'"') => Target::RuleName(string(rule).ok_or_else(not_a_rule)?),
                Some(b'{') => Target::RuleInline(rule),
                _ => return Err(not_a_rule()),
            },
            (None, Some(policy)) => Target::Policy(string(policy).ok_or_else(|| {
                ApiError::bad(
                    "invalid_policy",
                    "policy",
                    "policy must be the name of a loaded policy",
                )
            })?),
            (Some(_), Some(_)) => {
                return Err(ApiError::bad(
                    "invalid_policy",
                    "policy",
                    "give either rule or policy, not both",
                ))
            }
            (None, None) => {
                return Err(ApiError::bad(
                    "missing_field",
                    "rule",
                    "rule or policy is required: a loaded rule's name, a rule as JSON, or a loaded policy's name",
                ))
            }
        };
        let key = match fields.key {
            None => return Err(ApiError::bad("missing_field", "key", "key is required")),
            Some(raw) => string(raw)
                .ok_or_else(|| ApiError::bad("invalid_key", "key", "key must be a string"))?,
        };
        let cost = match fields.cost {
            None => 1,
            Some(raw) => serde_json::from_str::<u64>(raw.get()).map_err(|e| {
                if e.to_string().contains("out of range") {
                    ApiError::bad(
                        "invalid_number",
                        "cost",
                        format!("cost {} is no number a field can hold", raw.get()),
                    )
                } else {
                    ApiError::bad(
                        "invalid_cost",
                        "cost",
                        format!(
                            "cost must be a whole number from 1 to the limit, got {}",
                            raw.get()
                        ),
                    )
                }
            })?,
        };
        Ok(CheckRequest { target, key, cost })
    }
}

fn not_a_rule() -> ApiError {
    ApiError::bad(
        "invalid_rule",
        "rule",
        "rule must be a loaded rule's name or a rule as JSON",
    )
}

fn first_byte(body: &[u8]) -> Option<u8> {
    body.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// A JSON string, borrowed when it holds no escape; `None` for anything else.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(text) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// serde's "unknown field `x`, expected one of ..." as the endpoint's `unknown_field` error.
fn unknown_field(e: &serde_json::Error) -> Option<ApiError> {
    let text = e.to_string();
    let field = text.strip_prefix("unknown field `")?.split('`').next()?;
    Some(ApiError::bad(
        "unknown_field",
        field,
        format!("unknown field {field:?}: a request has rule or policy, key and cost"),
    ))
}

/// A body serde_json refused: `unknown_field`, `invalid_json`, or `invalid_number` naming the
/// field when the JSON holds a number no field can hold (`"cost": 1e400`).
fn not_json(body: &[u8], e: serde_json::Error) -> ApiError {
    if let Some(error) = unknown_field(&e) {
        return error;
    }
    let error = ApiError::invalid_json(format!("the body is not JSON: {e}"));
    match (e.classify(), number_field(body, e.column())) {
        (serde_json::error::Category::Syntax, Some(field))
            if e.to_string().contains("number out of range") =>
        {
            ApiError {
                code: "invalid_number",
                field: Some(field),
                ..error
            }
        }
        _ => error,
    }
}

/// The field whose number ends at `column` (1-based, on a one-line body) of `body`: `"cost"`
/// for `{"key": "k", "cost": 1e400` with the column at its end.
fn number_field(body: &[u8], column: usize) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let before = text.get(..column.min(text.len()))?;
    // Compiled once: every such bad request would otherwise compile it again.
    static KEY: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#""([^"\\]{1,64})"\s*:\s*[-+0-9.eE]*$"#).ok()
    });
    let key = KEY.as_ref()?;
    Some(key.captures(before)?.get(1)?.as_str().to_string())
}
