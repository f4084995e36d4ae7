import { describe, expect, it } from "vitest";
import { peakExceeds, peakText, spanText } from "./peak";

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
