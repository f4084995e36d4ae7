//! The layer, its builder and the service it wraps around a route.

use crate::info::{ActualCost, RateLimitInfo, RuleDecision};
use crate::key::KeyExtractor;
use crate::leased_body::LeasedBody;
use crate::policy::PolicySource;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use ratelockr::headers::{http_answer, HttpAnswer};
use ratelockr::policy::PolicyWatch;
use ratelockr::{
    Decision, DenyCacheOptions, FailureMode, Lease, Limiter, LimiterOptions, Metrics, RedisTarget,
    Rule, RuleError,
};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

/// The header that marks a request let through without Redis, when
/// [`RateLimitBuilder::fail_open_header`] is on: `ratelimit-fail-open: 1`.
pub const FAIL_OPEN_HEADER: HeaderName = HeaderName::from_static("ratelimit-fail-open");

type CostFn = dyn Fn(&Request) -> u64 + Send + Sync;

/// A tower [`Layer`] that rate-limits every request it sees against one or more rules.
/// Cheap to clone. Build it with [`RateLimitLayer::builder`].
#[derive(Clone)]
pub struct RateLimitLayer {
    shared: Arc<Shared>,
}

struct Shared {
    limiter: Limiter,
    rules: Vec<Rule>,
    /// A policy of a file, decided instead of `rules` (which is then empty).
    policy: Option<PolicySource>,
    key: KeyExtractor,
    cost: Option<Arc<CostFn>>,
    on_admitted: bool,
    x_ratelimit: bool,
    fail_open_header: bool,
    missing_key_status: StatusCode,
    /// This layer's rules in `ratelockr_active_rules`, until the last clone is dropped.
    _active_rules: Option<ratelockr::metrics::ActiveRules>,
}

impl fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.shared;
        f.debug_struct("RateLimitLayer")
            .field("limiter", &s.limiter)
            .field("rules", &s.rules)
            .field("key", &s.key)
            .finish_non_exhaustive()
    }
}

