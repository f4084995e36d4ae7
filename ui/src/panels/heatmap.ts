//! A sweep's heatmaps as tables: % of requests denied and % of keys denied for each
//! configuration, one row per value of the second parameter. The replay and the run card show
//! them alike.
import type { SweepPoint } from "../bindings/SweepPoint";
import { h } from "../dom";
import { heatColour, heatmap, type HeatMetric } from "../logic/sweep";

const pct = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} %`;

/** Both heatmaps of `points`, captioned `<subject>: <metric>`. */
export function heatmapTables(points: SweepPoint[], subject: string): HTMLElement[] {
  const metrics: [HeatMetric, string][] = [
    ["denied_pct", "% of requests denied"],
    ["keys_denied_pct", "% of keys denied"],
  ];
  return metrics.map(([metric, title]) => {
    const m = heatmap(points, metric);
    if (!m) return h("div");
    const head = h("tr", {}, h("th", { text: m.y ? `${m.y} ╲ ${m.x}` : m.x }), ...m.xs.map((x) => h("th", { text: String(x) })));
    const rows = m.ys.map((y, row) =>
      h(
        "tr",
        {},
        h("th", { text: m.y ? String(y) : "" }),
        ...m.xs.map((_, col) => {
          const v = m.cells[row][col];
          const td = h("td", { text: v === undefined ? "" : pct(v) });
          td.style.background = heatColour(v);
          return td;
        }),
      ),
    );
    return h("table", { className: "heatmap", data: { testid: `heatmap-${metric}` } }, h("caption", { text: `${subject}: ${title}` }), head, ...rows);
  });
}
