import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { WatchStatus } from "../bindings/WatchStatus";
import type { WatchedPolicy } from "../bindings/WatchedPolicy";
import { createPoller, describeLimit, fmtModified, modeChange, modeText, shouldPoll, stackedColumns, totalsExtras, watchColumns, watchMessages, watchTotals } from "./watch";

const point = (second: number, allowed: number, denied: number, shadow_denied: number, fail_open = 0, delayed = 0) => ({ second, allowed, denied, shadow_denied, fail_open, delayed, released: 0, settled: 0 });

function policy(name: string, extra: Partial<WatchedPolicy> = {}): WatchedPolicy {
  return {
    name,
    mode: "shadow",
    limits: [{ name: "per-second", algorithm: "token_bucket", capacity: 10, refill_per_sec: 10 }],
    tiers: [],
    points: [point(100, 1, 0, 2)],
    ...extra,
  };
}

function status(extra: Partial<WatchStatus> = {}): WatchStatus {
  return { file: "/etc/ratelockr/policies.toml", modified_ms: 0, redis: "redis://127.0.0.1:6390", now_second: 100, policies: [policy("api")], ...extra };
}

describe("Watch", () => {
  const points = [point(100, 3, 1, 0), point(101, 2, 0, 4, 1), point(102, 0, 5, 7)];

  it("totals the whole window, the current second included", () => {
    expect(watchTotals(points)).toEqual({ allowed: 5, denied: 6, shadow_denied: 11, fail_open: 1, delayed: 0, released: 0, settled: 0 });
    expect(watchTotals([])).toEqual({ allowed: 0, denied: 0, shadow_denied: 0, fail_open: 0, delayed: 0, released: 0, settled: 0 });
    // A delayed admission (max_delay_ms) was admitted: it counts as allowed.
    expect(watchTotals([point(1, 2, 0, 0, 0, 3)]).allowed).toBe(5);
    expect(watchColumns([point(1, 2, 0, 0, 0, 3), point(2, 0, 0, 0)])[1]).toEqual([5]);
  });

  it("says delays, leases given back and settlements only when there were some", () => {
    expect(totalsExtras(watchTotals(points))).toEqual([]);
    const busy = watchTotals([
      { ...point(1, 2, 0, 0, 0, 3), released: 4, settled: 1 },
      { ...point(2, 0, 1, 0), released: 1 },
    ]);
    expect(totalsExtras(busy).map((e) => `${e.count} ${e.text}`)).toEqual(["3 of them delayed", "5 leases given back", "1 settled"]);
    const allDelayed = watchTotals([{ ...point(1, 0, 0, 0, 0, 2), released: 1 }]);
    expect(totalsExtras(allDelayed).map((e) => `${e.count} ${e.text}`)).toEqual(["2 of them delayed", "1 lease given back"]);
  });

  it("charts completed seconds only: allowed, denied and shadow-denied each a line", () => {
    expect(watchColumns(points)).toEqual([
      [100, 101],
      [3, 2],
      [1, 0],
      [0, 4],
    ]);
  });

  it("stacks the outcomes: each band one outcome, the top every decision of the second", () => {
    expect(stackedColumns(points)).toEqual([
      [100, 101, 102],
      [4, 6, 6],
      [4, 2, 2],
      [3, 2, 2],
    ]);
    expect(stackedColumns([])).toEqual([[], [], [], []]);
  });

  it("says what each mode does to a request the limits deny", () => {
    expect(modeText("shadow").label).toBe("SHADOW · lets through");
    expect(modeText("shadow").hint).toMatch(/let through.*shadow-denied/);
    expect(modeText("enforce").label).toBe("ENFORCE · denies");
    expect(modeText("enforce").hint).toMatch(/refused \(429\)/);
  });

  it("says until when a policy was in its former mode, once the file changed it", () => {
    const now = new Date(2026, 10, 24, 15, 0, 0).getTime();
    const at = new Date(2026, 10, 24, 14, 3, 27).getTime();
    expect(modeChange("shadow", "enforce", at, now)).toBe("shadow until 14:03:27");
    expect(modeChange(undefined, "enforce", at, now)).toBeUndefined();
    expect(modeChange("enforce", "enforce", at, now)).toBeUndefined();
  });

  it("describes a limit for the legend in the editor's words", () => {
    expect(describeLimit({ name: "per-second", algorithm: "token_bucket", capacity: 10, refill_per_sec: 10 })).toBe("per-second: Token bucket, capacity 10, refills 10/s");
    expect(describeLimit({ name: "daily", algorithm: "fixed_window", limit: 2000, window_ms: 86_400_000 })).toBe("daily: Fixed window, 2,000 per 24 h");
  });

  it("writes the file's time as a clock today, with the date before", () => {
    const now = new Date(2026, 10, 24, 15, 0, 0).getTime();
    expect(fmtModified(new Date(2026, 10, 24, 9, 5, 7).getTime(), now)).toBe("09:05:07");
    expect(fmtModified(new Date(2026, 10, 20, 9, 5, 7).getTime(), now)).toBe("Nov 20, 09:05");
  });

  it("asks for a file when none is watched", () => {
    const m = watchMessages(status({ file: undefined, policies: [] }));
    expect(m.empty).toMatch(/Choose a policies file/);
    expect(m.file).toBeUndefined();
  });

  it("says a refused file keeps the policies in force, and why it was refused", () => {
    const file_error = { code: "policy_file" as const, message: "invalid policies file /p.toml: line 9: policies[0].limits[0].limit: must be at least 1", field: "limit" };
    const kept = watchMessages(status({ file_error, policies: [policy("api"), policy("login")] }));
    expect(kept.file).toMatch(/the 2 policies loaded before stay in force/);
    expect(kept.file).toContain("line 9: policies[0].limits[0].limit");
    const one = watchMessages(status({ file_error }));
    expect(one.file).toMatch(/the policy loaded before stays in force/);
    const never = watchMessages(status({ file_error, policies: [] }));
    expect(never.file).toMatch(/no policy is in force.*taken up as soon as it loads/);
  });

  it("says once that Redis cannot say, however many policies share it", () => {
    const error = "connection refused";
    const m = watchMessages(status({ policies: [policy("a", { error }), policy("b", { error })] }));
    expect(m.redis).toBe("Redis at redis://127.0.0.1:6390 cannot say what was decided (connection refused). The counts come back when it answers.");
    expect(watchMessages(status()).redis).toBeUndefined();
  });

  it("polls only while watching, on screen, in a shown window", () => {
    expect(shouldPoll({ watching: true, cardOnScreen: true, windowHidden: false })).toBe(true);
    expect(shouldPoll({ watching: false, cardOnScreen: true, windowHidden: false })).toBe(false);
    expect(shouldPoll({ watching: true, cardOnScreen: false, windowHidden: false })).toBe(false);
    expect(shouldPoll({ watching: true, cardOnScreen: true, windowHidden: true })).toBe(false);
  });
});

