//! The decision inspector: one decision, and what an HTTP client would have received for it
//! (status, Retry-After, RateLimit-Policy, RateLimit, X-RateLimit-*), mapped by the engine's
//! one header function through the backend.
import { api, toAppError } from "../api";
import type { Rule } from "../bindings/Rule";
import { $, h } from "../dom";
import { algorithmLabel } from "../logic/algorithms";
import { fmtInt, fmtOffset } from "../logic/format";
import { bindingOf, OUTCOME, tierLimits, tierOf, wouldDeny, type Records } from "../logic/records";
import { describeRule } from "../logic/rules";

let seq = 0;

export async function inspect(rec: Records, i: number) {
  const mine = ++seq;
  const target = rec.targets[rec.target[i]];
  const outcome = rec.outcome[i];
  const decision = {
    allowed: outcome !== OUTCOME.denied,
    remaining: rec.remaining[i],
    retry_after_ms: rec.retry_after_ms[i],
    reset_after_ms: rec.reset_after_ms[i],
    fail_open: outcome === OUTCOME.failOpen,
  };
  const verdict = outcome === OUTCOME.allowed ? "allowed" : outcome === OUTCOME.denied ? "denied" : "fail-open";
  // A policy: the limit that decided, of the key's tier; the headers are that limit's.
  const policy = target.policy;
  const tier = tierOf(rec, i);
  const binding = bindingOf(rec, i);
  const limit = policy ? tierLimits(policy, tier).find((l) => l.name === binding) : undefined;
  const rule = limit ? { ...limit, name: `${policy?.name}.${limit.name}` } : target.rule;
  const facts: [string, string][] = policy
    ? [
        ["Policy", `${policy.name} (${policy.mode}), ${policy.limits.length} limit${policy.limits.length === 1 ? "" : "s"}`],
        ["Tier", tier || "the policy's own limits"],
        ["Decided by", limit ? `${limit.name} — ${algorithmLabel(limit.algorithm)}, ${describeRule(limit)}` : "— (Redis was not asked)"],
        ...(wouldDeny(rec, i) && outcome === OUTCOME.allowed ? [["Shadow", `admitted; ${binding} would have denied it`] as [string, string]] : []),
      ]
    : [["Rule", `${target.rule.name} — ${target.naive ? "naive GET/SET" : algorithmLabel(target.rule.algorithm)}, ${describeRule(target.rule)}`]];
  facts.push(
    ["Client key", rec.keys[rec.key[i]] ?? String(rec.key[i])],
    ["Sent at", `${fmtOffset(rec.t_ms[i])} into the run${rec.attempt[i] > 0 ? ` (retry ${rec.attempt[i]})` : ""}`],
    ["Decision", verdict],
    ["remaining", fmtInt(decision.remaining)],
    ["retry_after_ms", fmtInt(decision.retry_after_ms)],
    ["reset_after_ms", fmtInt(decision.reset_after_ms)],
  );
  const root = $("inspector");
  const http = h("div", { className: "http", data: { testid: "inspector-http" } }, h("div", { className: "hint", text: "Asking the engine for the headers…" }));
  root.replaceChildren(
    h(
      "div",
      { className: "inspector" },
      h("dl", { className: "kv wide", data: { verdict } }, ...facts.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", { className: k === "Decision" ? `verdict ${verdict}` : "", text: v })])),
      http,
    ),
  );
  try {
    const r = await api.decisionHeaders(rule as Rule, decision);
    if (mine !== seq) return;
    const reason = r.status === 429 ? "Too Many Requests" : "OK";
    http.replaceChildren(
      h("div", { className: "hint", text: "What an HTTP client would have received:" }),
      h(
        "pre",
        { className: "mono http-response", data: { status: String(r.status) } },
        `HTTP/1.1 ${r.status} ${reason}\n` + r.headers.map(([k, v]) => `${k}: ${v}`).join("\n"),
      ),
      ...(decision.fail_open ? [h("div", { className: "hint", text: "Failed open: Redis did not answer, so nothing is known about the limit and no RateLimit fields are sent." })] : []),
    );
  } catch (err) {
    if (mine === seq) http.replaceChildren(h("div", { className: "error", text: `No headers: ${toAppError(err).message}` }));
  }
  root.scrollIntoView?.({ block: "nearest", behavior: "smooth" });
}
