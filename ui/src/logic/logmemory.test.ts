import { describe, expect, it } from "vitest";
import { logBytesPerKey, logMemoryWarning } from "./logmemory";

describe("logMemoryWarning", () => {
  it("says nothing up to a limit of 128, or for other algorithms", () => {
    expect(logMemoryWarning("sliding_window_log", "128")).toBeNull();
    expect(logMemoryWarning("sliding_window_counter", "1000")).toBeNull();
    expect(logMemoryWarning("sliding_window_log", "12.5")).toBeNull();
    expect(logMemoryWarning("sliding_window_log", "")).toBeNull();
  });

  it("names the cost per key and the sliding window counter above 128", () => {
    const warning = logMemoryWarning("sliding_window_log", " 1000 ");
    expect(warning).toContain("119.0 KB");
    expect(warning).toContain("11.9 GB for 100,000");
    expect(warning).toContain("sliding window counter");
  });

  it("jumps where Redis leaves the listpack", () => {
    expect(logBytesPerKey(129)).toBeGreaterThan(3 * logBytesPerKey(128));
  });
});
