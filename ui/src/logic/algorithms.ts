/**
 * The algorithms the UI knows, in one list: label, colour and dash for every chart and badge.
 *
 * Written as data, not as switches, so that a new algorithm (GCRA, the sliding window counter,
 * the concurrency limit) is one entry here. Colours and dashes come only from the engine's table (crates/ratelockr-lab/src/export/style.rs,
 * as CHART_STYLE), so a chart on screen and its exported file agree; a kind the table does not
 * know is drawn as its "other".
 */
import type { AlgorithmKind } from "../bindings/AlgorithmKind";
import { algorithmStyle } from "../bindings/chartStyle";
import { humanMs } from "./numbers";

export interface AlgorithmInfo {
  kind: string;
  label: string;
  /** Two letters, for tight places (legends of overlaid runs). */
  short: string;
  /** The engine's export palette. */
  color: string;
  /** Canvas dash pattern: distinct per algorithm, so equal lines do not hide each other. */
  dash: number[];
  /** The rule's parameters, in the editor's order (RuleDraft field names). */
  params: string[];
  /** Parameters picked as words, not typed as numbers (a calendar quota's period, zone and week
   * start), after `params` in the editor; a sweep varies only `params`. */
  choices?: string[];
  /** A parameter's label where this kind means something else by it (a concurrency limit's
   * `limit` counts requests in flight, not requests per window). */
  inputs?: Record<string, string>;
  /** One of the five rate algorithms that compare mode runs side by side; false for a limit on
   * requests in flight, which counts something else (the engine's AlgorithmKind::RATES). */
  rate: boolean;
}

/** The engine's look for an algorithm (its table's "other" for one it does not know). */
function engineLook(kind: string): Pick<AlgorithmInfo, "color" | "dash"> {
  const s = algorithmStyle(kind);
  return { color: s.colour, dash: [...s.dash] };
}

type Known = Omit<AlgorithmInfo, "color" | "dash">;

/**
 * Every kind the engine knows, in the editors' menu order. A record over AlgorithmKind: a kind
 * the engine gains and the UI does not describe fails tsc.
 */
const OWN: Record<AlgorithmKind, Omit<Known, "kind">> = {
  token_bucket: { label: "Token bucket", short: "TB", params: ["capacity", "refill_per_sec"], rate: true },
  gcra: { label: "GCRA", short: "GC", params: ["limit", "window_ms", "burst"], rate: true },
  sliding_window_log: { label: "Sliding window log", short: "SL", params: ["limit", "window_ms"], rate: true },
  sliding_window_counter: { label: "Sliding window counter", short: "SC", params: ["limit", "window_ms"], rate: true },
  fixed_window: { label: "Fixed window", short: "FW", params: ["limit", "window_ms"], rate: true },
  concurrency: { label: "Concurrency (in flight)", short: "CC", params: ["limit", "lease_ms"], inputs: { limit: "In flight at once" }, rate: false },
  // A quota per calendar period in a zone: not one of the rate algorithms compare runs side by side.
  calendar: { label: "Calendar quota", short: "CQ", params: ["limit"], choices: ["period", "time_zone", "week_start"], inputs: { limit: "Requests per period" }, rate: false },
};

/** Every limit kind (the five rate algorithms, then in flight and the calendar quota), each in the engine's colour and dash. */
export const ALGORITHMS: AlgorithmInfo[] = (Object.keys(OWN) as AlgorithmKind[]).map((kind) => ({ kind, ...OWN[kind], ...engineLook(kind) }));

/** What the rule form and the policy editor offer: every kind, in menu order. */
export const LIMIT_KINDS: readonly AlgorithmKind[] = ALGORITHMS.map((a) => a.kind as AlgorithmKind);

/** The five rate algorithms: what compare mode, its demos and its rule names run side by side. */
export const RATE_ALGORITHMS: AlgorithmInfo[] = ALGORITHMS.filter((a) => a.rate);

/** The naive GET/SET limiter of the race demo: not a rule kind, but it has lines too. */
export const NAIVE: AlgorithmInfo = {
  kind: "naive_get_set",
  label: "Naive GET/SET",
  short: "NV",
  params: ["limit", "window_ms"],
  rate: true,
  ...engineLook("naive_get_set"),
};

const OTHER: Omit<AlgorithmInfo, "kind" | "label"> = { short: "??", params: ["limit", "window_ms"], rate: false, ...engineLook("other") };

/** Everything known about an algorithm; an unknown kind still gets a label and a colour. */
export function algorithmInfo(kind: string): AlgorithmInfo {
  if (kind === NAIVE.kind || kind === "naive") return NAIVE;
  return ALGORITHMS.find((a) => a.kind === kind) ?? { ...OTHER, kind, label: kind.replace(/_/g, " ") };
}

export function algorithmLabel(kind: string): string {
  return algorithmInfo(kind).label;
}

/**
 * The algorithm a rule name implies when nothing else says: the compare run's rules are named
 * `compare-<kind with dashes>`, the naive ones end in `-naive`. Compare runs the rate
 * algorithms only, so a name ending in `-concurrency` implies nothing.
 */
export function algorithmFromName(rule: string): string | undefined {
  if (rule.endsWith("-naive")) return NAIVE.kind;
  const kinds = [...RATE_ALGORITHMS].sort((a, b) => b.kind.length - a.kind.length);
  return kinds.find((a) => rule.endsWith(a.kind.replace(/_/g, "-")))?.kind;
}

/**
 * What a policy run is made of, for its panel and table row: "GCRA, delays up to 2s",
 * "Token bucket + Calendar quota". Said where "policy" alone would leave a newcomer guessing.
 */
export function policyMakeup(policy: { limits: { algorithm: string }[]; max_delay_ms?: number }): string {
  const kinds = policy.limits.map((l) => algorithmLabel(l.algorithm)).join(" + ");
  const delay = policy.max_delay_ms ? `, delays up to ${humanMs(policy.max_delay_ms)}` : "";
  return `${kinds}${delay}`;
}
