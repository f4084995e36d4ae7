/**
 * A run's columnar records (the backend's `run_records`) turned into what the run chart and
 * the per-key view draw: series per time bin, the rule's envelope (a key's state: keystate.ts).
 *
 * Written against the fields it reads, not the generated type, so that it is tested with
 * small hand-made runs and keeps working when the payload grows.
 */

/** A decision's outcome code in `outcome[]`. */
export const OUTCOME = { allowed: 0, denied: 1, failOpen: 2 } as const;

/** A rule's parameters, whatever its algorithm (absent ones are undefined). */
export type RuleParams = {
  name?: string;
  algorithm: string;
  capacity?: number;
  refill_per_sec?: number;
  limit?: number;
  window_ms?: number;
  burst?: number;
};

/** A policy's limits and tiers, as far as the charts read them (the backend's Policy). */
export interface PolicyParams {
  name: string;
  mode: string;
  limits: (RuleParams & { name: string })[];
  overrides?: { tier: string; keys: string[]; limits: (RuleParams & { name: string })[] }[];
}

/** One rule a run decided with (the backend's RunTarget): for a policy, `rule` is its first limit. */
export interface TargetInfo {
  rule: RuleParams & { name: string };
  naive: boolean;
  policy?: PolicyParams;
}

export interface Records {
  started_at_ms: number;
  duration_ms: number;
  bin_ms: number;
  targets: TargetInfo[];
  keys: string[];
  t_ms: number[];
  target: number[];
  key: number[];
  outcome: number[];
  remaining: number[];
  retry_after_ms: number[];
  reset_after_ms: number[];
  latency_us: number[];
  attempt: number[];
  seq: number[];
  /** Runs of policies: the binding limit and the tier of each record (indexes into `labels`, 0 none), and whether a limit denied it. */
  binding?: number[];
  tier?: number[];
  would_deny?: number[];
  labels?: string[];
  /** Runs with holds: per target, per bin of `bin_ms`, the most one key had in flight at once (logic/inflight.ts). */
  in_flight?: number[][];
}

/** The limit that decided record `i` ("" for a rule's decision or a fail-open). */
export function bindingOf(rec: Records, i: number): string {
  return rec.labels?.[rec.binding?.[i] ?? 0] ?? "";
}

/** The tier record `i`'s key was held to ("" for the policy's own limits, and for rules). */
export function tierOf(rec: Records, i: number): string {
  return rec.labels?.[rec.tier?.[i] ?? 0] ?? "";
}

/** True when a policy's limit denied record `i` (a shadow policy admitted it all the same). */
export function wouldDeny(rec: Records, i: number): boolean {
  return (rec.would_deny?.[i] ?? 0) === 1;
}

/** Every limit name of a policy, its tiers' included, in order of first appearance. */
export function limitNames(policy: PolicyParams): string[] {
  const names: string[] = [];
  for (const l of [...policy.limits, ...(policy.overrides ?? []).flatMap((o) => o.limits)]) if (!names.includes(l.name)) names.push(l.name);
  return names;
}

/** A policy's limits for a tier ("" the policy's own). */
export function tierLimits(policy: PolicyParams, tier: string): (RuleParams & { name: string })[] {
  return (tier && policy.overrides?.find((o) => o.tier === tier)?.limits) || policy.limits;
}

/**
 * A policy target's denials per bin by the limit that decided them (shadow denials included:
 * what the limit would have denied), one series per limit name.
 */
export function deniedByLimit(rec: Records, target: number, binMs: number, bins: number): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (let i = 0; i < rec.t_ms.length; i++) {
    if (rec.target[i] !== target || !wouldDeny(rec, i)) continue;
    const b = Math.floor(rec.t_ms[i] / binMs);
    if (b < 0 || b >= bins) continue;
    const name = bindingOf(rec, i) || "?";
    let series = out.get(name);
    if (!series) out.set(name, (series = new Array(bins).fill(0)));
    series[b]++;
  }
  return out;
}

export interface BinnedSeries {
  binMs: number;
  /** Each bin's start, in seconds from the run's first request. */
  x: number[];
  offered: number[];
  allowed: number[];
  denied: number[];
  failOpen: number[];
}

/** How many bins of `binMs` cover `durationMs` (at least one, the last one possibly partial). */
export function binCount(durationMs: number, binMs: number): number {
  return Math.max(1, Math.ceil(Math.max(durationMs, 1) / binMs));
}

/** The indices of one target's records (and one key's, when given), in time order. */
export function recordIndices(rec: Records, target: number, key?: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < rec.t_ms.length; i++) {
    if (rec.target[i] === target && (key === undefined || rec.key[i] === key)) out.push(i);
  }
  // Records arrive in completion order; a key's story is told in sending order.
  return out.sort((a, b) => rec.t_ms[a] - rec.t_ms[b] || rec.seq[a] - rec.seq[b] || rec.attempt[a] - rec.attempt[b]);
}

/** The last record's time: the span the chart covers, even when `duration_ms` is shorter. */
export function spanMs(rec: Records): number {
  let last = rec.duration_ms;
  for (const t of rec.t_ms) if (t > last) last = t;
  return last;
}

