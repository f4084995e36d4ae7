import { describe, expect, it } from "vitest";
import type { SweepPoint } from "../bindings/SweepPoint";
import { barShare, durationField, heatColour, heatmap, inFlightText, keyChoices, keyRows, parseAxis, progressShare } from "./replay";
import { sortKeys } from "./perkey";

const point = (params: Record<string, number>, denied_pct: number): SweepPoint => ({
  params,
  rule: "r",
  requests: 100,
  denied: denied_pct,
  denied_pct,
  keys_denied: 1,
  keys_denied_pct: denied_pct / 2,
  fail_open: 0,
});

describe("replay panel logic", () => {
  it("turns top keys into per-key rows that sort like the per-key view", () => {
    const rows = keyRows([
      { key: "a", requests: 10, allowed: 9, denied: 1, denied_pct: 10, first_denied_ms: 5, longest_denied_streak: 1, denied_error: 0 },
      { key: "b", requests: 4, allowed: 0, denied: 4, denied_pct: 100, first_denied_ms: null, longest_denied_streak: 4, denied_error: 0 },
    ]);
    expect(rows[1]).toMatchObject({ name: "b", deniedShare: 1, firstDeniedMs: undefined, failOpen: 0 });
    expect(sortKeys(rows, "denied", "desc").map((r) => r.name)).toEqual(["b", "a"]);
  });

  it("reads sweep values and names a bad one", () => {
    expect(parseAxis("capacity", " 10, 20 40 ")).toEqual({ ok: true, axis: { param: "capacity", values: [10, 20, 40] } });
    expect(parseAxis("capacity", "")).toEqual({ ok: true });
    const bad = parseAxis("limit", "10, x");
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.message).toContain("x");
  });

  it("lays a two-axis sweep on its grid", () => {
    const m = heatmap([point({ capacity: 20, refill_per_sec: 1 }, 30), point({ capacity: 10, refill_per_sec: 1 }, 50), point({ capacity: 10, refill_per_sec: 2 }, 40)], "denied_pct");
    expect(m).toMatchObject({ x: "capacity", y: "refill_per_sec", xs: [10, 20], ys: [1, 2], max: 50 });
    expect(m?.cells).toEqual([[50, 30], [40, undefined]]);
    expect(heatmap([point({ limit: 5 }, 1)], "keys_denied_pct")?.cells).toEqual([[0.5]]);
    expect(heatmap([], "denied_pct")).toBeUndefined();
  });

  it("colours more denial redder and shares progress by bytes", () => {
    expect(heatColour(0)).not.toBe(heatColour(100));
    expect(heatColour(undefined)).toBe("transparent");
    expect(progressShare({ requests: 1, bytes_read: 50, bytes_total: 200, log_ms: null, elapsed_ms: 1 })).toBe(0.25);
    expect(progressShare({ requests: 1, bytes_read: 50, bytes_total: null, log_ms: null, elapsed_ms: 1 })).toBeUndefined();
  });
});

describe("the replay's progress bar", () => {
  it("is empty while idle, full once a replay ended, and the share read in between", () => {
    expect(barShare(undefined, false, false)).toBe(0);
    expect(barShare(undefined, true, false)).toBe(0);
    expect(barShare(undefined, false, true)).toBe(1);
    expect(barShare(0.4, true, false)).toBe(0.4);
  });
});

describe("the client keys a log offers", () => {
  it("offers the common terms and each field the preview found", () => {
    expect(keyChoices([])).toEqual([]);
    expect(keyChoices(["user", "status"])).toEqual(["ip", "path[1]", "ip+path[1]", "field:user", "field:status"]);
    expect(keyChoices(Array.from({ length: 40 }, (_, i) => `f${i}`))).toHaveLength(19);
  });
});

describe("a log's durations", () => {
  it("says each key's requests in flight, and nothing without durations", () => {
    const f = { capped_at_ms: null, keys: 3, p50: 2, p90: 5, p99: 9, max: 14, top_keys: [{ key: "10.0.0.7", peak: 14, requests: 40, denied: 3 }] };
    expect(inFlightText("api", f)).toBe("api: in flight at once per key, p50 2 · p90 5 · p99 9 · max 14 (10.0.0.7)");
    expect(inFlightText("uploads", { ...f, capped_at_ms: 60000 })).toContain("each counted for at most its 60000 ms lease");
    expect(inFlightText("api", undefined)).toBeUndefined();
    expect(inFlightText("api", { ...f, keys: 0 })).toBeUndefined();
  });

  it("takes a blank duration field as none", () => {
    expect(durationField("  ")).toBeUndefined();
    expect(durationField(" request_time ")).toBe("request_time");
  });
});