/// Why a layer could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Neither [`RateLimitBuilder::redis`] nor [`RateLimitBuilder::limiter`] was given.
    NoRedis,
    /// No [`RateLimitBuilder::rule`] nor [`RateLimitBuilder::from_file`] was given: the layer
    /// would limit nothing.
    NoRules,
    /// Rules were given beside a policy file: a layer is held to one or the other.
    RulesWithPolicy,
    /// The policies file did not load (its file, line and field are in the message), or does
    /// not hold the policy asked for.
    Policies(String),
    /// Two rules share a name, so they would share their Redis state.
    DuplicateRule(String),
    /// Limiter options were set beside a ready-made [`Limiter`], which has its own.
    OptionsWithLimiter,
    /// The limiter options are out of range (a zero deadline, a degraded mode shared by no
    /// instance...), named.
    Options(ratelockr::OptionsError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::NoRedis => write!(f, "no Redis: call .redis(target) or .limiter(limiter)"),
            BuildError::NoRules => write!(
                f,
                "no rules: call .rule(rule) at least once, or .from_file(path, policy)"
            ),
            BuildError::RulesWithPolicy => write!(
                f,
                "rules and a policy file were both given: a policy holds its own limits (put the rules in its file)"
            ),
            BuildError::Policies(message) => write!(f, "{message}"),
            BuildError::DuplicateRule(name) => write!(
                f,
                "rule {name:?} is given twice: each rule needs its own name (it names its Redis keys)"
            ),
            BuildError::OptionsWithLimiter => write!(
                f,
                "deny_cache/failure_mode/options apply to the limiter the layer builds from .redis(); \
                 a limiter given with .limiter() keeps its own LimiterOptions"
            ),
            BuildError::Options(err) => write!(f, "{err}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Builds a [`RateLimitLayer`]; from [`RateLimitLayer::builder`].
#[must_use]
pub struct RateLimitBuilder {
    key: KeyExtractor,
    target: Option<RedisTarget>,
    limiter: Option<Limiter>,
    options: LimiterOptions,
    options_set: bool,
    metrics: Option<Metrics>,
    rules: Vec<Rule>,
    policy_file: Option<(PathBuf, String)>,
    cost: Option<Arc<CostFn>>,
    on_admitted: bool,
    x_ratelimit: bool,
    fail_open_header: bool,
    missing_key_status: StatusCode,
}

impl fmt::Debug for RateLimitBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitBuilder")
            .field("key", &self.key)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl RateLimitLayer {
    /// A builder that limits requests by `key`.
    pub fn builder(key: KeyExtractor) -> RateLimitBuilder {
        RateLimitBuilder {
            key,
            target: None,
            limiter: None,
            options: LimiterOptions::default(),
            options_set: false,
            metrics: None,
            rules: Vec::new(),
            policy_file: None,
            cost: None,
            on_admitted: false,
            x_ratelimit: false,
            fail_open_header: false,
            missing_key_status: StatusCode::BAD_REQUEST,
        }
    }

    /// The limiter the layer decides with (its ledger, deny-cache stats, ...).
    pub fn limiter(&self) -> &Limiter {
        &self.shared.limiter
    }

    /// The rules, in the order they are decided.
    pub fn rules(&self) -> &[Rule] {
        &self.shared.rules
    }
}

impl RateLimitBuilder {
    /// Decide on the Redis at `target`, with a limiter the layer builds from the options
    /// below (by default: fail open, 250 ms deadline, no deny cache, prefix `ratelockr`).
    pub fn redis(mut self, target: RedisTarget) -> Self {
        self.target = Some(target);
        self
    }

    /// Decide with a limiter of your own (shared with other code, say). It keeps its own
    /// [`LimiterOptions`]; the option setters below are then an error.
    pub fn limiter(mut self, limiter: Limiter) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// All of the limiter's options at once (key prefix, deadline, telemetry, failure mode,
    /// deny cache).
    pub fn options(mut self, options: LimiterOptions) -> Self {
        self.options = options;
        self.options_set = true;
        self
    }

    /// What a decision is while Redis cannot be asked: [`FailureMode::Open`] (the default),
    /// [`FailureMode::Closed`], or [`FailureMode::Degraded`] (this instance's share of each
    /// rule, decided in process).
    pub fn failure_mode(mut self, mode: FailureMode) -> Self {
        self.options.failure_mode = mode;
        self.options_set = true;
        self
    }

    /// Deny in process what Redis has just denied, until the time Redis named
    /// ([`ratelockr::deny_cache`]); hits count as `cache_denied` in the metrics.
    pub fn deny_cache(mut self, options: DenyCacheOptions) -> Self {
        self.options.deny_cache = Some(options);
        self.options_set = true;
        self
    }

    /// Count every decision in `metrics` (`ratelockr_evaluations_total` and the rest; serve
    /// them with [`ratelockr::metrics::MetricsServer`]).
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Holds every request to the policy `policy` of the policies file at `path` (TOML or
    /// JSON; a rules file loads as policies of one limit) instead of rules: every limit of the
    /// key's tier decided in one script call, all or nothing (a denial charges no limit), with
    /// the policy's headers (`RateLimit-Policy` names every limit). The file is reloaded when
    /// it changes, the whole set at once; a broken file keeps the policy in force, is logged
    /// (file, line, field) and counted in `ratelockr_policy_reloads_total{result="error"}`.
    /// The file is read (and the policy looked up) at [`RateLimitBuilder::build`].
    pub fn from_file(mut self, path: impl Into<PathBuf>, policy: impl Into<String>) -> Self {
        self.policy_file = Some((path.into(), policy.into()));
        self
    }

    /// A rule every request must pass. Rules are decided in the order they are added; see
    /// the crate docs for what happens when a later one denies.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// What a request costs (bytes, tokens, weight); 1 when not set. The same cost is asked
    /// of every rule. A cost a rule can never admit (0, or above its capacity, burst or
    /// limit) is answered 413 Payload Too Large, naming the rule.
    pub fn cost(mut self, cost: impl Fn(&Request) -> u64 + Send + Sync + 'static) -> Self {
        self.cost = Some(Arc::new(cost));
        self
    }

    /// Put the `RateLimit-Policy` and `RateLimit` fields (and `X-RateLimit-*` with
    /// [`Self::x_ratelimit_headers`]) on admitted responses too, not only on 429s.
    pub fn headers_on_admitted(mut self, on: bool) -> Self {
        self.on_admitted = on;
        self
    }

    /// Add the conventional `X-RateLimit-Limit`, `-Remaining` and `-Reset` fields.
    pub fn x_ratelimit_headers(mut self, on: bool) -> Self {
        self.x_ratelimit = on;
        self
    }

    /// Mark responses to requests let through without Redis with [`FAIL_OPEN_HEADER`]. The
    /// [`RateLimitInfo`] extension says so whether or not this is on.
    pub fn fail_open_header(mut self, on: bool) -> Self {
        self.fail_open_header = on;
        self
    }

    /// The status for a request without a key (no API-key header, no peer address):
    /// 400 Bad Request unless set (401 suits a missing API key).
    pub fn missing_key_status(mut self, status: StatusCode) -> Self {
        self.missing_key_status = status;
        self
    }

    /// The layer, or what is missing or contradictory.
    pub fn build(self) -> Result<RateLimitLayer, BuildError> {
        match (&self.policy_file, self.rules.is_empty()) {
            (None, true) => return Err(BuildError::NoRules),
            (Some(_), false) => return Err(BuildError::RulesWithPolicy),
            _ => {}
        }
        let policy = match &self.policy_file {
            Some((path, name)) => {
                let watch = PolicyWatch::load_with(path, self.metrics.clone(), None)
                    .map_err(|err| BuildError::Policies(err.to_string()))?;
                let known: Vec<String> = watch
                    .current()
                    .policies
                    .iter()
                    .map(|p| p.name().to_string())
                    .collect();
                if !known.contains(name) {
                    return Err(BuildError::Policies(format!(
                        "{} holds no policy {name:?} (it holds: {})",
                        path.display(),
                        known.join(", ")
                    )));
                }
                if let Some(metrics) = &self.metrics {
                    metrics.register_policy(name);
                }
                Some(PolicySource::new(watch, name.clone()))
            }
            None => None,
        };
        for (i, rule) in self.rules.iter().enumerate() {
            if self.rules[..i].iter().any(|r| r.name() == rule.name()) {
                return Err(BuildError::DuplicateRule(rule.name().to_string()));
            }
        }
        let limiter = match (self.limiter, self.target) {
            (Some(_), _) if self.options_set => return Err(BuildError::OptionsWithLimiter),
            (Some(limiter), _) => limiter,
            (None, Some(target)) => {
                Limiter::try_new(&target, self.options).map_err(BuildError::Options)?
            }
            (None, None) => return Err(BuildError::NoRedis),
        };
        // Counted while the layer lives, added to what others sharing `metrics` count.
        let active_rules = self
            .metrics
            .as_ref()
            .map(|m| m.hold_active_rules(self.rules.len()));
        let limiter = match self.metrics {
            Some(metrics) => limiter.with_observer(Arc::new(metrics)),
            None => limiter,
        };
        Ok(RateLimitLayer {
            shared: Arc::new(Shared {
                limiter,
                rules: self.rules,
                policy,
                key: self.key,
                cost: self.cost,
                on_admitted: self.on_admitted,
                x_ratelimit: self.x_ratelimit,
                fail_open_header: self.fail_open_header,
                missing_key_status: self.missing_key_status,
                _active_rules: active_rules,
            }),
        })
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The service [`RateLimitLayer`] wraps around `S`.
#[derive(Clone)]
pub struct RateLimit<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> fmt::Debug for RateLimit<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("rules", &self.shared.rules)
            .finish_non_exhaustive()
    }
}

impl<S> Service<Request> for RateLimit<S>
where
    S: Service<Request, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        // The clone that was made ready by poll_ready is the one to call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let shared = self.shared.clone();
        // Key and cost are read here: the request's body is not Sync, so no reference to the
        // request may live across an await.
        let key = shared.key.extract(&request);
        let cost = shared.cost.as_ref().map_or(1, |cost| cost(&request));
        Box::pin(async move {
            let (info, answer) = match shared.decide(key, cost).await {
                Ok(decided) => decided,
                Err(refusal) => return Ok(refusal),
            };
            if !info.allowed() {
                let mut response =
                    (StatusCode::TOO_MANY_REQUESTS, "Too Many Requests\n").into_response();
                shared.add_headers(&mut response, &answer, &info, true);
                response.extensions_mut().insert(info);
                return Ok(response);
            }
            // Delay instead of deny: the allowance was taken as of the request's start time,
            // `delay_ms` from now; it is served then.
            let delay_ms = info.delay_ms();
            if delay_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            }
            request.extensions_mut().insert(info.clone());
            let leases: Vec<Lease> = info.leases().cloned().collect();
            let mut response = inner.call(request).await?;
            if let Some(ActualCost(actual)) = response.extensions_mut().remove::<ActualCost>() {
                shared.settle(&info, actual).await;
            }
            shared.add_headers(&mut response, &answer, &info, shared.on_admitted);
            response.extensions_mut().insert(info);
            // Slots in flight are held for the life of the response body: given back when its
            // last frame is out, or when it is dropped unfinished (the client went away).
            if !leases.is_empty() {
                response = response.map(|body| Body::new(LeasedBody::new(body, leases)));
            }
            Ok(response)
        })
    }
}

