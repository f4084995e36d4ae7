/**
 * The workload editor's form, as plain values: defaults, presets, and the request it sends.
 *
 * Every workload parameter the CLI has is here (`ratelockr simulate --help`): the pattern and
 * its own parameters, requests or a duration, rate, servers, keys with an optional Zipf
 * exponent, cost, seed, and the app's own retry storm and fresh-or-continued state.
 */
import type { Pattern } from "../bindings/Pattern";
import type { SimRequest } from "../bindings/SimRequest";
import { parseHold } from "./hold";
import { parseField, U32_MAX, type NumberSpec } from "./numbers";
import { axesOf } from "./sweep";

export const COMPARE = "__compare";

/** A policy in the target select is `policy:<name>` (rules are their bare names). */
export const POLICY_PREFIX = "policy:";

/** The policy a target names, or null for a rule or compare. */
export function policyOf(target: string): string | null {
  return target.startsWith(POLICY_PREFIX) ? target.slice(POLICY_PREFIX.length) : null;
}

export type PatternKind = "constant" | "poisson" | "burst" | "ramp" | "spike";

/** The form's values as the inputs hold them (text, so nothing typed is lost). */
export interface WorkloadForm {
  target: string;
  limit: string;
  window_ms: string;
  /** Compare only: a concurrency limit of this many in flight beside the token bucket, instead of the five; empty: the five. */
  in_flight: string;
  /** Compare only: GCRA denying beside GCRA delaying up to this long (`2s`), instead of the five; empty: the five. */
  max_delay: string;
  pattern: PatternKind;
  burst_size: string;
  burst_every_ms: string;
  to_rps: string;
  spike_multiplier: string;
  spike_start_ms: string;
  spike_length_ms: string;
  length: "requests" | "duration";
  requests: string;
  duration_s: string;
  rps: string;
  servers: string;
  /** Redis connections the servers share; empty: one each (separate app instances). */
  connections: string;
  keys: string;
  zipf: boolean;
  zipf_exponent: string;
  cost: string;
  seed: string;
  naive: boolean;
  retries: string;
  /** How long an admitted request is in flight (logic/hold.ts); empty: no hold. */
  hold_ms: string;
  continue_state: boolean;
  /** A sweep of the target rule: two (parameter, values) pairs; a pair without values is none. */
  sweep_x: string;
  sweep_xs: string;
  sweep_y: string;
  sweep_ys: string;
}

export const DEFAULT_FORM: WorkloadForm = {
  target: COMPARE,
  limit: "20",
  window_ms: "1000",
  in_flight: "",
  max_delay: "",
  pattern: "constant",
  burst_size: "20",
  burst_every_ms: "500",
  to_rps: "300",
  spike_multiplier: "5",
  spike_start_ms: "2000",
  spike_length_ms: "1000",
  length: "requests",
  requests: "1000",
  duration_s: "5",
  rps: "100",
  servers: "4",
  connections: "",
  keys: "1",
  zipf: false,
  zipf_exponent: "1.2",
  cost: "1",
  seed: "",
  naive: false,
  retries: "0",
  hold_ms: "",
  continue_state: false,
  sweep_x: "",
  sweep_xs: "",
  sweep_y: "",
  sweep_ys: "",
};

/** Which parameters each pattern uses (the others are hidden, not sent). */
export const PATTERN_PARAMS: Record<PatternKind, (keyof WorkloadForm)[]> = {
  constant: ["rps"],
  poisson: ["rps"],
  burst: ["burst_size", "burst_every_ms"],
  ramp: ["rps", "to_rps"],
  spike: ["rps", "spike_multiplier", "spike_start_ms", "spike_length_ms"],
};

export interface Preset {
  id: string;
  label: string;
  /** What it shows, in a sentence, under the preset buttons. */
  about: string;
  /** The fields it sets; the rest go back to their defaults. */
  form: Partial<WorkloadForm>;
  /** The algorithm whose busiest window the run chart opens on when the run ends. */
  focus?: string;
}

