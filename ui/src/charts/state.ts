/** One client key's limiter state over a run: remaining (or tokens) after each decision. */
import uPlot from "uplot";
import { secondsAxis, wheelZoomPlugin, yAxis } from "./axes";

export function stateChart(root: HTMLElement, x: number[], remaining: (number | null)[], ceiling: number | undefined, label: string): uPlot {
  const width = Math.max(240, root.clientWidth);
  const top = Math.max(ceiling ?? 0, ...remaining.map((v) => v ?? 0), 1);
  const series: uPlot.Series[] = [
    {},
    { label, stroke: "#4f46e5", fill: "#4f46e522", width: 1.5, points: { show: x.length < 200, size: 4 }, paths: uPlot.paths.stepped!({ align: 1 }) },
  ];
  const data: uPlot.AlignedData = [x, remaining];
  if (ceiling !== undefined) {
    series.push({ label: "most it can hold", stroke: "#0f172a", dash: [8, 4], width: 1, points: { show: false } });
    (data as (number | null)[][]).push(x.map(() => ceiling));
  }
  return new uPlot(
    {
      width,
      height: 160,
      legend: { show: false },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false }, y: { range: () => [0, Math.ceil(top * 1.1)] } },
      axes: [secondsAxis(), yAxis({ label, labelSize: 16, labelFont: "11px system-ui" })],
      series,
      plugins: [wheelZoomPlugin()],
    },
    data,
    root,
  );
}
