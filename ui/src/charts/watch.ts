/**
 * Watch's charts: one uPlot per policy of the watched file, allowed / denied / shadow-denied
 * stacked per completed second over the last 30 s (the top is every decision of the second), with the policy's mode in plain words, its limits as
 * a legend, and its totals over the window.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { WatchedPolicy } from "../bindings/WatchedPolicy";
import { h } from "../dom";
import { fmtInt } from "../logic/format";
import { describeLimit, modeChange, modeText, stackedColumns, totalsExtras, watchTotals } from "../logic/watch";
import { setData, setText } from "../paint";
import { recentSecondsAxis, yAxis } from "./axes";
import { gridColumns, gridPlotSize } from "./grid";
import { COLORS } from "./live";

/** Each outcome its own colour: the live chart's allowed and denied, and shadow-denied in blue. */
export const WATCH_COLORS = { allowed: COLORS.allowed, denied: COLORS.denied, shadowDenied: "#2563eb" };
/** Light tints of the same colours, opaque: a stacked band must not show the one under it. */
const WATCH_FILLS = { allowed: "#bbf7d0", denied: "#fecaca", shadowDenied: "#bfdbfe" };
const stepped = uPlot.paths.stepped?.({ align: 1 });

interface Panel {
  root: HTMLElement;
  plot: uPlot;
  mode: HTMLElement;
  limits: HTMLElement;
  /** "shadow until 14:03:27", once the file changed the policy's mode while watched. */
  change: HTMLElement;
  /** The mode last drawn. */
  lastMode?: WatchedPolicy["mode"];
  totals: HTMLElement;
  error: HTMLElement;
  /** The values last drawn (not the seconds), as JSON: an equal update is skipped. */
  drawn?: string;
}

export class WatchGrid {
  private panels = new Map<string, Panel>();
  private order: string[] = [];
  private observer: ResizeObserver;

  constructor(private container: HTMLElement) {
    // Resized just after the callback: resizing inside it re-triggers it in the same frame.
    this.observer = new ResizeObserver(() => setTimeout(() => this.resize()));
    this.observer.observe(container);
  }

  /**
   * One panel per policy, in file order, each updated; panels of policies gone are removed.
   * `modifiedMs`: when the file in force was written (a mode change dates from then).
   */
  update(policies: WatchedPolicy[], modifiedMs?: number) {
    const names = policies.map((p) => p.name);
    if (names.join("\n") !== this.order.join("\n")) this.layout(names);
    for (const p of policies) {
      const panel = this.panels.get(p.name);
      if (panel) this.fill(panel, p, modifiedMs ?? Date.now());
    }
  }

  /** Forgets every panel (another file: its policies are not the ones drawn so far). */
  clear() {
    this.layout([]);
  }

  private layout(names: string[]) {
    for (const [name, panel] of this.panels) {
      if (!names.includes(name)) {
        panel.plot.destroy();
        panel.root.remove();
        this.panels.delete(name);
      }
    }
    this.order = names;
    this.container.style.setProperty("--cols", String(gridColumns(names.length, 3)));
    for (const name of names) this.container.append((this.panels.get(name) ?? this.create(name)).root);
    this.resize();
  }

  private fill(panel: Panel, p: WatchedPolicy, modifiedMs: number) {
    const change = modeChange(panel.lastMode, p.mode, modifiedMs, Date.now());
    if (change) setText(panel.change, change);
    panel.lastMode = p.mode;
    const mode = modeText(p.mode);
    setText(panel.mode, mode.label);
    panel.mode.title = mode.hint;
    panel.mode.className = `mode-badge ${p.mode}`;
    setData(panel.root, "mode", p.mode);
    const tiers = p.tiers.length > 0 ? ` · tiers: ${p.tiers.join(", ")}` : "";
    const key = p.key ? `key ${p.key} · ` : "";
    const legend = `${key}${p.limits.map(describeLimit).join(" · ")}${tiers}`;
    setText(panel.limits, legend);
    panel.limits.title = legend;
    const columns = stackedColumns(p.points);
    // The values only: the axis reads "-20 s … now", so a window that only moved on (an idle
    // policy) is the same picture and costs no redraw.
    const drawn = JSON.stringify(columns.slice(1));
    if (drawn !== panel.drawn) {
      panel.drawn = drawn;
      panel.plot.setData(columns);
    }
    const t = watchTotals(p.points);
    const failOpen = t.fail_open > 0 ? `<span class="failopen"><b>${fmtInt(t.fail_open)}</b> fail-open here</span>` : "";
    const html =
      `<span class="allowed"><b>${fmtInt(t.allowed)}</b> allowed</span>` +
      `<span class="denied"><b>${fmtInt(t.denied)}</b> denied</span>` +
      `<span class="shadow"><b>${fmtInt(t.shadow_denied)}</b> shadow-denied</span>` +
      totalsExtras(t)
        .map((e) => `<span class="${e.kind}"><b>${fmtInt(e.count)}</b> ${e.text}</span>`)
        .join("") +
      failOpen;
    if (panel.totals.innerHTML !== html) panel.totals.innerHTML = html;
    setData(panel.root, "allowed", String(t.allowed));
    setData(panel.root, "denied", String(t.denied));
    setData(panel.root, "shadowDenied", String(t.shadow_denied));
    setText(panel.error, p.error ? `Redis: ${p.error}` : "");
  }

  private size(): { width: number; height: number } {
    return gridPlotSize(this.container, this.order.length, 3);
  }

  private resize() {
    const size = this.size();
    for (const panel of this.panels.values()) panel.plot.setSize(size);
  }

  private create(name: string): Panel {
    const mode = h("span", { className: "mode-badge" });
    const title = h("span", { className: "rule-name", text: name, title: name });
    const limits = h("div", { className: "watch-limits" });
    const change = h("span", { className: "watch-change" });
    const totals = h("div", {
      className: "chart-totals",
      title: "Every decision of this policy in the last 30 seconds, from every process on this Redis.",
    });
    const plotEl = h("div");
    const error = h("div", { className: "chart-error" });
    const root = h("div", { className: "chart-panel watch-panel", data: { policy: name } }, h("div", { className: "chart-head" }, title, change, mode), limits, totals, plotEl, error);
    const opts: uPlot.Options = {
      ...this.size(),
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(5, Math.ceil(max * 1.15))] } },
      axes: [recentSecondsAxis(), yAxis()],
      // Stacked (stackedColumns): the top band first, each later one painted over the lower
      // part, so the fills are opaque tints. Stepped: a second's count holds for that second.
      series: [
        {},
        { label: "shadow-denied", stroke: WATCH_COLORS.shadowDenied, fill: WATCH_FILLS.shadowDenied, width: 1.5, dash: [6, 3], paths: stepped, points: { show: false } },
        { label: "denied", stroke: WATCH_COLORS.denied, fill: WATCH_FILLS.denied, width: 1.5, paths: stepped, points: { show: false } },
        { label: "allowed", stroke: WATCH_COLORS.allowed, fill: WATCH_FILLS.allowed, width: 1.5, paths: stepped, points: { show: false } },
      ],
    };
    const now = Math.floor(Date.now() / 1000);
    const seconds = Array.from({ length: 29 }, (_, i) => now - 29 + i);
    const zeros = seconds.map(() => 0);
    const plot = new uPlot(opts, [seconds, zeros, zeros, zeros], plotEl);
    const panel = { root, plot, mode, limits, change, totals, error };
    this.panels.set(name, panel);
    return panel;
  }
}
