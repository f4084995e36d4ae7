/**
 * The run chart's panel of requests in flight (runs with holds): per target, per bin, the
 * most one key had in flight at once, as the engine counted it (`RunRecords.in_flight`,
 * crates/ratelockr-lab/src/sim/in_flight.rs), with a concurrency limit's own limit beside it.
 */
import { algorithmInfo } from "./algorithms";
import type { Records } from "./records";

export interface InFlightLine {
  label: string;
  color: string;
  dash: number[];
  width: number;
  values: (number | null)[];
  /** Drawn as a step per bin (counts), or straight (a limit). */
  stepped: boolean;
  /** The target it is about; a limit line's `limit` is set. */
  target: number;
  limit?: number;
}

export interface InFlightPlot {
  title: string;
  yLabel: string;
  /** Bin starts in seconds, and one at the end so the last step has its width. */
  x: number[];
  lines: InFlightLine[];
  /** Each target's most at once over the run, by rule name (for tests and the title). */
  peaks: Record<string, number>;
  yMax: number;
}

/** The in-flight panel of a run, or undefined when it had no holds. */
export function inFlightPlot(rec: Pick<Records, "bin_ms" | "targets" | "in_flight">): InFlightPlot | undefined {
  const series = rec.in_flight ?? [];
  if (series.length === 0 || series.every((s) => s.length === 0)) return undefined;
  const bins = Math.max(...series.map((s) => s.length));
  const x = Array.from({ length: bins + 1 }, (_, i) => (i * rec.bin_ms) / 1000);
  const lines: InFlightLine[] = [];
  const peaks: Record<string, number> = {};
  let yMax = 1;
  series.forEach((most, t) => {
    const target = rec.targets[t];
    if (!target || most.length === 0) return;
    const kind = target.naive ? "naive_get_set" : target.policy ? "policy" : target.rule.algorithm;
    const info = algorithmInfo(kind);
    const values: (number | null)[] = Array.from({ length: bins + 1 }, (_, i) => most[Math.min(i, most.length - 1)] ?? 0);
    const peak = Math.max(0, ...most);
    peaks[target.rule.name] = peak;
    yMax = Math.max(yMax, peak);
    lines.push({ label: `${target.rule.name} in flight`, color: info.color, dash: [], width: 2, values, stepped: true, target: t });
    // A concurrency limit's own limit; a policy's, each of its concurrency limits by name.
    const limits: [string, number][] = target.policy
      ? target.policy.limits.flatMap((l) => (l.algorithm === "concurrency" && l.limit !== undefined ? [[`${target.rule.name} ${l.name}`, l.limit] as [string, number]] : []))
      : kind === "concurrency" && target.rule.limit !== undefined
        ? [[target.rule.name, target.rule.limit]]
        : [];
    limits.forEach(([name, limit], i) => {
      yMax = Math.max(yMax, limit);
      lines.push({ label: `${name} limit (${limit})`, color: info.color, dash: [6, 4 + i], width: 1, values: x.map(() => limit), stepped: false, target: t, limit });
    });
  });
  return { title: "Requests in flight at once (the busiest key)", yLabel: "in flight", x, lines, peaks, yMax };
}