export const PRESETS: Preset[] = [
  {
    id: "boundary",
    label: "Boundary burst",
    about:
      "The README's compare demo, sharpened: 40 per 2 s at 10 req/s, then ×40 from 4 s for 2 s. The fixed window admits what was left of one window and a whole new one at once; the sliding log never passes 40 in any 2 s.",
    form: {
      target: COMPARE,
      limit: "40",
      window_ms: "2000",
      pattern: "spike",
      rps: "10",
      spike_multiplier: "40",
      spike_start_ms: "4000",
      spike_length_ms: "2000",
      length: "duration",
      duration_s: "16",
      servers: "4",
      keys: "1",
    },
    focus: "fixed_window",
  },
  {
    id: "race",
    label: "Race (naive)",
    about:
      "32 app instances as fast as they can against 100 per second: the atomic scripts hold the limit, the naive GET/SET limiter beside them over-admits.",
    form: { target: COMPARE, limit: "100", window_ms: "1000", pattern: "constant", rps: "0", length: "duration", duration_s: "3", servers: "32", keys: "1", naive: true },
  },
  {
    id: "hotkey",
    label: "Hot key (Zipf)",
    about: "200 clients, Zipf-skewed: client-0 sends most of the traffic and is the one denied. Open the per-key view.",
    form: { target: COMPARE, limit: "20", window_ms: "1000", pattern: "poisson", rps: "400", length: "requests", requests: "4000", servers: "4", keys: "200", zipf: true, zipf_exponent: "1.2" },
  },
  {
    id: "retry",
    label: "Retry storm",
    about: "Denied clients retry after Retry-After, up to 3 times: the offered load grows past what was planned.",
    form: { target: COMPARE, limit: "50", window_ms: "1000", pattern: "constant", rps: "200", length: "duration", duration_s: "6", servers: "4", keys: "20", retries: "3" },
  },
  {
    id: "slow",
    label: "Slow endpoint",
    about:
      "Slow requests (in flight a median 400 ms, 1 in 100 over 1.5 s) at 40 per second on one key. The token bucket of 40 per second admits them all and they pile up, about 20 in flight at once; the concurrency limit holds them at 10 and turns the rest away.",
    form: {
      target: COMPARE,
      limit: "40",
      window_ms: "1000",
      in_flight: "10",
      pattern: "constant",
      rps: "40",
      length: "duration",
      duration_s: "3",
      servers: "4",
      keys: "1",
      hold_ms: "lognormal:median=400ms,p99=1.5s",
    },
  },
  {
    id: "smooth",
    label: "Smooth a burst",
    about:
      "A spike on one key (20 requests a second, ×8 from 2 s for 1 s) against GCRA 50 per second, twice: one answers 429 to what it cannot admit now; the other delays each request up to 2 s instead (max_delay_ms), so the same spike is admitted, smoothed to 50 a second.",
    form: {
      target: COMPARE,
      limit: "50",
      window_ms: "1000",
      max_delay: "2s",
      pattern: "spike",
      rps: "20",
      spike_multiplier: "8",
      spike_start_ms: "2000",
      spike_length_ms: "1000",
      length: "duration",
      duration_s: "7",
      servers: "2",
      keys: "1",
    },
  },
];

export function applyPreset(preset: Preset, target?: string): WorkloadForm {
  return { ...DEFAULT_FORM, ...preset.form, target: preset.form.target ?? target ?? DEFAULT_FORM.target };
}

/** The request `sim_start` and `workload_preview` take. */
export type WorkloadRequest = SimRequest;

export interface FieldError {
  field: string;
  message: string;
}

const whole = (field: string, label: string, min: number, max?: number): NumberSpec => ({ field, label, whole: true, min, max });
const duration = (field: string, label: string, min: number): NumberSpec => ({ field, label, whole: true, min, duration: true });
const decimal = (field: string, label: string, min: number): NumberSpec => ({ field, label, whole: false, min });

const SPECS: Partial<Record<keyof WorkloadForm, NumberSpec>> = {
  limit: whole("limit", "limit", 1),
  window_ms: duration("window_ms", "window", 1),
  burst_size: whole("burst_size", "burst size", 1, U32_MAX),
  burst_every_ms: duration("burst_every_ms", "burst interval", 1),
  to_rps: decimal("to_rps", "target rate", 0),
  spike_multiplier: decimal("spike_multiplier", "spike multiplier", 0),
  spike_start_ms: duration("spike_start_ms", "spike start", 0),
  spike_length_ms: duration("spike_length_ms", "spike length", 0),
  requests: whole("requests", "requests", 1),
  duration_s: decimal("duration_s", "duration", 0),
  rps: decimal("rps", "rate", 0),
  servers: whole("servers", "servers", 1, U32_MAX),
  connections: { ...whole("connections", "connections", 1, U32_MAX), optional: true },
  keys: whole("keys", "keys", 1, U32_MAX),
  zipf_exponent: decimal("zipf_exponent", "Zipf exponent", 0),
  cost: whole("cost", "cost", 0),
  seed: { ...whole("seed", "seed", 0), optional: true },
  retries: whole("retries", "retries", 0, 10),
  in_flight: { ...whole("in_flight", "in-flight limit", 1), optional: true },
  max_delay: { ...duration("max_delay", "max delay", 1), optional: true },
};

