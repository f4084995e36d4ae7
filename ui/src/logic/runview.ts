/**
 * What the run chart draws, as data: one plot per target with a shared y-scale, or one
 * overlaid plot; the runs picked from the history laid over the selected one.
 */
import type { LineStyle } from "../bindings/LineStyle";
import { CHART_STYLE } from "../bindings/chartStyle";
import { algorithmInfo, policyMakeup } from "./algorithms";
import { binCount, binTarget, cumulative, deniedByLimit, envelope, limitNames, spanMs, type Records } from "./records";
import { burstAndRate, peakExceeds, peakLabel, PROMISE_NOTE, type PeakSpan } from "./peak";

const LABELS = { offered: "offered", allowed: "allowed", denied: "denied", fail_open: "fail-open", envelope: "rule's envelope" } as const;

export type LineKind = keyof typeof LABELS;

/** The engine's outcome colours and dashes (CHART_STYLE, from crates/ratelockr-lab/src/export/style.rs), as the files have them. */
export const OUTCOME_STYLE = Object.fromEntries(
  (Object.keys(LABELS) as LineKind[]).map((k) => [k, { label: LABELS[k], ...must(CHART_STYLE.outcomes, k) }]),
) as Record<LineKind, { label: string; color: string; dash: number[] }>;

/** Colours that tell runs apart when the same algorithm is drawn more than once (the engine's). */
export const RUN_COLORS = [...CHART_STYLE.runs];

/** An overlaid run's admissions in the side-by-side panels: its run colour, this dash. */
const OVERLAY_DASH = [...CHART_STYLE.overlay_dash];

/** A look the engine's table must have: a missing one is a build error in waiting, not a grey line. */
function must(table: Record<string, LineStyle>, name: string): { color: string; dash: number[] } {
  const s = table[name];
  if (!s) throw new Error(`the chart style table has no ${name}`);
  return { color: s.colour, dash: [...s.dash] };
}

/** A key's state line and its ceiling, as the engine's table has them. */
export const KEY_STATE_STYLE = { state: must(CHART_STYLE.key_state, "state"), ceiling: must(CHART_STYLE.key_state, "ceiling") };


export interface Line {
  label: string;
  kind: LineKind;
  color: string;
  dash: number[];
  width: number;
  values: (number | null)[];
  run: string;
  target: number;
}

export interface Plot {
  title: string;
  /** The primary run's target this plot is about (overlay: -1). */
  target: number;
  rule?: string;
  algorithm?: string;
  lines: Line[];
  /** A span to mark on the plot: the rule's busiest window ([`markPeaks`]). */
  mark?: Mark;
}

/** A shaded span of a plot, in seconds on its x axis, with its words. */
export interface Mark {
  from: number;
  to: number;
  label: string;
  /** True when the span held more than the rule promises (logic/peak.ts): an over-admission. */
  over: boolean;
  /** Said under the words: what a token bucket's or GCRA's burst + rate is (a promise kept). */
  note?: string;
}

/** The busiest window of a rule, as the summary reports it. */
export interface PeakLike extends PeakSpan {
  /** GCRA's burst, when it is not its limit. */
  burst?: number;
}

/**
 * `hex` (`#rrggbb`) mixed with white, `share` of it white: a paler shade of the same colour,
 * still a plain `#rrggbb` the engine draws into the exported file as it is.
 */
export function paler(hex: string, share = 0.55): string {
  const m = /^#([0-9a-f]{6})$/i.exec(hex);
  if (!m) return hex;
  const n = parseInt(m[1], 16);
  const mix = (c: number) => Math.round(c + (255 - c) * share);
  const [r, g, b] = [mix((n >> 16) & 255), mix((n >> 8) & 255), mix(n & 255)];
  return `#${((r << 16) | (g << 8) | b).toString(16).padStart(6, "0")}`;
}

/**
 * Marks each side-by-side plot with its rule's busiest window (`peaks` by rule name): where
 * the boundary burst is, and its count against what the rule promises, without zooming: over
 * it is an over-admission; a token bucket's or GCRA's burst + rate is their promise, said so.
 */
