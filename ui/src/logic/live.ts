/**
 * The live 30-second chart's data: what it draws, what its totals count, which rules it shows.
 * The chart itself (and its 750 ms throttle) is unchanged; these fix what it said.
 */
import type { RuleStats } from "../bindings/RuleStats";
import type { StatsPoint } from "../bindings/StatsPoint";

/**
 * Chart columns for uPlot: x (unix seconds), allowed, denied, fail-open, the current second
 * left out. The series ends with the second in progress (design.md, Telemetry); drawn as a
 * full one, every line dipped at "now".
 */
export function liveColumns(points: StatsPoint[]): [number[], number[], number[], number[]] {
  const done = points.slice(0, -1);
  return [done.map((p) => p.second), done.map((p) => p.allowed), done.map((p) => p.denied), done.map((p) => p.fail_open)];
}

/**
 * Sums over the whole window, the current second included: every decision for the rule in the
 * last 30 s, from every run and caller. The chart labels them so; a run's own totals are in
 * its summary.
 */
export function totals(points: StatsPoint[]) {
  return points.reduce(
    (acc, p) => ({ allowed: acc.allowed + p.allowed, denied: acc.denied + p.denied, fail_open: acc.fail_open + p.fail_open }),
    { allowed: 0, denied: 0, fail_open: 0 },
  );
}

/**
 * What a rule's panel shows, as a key: the lines' values, the totals and the error. Not the
 * seconds: the axis reads "-20 s … now", so a window that only moved on (an idle rule, all
 * zeros) looks the same and is not drawn again; an idle window then costs no frames.
 */
export function livePicture(s: RuleStats): string {
  const [, allowed, denied, failOpen] = liveColumns(s.points);
  return JSON.stringify([allowed, denied, failOpen, totals(s.points), s.error ?? null]);
}

export type ChartFocus = "run" | "rules";

/**
 * What the live chart follows after the user opens a rule in the editor: during a run it
 * stays on the run (the run's chart used to switch away when it ended); otherwise the rules.
 */
export function focusAfterRuleClick(running: boolean, current: ChartFocus): ChartFocus {
  return running ? current : "rules";
}

/** The most panels the live chart draws for a run (a sweep can have 100 configurations). */
export const MAX_RUN_PANELS = 24;
/** Between runs, the user's first few rules. */
export const MAX_IDLE_PANELS = 4;

/** The rules on the live chart: the current (or last) run's, else the user's first four. */
export function liveRules(s: { running: boolean; focus: ChartFocus; runRules: string[]; userRules: string[] }): string[] {
  return liveView(s).rules;
}

/**
 * The rules on the live chart and how many there were to show: never cut silently, the panel
 * says "24 of 100" when it does (`liveNote`).
 */
export function liveView(s: { running: boolean; focus: ChartFocus; runRules: string[]; userRules: string[] }): { rules: string[]; of: number } {
  if (s.runRules.length > 0 && (s.running || s.focus === "run")) return { rules: s.runRules.slice(0, MAX_RUN_PANELS), of: s.runRules.length };
  return { rules: s.userRules.slice(0, MAX_IDLE_PANELS), of: s.userRules.length };
}

/** "showing 24 of 100 rules: the run's summary has them all", or nothing when all are shown. */
export function liveNote(view: { rules: string[]; of: number }): string {
  if (view.rules.length >= view.of) return "";
  return `showing ${view.rules.length} of ${view.of} rules: the run's summary and the rules list have them all`;
}

/**
 * The width a y axis needs for its labels: the widest label plus tick and gap. A fixed 44 px
 * clipped "4,000" to ",000".
 */
export function axisWidth(labels: string[], measure: (text: string) => number, extra: number): number {
  let widest = 0;
  for (const l of labels) widest = Math.max(widest, measure(l));
  return Math.ceil(widest + extra);
}
