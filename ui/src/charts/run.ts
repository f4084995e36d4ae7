/**
 * The run chart: a run's own timeline from its first request to its last, which stays after
 * the run ends. One panel per target on one shared y-scale, or one overlaid chart; runs from
 * the history laid over; zoom and pan on x, kept in step across panels; a click picks the
 * decision under the cursor for the inspector. A chosen client key's limiter state can sit
 * under it, on the same x range and cursor.
 */
import uPlot from "uplot";
import { h } from "../dom";
import { algorithmLabel } from "../logic/algorithms";
import { peak } from "../logic/records";
import { isStepped, yLabel } from "../logic/exportview";
import type { InFlightPlot } from "../logic/inflight";
import type { KeyStateLine } from "../logic/keystate";
import type { Line, Mark, Measure, RunView } from "../logic/runview";
import { markXRange, secondsAxis, wheelZoomPlugin, yAxis } from "./axes";
import { stateChart } from "./state";

export interface Pick {
  run: string;
  target: number;
  /** The clicked bin, ms from the run's start. */
  fromMs: number;
  toMs: number;
}

/** A legend swatch that shows the line's dash, so equal lines are told apart here too. */
function swatch(line: { color: string; dash: number[] }): HTMLElement {
  const canvas = h("canvas", { className: "swatch", width: 28, height: 8 });
  const ctx = canvas.getContext("2d");
  if (ctx) {
    ctx.strokeStyle = line.color;
    ctx.lineWidth = 2;
    ctx.setLineDash(line.dash);
    ctx.beginPath();
    ctx.moveTo(0, 4);
    ctx.lineTo(28, 4);
    ctx.stroke();
  }
  return canvas;
}

/** The key-state panel's height: small, under the run chart. */
const KEY_HEIGHT = 130;

export class RunChart {
  private plots: uPlot[] = [];
  /** The chosen key's state, under the panels. */
  private keyPlot: uPlot | undefined;
  private keyEl: HTMLElement | undefined;
  private syncing = false;
  private observer: ResizeObserver;
  private view: RunView | undefined;
  /** A run with holds: the requests-in-flight panel drawn after the others. */
  private inFlight: InFlightPlot | undefined;

  constructor(
    private root: HTMLElement,
    private legend: HTMLElement,
    private onPick: (pick: Pick) => void,
  ) {
    // Resized just after the callback: resizing inside it re-triggers it in the same frame.
    this.observer = new ResizeObserver(() => setTimeout(() => this.resize()));
    this.observer.observe(root);
  }

  clear(message: string) {
    this.destroy();
    this.root.dataset.runs = "0";
    this.view = undefined;
    this.inFlight = undefined;
    this.legend.replaceChildren();
    this.root.replaceChildren(h("div", { className: "empty", text: message }));
  }

  private destroy() {
    for (const p of this.plots) p.destroy();
    this.plots = [];
  }

  /** Panels per row now. */
  columns(): number {
    const n = (this.view?.plots.length ?? 1) + (this.inFlight ? 1 : 0);
    if (n <= 1) return 1;
    // Side by side is the point of the view: down to ~200 px a panel, then fewer per row.
    // With the in-flight panel beside the five, a little narrower, so the six keep one row.
    const fit = Math.max(1, Math.floor(this.root.clientWidth / (this.inFlight ? 200 : 210)));
    return Math.min(n === 4 ? 2 : n, fit);
  }

  private size(): { width: number; height: number } {
    const cols = this.columns();
    const gap = 12;
    const width = Math.max(180, Math.floor((this.root.clientWidth - gap * (cols - 1)) / cols) - 22);
    // Low enough that the summary under the panels is in a 720 px window with them.
    return { width, height: cols === 1 ? 240 : 160 };
  }

  private resize() {
    if (!this.view) return;
    this.root.style.setProperty("--cols", String(this.columns()));
    const size = this.size();
    for (const p of this.plots) p.setSize(size);
    if (this.keyPlot && this.keyEl) this.keyPlot.setSize({ width: this.keyWidth(this.keyEl), height: KEY_HEIGHT });
  }

  /** The key panel's width: a single run panel's, so their x axes line up. */
  private keyWidth(el: HTMLElement): number {
    return Math.max(240, el.clientWidth);
  }

  /** The x range shown now (after a zoom or pan), if the panels have one. */
  xRange(): [number, number] | undefined {
    const { min, max } = this.plots[0]?.scales.x ?? {};
    return min === undefined || max === undefined ? undefined : [min, max];
  }

  /**
   * Draws `line` (a key's state) in `el`, on the panels' x range and cursor, so zooming or
   * panning either moves both; undefined clears it.
   */
  showKey(el: HTMLElement, line: KeyStateLine | undefined) {
    this.keyPlot?.destroy();
    this.keyPlot = undefined;
    this.keyEl = el;
    el.replaceChildren();
    if (!line) return;
    const first = this.plots[0];
    this.keyPlot = stateChart(el, line, {
      width: this.keyWidth(el),
      height: KEY_HEIGHT,
      sync: { key: "run-chart", onScale: (u) => this.syncX(u) },
      // uPlot keeps an axis's computed width as `_size`.
      yAxisSize: () => (first?.axes[1] as { _size?: number } | undefined)?._size,
    });
    const range = this.xRange();
    if (range) {
      this.syncing = true;
      this.keyPlot.setScale("x", { min: range[0], max: range[1] });
      this.syncing = false;
    }
  }

