/**
 * The Replay panel's pure parts: the engine's top keys as per-key rows (so the per-key view's
 * sorting applies) and the progress share. The sweep's inputs and heatmaps are `./sweep`'s,
 * shared with the simulator.
 */
import type { InFlight } from "../bindings/InFlight";
import type { ReplayProgress } from "../bindings/ReplayProgress";
import type { TopKey } from "../bindings/TopKey";
import type { KeyRow } from "./perkey";

export { heatColour, heatmap, parseAxis, sweepParams, type HeatMetric, type Heatmap } from "./sweep";

/** The engine's top keys in the per-key view's row shape (first denial in log time). */
export function keyRows(top: TopKey[]): KeyRow[] {
  return top.map((k, i) => ({
    key: i,
    name: k.key,
    requests: k.requests,
    allowed: k.allowed,
    denied: k.denied,
    failOpen: Math.max(0, k.requests - k.allowed - k.denied),
    deniedShare: k.requests ? k.denied / k.requests : 0,
    firstDeniedMs: k.first_denied_ms ?? undefined,
    longestDeniedStreak: k.longest_denied_streak,
    ...(k.denied_by ? { deniedBy: deniedByText(k.denied_by) } : {}),
  }));
}

/** A key's denials by limit, most first: "daily 15,730, per-second 86". */
export function deniedByText(by: Record<string, number>): string {
  return Object.entries(by)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([limit, n]) => `${limit} ${n.toLocaleString("en-US")}`)
    .join(", ");
}

/** How far a replay is, 0..1, from the bytes read; undefined when the size is unknown. */
export function progressShare(p: ReplayProgress): number | undefined {
  if (!p.bytes_total) return undefined;
  return Math.min(1, p.bytes_read / p.bytes_total);
}

/**
 * How full the replay's progress bar is drawn, 0..1: what was read while running (or of a
 * cancelled replay), full only for a replay that ended, empty while idle (it was drawn full).
 */
export function barShare(share: number | undefined, running: boolean, ended: boolean): number {
  if (share !== undefined) return share;
  return !running && ended ? 1 : 0;
}

/**
 * The client keys to offer for a log whose preview found `fields`: the terms every format has,
 * then each field as `field:NAME` (at most 16 of them, in the order found).
 */
export function keyChoices(fields: string[]): string[] {
  if (fields.length === 0) return [];
  return ["ip", "path[1]", "ip+path[1]", ...fields.slice(0, 16).map((f) => `field:${f}`)];
}

/**
 * "api: in flight at once per key, p50 2 · p90 5 · p99 9 · max 14 (client 10.0.0.7)": what a
 * log with durations says about a rule's keys (under a concurrency rule, each counted for at
 * most its lease). Nothing without durations.
 */
export function inFlightText(rule: string, f: InFlight | undefined): string | undefined {
  if (!f || f.keys === 0) return undefined;
  const top = f.top_keys[0];
  const busiest = top ? ` (${top.key})` : "";
  const capped = f.capped_at_ms != null ? `, each counted for at most its ${f.capped_at_ms} ms lease` : "";
  return `${rule}: in flight at once per key, p50 ${f.p50} · p90 ${f.p90} · p99 ${f.p99} · max ${f.max}${busiest}${capped}`;
}

/** The duration field as the engine takes it: blank is none (a lease is held its whole life). */
export function durationField(text: string): string | undefined {
  const name = text.trim();
  return name === "" ? undefined : name;
}
