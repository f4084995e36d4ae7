/** The rule editor's logic: form text to a draft, problems with a name, a rule in a few words. */
import type { Rule } from "../bindings/Rule";
import type { RuleDraft } from "../bindings/RuleDraft";
import { algorithmInfo } from "./algorithms";
import { DEFAULT_PERIOD, DEFAULT_ZONE, periodWords } from "./calendar";
import { fmtDuration, fmtInt, fmtRate } from "./format";
import { humanMs, parseField, type NumberSpec } from "./numbers";
import { PARAMETER_RANGES } from "../bindings/ruleRanges";
import type { FieldError } from "./workload";

/** A concurrency limit's lease life when none is given (the engine's DEFAULT_LEASE_MS). */
export const DEFAULT_LEASE_MS = 60_000;

/** Every rule parameter's input: its label, what text it takes, and what an empty one means. */
export const PARAM_SPECS: Record<string, NumberSpec & { input: string; unit?: string; placeholder?: string; title?: string }> = {
  capacity: { field: "capacity", label: "capacity", whole: true, ...PARAMETER_RANGES.capacity, engineRange: true, input: "Capacity" },
  refill_per_sec: { field: "refill_per_sec", label: "refill rate", whole: false, ...PARAMETER_RANGES.refill_per_sec, engineRange: true, input: "Refill / s" },
  limit: { field: "limit", label: "limit", whole: true, ...PARAMETER_RANGES.limit, engineRange: true, input: "Limit" },
  window_ms: { field: "window_ms", label: "window", whole: true, ...PARAMETER_RANGES.window_ms, engineRange: true, duration: true, input: "Window" },
  burst: { field: "burst", label: "burst", whole: true, ...PARAMETER_RANGES.burst, engineRange: true, input: "Burst" },
  // Left empty, the engine's default (ratelockr::rule::DEFAULT_LEASE_MS, a minute).
  lease_ms: {
    field: "lease_ms",
    label: "lease life",
    whole: true,
    ...PARAMETER_RANGES.lease_ms,
    engineRange: true,
    duration: true,
    input: "Lease life",
    placeholder: "default 1m",
    title: "How long a lease lives when its request never releases it (a caller that died): 60s, 1m, 500ms. Empty: a minute.",
  },
};

/** A parameter's label in `algorithm`'s editor ("In flight at once" for a concurrency limit's limit). */
export function paramLabel(algorithm: string, param: string): string {
  return algorithmInfo(algorithm).inputs?.[param] ?? PARAM_SPECS[param]?.input ?? param;
}

export type RuleForm = { name: string; algorithm: string } & Record<string, string>;

/**
 * The editor's fields to a draft for the engine, or the fields whose text is not a number at
 * all, or outside the engine's range (named here, with the text as typed, and the range the
 * engine's own table gives). Only the chosen algorithm's parameters are sent; the engine checks
 * them again, and what only it can judge (GCRA's burst × window…).
 */
export function draftFromForm(form: RuleForm): { ok: true; draft: RuleDraft } | { ok: false; errors: FieldError[] } {
  const draft: Record<string, unknown> = { name: form.name.trim(), algorithm: form.algorithm };
  const errors: FieldError[] = [];
  for (const param of algorithmInfo(form.algorithm).params) {
    const spec = PARAM_SPECS[param];
    if (!spec) continue;
    const p = parseField(form[param] ?? "", { ...spec, optional: true });
    if (p.ok) {
      if (p.value !== undefined) draft[param] = p.value;
    } else errors.push({ field: p.field, message: p.message });
  }
  for (const param of algorithmInfo(form.algorithm).choices ?? []) {
    const word = (form[param] ?? "").trim();
    // A week start means nothing beside another period: left out, as the engine writes it.
    if (word === "" || (param === "week_start" && (form.period ?? "").trim() !== "week")) continue;
    draft[param] = word;
  }
  return errors.length ? { ok: false, errors } : { ok: true, draft: draft as RuleDraft };
}

/** The editor's fields for an existing rule (windows as a person writes them: `1d`, `500ms`). */
export function formFromRule(rule: Rule): RuleForm {
  const form: RuleForm = { name: rule.name, algorithm: rule.algorithm };
  const params = rule as unknown as Record<string, unknown>;
  for (const param of algorithmInfo(rule.algorithm).params) {
    const value = params[param];
    if (value === undefined) continue;
    form[param] = PARAM_SPECS[param]?.duration && typeof value === "number" ? humanMs(value) : String(value);
  }
  for (const param of algorithmInfo(rule.algorithm).choices ?? []) {
    const value = params[param];
    if (typeof value === "string") form[param] = value;
  }
  return form;
}

/**
 * What is wrong with a name before the engine is asked: empty, or taken by another rule.
 * Shown while typing (they used to surface only on Save). `editing` is the rule being edited,
 * whose own name is not a clash.
 */
export function nameProblem(name: string, rules: { name: string }[], editing: string | null): string | null {
  const n = name.trim();
  if (n === "") return "name is required";
  if (n !== editing && rules.some((r) => r.name === n)) return `a rule named “${n}” already exists`;
  return null;
}

/**
 * "10 per 1 s", "capacity 20, refills 5/s", "10 in flight, lease 1 min", "2,000 per day,
 * Europe/Berlin": a rule in a few words.
 */
export function describeRule(rule: { algorithm: string } & Record<string, unknown>): string {
  const p = rule as Record<string, number | undefined>;
  if (rule.algorithm === "concurrency" && p.limit !== undefined) {
    return `${fmtInt(p.limit)} in flight, lease ${fmtDuration(p.lease_ms ?? DEFAULT_LEASE_MS)}`;
  }
  if (rule.algorithm === "calendar" && p.limit !== undefined) {
    const w = rule as Record<string, unknown>;
    const from = w.period === "week" && w.week_start === "sunday" ? " from Sunday" : "";
    return `${fmtInt(p.limit)} ${periodWords(String(w.period ?? DEFAULT_PERIOD))}${from}, ${String(w.time_zone ?? DEFAULT_ZONE)}`;
  }
  if (p.capacity !== undefined && p.refill_per_sec !== undefined) {
    return `capacity ${fmtInt(p.capacity)}, refills ${fmtRate(p.refill_per_sec)}/s`;
  }
  if (p.limit !== undefined && p.window_ms !== undefined) {
    const burst = p.burst !== undefined && p.burst !== p.limit ? `, burst ${fmtInt(p.burst)}` : "";
    return `${fmtInt(p.limit)} per ${fmtDuration(p.window_ms)}${burst}`;
  }
  return algorithmInfo(rule.algorithm).label;
}
