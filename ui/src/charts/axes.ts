/** Axis and zoom helpers shared by every uPlot in the dashboard. */
import type uPlot from "uplot";
import { axisWidth } from "../logic/live";
import { fmtAxis } from "../logic/format";

const AXIS = { stroke: "#64748b", grid: { stroke: "#e2e8f0", width: 1 }, ticks: { stroke: "#e2e8f0", size: 4 }, font: "11px system-ui", gap: 5 };

/** A y axis as wide as its widest label ("4,000" used to show as ",000"). */
export function yAxis(extra: Partial<uPlot.Axis> = {}): uPlot.Axis {
  return {
    ...AXIS,
    values: (_u, splits) => splits.map(fmtAxis),
    size: (u, values, axisIdx, cycleNum) => {
      const axis = u.axes[axisIdx] as uPlot.Axis & { _size?: number };
      if (cycleNum > 1 && axis._size) return axis._size;
      u.ctx.font = AXIS.font;
      return axisWidth(values ?? [], (t) => u.ctx.measureText(t).width / (window.devicePixelRatio || 1), 4 + AXIS.gap + 6);
    },
    ...extra,
  };
}

/** An x axis in seconds from the run's start ("0 s", "2.5 s"). */
export function secondsAxis(extra: Partial<uPlot.Axis> = {}): uPlot.Axis {
  return { ...AXIS, values: (_u, splits) => splits.map((s) => `${fmtAxis(s)} s`), ...extra };
}

/**
 * The x axis of a moving 30-second window, in unix seconds, labelled from its newest point:
 * "-20 s", "-10 s", "now" (the live chart, Watch).
 */
export function recentSecondsAxis(): uPlot.Axis {
  const newest = (u: uPlot) => u.data[0][u.data[0].length - 1] ?? 0;
  return {
    stroke: AXIS.stroke,
    grid: AXIS.grid,
    ticks: { stroke: AXIS.ticks.stroke },
    font: AXIS.font,
    splits: (u) => {
      const last = newest(u);
      return [last - 20, last - 10, last];
    },
    values: (u, splits) => {
      const last = newest(u);
      return splits.map((s) => (s === last ? "now" : `${Math.round(s - last)} s`));
    },
  };
}

/** Writes a plot's x range on its root (`data-x-range="min,max"`), where tests can read it. */
export function markXRange(u: uPlot) {
  const { min, max } = u.scales.x;
  if (min !== undefined && max !== undefined) u.root.dataset.xRange = `${min.toFixed(3)},${max.toFixed(3)}`;
}

/** The x range after zooming by `factor` around `at`, kept inside `bounds`. */
export function zoomRange(min: number, max: number, at: number, factor: number, bounds: [number, number]): [number, number] {
  const span = Math.min((max - min) * factor, bounds[1] - bounds[0]);
  let lo = at - (at - min) * (span / (max - min));
  lo = Math.max(bounds[0], Math.min(lo, bounds[1] - span));
  return [lo, lo + span];
}

/** The x range moved by `delta` (data units), kept inside `bounds`. */
export function panRange(min: number, max: number, delta: number, bounds: [number, number]): [number, number] {
  const span = max - min;
  const lo = Math.max(bounds[0], Math.min(min + delta, bounds[1] - span));
  return [lo, lo + span];
}

/**
 * Zoom and pan on the x axis: the mouse wheel zooms around the cursor, Shift + wheel pans,
 * a drag selects a range (uPlot's own), a double click shows everything again.
 */
export function wheelZoomPlugin(): uPlot.Plugin {
  return {
    hooks: {
      ready: (u) => {
        u.over.addEventListener(
          "wheel",
          (e) => {
            const xs = u.data[0];
            if (!xs || xs.length < 2) return;
            e.preventDefault();
            const bounds: [number, number] = [xs[0], xs[xs.length - 1]];
            const { min = bounds[0], max = bounds[1] } = u.scales.x;
            const next = e.shiftKey
              ? panRange(min, max, ((e.deltaY || e.deltaX) / u.over.clientWidth) * (max - min), bounds)
              : zoomRange(min, max, u.posToVal(e.offsetX, "x"), e.deltaY < 0 ? 0.8 : 1.25, bounds);
            u.setScale("x", { min: next[0], max: next[1] });
          },
          { passive: false },
        );
      },
    },
  };
}
