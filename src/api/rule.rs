//! A rule's decision at `POST /api/check`: a loaded rule by name (borrowed from the loaded
//! set, never cloned) or a rule given inline, its errors naming the field inside it
//! (`rule.capacity`, ...).

use super::error::ApiError;
use super::reply::Headers;
use super::request::Target;
use super::{DecisionApi, RULES_PATH};
use crate::calendar::{Period, TimeZoneName, WeekStart};
use crate::decision::Decision;
use crate::headers::http_answer;
use crate::rule::{Algorithm, AlgorithmKind, Rule, RuleError};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::borrow::Cow;

/// A rule's decision and the HTTP answer it implies.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RuleReply<'a> {
    #[serde(serialize_with = "rule_name")]
    pub rule: Cow<'a, Rule>,
    #[serde(flatten)]
    pub decision: Decision,
    /// 200 or 429: what the asking service should answer its own client.
    pub status: u16,
    pub headers: Headers,
}

// serde hands `serialize_with` the field as it is: a `&Cow`.
#[allow(clippy::ptr_arg)]
fn rule_name<S: Serializer>(rule: &Cow<'_, Rule>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(rule.name())
}

impl DecisionApi {
    pub(super) async fn check_rule<'a>(
        &'a self,
        target: &Target<'_>,
        key: &str,
        cost: u64,
    ) -> Result<RuleReply<'a>, ApiError> {
        let rule = self.rule(target)?;
        let decision = self
            .limiter
            .check_cost(&rule, key, cost)
            .await
            .map_err(|e| match e {
                RuleError::InvalidCost { .. } => {
                    ApiError::bad("invalid_cost", "cost", e.to_string())
                }
                RuleError::InvalidKey(_) => ApiError::bad("invalid_key", "key", e.to_string()),
                other => ApiError::bad("invalid_rule", "rule", other.to_string()),
            })?;
        // The caller holds the lease by its id (`POST /api/release`), not this reply.
        decision.keep_lease();
        let answer = http_answer(&rule, &decision);
        Ok(RuleReply {
            rule,
            decision,
            status: answer.status,
            headers: Headers::from_answer(answer.headers),
        })
    }

    fn rule(&self, target: &Target<'_>) -> Result<Cow<'_, Rule>, ApiError> {
        match target {
            Target::RuleName(name) => self.rules.get(name.as_ref()).map(Cow::Borrowed).ok_or_else(|| ApiError {
                status: 404,
                code: "unknown_rule",
                message: format!(
                    "no rule named {name:?} is loaded (GET {RULES_PATH} lists them; or give the rule as JSON)"
                ),
                field: Some("rule".into()),
            }),
            Target::RuleInline(raw) => {
                let object: serde_json::Map<String, Value> = serde_json::from_str(raw.get())
                    .map_err(|e| ApiError::bad("invalid_rule", "rule", format!("invalid inline rule: {e}")))?;
                inline_rule(&object).map(Cow::Owned)
            }
            Target::Policy(_) => Err(ApiError::bad(
                "invalid_rule",
                "rule",
                "rule must be a loaded rule's name or a rule as JSON",
            )),
        }
    }
}
/// A rule given inline, its errors naming the field inside it (`rule.capacity`, ...).
fn inline_rule(object: &serde_json::Map<String, Value>) -> Result<Rule, ApiError> {
    let name = match object.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => {
            return Err(ApiError::bad(
                "invalid_rule",
                "rule.name",
                "an inline rule needs a \"name\" (telemetry counts under it)",
            ))
        }
    };
    // The algorithm first: which fields belong is its to say.
    let kind = match object.get("algorithm") {
        Some(Value::String(name)) => name.parse::<AlgorithmKind>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        ApiError::bad(
            "invalid_rule",
            "rule.algorithm",
            format!(
                "an inline rule needs an \"algorithm\": one of {}",
                AlgorithmKind::ALL.map(AlgorithmKind::as_str).join(", ")
            ),
        )
    })?;
    // A field the algorithm does not take (a typo, another algorithm's parameter) is named,
    // never ignored; a parameter that is not a number of its kind ("NaN", "10", null, -1, 1.5
    // for a whole number) is named as itself, not as the algorithm serde could not build.
    for (field, value) in object {
        if matches!(field.as_str(), "name" | "algorithm") {
            continue;
        }
        let at = format!("rule.{field}");
        if !kind.parameters().contains(&field.as_str()) {
            let unknown = RuleError::UnknownField {
                field: field.clone(),
                kind,
            };
            return Err(ApiError::bad("invalid_rule", &at, unknown.to_string()));
        }
        // A calendar's words: each read as what it names, its error naming the field.
        if matches!(field.as_str(), "period" | "time_zone" | "week_start") {
            let checked = match value.as_str() {
                None => Err(format!("{at} must be a word, got {value}")),
                Some(word) => match field.as_str() {
                    "period" => word.parse::<Period>().map(drop),
                    "time_zone" => TimeZoneName::new(word).map(drop),
                    _ => word.parse::<WeekStart>().map(drop),
                }
                .map_err(|e| e.to_string()),
            };
            if let Err(message) = checked {
                return Err(ApiError::bad("invalid_rule", &at, message));
            }
            continue;
        }
        let fits = match field.as_str() {
            "refill_per_sec" => value.is_number(),
            _ => value.is_u64(),
        };
        if !fits {
            let what = match field.as_str() {
                "refill_per_sec" => "a number",
                _ => "a whole number from 1",
            };
            return Err(ApiError::bad(
                "invalid_rule",
                &at,
                format!("{at} must be {what}, got {value}"),
            ));
        }
    }
    let algorithm: Algorithm =
        serde_json::from_value(Value::Object(object.clone())).map_err(|e| {
            let text = e.to_string();
            // serde names the missing or mistyped field in backquotes: point at it.
            let field = text
                .split('`')
                .nth(1)
                .filter(|f| object.contains_key(*f) || text.starts_with("missing field"))
                .map_or("rule.algorithm".to_string(), |f| format!("rule.{f}"));
            ApiError::bad(
                "invalid_rule",
                &field,
                format!("invalid inline rule: {text}"),
            )
        })?;
    Rule::new(name, algorithm).map_err(|e| {
        let field = match &e {
            RuleError::InvalidParameter { parameter, .. } => format!("rule.{parameter}"),
            RuleError::InvalidName(_) => "rule.name".into(),
            _ => "rule".into(),
        };
        ApiError::bad("invalid_rule", &field, e.to_string())
    })
}
