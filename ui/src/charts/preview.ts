/** The workload preview: the offered requests per bin, as the engine's schedule plans them. */
import uPlot from "uplot";
import { secondsAxis, yAxis } from "./axes";
import { OUTCOME_STYLE } from "../logic/runview";

export class PreviewChart {
  private plot: uPlot;

  constructor(private root: HTMLElement) {
    this.plot = new uPlot(
      {
        width: this.width(),
        height: 90,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] } },
        axes: [secondsAxis({ size: 24 }), yAxis()],
        series: [{}, { label: "offered", stroke: OUTCOME_STYLE.offered.color, fill: "#94a3b833", width: 1.5, points: { show: false }, paths: uPlot.paths.stepped!({ align: 1 }) }],
      },
      [[], []],
      root,
    );
    new ResizeObserver(() => setTimeout(() => this.plot.setSize({ width: this.width(), height: 90 }))).observe(root);
  }

  private width() {
    return Math.max(200, this.root.clientWidth);
  }

  show(offered: number[], binMs: number) {
    this.plot.setData([offered.map((_, i) => (i * binMs) / 1000), offered]);
  }
}
