import { describe, expect, it } from "vitest";
import { binCount, binTarget, cumulative, envelope, envelopeForKey, peak, recordIndices, stateCeiling } from "./records";
import { run } from "./testdata";

describe("run records to chart series", () => {
  const rec = run([
    [250, 0, 0, 0, 1],
    [10, 0, 0, 0, 1],
    [20, 0, 0, 1, 0],
    [120, 1, 1, 2, -1],
    [150, 0, 1, 0, 1],
  ]);

  it("bins offered, allowed, denied and fail-open per target", () => {
    expect(binCount(250, 100)).toBe(3);
    expect(binCount(0, 100)).toBe(1);
    const s = binTarget(rec, 0);
    expect(s.x).toEqual([0, 0.1, 0.2]);
    expect(s.offered).toEqual([2, 1, 1]);
    expect(s.allowed).toEqual([1, 1, 1]);
    expect(s.denied).toEqual([1, 0, 0]);
    expect(binTarget(rec, 1).failOpen).toEqual([0, 1, 0]);
    // Finer bins: one record per 10 ms bin, nothing lost.
    const fine = binTarget(rec, 0, 10);
    expect(fine.offered.reduce((a, b) => a + b)).toBe(4);
    expect(binTarget(rec, 0, 100, 1).offered).toEqual([0, 1, 0]);
  });

  it("orders a key's records by sending time, not completion", () => {
    expect(recordIndices(rec, 0, 0)).toEqual([1, 2, 0]);
  });

  it("draws the rule's envelope: capacity + rate × t for a bucket, limit per window for windows", () => {
    expect(envelopeForKey({ algorithm: "token_bucket", capacity: 10, refill_per_sec: 5 }, 2000)).toBe(20);
    expect(envelopeForKey({ algorithm: "token_bucket", capacity: 20, refill_per_sec: 10 }, 1500)).toBe(35);
    expect(envelopeForKey({ algorithm: "fixed_window", limit: 40, window_ms: 2000 }, 0)).toBe(40);
    expect(envelopeForKey({ algorithm: "fixed_window", limit: 40, window_ms: 2000 }, 3999)).toBe(80);
    expect(envelopeForKey({ algorithm: "gcra", limit: 10, window_ms: 1000, burst: 4 }, 500)).toBe(9);
    expect(envelopeForKey({ algorithm: "gcra", limit: 3, window_ms: 1000, burst: 3 }, 500)).toBe(4);
    expect(envelopeForKey({ algorithm: "sliding_window_counter", limit: 10, window_ms: 1000 }, 1500)).toBe(30);
    expect(envelopeForKey({ algorithm: "mystery" }, 10)).toBeUndefined();
    expect(stateCeiling({ algorithm: "token_bucket", capacity: 10, refill_per_sec: 5 })).toBe(10);
    expect(stateCeiling({ algorithm: "fixed_window", limit: 4, window_ms: 9 })).toBe(4);
  });

  it("sums the envelope over keys from each key's first request", () => {
    // Target 0: client-0 first at 10 ms, client-1 first at 150 ms; capacity 2 + 10/s.
    // Whole tokens only: 10/s over 90 ms is no token yet.
    expect(envelope(rec, 0, 100, 3)).toEqual([2, 2 + 1 + 2, 2 + 2 + 2 + 1]);
    // One key only.
    expect(envelope(rec, 0, 100, 3, 1)).toEqual([null, 2, 3]);
    // A rule without known parameters draws no envelope.
    const blind = run([[0, 0, 0, 0, 1]], { targets: [{ rule: { name: "x", algorithm: "mystery" }, naive: false }] });
    expect(envelope(blind, 0, 100, 1)).toEqual([null]);
  });

  it("accumulates and finds the peak bin", () => {
    expect(cumulative([1, 0, 3])).toEqual([1, 1, 4]);
    expect(peak([1, 5, 3, 5])).toEqual({ index: 1, value: 5 });
    expect(peak([])).toEqual({ index: 0, value: 0 });
  });
});
