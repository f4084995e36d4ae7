/**
 * One client key's limiter state over a run: remaining (or tokens) after each decision, under
 * the rule's ceiling. Drawn in the per-key view, and under the run chart (there in step with
 * its zoom and cursor).
 */
import uPlot from "uplot";
import type { KeyStateLine } from "../logic/keystate";
import { KEY_STATE_STYLE } from "../logic/runview";
import { markXRange, secondsAxis, wheelZoomPlugin, yAxis } from "./axes";

export interface StateChartOptions {
  width: number;
  height: number;
  /** Shares the run chart's cursor and calls back on x zoom/pan. */
  sync?: { key: string; onScale: (u: uPlot) => void };
  /** The y axis's width to match (the run chart's), so both x axes line up. */
  yAxisSize?: () => number | undefined;
}

export function stateChart(root: HTMLElement, line: KeyStateLine, opts: StateChartOptions): uPlot {
  const top = Math.max(line.ceiling ?? 0, ...line.values.map((v) => v ?? 0), 1);
  const { state: look, ceiling: roof } = KEY_STATE_STYLE;
  const series: uPlot.Series[] = [
    {},
    {
      label: line.label,
      stroke: look.color,
      fill: `${look.color}22`,
      dash: look.dash,
      width: 1.5,
      points: { show: line.decisions < 200, size: 4 },
      paths: uPlot.paths.stepped!({ align: 1 }),
    },
  ];
  const data: (number | null)[][] = [line.x, line.values];
  if (line.ceiling !== undefined) {
    series.push({ label: "most it can hold", stroke: roof.color, dash: roof.dash, width: 1, points: { show: false } });
    data.push(line.x.map(() => line.ceiling ?? null));
  }
  const y = yAxis({ label: line.label, labelSize: 16, labelFont: "11px system-ui" });
  const own = y.size as (u: uPlot, values: string[], axisIdx: number, cycleNum: number) => number;
  if (opts.yAxisSize) y.size = (u, values, axisIdx, cycleNum) => Math.max(opts.yAxisSize?.() ?? 0, own(u, values, axisIdx, cycleNum));
  return new uPlot(
    {
      width: opts.width,
      height: opts.height,
      legend: { show: false },
      cursor: { drag: { x: true, y: false }, ...(opts.sync ? { sync: { key: opts.sync.key } } : {}) },
      scales: { x: { time: false }, y: { range: () => [0, Math.ceil(top * 1.1)] } },
      axes: [secondsAxis(), y],
      series,
      plugins: [wheelZoomPlugin()],
      hooks: {
        setScale: [
          (u, key) => {
            if (key !== "x") return;
            markXRange(u);
            opts.sync?.onScale(u);
          },
        ],
      },
    },
    data as uPlot.AlignedData,
    root,
  );
}
