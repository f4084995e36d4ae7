//! A run's busiest window in words: the boundary burst as a number ("60 in 2 s, limit 40"),
//! the same words as the CLI's summary.
import type { PeakWindow } from "../bindings/PeakWindow";

/** "2 s", "1.5 s", "250 ms". */
export function spanText(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  return `${ms / 1000} s`;
}

/** "60 in 2 s, limit 40". */
export function peakText(p: PeakWindow): string {
  return `${p.admitted} in ${spanText(p.window_ms)}, limit ${p.limit}`;
}

/** True when the window held more than the rule's limit. */
export function peakExceeds(p: PeakWindow): boolean {
  return p.admitted > p.limit;
}