  show(view: RunView, measure: Measure, inFlight?: InFlightPlot) {
    this.destroy();
    this.view = view;
    this.inFlight = inFlight;
    this.root.style.setProperty("--cols", String(this.columns()));
    // How many runs are drawn, for the E2E test of overlays.
    this.root.dataset.runs = String(new Set(view.plots.flatMap((p) => p.lines.map((l) => l.run))).size);
    // The legend: every line once, with its dash.
    const seen = new Set<string>();
    this.legend.replaceChildren(
      ...view.plots.flatMap((p) => p.lines).filter((l) => {
        const k = `${l.label}|${l.color}|${l.dash.join(",")}`;
        if (seen.has(k) || (view.plots.length > 1 && l.kind !== "allowed" && seen.has(l.label))) return false;
        seen.add(k);
        seen.add(l.label);
        return true;
      }).map((l) => h("span", { className: "legend-item" }, swatch(l), l.label)),
      ...(inFlight?.lines ?? []).map((l) => h("span", { className: "legend-item in-flight-item" }, swatch(l), l.label)),
    );
    const size = this.size();
    const panels: HTMLElement[] = view.plots.map((plot) => {
      const panel = h("div", { className: "run-panel", data: { rule: plot.rule ?? "overlay", algorithm: plot.algorithm ?? "" } });
      const allowed = plot.lines.find((l) => l.kind === "allowed" && l.run === plot.lines[0]?.run);
      if (allowed && measure === "bin") panel.dataset.peakAllowed = String(peak(allowed.values.map((v) => v ?? 0)).value);
      const head = h("div", { className: "chart-head" }, h("span", { className: "rule-name", text: plot.title, title: plot.title }));
      // "compare-fixed-window" already says its algorithm; the badge would only crowd it out.
      if (plot.algorithm && !plot.title.endsWith(plot.algorithm.replace(/_/g, "-"))) head.append(h("span", { className: `badge ${plot.algorithm}`, text: algorithmLabel(plot.algorithm) }));
      const el = h("div");
      panel.append(head, el);
      if (plot.mark) {
        panel.dataset.peakMark = `${plot.mark.from.toFixed(3)},${plot.mark.to.toFixed(3)},${plot.mark.label}`;
        panel.dataset.peakKind = plot.mark.over ? "over" : plot.mark.note ? "promise" : "within";
      }
      const u = new uPlot(
        {
          ...size,
          legend: { show: false },
          cursor: { sync: { key: "run-chart" }, drag: { x: true, y: false } },
          scales: { x: { time: false }, y: { range: () => [0, Math.ceil(view.yMax * 1.08)] } },
          axes: [secondsAxis(), yAxis({ label: yLabel(measure, view.binMs), labelSize: 16, labelFont: "11px system-ui" })],
          series: [
            {},
            ...plot.lines.map((l) => ({
              label: l.label,
              stroke: l.color,
              dash: l.dash,
              width: l.width,
              points: { show: false },
              paths: isStepped(measure, l) ? uPlot.paths.stepped!({ align: 1 }) : undefined,
            })),
          ],
          plugins: [wheelZoomPlugin()],
          hooks: {
            // The band under the lines, its words over them.
            drawClear: plot.mark ? [(self) => drawBand(self, plot.mark!)] : [],
            draw: plot.mark ? [(self) => drawWords(self, plot.mark!)] : [],
            setScale: [this.onXScale],
          },
        },
        [view.x, ...plot.lines.map((l) => l.values)] as uPlot.AlignedData,
        el,
      );
      u.over.addEventListener("click", (e) => this.pick(u, plot.lines, plot.target, e));
      this.plots.push(u);
      return panel;
    });
    if (inFlight) panels.push(this.inFlightPanel(inFlight, size));
    this.root.replaceChildren(...panels);
  }

  /**
   * Requests in flight at once, each target's busiest key per bin, under a concurrency limit's
   * own limit: on its own y scale (a count, not a rate), on the panels' x range and cursor.
   */
  private inFlightPanel(plot: InFlightPlot, size: { width: number; height: number }): HTMLElement {
    const peaks = Object.entries(plot.peaks).map(([rule, n]) => `${rule}:${n}`).join(",");
    const panel = h("div", { className: "run-panel in-flight-panel", data: { rule: "in-flight", testid: "in-flight-chart", peaks } });
    const head = h("div", { className: "chart-head" }, h("span", { className: "rule-name", text: plot.title, title: `${plot.title}: from an admitted request's answer until its hold ends, counted per client key` }));
    const el = h("div");
    panel.append(head, el);
    const u = new uPlot(
      {
        ...size,
        legend: { show: false },
        cursor: { sync: { key: "run-chart" }, drag: { x: true, y: false } },
        scales: { x: { time: false }, y: { range: () => [0, Math.ceil(plot.yMax * 1.12) + 1] } },
        axes: [secondsAxis(), yAxis({ label: plot.yLabel, labelSize: 16, labelFont: "11px system-ui" })],
        series: [
          {},
          ...plot.lines.map((l) => ({
            label: l.label,
            stroke: l.color,
            dash: l.dash,
            width: l.width,
            points: { show: false },
            paths: l.stepped ? uPlot.paths.stepped!({ align: 1 }) : undefined,
          })),
        ],
        plugins: [wheelZoomPlugin()],
        hooks: {
          setScale: [this.onXScale],
        },
      },
      [plot.x, ...plot.lines.map((l) => l.values)] as uPlot.AlignedData,
      el,
    );
    this.plots.push(u);
    return panel;
  }

