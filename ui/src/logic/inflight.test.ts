import { describe, expect, it } from "vitest";
import { inFlightPlot } from "./inflight";

const targets = [
  { rule: { name: "compare-token-bucket", algorithm: "token_bucket", capacity: 40, refill_per_sec: 40 }, naive: false },
  { rule: { name: "compare-concurrency", algorithm: "concurrency", limit: 10 }, naive: false },
];

describe("inFlightPlot", () => {
  it("is absent for a run without holds", () => {
    expect(inFlightPlot({ bin_ms: 100, targets })).toBeUndefined();
    expect(inFlightPlot({ bin_ms: 100, targets, in_flight: [] })).toBeUndefined();
  });

  it("draws each target's busiest key per bin, and a concurrency limit's own limit", () => {
    const p = inFlightPlot({ bin_ms: 100, targets, in_flight: [[3, 12, 20, 4], [3, 10, 10, 2]] })!;
    expect(p.x).toEqual([0, 0.1, 0.2, 0.3, 0.4]);
    expect(p.lines.map((l) => l.label)).toEqual(["compare-token-bucket in flight", "compare-concurrency in flight", "compare-concurrency limit (10)"]);
    // One value per x: the last bin's step keeps its height to the end.
    expect(p.lines[0].values).toEqual([3, 12, 20, 4, 4]);
    expect(p.lines[2].values).toEqual([10, 10, 10, 10, 10]);
    expect(p.lines[0].stepped && !p.lines[2].stepped).toBe(true);
    expect(p.peaks).toEqual({ "compare-token-bucket": 20, "compare-concurrency": 10 });
    expect(p.yMax).toBe(20);
    expect(p.lines[1].color).not.toBe(p.lines[0].color);
  });

  it("draws a policy's concurrency limits by name", () => {
    const policy = {
      name: "exports",
      mode: "enforce",
      limits: [
        { name: "at-once", algorithm: "concurrency", limit: 5 },
        { name: "per-second", algorithm: "token_bucket", capacity: 100, refill_per_sec: 100 },
      ],
    };
    const p = inFlightPlot({ bin_ms: 100, targets: [{ rule: { name: "exports", algorithm: "concurrency", limit: 5 }, naive: false, policy }], in_flight: [[4, 5]] })!;
    expect(p.lines.map((l) => l.label)).toEqual(["exports in flight", "exports at-once limit (5)"]);
  });
});
