import { describe, expect, it } from "vitest";
import { fmtBytes, nextSelection, runStatusText } from "./runs";
import { algorithmFromName, algorithmInfo, algorithmLabel, ALGORITHMS, LIMIT_KINDS, RATE_ALGORITHMS } from "./algorithms";
import { sweepParams } from "./sweep";
import { fmtAxis, fmtDuration, fmtMicros, fmtOffset, fmtPercent, fmtRtt } from "./format";

describe("runs", () => {
  it("says a cancelled run is cancelled, not done", () => {
    expect(runStatusText({ status: "cancelled" })).toBe("Cancelled");
    expect(runStatusText({ cancelled: true })).toBe("Cancelled");
    expect(runStatusText({ status: "failed" })).toBe("Failed");
    expect(runStatusText({ status: "finished", cancelled: false })).toBe("Done");
    expect(runStatusText(undefined)).toBe("Done");
  });

  it("selects the run just finished, else keeps the selection, else the newest", () => {
    expect(nextSelection(["c", "b", "a"], "a", "c")).toBe("c");
    expect(nextSelection(["c", "b", "a"], "a")).toBe("a");
    expect(nextSelection(["c", "b"], "a")).toBe("c");
    expect(nextSelection([], "a")).toBeNull();
  });

  it("formats sizes", () => {
    expect(fmtBytes(512)).toBe("512 B");
    expect(fmtBytes(2048)).toBe("2 kB");
    expect(fmtBytes(3.5 * 1024 * 1024)).toBe("3.5 MB");
  });
});

describe("algorithms as data", () => {
  it("gives every algorithm a label, a colour and a distinct dash", () => {
    const dashes = new Set(ALGORITHMS.map((a) => a.dash.join(",")));
    expect(dashes.size).toBe(ALGORITHMS.length);
    expect(new Set(ALGORITHMS.map((a) => a.color)).size).toBe(ALGORITHMS.length);
    expect(algorithmLabel("naive_get_set")).toBe("Naive GET/SET");
    expect(algorithmLabel("sliding_window_log")).toBe("Sliding window log");
    expect(algorithmInfo("brand_new").label).toBe("brand new");
    expect(algorithmInfo("gcra").params).toEqual(["limit", "window_ms", "burst"]);
  });

  it("offers every kind in the editors, but compares the five rate algorithms only", () => {
    expect(LIMIT_KINDS).toEqual(["token_bucket", "gcra", "sliding_window_log", "sliding_window_counter", "fixed_window", "concurrency", "calendar"]);
    expect(RATE_ALGORITHMS.map((a) => a.kind)).toEqual(["token_bucket", "gcra", "sliding_window_log", "sliding_window_counter", "fixed_window"]);
    expect(algorithmInfo("concurrency")).toMatchObject({ label: "Concurrency (in flight)", params: ["limit", "lease_ms"], rate: false });
    // A rule that happens to end in the kind's name is no compare rule of it.
    expect(algorithmFromName("compare-concurrency")).toBeUndefined();
    expect(algorithmFromName("uploads-concurrency")).toBeUndefined();
    expect(sweepParams("concurrency")).toEqual(["limit", "lease_ms"]);
    expect(sweepParams("gcra")).toEqual(["limit", "window_ms", "burst"]);
    // A calendar quota's period and zone are words: a sweep varies its limit only.
    expect(algorithmInfo("calendar")).toMatchObject({ label: "Calendar quota", params: ["limit"], choices: ["period", "time_zone", "week_start"], rate: false });
    expect(sweepParams("calendar")).toEqual(["limit"]);
    expect(sweepParams("token_bucket")).toEqual(["capacity", "refill_per_sec"]);
  });

  it("reads the algorithm from a compare rule's name", () => {
    expect(algorithmFromName("compare-fixed-window")).toBe("fixed_window");
    expect(algorithmFromName("compare-sliding-window-counter")).toBe("sliding_window_counter");
    expect(algorithmFromName("compare-naive")).toBe("naive_get_set");
    expect(algorithmFromName("checkout")).toBeUndefined();
  });
});

describe("formatting", () => {
  it("formats durations, offsets, round trips, shares and axis labels", () => {
    expect(fmtDuration(1500)).toBe("1500 ms");
    expect(fmtDuration(2000)).toBe("2 s");
    expect(fmtOffset(850)).toBe("850 ms");
    expect(fmtOffset(2350)).toBe("2.35 s");
    expect(fmtOffset(65_000)).toBe("1 min 5 s");
    expect(fmtRtt(undefined)).toBe("—");
    expect(fmtRtt(0.25)).toBe("250 µs");
    expect(fmtRtt(3.21)).toBe("3.2 ms");
    expect(fmtMicros(1500)).toBe("1.5 ms");
    expect(fmtPercent(1, 4)).toBe("25.0 %");
    expect(fmtPercent(1, 0)).toBe("—");
    expect(fmtAxis(4000)).toBe("4,000");
    expect(fmtAxis(2.5)).toBe("2.5");
  });
});
