/** UI logic without the DOM: form values to payloads, numbers to text. Unit-tested. */
import type { AlgorithmKind } from "./bindings/AlgorithmKind";
import type { Rule } from "./bindings/Rule";
import type { RuleDraft } from "./bindings/RuleDraft";
import type { SimPattern } from "./bindings/SimPattern";
import type { StatsPoint } from "./bindings/StatsPoint";

export const ALGORITHMS: { kind: AlgorithmKind; label: string; short: string }[] = [
  { kind: "token_bucket", label: "Token bucket", short: "TB" },
  { kind: "gcra", label: "GCRA", short: "GC" },
  { kind: "sliding_window_log", label: "Sliding window log", short: "SW" },
  { kind: "sliding_window_counter", label: "Sliding window counter", short: "SC" },
  { kind: "fixed_window", label: "Fixed window", short: "FW" },
];

export function algorithmLabel(kind: string): string {
  if (kind === "naive_get_set") return "Naive GET/SET";
  return ALGORITHMS.find((a) => a.kind === kind)?.label ?? kind;
}

/** A number input's value: undefined when empty, NaN kept so the engine names the field. */
export function parseNumber(text: string): number | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  return Number(t);
}

/** The editor's fields, as text, to a draft the engine validates. */
export function draftFromForm(form: {
  name: string;
  algorithm: AlgorithmKind;
  capacity: string;
  refill: string;
  limit: string;
  windowMs: string;
}): RuleDraft {
  const draft: RuleDraft = { name: form.name.trim(), algorithm: form.algorithm };
  if (form.algorithm === "token_bucket") {
    draft.capacity = parseNumber(form.capacity);
    draft.refill_per_sec = parseNumber(form.refill);
  } else {
    draft.limit = parseNumber(form.limit);
    draft.window_ms = parseNumber(form.windowMs);
  }
  // JSON has no NaN: send it as a string-free sentinel the engine refuses by name.
  for (const key of ["capacity", "refill_per_sec", "limit", "window_ms"] as const) {
    const v = draft[key];
    if (v !== undefined && !Number.isFinite(v)) draft[key] = -1;
  }
  return draft;
}

/** The editor's fields for an existing rule. */
export function formFromRule(rule: Rule) {
  const base = { name: rule.name, algorithm: rule.algorithm, capacity: "", refill: "", limit: "", windowMs: "" };
  if (rule.algorithm === "token_bucket") {
    return { ...base, capacity: String(rule.capacity), refill: String(rule.refill_per_sec) };
  }
  return { ...base, limit: String(rule.limit), windowMs: String(rule.window_ms) };
}

/** "10 per 1 s", "cap 20, +5/s": a rule in a few words. */
export function describeRule(rule: Rule): string {
  if (rule.algorithm === "token_bucket") {
    return `capacity ${fmtInt(rule.capacity)}, refills ${fmtRate(rule.refill_per_sec)}/s`;
  }
  if (rule.algorithm === "gcra") {
    return `${fmtInt(rule.limit)} per ${fmtDuration(rule.window_ms)}, bursts of ${fmtInt(rule.burst)}`;
  }
  return `${fmtInt(rule.limit)} per ${fmtDuration(rule.window_ms)}`;
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function fmtRate(n: number): string {
  return Number.isInteger(n) ? fmtInt(n) : n.toFixed(n < 1 ? 3 : 2).replace(/\.?0+$/, "");
}

export function fmtDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

export function fmtRtt(ms: number | undefined): string {
  if (ms === undefined) return "—";
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
}

export function fmtMicros(us: number): string {
  if (us < 1000) return `${us} µs`;
  return `${(us / 1000).toFixed(1)} ms`;
}

export function fmtPercent(part: number, whole: number): string {
  if (whole === 0) return "—";
  return `${((100 * part) / whole).toFixed(1)} %`;
}

/** Progress as a fraction 0..1, or undefined when the run's length is unknown. */
export function progressFraction(done: number, planned: number | undefined): number | undefined {
  if (planned === undefined || planned <= 0) return undefined;
  return Math.min(1, Math.max(0, done / planned));
}

/** Chart columns for uPlot: x (unix seconds), allowed, denied, fail-open. */
export function chartColumns(points: StatsPoint[]): [number[], number[], number[], number[]] {
  return [
    points.map((p) => p.second),
    points.map((p) => p.allowed),
    points.map((p) => p.denied),
    points.map((p) => p.fail_open),
  ];
}

/** Sums over a series, for the chart cards' headline numbers. */
export function totals(points: StatsPoint[]) {
  return points.reduce(
    (acc, p) => ({
      allowed: acc.allowed + p.allowed,
      denied: acc.denied + p.denied,
      fail_open: acc.fail_open + p.fail_open,
    }),
    { allowed: 0, denied: 0, fail_open: 0 },
  );
}

/** True when the last few seconds hold fail-open decisions: the banner's cue. */
export function recentFailOpen(points: StatsPoint[], lastSeconds = 5): boolean {
  return points.slice(-lastSeconds).some((p) => p.fail_open > 0);
}

/** The simulator form's pattern fields to the engine's pattern. */
export function patternFromForm(kind: string, rps: number): SimPattern {
  switch (kind) {
    case "poisson":
      return { kind: "poisson" };
    case "burst":
      return { kind: "burst", size: Math.max(1, Math.round(rps / 2)), every_ms: 500 };
    case "ramp":
      return { kind: "ramp", to_rps: rps * 3 };
    case "spike":
      return { kind: "spike", multiplier: 5, start_ms: 2000, length_ms: 1000 };
    default:
      return { kind: "constant" };
  }
}

/**
 * The simulator's whole-number fields, checked before the request is sent: a value that is not
 * a whole number could not even be decoded by the backend, so it is named here instead.
 */
export function checkWholeNumbers(fields: Record<string, number>): { field: string; message: string } | null {
  for (const [field, value] of Object.entries(fields)) {
    if (!Number.isFinite(value) || !Number.isInteger(value) || value < 0) {
      return { field, message: `${field.replace(/_/g, " ")} must be a whole number` };
    }
  }
  return null;
}
