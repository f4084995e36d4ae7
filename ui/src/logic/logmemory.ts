//! What a sliding window log costs in Redis per client key, and the warning the rule editor
//! shows above a limit of 128. The figures are the engine's (src/log_memory.rs, generated into
//! ../bindings/logMemory.ts), fitted to `MEMORY USAGE` of full logs (`ratelockr bench --memory`,
//! docs/benchmarks.md).

import { LOG_MEMORY } from "../bindings/logMemory";

/** The largest limit whose full log Redis still keeps as a compact listpack. */
export const LISTPACK_MAX_ENTRIES = LOG_MEMORY.listpack_max_entries;

/** Estimated bytes one client key's full log takes in Redis at `limit`. */
export function logBytesPerKey(limit: number): number {
  const m = LOG_MEMORY;
  return limit <= m.listpack_max_entries ? m.listpack_base + m.listpack_per_entry * limit : m.skiplist_base + m.skiplist_per_entry * limit;
}

function humanBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit + 1 < units.length) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * The warning for a sliding window log whose limit is above 128, or null: the algorithm is not
 * a log, the limit is not a whole number yet, or it is small enough.
 */
export function logMemoryWarning(algorithm: string, limitText: string | undefined): string | null {
  if (algorithm !== "sliding_window_log") return null;
  const limit = Number((limitText ?? "").trim());
  if (!Number.isInteger(limit) || limit <= LISTPACK_MAX_ENTRIES) return null;
  const bytes = logBytesPerKey(limit);
  return (
    `A sliding window log keeps one entry per request: at a limit of ${limit}, each client key ` +
    `costs about ${humanBytes(bytes)} in Redis (${humanBytes(bytes * 100_000)} for 100,000 active ` +
    `clients). The sliding window counter holds about 200 B per key, whatever the limit.`
  );
}
