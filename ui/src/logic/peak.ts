//! A run's busiest window in words: the boundary burst as a number ("60 in 2 s, limit 40"),
//! the same words as the CLI's summary; and what each limiter promises over that window, so a
//! token bucket's or GCRA's burst + rate reads as what they promise, not as an over-admission.

/** The busiest window as the summary reports it (bindings/PeakWindow, without the key). */
export interface PeakSpan {
  admitted: number;
  limit: number;
  window_ms: number;
  start_ms: number;
}

/** "2 s", "1.5 s", "250 ms". */
export function spanText(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  return `${ms / 1000} s`;
}

/** "60 in 2 s, limit 40". */
export function peakText(p: PeakSpan): string {
  return `${p.admitted} in ${spanText(p.window_ms)}, limit ${p.limit}`;
}

/** True for the limiters that promise a burst on top of a rate: the token bucket and GCRA. */
export function burstAndRate(algorithm: string | undefined): boolean {
  return algorithm === "token_bucket" || algorithm === "gcra";
}

/**
 * What a limiter promises one key within its peak window: the windows, their limit. A token
 * bucket, its capacity (`limit`) plus what refills meanwhile: the window is the time to refill
 * from empty, so capacity again. GCRA, its burst (`burst`, else `limit`) plus `limit` per period
 * (the window is the period).
 */
export function promise(p: PeakSpan, algorithm?: string, burst?: number): { burst: number; rate: number; total: number } {
  if (algorithm === "token_bucket") return { burst: p.limit, rate: p.limit, total: 2 * p.limit };
  if (algorithm === "gcra") {
    const b = burst ?? p.limit;
    return { burst: b, rate: p.limit, total: b + p.limit };
  }
  return { burst: 0, rate: p.limit, total: p.limit };
}

/** True when the window held more than the limiter promises: an over-admission. */
export function peakExceeds(p: PeakSpan, algorithm?: string, burst?: number): boolean {
  return p.admitted > promise(p, algorithm, burst).total;
}

/**
 * The count of a busiest window against its promise: "60 / 40" for the windows; "78 / 40 + 40"
 * (burst + rate) for a token bucket or GCRA. `fmt` writes each number.
 */
export function peakCount(p: PeakSpan, algorithm?: string, burst?: number, fmt: (n: number) => string = String): string {
  if (!burstAndRate(algorithm)) return `${fmt(p.admitted)} / ${fmt(p.limit)}`;
  const o = promise(p, algorithm, burst);
  return `${fmt(p.admitted)} / ${fmt(o.burst)} + ${fmt(o.rate)}`;
}

/** The words of a busiest window on the chart: "60 / 40 in 2 s", "78 / 40 + 40 in 2 s". */
export function peakLabel(p: PeakSpan, algorithm?: string, burst?: number): string {
  return `${peakCount(p, algorithm, burst)} in ${spanText(p.window_ms)}`;
}

/** What the words of a token bucket's or GCRA's window mean, said under them. */
export const PROMISE_NOTE = "burst + rate: as promised";