  /** Zooms every panel (and the key's state) to `[from, to]` seconds. */
  zoomTo(from: number, to: number) {
    const first = this.plots[0];
    if (first) first.setScale("x", { min: from, max: to });
  }

  /** A panel's x range changed (zoom, pan): marked on it, and every panel follows. */
  private readonly onXScale = (self: uPlot, key: string) => {
    if (key !== "x") return;
    markXRange(self);
    this.syncX(self);
  };

  /** Keeps every panel on the same x range as the one zoomed or panned. */
  private syncX(from: uPlot) {
    if (this.syncing) return;
    this.syncing = true;
    const { min, max } = from.scales.x;
    const all = this.keyPlot ? [...this.plots, this.keyPlot] : this.plots;
    for (const p of all) if (p !== from && min !== undefined && max !== undefined) p.setScale("x", { min, max });
    this.syncing = false;
  }

  private pick(u: uPlot, lines: Line[], target: number, e: MouseEvent) {
    // From the click's own position: the cursor may not have seen a move before a click.
    const idx = u.posToIdx(e.offsetX);
    if (idx === null || idx === undefined || idx < 0 || !this.view) return;
    // In the overlaid chart, the line nearest the pointer says which run and rule.
    let line = lines.find((l) => l.kind === "allowed" && (target < 0 || l.target === target)) ?? lines[0];
    if (target < 0) {
      const y = u.posToVal(e.offsetY, "y");
      let best = Infinity;
      for (const l of lines) {
        if (l.kind !== "allowed") continue;
        const d = Math.abs((l.values[idx] ?? 0) - y);
        if (d < best) {
          best = d;
          line = l;
        }
      }
    }
    if (!line) return;
    const fromMs = idx * this.view.binMs;
    this.onPick({ run: line.run, target: line.target, fromMs, toMs: fromMs + this.view.binMs });
  }
}

/** Where a mark's band lies on the plot, in canvas pixels; undefined when it is out of view. */
function bandOf(u: uPlot, mark: Mark): [number, number] | undefined {
  const left = Math.max(u.valToPos(mark.from, "x", true), u.bbox.left);
  const right = Math.min(u.valToPos(mark.to, "x", true), u.bbox.left + u.bbox.width);
  return right > left ? [left, right] : undefined;
}

/**
 * A rule's busiest window: shaded under the lines, its count above them. Over what the rule
 * promises, in the warning colour; a token bucket's or GCRA's burst + rate in its own calm
 * colour, with the words that say it is their promise.
 */
function colours(mark: Mark): [string, string] {
  return mark.over ? ["rgba(217, 119, 6, 0.14)", "#b45309"] : mark.note ? ["rgba(37, 99, 235, 0.10)", "#1d4ed8"] : ["rgba(100, 116, 139, 0.10)", "#475569"];
}

function drawBand(u: uPlot, mark: Mark) {
  const band = bandOf(u, mark);
  if (!band) return;
  u.ctx.save();
  u.ctx.fillStyle = colours(mark)[0];
  u.ctx.fillRect(band[0], u.bbox.top, band[1] - band[0], u.bbox.height);
  u.ctx.restore();
}

function drawWords(u: uPlot, mark: Mark) {
  const band = bandOf(u, mark);
  if (!band) return;
  const ctx = u.ctx;
  const ink = colours(mark)[1];
  ctx.save();
  ctx.textBaseline = "top";
  ctx.textAlign = "left";
  // Inside the plot, from the band's start: a band near the right edge keeps its words.
  const lines: [string, number][] = [[mark.label, 600]];
  if (mark.note) lines.push([mark.note, 400]);
  let y = u.bbox.top + 4 * devicePixelRatio;
  for (const [text, weight] of lines) {
    ctx.font = `${weight} ${Math.round(11 * devicePixelRatio)}px system-ui, sans-serif`;
    const width = ctx.measureText(text).width;
    const x = Math.max(u.bbox.left + 2, Math.min(band[0] + 4 * devicePixelRatio, u.bbox.left + u.bbox.width - width - 2));
    // On a pale ground: a line through the words must not strike them out.
    ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
    ctx.fillRect(x - 2, y - 1, width + 4, 13 * devicePixelRatio);
    ctx.fillStyle = ink;
    ctx.fillText(text, x, y);
    y += 14 * devicePixelRatio;
  }
  ctx.restore();
}