/** Offered, allowed, denied and fail-open per bin for one target (and key). */
export function binTarget(rec: Records, target: number, binMs = rec.bin_ms, key?: number, bins?: number): BinnedSeries {
  const n = bins ?? binCount(spanMs(rec) + 1, binMs);
  const s: BinnedSeries = {
    binMs,
    x: Array.from({ length: n }, (_, i) => (i * binMs) / 1000),
    offered: new Array(n).fill(0),
    allowed: new Array(n).fill(0),
    denied: new Array(n).fill(0),
    failOpen: new Array(n).fill(0),
  };
  for (let i = 0; i < rec.t_ms.length; i++) {
    if (rec.target[i] !== target || (key !== undefined && rec.key[i] !== key)) continue;
    const b = Math.floor(rec.t_ms[i] / binMs);
    if (b < 0 || b >= n) continue;
    s.offered[b]++;
    if (rec.outcome[i] === OUTCOME.allowed) s.allowed[b]++;
    else if (rec.outcome[i] === OUTCOME.denied) s.denied[b]++;
    else s.failOpen[b]++;
  }
  return s;
}

/** Running totals: value i is the sum of bins 0..i. */
export function cumulative(values: number[]): number[] {
  let sum = 0;
  return values.map((v) => (sum += v));
}

/**
 * The most one key could be admitted over `spanMs` since its first request (the engine's
 * over-admission bound, `Algorithm::max_admitted` in src/rule.rs): a bucket `capacity + ⌊rate × span⌋`,
 * GCRA `burst + ⌊limit / period × span⌋`, the log and the fixed window
 * `limit × (⌊span / window⌋ + 1)`, the counter `limit × (⌊span / window⌋ + 2)` (a span touches
 * that many aligned windows).
 * Undefined for a rule whose parameters are unknown.
 */
export function envelopeForKey(rule: RuleParams, span: number): number | undefined {
  if (span < 0) return 0;
  if (rule.capacity !== undefined && rule.refill_per_sec !== undefined) {
    // Whole tokens, as the engine's envelope (crates/ratelockr-lab/src/export/style.rs) counts them.
    return rule.capacity + Math.floor((rule.refill_per_sec * span) / 1000);
  }
  if (rule.algorithm === "gcra" && rule.limit !== undefined && rule.window_ms !== undefined) {
    return (rule.burst ?? rule.limit) + Math.floor((rule.limit * span) / rule.window_ms);
  }
  if (rule.limit !== undefined && rule.window_ms !== undefined) {
    const touched = rule.algorithm === "sliding_window_counter" ? 2 : 1;
    return rule.limit * (Math.floor(span / rule.window_ms) + touched);
  }
  return undefined;
}

/**
 * The rule's envelope at each bin's end: the sum over the keys seen so far of what each could
 * be admitted since its own first request. Compared with the cumulative admissions, a correct
 * limiter stays under it; the naive one crosses it.
 */
export function envelope(rec: Records, target: number, binMs: number, bins: number, key?: number, limit?: string): (number | null)[] {
  const info = rec.targets[target];
  // A policy's limit: each key under that limit as its tier has it (a tier without a limit of
  // that name does not hold its keys to one).
  const paramsOf = (tier: string): RuleParams | undefined =>
    limit !== undefined && info?.policy ? tierLimits(info.policy, tier).find((l) => l.name === limit) : info?.rule;
  const first = new Map<number, { f: number; tier: string }>();
  for (let i = 0; i < rec.t_ms.length; i++) {
    if (rec.target[i] !== target || (key !== undefined && rec.key[i] !== key)) continue;
    const seen = first.get(rec.key[i]);
    if (seen === undefined || rec.t_ms[i] < seen.f) first.set(rec.key[i], { f: rec.t_ms[i], tier: tierOf(rec, i) });
  }
  // Many keys: round first requests down to their bin. An earlier start only raises the bound,
  // so the line stays an upper bound while the work stays bins × distinct starts.
  const round = first.size * bins > 2_000_000;
  const counted = new Map<string, { f: number; params: RuleParams; count: number }>();
  for (const { f, tier } of first.values()) {
    const params = paramsOf(tier);
    if (!params || envelopeForKey(params, 0) === undefined) continue;
    const start = round ? Math.floor(f / binMs) * binMs : f;
    const id = `${start}|${tier}`;
    const c = counted.get(id);
    if (c) c.count++;
    else counted.set(id, { f: start, params, count: 1 });
  }
  if (counted.size === 0) return new Array(bins).fill(null);
  const out: (number | null)[] = [];
  for (let b = 0; b < bins; b++) {
    const end = (b + 1) * binMs;
    let sum = 0;
    let any = false;
    for (const { f, params, count } of counted.values()) {
      if (f < end) {
        sum += count * (envelopeForKey(params, end - f) ?? 0);
        any = true;
      }
    }
    out.push(any ? sum : null);
  }
  return out;
}

/** What the limiter could hold at most, for the state plot's ceiling line. */
export function stateCeiling(rule: RuleParams): number | undefined {
  return rule.capacity ?? rule.burst ?? rule.limit;
}

/** The bin with the most admissions: where a boundary burst shows. */
export function peak(values: number[]): { index: number; value: number } {
  let index = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[index]) index = i;
  return { index, value: values[index] ?? 0 };
}