impl Shared {
    /// The policy's decision, or every rule's in order (refunding the admissions before a
    /// denial), with the HTTP answer; or the response for a request that cannot be decided
    /// (no key, impossible cost).
    async fn decide(
        &self,
        key: Option<String>,
        cost: u64,
    ) -> Result<(RateLimitInfo, HttpAnswer), Response> {
        let Some(key) = key else {
            let message = format!("no rate-limit key: expected {}\n", self.key.what());
            return Err((self.missing_key_status, message).into_response());
        };
        if let Some(source) = &self.policy {
            let (decision, answer) = source.decide(&self.limiter, &key, cost).await?;
            let info = RateLimitInfo {
                key,
                cost,
                decisions: Vec::new(),
                policy: Some(decision),
            };
            return Ok((info, answer));
        }
        let info = self.decide_rules(key, cost).await?;
        let answer = self.answer(&info);
        Ok((info, answer))
    }

    /// The rules one by one, refunding the admissions before a denial.
    async fn decide_rules(&self, key: String, cost: u64) -> Result<RateLimitInfo, Response> {
        let mut info = RateLimitInfo {
            key,
            cost,
            decisions: Vec::with_capacity(self.rules.len()),
            policy: None,
        };
        for rule in &self.rules {
            let decision = match self.limiter.check_cost(rule, &info.key, cost).await {
                Ok(decision) => decision,
                Err(err) => {
                    self.refund(&mut info).await;
                    return Err(refusal(rule, &err));
                }
            };
            let allowed = decision.allowed;
            info.decisions.push(RuleDecision {
                rule: rule.name().to_string(),
                decision,
                refunded: false,
            });
            if !allowed {
                self.refund(&mut info).await;
                break;
            }
        }
        Ok(info)
    }

