//! Runs laid over each other, compared in one table: one row per run and rule, with what
//! tuning is judged by (allowed and denied shares, keys denied, fail-open, the busiest window,
//! the worst wait). The view's set of runs is stable: selecting one of them to read it keeps
//! the others laid over, and selecting an unrelated run starts a new view.
import type { PeakWindow } from "../bindings/PeakWindow";
import type { RunRecords } from "../bindings/RunRecords";
import type { SummaryRow } from "../bindings/SummaryRow";
import { OUTCOME } from "./records";

/** One row of the comparison: a rule of a run. */
export interface CompareRow {
  run: string;
  runName: string;
  rule: string;
  algorithm: string;
  requests: number;
  allowed: number;
  denied: number;
  failOpen: number;
  /** Client keys with at least one denial, of the keys that sent anything to the rule. */
  keysDenied: number;
  keys: number;
  peak?: PeakWindow;
  /** The longest Retry-After a denial carried, in ms (0 when nothing was denied). */
  worstWaitMs: number;
}

export interface CompareRun {
  id: string;
  name: string;
  rows: SummaryRow[];
  records: Pick<RunRecords, "t_ms" | "target" | "key" | "outcome" | "retry_after_ms">;
}

/** The rows of every run, in the order given (the selected run first), rule by rule. */
export function compareRows(runs: CompareRun[]): CompareRow[] {
  const out: CompareRow[] = [];
  for (const run of runs) {
    const rec = run.records;
    const n = rec.t_ms.length;
    const perTarget = run.rows.map(() => ({ keys: new Set<number>(), denied: new Set<number>(), worst: 0 }));
    for (let i = 0; i < n; i++) {
      const t = perTarget[rec.target[i]];
      if (!t) continue;
      t.keys.add(rec.key[i]);
      if (rec.outcome[i] === OUTCOME.denied) {
        t.denied.add(rec.key[i]);
        if (rec.retry_after_ms[i] > t.worst) t.worst = rec.retry_after_ms[i];
      }
    }
    run.rows.forEach((r, i) =>
      out.push({
        run: run.id,
        runName: run.name,
        rule: r.rule,
        algorithm: r.naive ? "naive_get_set" : r.algorithm,
        requests: r.requests,
        allowed: r.allowed,
        denied: r.denied,
        failOpen: r.fail_open,
        keysDenied: perTarget[i].denied.size,
        keys: perTarget[i].keys.size,
        peak: r.peak_window,
        worstWaitMs: perTarget[i].worst,
      }),
    );
  }
  return out;
}

/**
 * The runs laid over the selected one after `selected` is chosen, `previous` having been
 * selected: a run of the view swaps places with the selected one (the set on the chart stays);
 * any other run starts a view of its own, so ticks never carry over to an unrelated run.
 */
export function overlaysOnSelect(ids: string[], overlays: string[], previous: string | null, selected: string | null): string[] {
  if (selected === previous) return overlays.filter((id) => ids.includes(id) && id !== selected);
  if (!selected || !overlays.includes(selected)) return [];
  return overlays.map((id) => (id === selected ? previous : id)).filter((id): id is string => id !== null && ids.includes(id));
}