export function markPeaks(view: RunView, peaks: Map<string, PeakLike>): RunView {
  const plots = view.plots.map((p) => {
    const peak = p.rule === undefined ? undefined : peaks.get(p.rule);
    if (!peak) return p;
    const from = peak.start_ms / 1000;
    const over = peakExceeds(peak, p.algorithm, peak.burst);
    const mark: Mark = { from, to: from + peak.window_ms / 1000, label: peakLabel(peak, p.algorithm, peak.burst), over };
    if (!over && burstAndRate(p.algorithm)) mark.note = PROMISE_NOTE;
    return { ...p, mark };
  });
  return { ...view, plots };
}

export interface RunView {
  binMs: number;
  /** Bin starts, seconds from each run's first request. */
  x: number[];
  plots: Plot[];
  /** One y maximum for every plot: the algorithms compared on the same scale. */
  yMax: number;
}

export interface RunData {
  id: string;
  name: string;
  records: Records;
}

export type Measure = "bin" | "cumulative";
export type Layout = "panels" | "overlay";

export interface ViewOptions {
  measure: Measure;
  layout: Layout;
  /** The envelope is a bound on admissions so far: drawn in the cumulative view. */
  envelope: boolean;
}

function targetLabel(rec: Records, t: number): string {
  const target = rec.targets[t];
  if (target.policy) return `policy ${target.policy.name}`;
  return target.naive ? algorithmInfo("naive_get_set").label : algorithmInfo(target.rule.algorithm).label;
}

/** The other run's target that matches this one: same algorithm and naivety, else same rule. */
export function matchTarget(from: Records, t: number, to: Records): number {
  const a = from.targets[t];
  const same = to.targets.findIndex((b) => b.rule.algorithm === a.rule.algorithm && b.naive === a.naive);
  return same >= 0 ? same : to.targets.findIndex((b) => b.rule.name === a.rule.name);
}

