import { describe, expect, it } from "vitest";
import type { RunRecords } from "../bindings/RunRecords";
import type { SummaryRow } from "../bindings/SummaryRow";
import { compareRows, overlaysOnSelect } from "./compare";

function row(rule: string, allowed: number, denied: number): SummaryRow {
  return { rule, algorithm: "token_bucket", naive: false, requests: allowed + denied, allowed, denied, fail_open: 0, retries: 0, over_admitted: 0, latency_p50_us: 0, latency_p99_us: 0 };
}

function records(target: number[], key: number[], outcome: number[], retry: number[]): RunRecords {
  const n = target.length;
  const zeros = Array(n).fill(0);
  return {
    id: "r",
    started_at_ms: 0,
    duration_ms: 1000,
    bin_ms: 100,
    targets: [],
    keys: ["a", "b", "c"],
    t_ms: zeros,
    target,
    key,
    outcome,
    remaining: zeros,
    retry_after_ms: retry,
    reset_after_ms: zeros,
    latency_us: zeros,
    attempt: zeros,
    seq: zeros,
    binding: [],
    tier: [],
    would_deny: [],
    labels: [],
  };
}

describe("the comparison of runs on one chart", () => {
  it("counts the keys denied and the worst wait per rule of each run", () => {
    // Rule 0: keys a, b; b denied twice (waits 300, 900). Rule 1: key c, never denied.
    const rec = records([0, 0, 0, 0, 1], [0, 1, 1, 1, 2], [0, 0, 1, 1, 0], [0, 0, 300, 900, 0]);
    const rows = compareRows([{ id: "r1", name: "capacity 10", rows: [row("api", 2, 2), row("web", 1, 0)], records: rec }]);
    expect(rows.map((r) => [r.runName, r.rule, r.keysDenied, r.keys, r.worstWaitMs])).toEqual([
      ["capacity 10", "api", 1, 2, 900],
      ["capacity 10", "web", 0, 1, 0],
    ]);
  });

  it("keeps the set on the chart when one of it is selected, and starts anew otherwise", () => {
    const ids = ["a", "b", "c", "d"];
    // b is read: a (the selected one) takes its place among the overlays.
    expect(overlaysOnSelect(ids, ["b", "c"], "a", "b")).toEqual(["a", "c"]);
    // d is not on the chart: its view has nothing laid over it.
    expect(overlaysOnSelect(ids, ["b", "c"], "a", "d")).toEqual([]);
    // The same selection (the history refreshed): runs deleted meanwhile drop out.
    expect(overlaysOnSelect(["a", "c"], ["b", "c"], "a", "a")).toEqual(["c"]);
    expect(overlaysOnSelect(ids, ["b"], null, "b")).toEqual([]);
  });
});
