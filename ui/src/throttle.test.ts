import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createThrottle, REFETCH_INTERVAL_MS } from "./throttle";

/** A fetch whose duration the test sets; records when each call started and ended. */
function fakeFetch(durationMs: number) {
  const starts: number[] = [];
  const ends: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fetch = () => {
    starts.push(Date.now());
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    return new Promise<void>((resolve) =>
      setTimeout(() => {
        inFlight -= 1;
        ends.push(Date.now());
        resolve();
      }, durationMs),
    );
  };
  return { fetch, starts, ends, maxInFlight: () => maxInFlight };
}

/** Fires `trigger` every `everyMs` for `forMs`, letting timers and promises run between. */
async function fireEvents(trigger: () => void, everyMs: number, forMs: number) {
  for (let t = 0; t < forMs; t += everyMs) {
    trigger();
    await vi.advanceTimersByTimeAsync(everyMs);
  }
}

describe("refetch throttle (design.md guarantees)", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_700_000_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fetches at once on the first event", () => {
    const f = fakeFetch(50);
    const throttle = createThrottle(f.fetch);
    throttle.trigger();
    expect(f.starts).toEqual([Date.now()]);
  });

  it("never has more than one stats call in flight", async () => {
    // Fetches slower than the interval: the throttle must wait for each to land.
    const f = fakeFetch(2_000);
    const throttle = createThrottle(f.fetch);
    await fireEvents(() => throttle.trigger(), 5, 10_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(f.starts.length).toBeGreaterThan(2);
    expect(f.maxInFlight()).toBe(1);
  });

  it("starts at most one call besides the trailing one within any 750 ms", async () => {
    const f = fakeFetch(20);
    const throttle = createThrottle(f.fetch);
    // A 10,000-event burst: one event a millisecond for 10 s.
    await fireEvents(() => throttle.trigger(), 1, 10_000);
    await vi.advanceTimersByTimeAsync(5_000);
    for (const start of f.starts) {
      const inWindow = f.starts.filter((s) => s >= start && s < start + REFETCH_INTERVAL_MS);
      expect(inWindow.length).toBeLessThanOrEqual(2);
    }
    // Bounded: about one call per interval, not one per event.
    expect(f.starts.length).toBeLessThanOrEqual(Math.ceil(10_000 / REFETCH_INTERVAL_MS) + 2);
  });

  it("lands a fetch that started after the last event, so the final state is shown", async () => {
    for (const [duration, gap] of [
      [20, 3],
      [900, 7],
      [400, 100],
    ] as const) {
      const f = fakeFetch(duration);
      const throttle = createThrottle(f.fetch);
      await fireEvents(() => throttle.trigger(), gap, 3_000 + gap);
      const lastEvent = Date.now() - gap;
      await vi.advanceTimersByTimeAsync(5_000);
      const after = f.starts.findIndex((s) => s >= lastEvent);
      expect(after, `duration ${duration}, gap ${gap}`).toBeGreaterThanOrEqual(0);
      expect(f.ends.length).toBe(f.starts.length);
      throttle.dispose();
    }
  });

  it("keeps working after a failed fetch", async () => {
    let calls = 0;
    const throttle = createThrottle(() => {
      calls += 1;
      return Promise.reject(new Error("redis down"));
    });
    throttle.trigger();
    await vi.advanceTimersByTimeAsync(10);
    throttle.trigger();
    await vi.advanceTimersByTimeAsync(REFETCH_INTERVAL_MS);
    expect(calls).toBe(2);
  });
});