export function buildRunView(runs: RunData[], opts: ViewOptions): RunView {
  if (runs.length === 0) return { binMs: 100, x: [], plots: [], yMax: 1 };
  // One bin width for every run laid over: the coarsest (the longest run's).
  const binMs = Math.max(...runs.map((r) => r.records.bin_ms));
  const bins = Math.max(...runs.map((r) => binCount(spanMs(r.records) + 1, binMs)));
  const x = Array.from({ length: bins }, (_, i) => (i * binMs) / 1000);
  const shape = (v: number[]) => (opts.measure === "cumulative" ? cumulative(v) : v);
  const many = runs.length > 1;
  const primary = runs[0].records;

  const outcomeLines = (run: RunData, t: number, kinds: LineKind[]): Line[] => {
    const s = binTarget(run.records, t, binMs, undefined, bins);
    const values: Record<string, number[]> = { offered: s.offered, allowed: s.allowed, denied: s.denied, fail_open: s.failOpen };
    const lines: Line[] = kinds
      .filter((k) => k !== "envelope")
      .map((k) => ({ ...OUTCOME_STYLE[k], dash: [...OUTCOME_STYLE[k].dash], kind: k, width: k === "allowed" ? 2 : 1.5, values: shape(values[k]), run: run.id, target: t }));
    const policy = run.records.targets[t]?.policy;
    if (opts.envelope && opts.measure === "cumulative" && kinds.includes("envelope")) {
      // A policy: one envelope per limit, each key under its tier's limit of that name.
      const limits = policy ? limitNames(policy) : [undefined];
      limits.forEach((limit, i) => {
        const label = limit === undefined ? OUTCOME_STYLE.envelope.label : `envelope of ${limit}`;
        const dash = i === 0 ? [...OUTCOME_STYLE.envelope.dash] : [2, 3 + i];
        lines.push({ ...OUTCOME_STYLE.envelope, label, dash, kind: "envelope", width: 1.5, values: envelope(run.records, t, binMs, bins, undefined, limit), run: run.id, target: t });
      });
    }
    return lines;
  };

  /** A policy's denials per bin, one line per limit that decided them (shadow: would have). */
  const limitLines = (run: RunData, t: number): Line[] => {
    const policy = run.records.targets[t]?.policy;
    if (!policy) return [];
    const by = deniedByLimit(run.records, t, binMs, bins);
    const shadow = policy.mode === "shadow";
    return limitNames(policy)
      .filter((name) => by.has(name))
      .map((name, i) => ({
        ...OUTCOME_STYLE.denied,
        label: `${shadow ? "would deny" : "denied"} by ${name}`,
        color: RUN_COLORS[(i + 1) % RUN_COLORS.length],
        dash: shadow ? [4, 3] : [],
        kind: "denied" as LineKind,
        width: 1.5,
        values: shape(by.get(name) ?? []),
        run: run.id,
        target: t,
      }));
  };

  let plots: Plot[];
  if (opts.layout === "panels") {
    plots = primary.targets.map((target, t) => {
      // Cumulative: admissions against the envelope; offered and denied would dwarf both.
      const policy = target.policy;
      // A policy's denials are drawn per limit instead of as one line.
      const kinds: LineKind[] = opts.measure === "cumulative" ? ["allowed", "fail_open", "envelope"] : policy ? ["offered", "allowed", "fail_open"] : ["offered", "allowed", "denied", "fail_open"];
      const lines = outcomeLines(runs[0], t, kinds);
      if (policy && opts.measure === "bin") lines.push(...limitLines(runs[0], t));
      if (many) for (const l of lines) l.label = `${l.label} · ${runs[0].name}`;
      runs.slice(1).forEach((run, i) => {
        const m = matchTarget(primary, t, run.records);
        if (m < 0) return;
        const [allowed] = outcomeLines(run, m, ["allowed"]);
        lines.push({ ...allowed, label: `allowed · ${run.name}`, color: RUN_COLORS[(i + 1) % RUN_COLORS.length], dash: [...OVERLAY_DASH], width: 2 });
      });
      const title = target.policy ? `${target.rule.name} (${policyMakeup(target.policy)}${target.policy.mode === "shadow" ? ", shadow" : ""})` : target.rule.name;
      return { title, target: t, rule: target.rule.name, algorithm: target.naive ? "naive_get_set" : target.policy ? "policy" : target.rule.algorithm, lines };
    });
  } else {
    const lines: Line[] = [];
    const [offered] = opts.measure === "bin" ? outcomeLines(runs[0], 0, ["offered"]) : [];
    if (offered) lines.push({ ...offered, label: many ? `offered · ${runs[0].name}` : "offered" });
    runs.forEach((run, r) => {
      const of = many ? ` · ${run.name}` : "";
      let failOpen: number[] | undefined;
      run.records.targets.forEach((_target, t) => {
        const info = algorithmInfo(run.records.targets[t].naive ? "naive_get_set" : run.records.targets[t].rule.algorithm);
        const [allowed, denied, fo, env] = outcomeLines(run, t, ["allowed", "denied", "fail_open", "envelope"]);
        // One run: colour by algorithm. Several: colour by run, dash by algorithm, so three
        // token-bucket runs are three colours and two algorithms of one run two dashes.
        const color = many ? RUN_COLORS[r % RUN_COLORS.length] : info.color;
        lines.push({ ...allowed, label: `${targetLabel(run.records, t)} allowed${of}`, color, dash: [...info.dash], width: 2 });
        // Denials too (per bin; cumulative, they would dwarf the admissions): thin, in a paler
        // shade of the line's colour (the same colour was not told apart from the admissions,
        // here or in the legend), so a quiet stretch reads as denied, not as no traffic.
        if (opts.measure === "bin") lines.push({ ...denied, label: `${targetLabel(run.records, t)} denied${of}`, color: paler(color), dash: [...info.dash], width: 1 });
        failOpen = fo.values.map((v, i) => (v ?? 0) + (failOpen?.[i] ?? 0));
        if (env) lines.push({ ...env, label: `envelope · ${targetLabel(run.records, t)}${of}`, color, dash: [...OUTCOME_STYLE.envelope.dash], width: 1 });
      });
      // Decisions Redis did not make, every rule's together, whenever there were any: a run
      // that failed open must not look like traffic that stopped.
      if (failOpen?.some((v) => v > 0)) {
        lines.push({ ...OUTCOME_STYLE.fail_open, dash: [...OUTCOME_STYLE.fail_open.dash], kind: "fail_open", label: `fail-open, every rule${of}`, width: 2, values: failOpen, run: run.id, target: -1 });
      }
    });
    plots = [{ title: many ? "Runs overlaid" : "Algorithms overlaid", target: -1, lines }];
  }
  let yMax = 1;
  for (const p of plots) for (const l of p.lines) for (const v of l.values) if (v !== null && v > yMax) yMax = v;
  return { binMs, x, plots, yMax };
}
