/**
 * The policy editor's form as plain values, and the draft it sends: the policies file's JSON
 * form (`{name, key, mode, limits: [...], overrides: [{tier, keys, limits}]}`), which the
 * engine validates, naming the path of a field it refuses (`limits[1].capacity`).
 */
import type { Policy } from "../bindings/Policy";
import { algorithmLabel } from "./algorithms";
import { fmtDuration } from "./format";
import { describeRule, draftFromForm as limitDraft, formFromRule, type RuleForm } from "./rules";
import { DEFAULT_PERIOD, DEFAULT_ZONE } from "./calendar";
import { humanMs, parseField, type NumberSpec } from "./numbers";
import type { FieldError } from "./workload";

/** The policy's max delay: a length of time, 0 or more, named as the engine names it. */
const MAX_DELAY_SPEC: NumberSpec = { field: "max_delay_ms", label: "max delay", whole: true, min: 0, optional: true, duration: true };

/** A limit's row: its name, algorithm and parameters as typed. */
export type LimitForm = RuleForm;

export interface OverrideForm {
  tier: string;
  /** Exact keys or globs (* and ?), comma-separated as typed. */
  keys: string;
  limits: LimitForm[];
}

export interface PolicyForm {
  name: string;
  /** The key expression of replay, serve and the layer (ip, header:x-api-key, …); empty: none. */
  key: string;
  mode: "enforce" | "shadow";
  limits: LimitForm[];
  overrides: OverrideForm[];
  /** Delay instead of deny, as typed (`500ms`, `1s`); empty or 0: deny at once. */
  max_delay: string;
}

/** The most limits in a policy or a tier: what one script call decides (the engine's MAX_LIMITS). */
export const MAX_LIMITS = 8;

/**
 * A new limit row: a token bucket of 10 refilling 10 a second, named by its place. The other
 * kinds' fields start filled too, so switching the algorithm shows values, not blanks; a
 * concurrency limit's lease life is the engine's default, written out (a minute).
 */
export function newLimit(index: number): LimitForm {
  return { name: index === 0 ? "per-second" : `limit-${index + 1}`, algorithm: "token_bucket", capacity: "10", refill_per_sec: "10", limit: "100", window_ms: "1m", burst: "", lease_ms: "1m", period: DEFAULT_PERIOD, time_zone: DEFAULT_ZONE, week_start: "monday" };
}

export function newPolicy(): PolicyForm {
  return { name: "", key: "ip", mode: "enforce", limits: [newLimit(0)], overrides: [], max_delay: "" };
}

export function newOverride(limits: LimitForm[]): OverrideForm {
  return { tier: "premium", keys: "", limits: limits.map((l) => ({ ...l })) };
}

/** The editor's fields for a policy. */
export function formFromPolicy(p: Policy): PolicyForm {
  const limit = (l: Policy["limits"][number]) => ({ ...newLimit(0), burst: "", ...formFromRule(l) });
  return {
    name: p.name,
    key: p.key ?? "",
    mode: p.mode,
    limits: p.limits.map(limit),
    overrides: (p.overrides ?? []).map((o) => ({ tier: o.tier, keys: o.keys.join(", "), limits: o.limits.map(limit) })),
    max_delay: p.max_delay_ms ? humanMs(p.max_delay_ms) : "",
  };
}

/** A limit row's draft, with its errors under `<path>.<param>`. */
function limitsDraft(rows: LimitForm[], path: string, errors: FieldError[]): unknown[] {
  return rows.map((row, i) => {
    const parsed = limitDraft(row);
    if (!parsed.ok) {
      errors.push(...parsed.errors.map((e) => ({ ...e, field: `${path}[${i}].${e.field}` })));
      return {};
    }
    return parsed.draft;
  });
}

/**
 * The form to the engine's draft, or the fields whose text is no number (each under its path,
 * as the engine names fields). The rest — names, ranges, limits of a stack, tiers — the engine
 * judges and names.
 */
export function draftFromForm(form: PolicyForm): { ok: true; draft: Record<string, unknown> } | { ok: false; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const draft: Record<string, unknown> = {
    name: form.name.trim(),
    mode: form.mode,
    limits: limitsDraft(form.limits, "limits", errors),
  };
  if (form.key.trim()) draft.key = form.key.trim();
  const delay = parseField(form.max_delay, MAX_DELAY_SPEC);
  if (!delay.ok) errors.push({ field: delay.field, message: delay.message });
  // 0 is the engine's default (deny at once), which the file leaves out.
  else if (delay.value) draft.max_delay_ms = delay.value;
  if (form.overrides.length) {
    draft.overrides = form.overrides.map((o, i) => ({
      tier: o.tier.trim(),
      keys: o.keys
        .split(",")
        .map((k) => k.trim())
        .filter((k) => k !== ""),
      limits: limitsDraft(o.limits, `overrides[${i}].limits`, errors),
    }));
  }
  return errors.length ? { ok: false, errors } : { ok: true, draft };
}

/** Every limit of the form, its tiers' too: what decides whether it may delay (logic/calendar.ts). */
export function everyLimit(form: PolicyForm): LimitForm[] {
  return [...form.limits, ...form.overrides.flatMap((o) => o.limits)];
}

/** A policy in a line: "per-second: capacity 10, refills 10/s · daily: 2,000 per 1 d · shadow · 1 tier". */
export function describePolicy(p: Policy): string {
  const limits = p.limits.map((l) => `${l.name}: ${describeRule(l)}`);
  const tiers = p.overrides?.length ? [`${p.overrides.length} tier${p.overrides.length === 1 ? "" : "s"}`] : [];
  const delay = p.max_delay_ms ? [`delays up to ${fmtDuration(p.max_delay_ms)}`] : [];
  return [...limits, ...delay, ...(p.mode === "shadow" ? ["shadow"] : []), ...tiers].join(" · ");
}

/** The limits of a policy, one per line, for a list's title attribute. */
export function policyTitle(p: Policy): string {
  const line = (l: Policy["limits"][number]) => `${l.name} — ${algorithmLabel(l.algorithm)}, ${describeRule(l)}`;
  const tiers = (p.overrides ?? []).map((o) => `tier ${o.tier} (${o.keys.join(", ")}): ${o.limits.map(line).join("; ")}`);
  return [`mode ${p.mode}${p.key ? `, keyed by ${p.key}` : ""}`, ...p.limits.map(line), ...tiers].join("\n");
}

/** A name's problem before the engine is asked: empty, or taken by another policy. */
export function policyNameProblem(name: string, policies: { name: string }[], editing: string | null): string | null {
  const n = name.trim();
  if (n === "") return "name is required";
  if (n !== editing && policies.some((p) => p.name === n)) return `a policy named "${n}" already exists`;
  return null;
}
