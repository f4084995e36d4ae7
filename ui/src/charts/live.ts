/**
 * The live chart: one uPlot per rule, side by side, allowed/denied/fail-open per completed
 * second over the last 30 s. Its totals count every decision for the rule in that window
 * (every run and caller), and say so.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { RuleStats } from "../bindings/RuleStats";
import { algorithmLabel } from "../logic/algorithms";
import { fmtInt } from "../logic/format";
import { liveColumns, livePicture, totals } from "../logic/live";
import { setData, setText } from "../paint";
import { recentSecondsAxis, yAxis } from "./axes";
import { gridColumns, gridPlotSize } from "./grid";

export const COLORS = {
  allowed: "#16a34a",
  denied: "#dc2626",
  failOpen: "#d97706",
};

interface Panel {
  root: HTMLElement;
  plot: uPlot;
  totals: HTMLElement;
  error: HTMLElement;
  /** The picture last drawn (`livePicture`): an equal update is skipped. */
  drawn?: string;
}

function fill(color: string): string {
  return `${color}22`;
}

export class ChartGrid {
  private panels = new Map<string, Panel>();
  private order: string[] = [];
  private observer: ResizeObserver;

  constructor(
    private container: HTMLElement,
    private algorithmOf: (rule: string) => string | undefined,
  ) {
    // Resized just after the callback: resizing inside it re-triggers it in the same frame.
    this.observer = new ResizeObserver(() => setTimeout(() => this.resize()));
    this.observer.observe(container);
  }

  /** Shows one panel per rule, in this order; keeps panels that stay. */
  setRules(rules: string[]) {
    if (rules.join("\n") === this.order.join("\n")) return;
    for (const [name, panel] of this.panels) {
      if (!rules.includes(name)) {
        panel.plot.destroy();
        panel.root.remove();
        this.panels.delete(name);
      }
    }
    this.container.querySelector(".empty")?.remove();
    if (rules.length === 0) {
      const empty = document.createElement("div");
      empty.className = "empty";
      empty.textContent = "Create a rule or run a simulation to see traffic here.";
      this.container.append(empty);
    }
    this.order = rules;
    this.container.style.setProperty("--cols", String(gridColumns(rules.length, 4)));
    for (const name of rules) {
      const panel = this.panels.get(name) ?? this.create(name);
      this.container.append(panel.root);
    }
    this.resize();
  }

  /** True when drawing `stats` would change a panel on screen. */
  changes(stats: RuleStats[]): boolean {
    return stats.some((s) => {
      const panel = this.panels.get(s.rule);
      return panel !== undefined && panel.drawn !== livePicture(s);
    });
  }

  update(stats: RuleStats[]) {
    for (const s of stats) {
      const panel = this.panels.get(s.rule);
      if (!panel) continue;
      // The same picture (a refetch within the same second, an idle rule) draws nothing.
      const picture = livePicture(s);
      if (picture === panel.drawn) continue;
      panel.drawn = picture;
      panel.plot.setData(liveColumns(s.points));
      const t = totals(s.points);
      const html =
        `<span class="allowed"><b>${fmtInt(t.allowed)}</b> allowed</span>` +
        `<span class="denied"><b>${fmtInt(t.denied)}</b> denied</span>` +
        `<span class="failopen"><b>${fmtInt(t.fail_open)}</b> fail-open</span>`;
      if (panel.totals.innerHTML !== html) panel.totals.innerHTML = html;
      setData(panel.root, "allowed", String(t.allowed));
      setData(panel.root, "denied", String(t.denied));
      setData(panel.root, "failOpen", String(t.fail_open));
      setText(panel.error, s.error ? `Redis: ${s.error}` : "");
    }
  }

  private size(): { width: number; height: number } {
    return gridPlotSize(this.container, this.order.length, 4);
  }

  private resize() {
    const size = this.size();
    for (const panel of this.panels.values()) panel.plot.setSize(size);
  }

  private create(name: string): Panel {
    const root = document.createElement("div");
    root.className = "chart-panel";
    root.dataset.rule = name;
    const head = document.createElement("div");
    head.className = "chart-head";
    const title = document.createElement("span");
    title.className = "rule-name";
    title.textContent = name;
    title.title = name;
    head.append(title);
    const algorithm = this.algorithmOf(name);
    // "compare-token-bucket" already says its algorithm; the badge would only crowd it out.
    const named = algorithm && name.endsWith(algorithm.replace(/_/g, "-"));
    if (algorithm && !named) {
      const badge = document.createElement("span");
      badge.className = `badge ${algorithm}`;
      badge.textContent = algorithmLabel(algorithm);
      head.append(badge);
    }
    const totalsEl = document.createElement("div");
    totalsEl.className = "chart-totals";
    totalsEl.title = "Every decision for this rule in the last 30 seconds, from every run and caller. A run's own totals are in its summary.";
    const plotEl = document.createElement("div");
    const error = document.createElement("div");
    error.className = "chart-error";
    root.append(head, totalsEl, plotEl, error);
    const opts: uPlot.Options = {
      ...this.size(),
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(5, Math.ceil(max * 1.15))] } },
      axes: [
        // Seconds before the newest point: "-20 s", "-10 s", "now".
        recentSecondsAxis(),
        yAxis(),
      ],
      series: [
        {},
        { label: "allowed", stroke: COLORS.allowed, fill: fill(COLORS.allowed), width: 2, points: { show: false } },
        { label: "denied", stroke: COLORS.denied, fill: fill(COLORS.denied), width: 2, points: { show: false } },
        { label: "fail-open", stroke: COLORS.failOpen, width: 2, dash: [6, 4], points: { show: false } },
      ],
    };
    const now = Math.floor(Date.now() / 1000);
    const seconds = Array.from({ length: 29 }, (_, i) => now - 29 + i);
    const zeros = seconds.map(() => 0);
    const plot = new uPlot(opts, [seconds, zeros, zeros, zeros], plotEl);
    const panel = { root, plot, totals: totalsEl, error };
    this.panels.set(name, panel);
    return panel;
  }
}
