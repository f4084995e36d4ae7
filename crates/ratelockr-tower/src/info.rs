//! What the layer decided, as a request and response extension the service can read.

use ratelockr::{Decision, Lease};

/// One rule's decision for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleDecision {
    /// The rule's name.
    pub rule: String,
    /// What it decided.
    pub decision: Decision,
    /// True when a later rule denied the request and this rule's admission was given back.
    pub refunded: bool,
}

/// The layer's decisions for one request: in the request's extensions for the handler, and in
/// the response's for the layers outside this one. Present on every request the layer
/// decided (admitted or denied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitInfo {
    /// The client key the rules limited.
    pub key: String,
    /// What the request cost each rule.
    pub cost: u64,
    /// The rules' decisions in the order they were decided; after a denial, the rules behind
    /// it were not asked and are missing. Empty for a layer held to a policy.
    pub decisions: Vec<RuleDecision>,
    /// The policy's decision, for a layer held to a policy file
    /// ([`crate::RateLimitBuilder::from_file`]): every limit's verdict, the binding one, the
    /// tier, and in shadow mode whether it would have denied.
    pub policy: Option<Decision>,
}

impl RateLimitInfo {
    /// True when every rule admitted the request.
    pub fn allowed(&self) -> bool {
        match &self.policy {
            Some(p) => p.allowed,
            None => self.decisions.iter().all(|d| d.decision.allowed),
        }
    }

    /// True when some rule could not ask Redis and let the request through (fail-open, or an
    /// admission by degraded mode's local limiter): the request passed unmetered by Redis.
    pub fn fail_open(&self) -> bool {
        match &self.policy {
            Some(p) => p.fail_open(),
            None => self.decisions.iter().any(|d| d.decision.fail_open()),
        }
    }

    /// The leases the request holds in its concurrency limits (the policy's, or each rule's),
    /// held by the layer until the response body ends.
    pub fn leases(&self) -> impl Iterator<Item = &Lease> {
        let policy = self.policy.iter().filter_map(|p| p.lease.as_ref());
        let rules = self
            .decisions
            .iter()
            .filter_map(|d| d.decision.lease.as_ref());
        policy.chain(rules)
    }

    /// How long the layer waits before serving the request: a policy's `delay_ms` (its
    /// `max_delay_ms`, delay instead of deny: the allowance was taken as of the request's start
    /// time); 0 when it is served at once. A shadow policy's delay is never waited (shadow mode
    /// changes no response): its decision still says it.
    pub fn delay_ms(&self) -> u64 {
        self.policy
            .as_ref()
            .filter(|p| !p.shadow())
            .map_or(0, |p| p.delay_ms)
    }

    /// True when some rule was decided without Redis (fail-open, fail-closed or degraded).
    pub fn degraded(&self) -> bool {
        match &self.policy {
            // Redis not asked: fail-open, or fail-closed (denied without a binding limit).
            Some(p) => p.is_fallback(),
            None => self.decisions.iter().any(|d| d.decision.is_fallback()),
        }
    }
}

/// What a request really cost, set by the handler in its response's extensions when the cost
/// it was charged ([`crate::RateLimitBuilder::cost`]) was an estimate (tokens an LLM call will
/// use, say): the layer then settles it, charging every limit the difference before the
/// response goes out ([`ratelockr::Limiter::settle_decision`]): the unused part is given back,
/// a larger cost charged past the limit (the key then waits longer). Only what Redis charged
/// is settled: never a denial, a fail-open admission or a rule refunded after a later denial.
///
/// ```
/// # use axum::response::{IntoResponse, Response};
/// # use ratelockr_tower::ActualCost;
/// async fn complete() -> Response {
///     let mut response = "...".into_response();
///     response.extensions_mut().insert(ActualCost(640));
///     response
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActualCost(pub u64);