    /// Gives back what the admitting rules took before the last one denied (or failed). Only
    /// Redis's admissions: fail-open and degraded ones took nothing from Redis. A refund Redis
    /// fails is counted and logged by the engine, and that allowance stays spent.
    async fn refund(&self, info: &mut RateLimitInfo) {
        for (rule, entry) in self.rules.iter().zip(info.decisions.iter_mut()) {
            // What a concurrency rule took is its lease: released, not refunded.
            if let Some(lease) = &entry.decision.lease {
                entry.refunded = matches!(lease.release().await, Ok(true));
                continue;
            }
            if entry.decision.allowed && !entry.decision.is_fallback() {
                entry.refunded = matches!(
                    self.limiter.refund(rule, &info.key, info.cost).await,
                    Ok(true)
                );
            }
        }
    }

    /// Charges the policy's limits (or every rule that admitted the request and was not
    /// refunded) `actual` in place of the cost they were charged. A settlement Redis fails is
    /// counted and logged by the engine, and the estimate stands.
    async fn settle(&self, info: &RateLimitInfo, actual: u64) {
        let settled = if let (Some(source), Some(decision)) = (&self.policy, &info.policy) {
            match source.watch.policy(&source.name) {
                Some(policy) => {
                    self.limiter
                        .settle_decision(decision, &policy, &info.key, info.cost, actual)
                        .await
                }
                None => Ok(false),
            }
        } else {
            let mut result = Ok(false);
            for (rule, entry) in self.rules.iter().zip(&info.decisions) {
                if entry.refunded {
                    continue;
                }
                let policy = ratelockr::Policy::from_rule(rule);
                result = self
                    .limiter
                    .settle_decision(&entry.decision, &policy, &info.key, info.cost, actual)
                    .await;
                if result.is_err() {
                    break;
                }
            }
            result
        };
        // Redis's failures the engine has logged; an impossible actual cost is the handler's.
        if let Err(err @ ratelockr::SettleError::Cost { .. }) = settled {
            tracing::warn!("key {:?}: {err}", info.key);
        }
    }

    /// The HTTP answer to send: the denying rule's; for an admission, a rule decided without
    /// Redis if any (it claims nothing), else the rule with the least remaining.
    fn answer(&self, info: &RateLimitInfo) -> HttpAnswer {
        let pick = info.decisions.iter().zip(&self.rules).min_by_key(|(d, _)| {
            let decision: &Decision = &d.decision;
            (
                decision.allowed,
                !decision.is_fallback(),
                decision.remaining,
            )
        });
        match pick {
            Some((d, rule)) => http_answer(rule, &d.decision),
            None => HttpAnswer {
                status: 200,
                headers: Vec::new(),
            },
        }
    }

    fn add_headers(
        &self,
        response: &mut Response,
        answer: &HttpAnswer,
        info: &RateLimitInfo,
        rate_limit_fields: bool,
    ) {
        let headers = response.headers_mut();
        if rate_limit_fields {
            for (name, value) in &answer.headers {
                let conventional = name.starts_with("X-RateLimit-");
                // Retry-After belongs to every 429, whatever else is switched off.
                if conventional && !self.x_ratelimit {
                    continue;
                }
                if let (Ok(name), Ok(value)) = (
                    HeaderName::try_from(*name),
                    HeaderValue::try_from(value.as_str()),
                ) {
                    headers.insert(name, value);
                }
            }
        }
        if self.fail_open_header && info.fail_open() {
            headers.insert(FAIL_OPEN_HEADER, HeaderValue::from_static("1"));
        }
    }
}

/// The answer to a request no rule can decide: a cost the rule never admits, or a key it
/// cannot store.
fn refusal(rule: &Rule, err: &RuleError) -> Response {
    let status = match err {
        RuleError::InvalidCost { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    (status, format!("rule {:?}: {err}\n", rule.name())).into_response()
}
