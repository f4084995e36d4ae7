/** Hand-made runs for the unit tests. */
import type { Records } from "./records";

/** A run built by hand: [t_ms, target, key, outcome, remaining] per record. */
export function run(rows: [number, number, number, number, number][], over: Partial<Records> = {}): Records {
  return {
    started_at_ms: 1_000_000,
    duration_ms: Math.max(0, ...rows.map((r) => r[0])),
    bin_ms: 100,
    targets: [
      { rule: { name: "tb", algorithm: "token_bucket", capacity: 2, refill_per_sec: 10 }, naive: false },
      { rule: { name: "fw", algorithm: "fixed_window", limit: 2, window_ms: 1000 }, naive: false },
    ],
    keys: ["client-0", "client-1"],
    t_ms: rows.map((r) => r[0]),
    target: rows.map((r) => r[1]),
    key: rows.map((r) => r[2]),
    outcome: rows.map((r) => r[3]),
    remaining: rows.map((r) => r[4]),
    retry_after_ms: rows.map((r) => (r[3] === 1 ? 100 : 0)),
    reset_after_ms: rows.map(() => 200),
    latency_us: rows.map(() => 300),
    attempt: rows.map(() => 0),
    seq: rows.map((_, i) => i),
    ...over,
  };
}