/** The fields this form sends, given its choices. */
export function activeFields(form: WorkloadForm): (keyof WorkloadForm)[] {
  const fields: (keyof WorkloadForm)[] = [];
  if (form.target === COMPARE) fields.push("limit", "window_ms", "in_flight", "max_delay");
  fields.push(...PATTERN_PARAMS[form.pattern]);
  fields.push(form.length === "requests" ? "requests" : "duration_s", "servers", "connections", "keys", "cost", "seed", "retries");
  if (form.zipf) fields.push("zipf_exponent");
  return fields;
}

/**
 * The form to a request, or every field that is not a number the backend could receive (each
 * in its own slot). Ranges are the engine's to check: it names the field too.
 */
export function requestFromForm(form: WorkloadForm, name?: string): { ok: true; request: WorkloadRequest } | { ok: false; errors: FieldError[] } {
  const values: Partial<Record<keyof WorkloadForm, number>> = {};
  const errors: FieldError[] = [];
  for (const field of activeFields(form)) {
    const spec = SPECS[field];
    if (!spec) continue;
    const p = parseField(String(form[field]), spec);
    if (p.ok) values[field] = p.value;
    else errors.push({ field: p.field, message: p.message });
  }
  const hold = parseHold(form.hold_ms ?? "");
  if (!hold.ok) errors.push({ field: hold.field, message: hold.message });
  const policy = policyOf(form.target);
  const sweep = form.target === COMPARE || policy !== null ? { ok: true as const, axes: [] } : axesOf([[form.sweep_x, form.sweep_xs], [form.sweep_y, form.sweep_ys]]);
  if (!sweep.ok) errors.push({ field: "sweep", message: sweep.message });
  if (errors.length) return { ok: false, errors };
  const v = (f: keyof WorkloadForm) => values[f] as number;
  const pattern: Pattern =
    form.pattern === "burst"
      ? { kind: "burst", size: v("burst_size"), every_ms: v("burst_every_ms") }
      : form.pattern === "ramp"
        ? { kind: "ramp", to_rps: v("to_rps") }
        : form.pattern === "spike"
          ? { kind: "spike", multiplier: v("spike_multiplier"), start_ms: v("spike_start_ms"), length_ms: v("spike_length_ms") }
          : { kind: form.pattern };
  const request: WorkloadRequest = {
    target:
      form.target === COMPARE
        ? {
            kind: "compare",
            limit: v("limit"),
            window_ms: v("window_ms"),
            ...(values.in_flight !== undefined ? { in_flight: values.in_flight } : {}),
            ...(values.max_delay !== undefined ? { max_delay_ms: values.max_delay } : {}),
          }
        : policy !== null
          ? { kind: "policies", names: [policy] }
          : { kind: "rule", name: form.target },
    pattern,
    // Burst ignores the rate (its schedule is size every interval), but the engine takes 0
    // ("as fast as possible") with the constant pattern only: send a neutral 1.
    rps: form.pattern === "burst" ? 1 : v("rps"),
    servers: v("servers"),
    keys: v("keys"),
    zipf: form.zipf,
    cost: v("cost"),
    // The naive limiter races a rule's script; a policy runs on its own.
    naive: form.naive && policy === null,
    continue_state: form.continue_state,
  };
  if (form.length === "requests") request.requests = v("requests");
  else request.duration_ms = Math.round(v("duration_s") * 1000);
  if (form.zipf) request.zipf_exponent = v("zipf_exponent");
  if (values.seed !== undefined) request.seed = values.seed;
  if (values.connections !== undefined) request.connections = values.connections;
  if (v("retries") > 0) request.retry = { max_attempts: v("retries") };
  if (hold.ok && hold.value !== undefined) request.hold_ms = hold.value;
  if (sweep.ok && sweep.axes.length) request.sweep = sweep.axes;
  if (name && name.trim()) request.name = name.trim();
  return { ok: true, request };
}

/**
 * Where a backend error about `field` belongs in this form. The compare target builds its
 * rules from limit and window, so the engine's "capacity" or "refill" is the form's "limit"
 * or "window" (defect: it landed in the form-wide slot); `duration_ms` is typed in seconds.
 */
export function formSlot(field: string | undefined, form: Pick<WorkloadForm, "target">): string {
  if (!field) return "_form";
  if (form.target === COMPARE) {
    if (field === "capacity" || field === "limit" || field === "burst") return "limit";
    if (field === "refill_per_sec" || field === "window_ms") return "window_ms";
  }
  const map: Record<string, string> = {
    duration_ms: "duration_s",
    max_delay_ms: "max_delay",
    size: "burst_size",
    every_ms: "burst_every_ms",
    multiplier: "spike_multiplier",
    start_ms: "spike_start_ms",
    length_ms: "spike_length_ms",
    "retry.max_attempts": "retries",
    retry_attempts: "retries",
    pattern: "_form",
  };
  return map[field] ?? field;
}
