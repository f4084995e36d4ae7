/**
 * The run chart the user is looking at, as the view the engine draws into the exported file:
 * the same lines (measure, overlaid runs, envelope) in the same colours and dashes, the same
 * x range after a zoom, the chosen key's state. The file is this view, not a second copy of
 * the chart's logic.
 */
import type { ChartView } from "../bindings/ChartView";
import type { InFlightPlot } from "./inflight";
import type { KeyStateLine } from "./keystate";
import type { Line, Measure, RunView } from "./runview";

/** Steps for a count per bin; joined points for running totals and the envelope (as drawn). */
export function isStepped(measure: Measure, line: Pick<Line, "kind">): boolean {
  return measure === "bin" && line.kind !== "envelope";
}

/** The y axis's name for a measure. */
export function yLabel(measure: Measure, binMs: number): string {
  return measure === "bin" ? `per ${binMs} ms` : "so far";
}

export interface ExportOptions {
  title: string;
  subtitle: string;
  /** Panels per row on screen; the file holds at most three. */
  columns: number;
  /** The zoomed x range (seconds), when the chart is zoomed or panned. */
  xRange?: [number, number];
  key?: KeyStateLine;
  /** A run with holds: its requests-in-flight panel, drawn after the others as on screen. */
  inFlight?: InFlightPlot;
}

/** Whether `range` shows less than all of `x` (a zoom or pan). */
export function isZoomed(x: number[], range: [number, number] | undefined): range is [number, number] {
  if (!range || x.length < 2) return false;
  const eps = 1e-9;
  return range[0] > x[0] + eps || range[1] < x[x.length - 1] - eps;
}

export function exportView(view: RunView, measure: Measure, opts: ExportOptions): ChartView {
  const zoomed = isZoomed(view.x, opts.xRange);
  // A run's default name already holds its workload: said once.
  const sub = [opts.title.includes(opts.subtitle) ? "" : opts.subtitle, measure === "bin" ? `per ${view.binMs} ms bin` : "cumulative, under the rule's envelope"];
  if (zoomed) sub.push(`zoomed to ${opts.xRange![0].toFixed(2)}–${opts.xRange![1].toFixed(2)} s`);
  const out: ChartView = {
    title: opts.title,
    subtitle: sub.filter(Boolean).join(" · "),
    x: view.x,
    y_max: view.yMax,
    columns: Math.max(1, Math.min(3, opts.columns)),
    panels: view.plots.map((p) => ({
      title: p.title,
      y_label: yLabel(measure, view.binMs),
      lines: p.lines.map((l) => ({
        label: l.label,
        look: { colour: l.color, dash: [...l.dash], width: l.width },
        values: l.values,
        stepped: isStepped(measure, l),
      })),
    })),
  };
  if (opts.inFlight) addInFlight(out, view.binMs, opts.inFlight);
  if (zoomed) out.x_range = opts.xRange;
  if (opts.key) {
    out.key_state = { title: opts.key.title, label: opts.key.label, x: opts.key.x, values: opts.key.values };
    if (opts.key.ceiling !== undefined) out.key_state.ceiling = opts.key.ceiling;
  }
  return out;
}

/**
 * Adds the in-flight panel to an exported view: on the view's one x axis, carried on (in bins
 * of the same width) to the last hold's end, where the rate panels have nothing (gaps); on its
 * own y scale, as on screen (a count at once, not per bin).
 */
function addInFlight(out: ChartView, binMs: number, plot: InFlightPlot) {
  const step = binMs / 1000;
  const end = plot.x[plot.x.length - 1] ?? 0;
  const x = [...out.x];
  while (x.length > 0 && x[x.length - 1] + step <= end + 1e-9) x.push(x[x.length - 1] + step);
  // Copies: the lines' values are the screen's own arrays.
  for (const p of out.panels) for (const l of p.lines) l.values = [...l.values, ...Array<null>(Math.max(0, x.length - l.values.length)).fill(null)];
  // The panel's bins may be narrower than the view's (runs laid over): each point takes the
  // most of the bins it covers, so no peak is lost.
  const at = (values: (number | null)[], from: number, to: number) => {
    let most: number | null = null;
    for (let i = 0; i < plot.x.length; i++) {
      const t = plot.x[i];
      const inside = (t >= from - 1e-9 && t < to - 1e-9) || (i === plot.x.length - 1 && t <= from + 1e-9);
      if (inside && values[i] !== null && values[i] !== undefined) most = Math.max(most ?? 0, values[i]!);
    }
    return most;
  };
  out.x = x;
  out.panels.push({
    title: plot.title,
    y_label: plot.yLabel,
    y_max: Math.ceil(plot.yMax * 1.12) + 1,
    lines: plot.lines.map((l) => ({
      label: l.label,
      look: { colour: l.color, dash: [...l.dash], width: l.width },
      values: l.limit !== undefined ? x.map(() => l.limit!) : x.map((t) => at(l.values, t, t + step) ?? (t > end ? null : 0)),
      stepped: l.stepped,
    })),
  });
}
