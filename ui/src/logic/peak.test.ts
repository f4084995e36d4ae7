import { describe, expect, it } from "vitest";
import { burstAndRate, peakCount, peakExceeds, peakLabel, peakText, promise, spanText } from "./peak";

describe("the busiest window in words", () => {
  it("says the count, the span and the limit as the CLI does", () => {
    const p = { admitted: 60, limit: 40, window_ms: 2000, start_ms: 3980, key: "client-0" };
    expect(peakText(p)).toBe("60 in 2 s, limit 40");
    expect(peakExceeds(p)).toBe(true);
    expect(peakExceeds({ ...p, admitted: 40 })).toBe(false);
  });

  it("writes spans under a second in ms and fractions of seconds as decimals", () => {
    expect(spanText(250)).toBe("250 ms");
    expect(spanText(1500)).toBe("1.5 s");
    expect(spanText(60000)).toBe("60 s");
  });
});

describe("what a limiter promises over its busiest window", () => {
  const p = { admitted: 78, limit: 40, window_ms: 2000, start_ms: 3980 };

  it("holds a token bucket to its capacity plus a refill, not to its capacity alone", () => {
    expect(promise(p, "token_bucket").total).toBe(80);
    expect(peakExceeds(p, "token_bucket")).toBe(false);
    expect(peakExceeds({ ...p, admitted: 81 }, "token_bucket")).toBe(true);
    expect(peakCount(p, "token_bucket")).toBe("78 / 40 + 40");
    expect(peakLabel(p, "token_bucket")).toBe("78 / 40 + 40 in 2 s");
  });

  it("holds GCRA to its burst plus its limit per period", () => {
    expect(promise(p, "gcra", 10).total).toBe(50);
    expect(peakExceeds(p, "gcra", 10)).toBe(true);
    expect(peakLabel({ ...p, admitted: 45 }, "gcra", 10)).toBe("45 / 10 + 40 in 2 s");
    expect(promise(p, "gcra").total).toBe(80);
  });

  it("holds the windows to their limit: the fixed window's boundary burst is over it", () => {
    expect(peakExceeds(p, "fixed_window")).toBe(true);
    expect(peakLabel(p, "fixed_window")).toBe("78 / 40 in 2 s");
    expect(peakCount({ ...p, admitted: 1234, limit: 2000 }, "sliding_window_log", undefined, (n) => n.toLocaleString("en-US"))).toBe("1,234 / 2,000");
    expect(burstAndRate("sliding_window_counter")).toBe(false);
  });
});
