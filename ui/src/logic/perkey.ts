/** The per-key table: who was denied, how much, since when, for how long in a row. */
import { bindingOf, OUTCOME, recordIndices, tierOf, wouldDeny, type Records } from "./records";

export interface KeyRow {
  /** Index into `Records.keys`. */
  key: number;
  name: string;
  requests: number;
  allowed: number;
  denied: number;
  failOpen: number;
  /** Denied share, 0..1 (0 for a key without requests). */
  deniedShare: number;
  /** The first denial, ms from the run's start; undefined when never denied. */
  firstDeniedMs?: number;
  /** The most denials in a row, in sending order. */
  longestDeniedStreak: number;
  /** A policy's key: its tier ("" the policy's own limits). */
  tier?: string;
  /** A policy's key: its denials (a shadow policy's would-be denials) by the limit that decided, most first: "daily 18, per-second 2". */
  deniedBy?: string;
}

export type KeyColumn = "name" | "requests" | "allowed" | "denied" | "failOpen" | "deniedShare" | "firstDeniedMs" | "longestDeniedStreak" | "tier" | "deniedBy";

/** One row per key that sent to `target`, top offenders (most denied) first. */
export function perKey(rec: Records, target: number): KeyRow[] {
  const rows = new Map<number, KeyRow & { streak: number }>();
  const policy = rec.targets[target]?.policy !== undefined;
  const by = new Map<number, Map<string, number>>();
  for (const i of recordIndices(rec, target)) {
    const k = rec.key[i];
    let row = rows.get(k);
    if (!row) {
      row = { key: k, name: rec.keys[k] ?? `#${k}`, requests: 0, allowed: 0, denied: 0, failOpen: 0, deniedShare: 0, longestDeniedStreak: 0, streak: 0 };
      if (policy) row.tier = tierOf(rec, i);
      rows.set(k, row);
    }
    row.requests++;
    if (policy && wouldDeny(rec, i)) {
      let counts = by.get(k);
      if (!counts) by.set(k, (counts = new Map()));
      const limit = bindingOf(rec, i) || "?";
      counts.set(limit, (counts.get(limit) ?? 0) + 1);
    }
    if (rec.outcome[i] === OUTCOME.denied) {
      row.denied++;
      row.firstDeniedMs ??= rec.t_ms[i];
      row.streak++;
      row.longestDeniedStreak = Math.max(row.longestDeniedStreak, row.streak);
    } else {
      if (rec.outcome[i] === OUTCOME.allowed) row.allowed++;
      else row.failOpen++;
      row.streak = 0;
    }
  }
  const out: KeyRow[] = [...rows.values()].map(({ streak: _streak, ...row }) => {
    const counts = by.get(row.key);
    if (policy) {
      row.deniedBy = counts
        ? [...counts]
            .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
            .map(([limit, n]) => `${limit} ${n}`)
            .join(", ")
        : "";
    }
    return { ...row, deniedShare: row.requests ? row.denied / row.requests : 0 };
  });
  return sortKeys(out, "denied", "desc");
}

/**
 * Sorted by a column; ties broken by the denied count (most first), then the key's name, so
 * the order is stable and the offenders stay on top. A never-denied key sorts last by first
 * denial in either direction: it has none.
 */
export function sortKeys(rows: KeyRow[], column: KeyColumn, dir: "asc" | "desc"): KeyRow[] {
  const sign = dir === "asc" ? 1 : -1;
  const value = (r: KeyRow) => r[column];
  return [...rows].sort((a, b) => {
    const va = value(a);
    const vb = value(b);
    if (va !== vb) {
      if (va === undefined) return 1;
      if (vb === undefined) return -1;
      if (typeof va === "string" || typeof vb === "string") return sign * String(va).localeCompare(String(vb), "en", { numeric: true });
      return sign * (va - vb);
    }
    return b.denied - a.denied || a.name.localeCompare(b.name, "en", { numeric: true });
  });
}

/** One key's decisions, in sending order, for the list under the table. */
export function keyDecisions(rec: Records, target: number, key: number) {
  return recordIndices(rec, target, key).map((i) => ({
    index: i,
    t_ms: rec.t_ms[i],
    outcome: rec.outcome[i],
    remaining: rec.remaining[i],
    retry_after_ms: rec.retry_after_ms[i],
    reset_after_ms: rec.reset_after_ms[i],
    attempt: rec.attempt[i],
    latency_us: rec.latency_us[i],
  }));
}