describe("the Watch poller", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** A read taking `ms`; counts calls and the most in flight at once. */
  function slowRead(ms: number) {
    const s = { calls: 0, inFlight: 0, maxInFlight: 0 };
    const read = () => {
      s.calls += 1;
      s.inFlight += 1;
      s.maxInFlight = Math.max(s.maxInFlight, s.inFlight);
      return new Promise<void>((ok) =>
        setTimeout(() => {
          s.inFlight -= 1;
          ok();
        }, ms),
      );
    };
    return { read, s };
  }

  it("reads at once when started, then once a second after each read lands", async () => {
    const s = { calls: 0 };
    const poller = createPoller(async () => {
      s.calls += 1;
    }, 1000);
    poller.setActive(true);
    expect(s.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(s.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.calls).toBe(2);
    await vi.advanceTimersByTimeAsync(3000);
    expect(s.calls).toBe(5);
  });

  it("never overlaps calls: a slow Redis slows the polling down", async () => {
    const { read, s } = slowRead(2500);
    const poller = createPoller(read, 1000);
    poller.setActive(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(s.maxInFlight).toBe(1);
    expect(s.calls).toBeLessThanOrEqual(3);
  });

  it("stops when hidden, and a quick hide-and-show does not start a second loop", async () => {
    const { read, s } = slowRead(300);
    const poller = createPoller(read, 1000);
    poller.setActive(true);
    poller.setActive(false);
    poller.setActive(true);
    await vi.advanceTimersByTimeAsync(5000);
    expect(s.maxInFlight).toBe(1);
    const before = s.calls;
    poller.setActive(false);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(s.calls).toBeLessThanOrEqual(before + 1);
    const stopped = s.calls;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(s.calls).toBe(stopped);
  });

  it("goes on after a failed read", async () => {
    let calls = 0;
    const poller = createPoller(async () => {
      calls += 1;
      throw new Error("refused");
    }, 1000);
    poller.setActive(true);
    await vi.advanceTimersByTimeAsync(2000);
    expect(calls).toBe(3);
  });
});
