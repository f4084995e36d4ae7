/**
 * The algorithms the UI knows, in one list: label, colour and dash for every chart and badge.
 *
 * Written as data, not as switches, so that a new algorithm (GCRA, the sliding window counter)
 * is one entry here. Colours and dashes are the engine's (src/export/style.rs), so a chart on
 * screen and its exported file agree; GCRA and the counter have their own until the engine's
 * table names them (it draws them as "other").
 */
import { CHART_STYLE } from "../bindings/chartStyle";

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
}

/** The engine's look for an algorithm, where its table has one (not "other"). */
function engineLook(kind: string): Pick<AlgorithmInfo, "color" | "dash"> | undefined {
  const s = CHART_STYLE.algorithms[kind];
  return s ? { color: s.colour, dash: [...s.dash] } : undefined;
}

const OWN: AlgorithmInfo[] = [
  { kind: "token_bucket", label: "Token bucket", short: "TB", color: "#1f77b4", dash: [], params: ["capacity", "refill_per_sec"] },
  { kind: "sliding_window_log", label: "Sliding window log", short: "SL", color: "#2ca02c", dash: [10, 5], params: ["limit", "window_ms"] },
  { kind: "fixed_window", label: "Fixed window", short: "FW", color: "#ff7f0e", dash: [3, 4], params: ["limit", "window_ms"] },
  { kind: "gcra", label: "GCRA", short: "GC", color: "#8c564b", dash: [12, 3, 3, 3], params: ["limit", "window_ms", "burst"] },
  { kind: "sliding_window_counter", label: "Sliding window counter", short: "SC", color: "#17becf", dash: [6, 2], params: ["limit", "window_ms"] },
];

/** The naive GET/SET limiter of the race demo: not a rule kind, but it has lines too. */
export const ALGORITHMS: AlgorithmInfo[] = OWN.map((a) => ({ ...a, ...engineLook(a.kind) }));

export const NAIVE: AlgorithmInfo = {
  kind: "naive_get_set",
  label: "Naive GET/SET",
  short: "NV",
  color: "#d62728",
  dash: [16, 6],
  params: ["limit", "window_ms"],
  ...engineLook("naive_get_set"),
};

const OTHER: Omit<AlgorithmInfo, "kind" | "label"> = { short: "??", color: "#9467bd", dash: [6, 3], params: ["limit", "window_ms"] };

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
 * `compare-<kind with dashes>`, the naive ones end in `-naive`.
 */
export function algorithmFromName(rule: string): string | undefined {
  if (rule.endsWith("-naive")) return NAIVE.kind;
  const kinds = [...ALGORITHMS].sort((a, b) => b.kind.length - a.kind.length);
  return kinds.find((a) => rule.endsWith(a.kind.replace(/_/g, "-")))?.kind;
}
