/**
 * Sweeps, as replays and simulations share them: the axes typed in a form (a parameter and
 * its values, one or two), the parameters each algorithm offers, and the points laid out as a
 * heatmap grid with its colours.
 */
import type { SweepAxis } from "../bindings/SweepAxis";
import type { SweepPoint } from "../bindings/SweepPoint";
import { algorithmInfo } from "./algorithms";

/** `"10, 20 40"` as numbers; an empty text is no axis. */
export function parseAxis(param: string, text: string): { ok: true; axis?: SweepAxis } | { ok: false; message: string } {
  const parts = text.split(/[\s,;]+/).filter((p) => p !== "");
  if (parts.length === 0) return { ok: true };
  const values: number[] = [];
  for (const p of parts) {
    const v = Number(p);
    if (!Number.isFinite(v) || v <= 0) return { ok: false, message: `${p} is not a positive number: write values like 10, 20, 40` };
    values.push(v);
  }
  return { ok: true, axis: { param, values } };
}

/** The parameters a sweep may vary, per algorithm (the engine's names: a rule's own parameters). */
export function sweepParams(algorithm: string): string[] {
  return [...algorithmInfo(algorithm).params];
}

export type HeatMetric = "denied_pct" | "keys_denied_pct";

export interface Heatmap {
  /** The axes' names: x always, y when the grid has two. */
  x: string;
  y?: string;
  xs: number[];
  ys: number[];
  /** cells[row][col]: the metric at (xs[col], ys[row]); undefined where the grid has none. */
  cells: (number | undefined)[][];
  max: number;
}

/** The sweep's points laid out on their grid (one row when it has one axis). */
export function heatmap(points: SweepPoint[], metric: HeatMetric): Heatmap | undefined {
  if (points.length === 0) return undefined;
  const names = Object.keys(points[0].params).sort();
  const [x, y] = names;
  const uniq = (name: string | undefined) =>
    name === undefined ? [0] : [...new Set(points.map((p) => p.params[name] ?? 0))].sort((a, b) => a - b);
  const xs = uniq(x);
  const ys = uniq(y);
  const cells = ys.map(() => xs.map((): number | undefined => undefined));
  let max = 0;
  for (const p of points) {
    const col = xs.indexOf(p.params[x] ?? 0);
    const row = y === undefined ? 0 : ys.indexOf(p.params[y] ?? 0);
    cells[row][col] = p[metric];
    max = Math.max(max, p[metric]);
  }
  return { x, y, xs, ys, cells, max };
}

/** A cell's colour: white at 0 % to red at 100 % (absolute, so two heatmaps compare). */
export function heatColour(pct: number | undefined): string {
  if (pct === undefined) return "transparent";
  const t = Math.min(1, Math.max(0, pct / 100));
  const g = Math.round(245 - 190 * Math.sqrt(t));
  return `rgb(${Math.round(250 - 30 * t)}, ${g}, ${g})`;
}


/**
 * The axes of a form's two (parameter, values) pairs: a pair without values is no axis; two
 * axes must vary different parameters.
 */
export function axesOf(pairs: [string, string][]): { ok: true; axes: SweepAxis[] } | { ok: false; message: string } {
  const axes: SweepAxis[] = [];
  for (const [param, text] of pairs) {
    const parsed = parseAxis(param, text);
    if (!parsed.ok) return parsed;
    if (parsed.axis) axes.push(parsed.axis);
  }
  if (axes.length === 2 && axes[0].param === axes[1].param) return { ok: false, message: "sweep two different parameters" };
  return { ok: true, axes };
}
