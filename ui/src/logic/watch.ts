/**
 * The Watch card's logic: a policies file followed live, and each policy's last 30 seconds
 * (allowed, denied, shadow-denied) from the app's Redis, for traffic other processes decide
 * (`ratelockr serve --policies`, the tower layer). What the card says, and when it polls.
 */
import type { Limit } from "../bindings/Limit";
import type { Mode } from "../bindings/Mode";
import type { PolicyStatsPoint } from "../bindings/PolicyStatsPoint";
import type { WatchStatus } from "../bindings/WatchStatus";
import { algorithmLabel } from "./algorithms";
import { fmtInt } from "./format";
import { describeRule } from "./rules";

export interface WatchTotals {
  allowed: number;
  denied: number;
  shadow_denied: number;
  fail_open: number;
  /** Of the allowed, admitted with a wait (the policy's max_delay_ms). */
  delayed: number;
  /** Leases given back (in-flight limits), and requests settled with their actual cost. */
  released: number;
  settled: number;
}

/**
 * Sums over the whole window, the current second included: every decision of the policy. A
 * delayed admission (the policy's max_delay_ms) is admitted: it counts as allowed here.
 */
export function watchTotals(points: PolicyStatsPoint[]): WatchTotals {
  return points.reduce<WatchTotals>(
    (t, p) => ({
      allowed: t.allowed + p.allowed + p.delayed,
      denied: t.denied + p.denied,
      shadow_denied: t.shadow_denied + p.shadow_denied,
      fail_open: t.fail_open + p.fail_open,
      delayed: t.delayed + p.delayed,
      released: t.released + p.released,
      settled: t.settled + p.settled,
    }),
    { allowed: 0, denied: 0, shadow_denied: 0, fail_open: 0, delayed: 0, released: 0, settled: 0 },
  );
}

/** The totals' optional words, each only when it happened: "3 of them delayed", ... */
export function totalsExtras(t: WatchTotals): { kind: string; count: number; text: string }[] {
  const extras = [
    { kind: "delayed", count: t.delayed, text: "of them delayed" },
    { kind: "released", count: t.released, text: t.released === 1 ? "lease given back" : "leases given back" },
    { kind: "settled", count: t.settled, text: "settled" },
  ];
  return extras.filter((e) => e.count > 0);
}

/**
 * Chart columns for uPlot: x (unix seconds), allowed (delayed admissions included), denied,
 * shadow-denied. The second in
 * progress is left out, as on the live chart: drawn as a full one, every line dips at "now".
 */
export function watchColumns(points: PolicyStatsPoint[]): [number[], number[], number[], number[]] {
  const done = points.slice(0, -1);
  return [done.map((p) => p.second), done.map((p) => p.allowed + p.delayed), done.map((p) => p.denied), done.map((p) => p.shadow_denied)];
}

/**
 * The columns stacked for drawing: x, then the tops of three bands, allowed + denied +
 * shadow-denied, allowed + denied, allowed. Drawn in that order, each filled down to zero over
 * the one before, every band's height is one outcome's count and the top is every decision of
 * the second (the three outcomes are disjoint: a shadow denial is not also counted allowed).
 * Each second is a step from its start to the next second's.
 */
export function stackedColumns(points: PolicyStatsPoint[]): [number[], number[], number[], number[]] {
  const [x, allowed, denied, shadow] = watchColumns(points);
  const both = allowed.map((a, i) => a + denied[i]);
  const columns: [number[], number[], number[], number[]] = [x, both.map((b, i) => b + shadow[i]), both, allowed];
  // Drawn as steps, a second's count holds until the next second: the newest completed second
  // needs its end too, which is where the second in progress starts.
  if (x.length > 0) for (const c of columns) c.push(c === x ? x[x.length - 1] + 1 : c[c.length - 1]);
  return columns;
}

/** The mode in plain words: what it does to a request the limits deny. */
export function modeText(mode: Mode): { label: string; hint: string } {
  return mode === "shadow"
    ? { label: "SHADOW · lets through", hint: "Shadow: a request the limits deny is let through, and counted as shadow-denied. Nothing is refused yet." }
    : { label: "ENFORCE · denies", hint: "Enforce: a request the limits deny is refused (429)." };
}

/**
 * "shadow until 14:03:27": said under a policy whose mode the file changed while watched, so
 * the shadow denials still in the window are not read as the new mode's. Nothing when the
 * mode is as first seen.
 */
export function modeChange(before: Mode | undefined, now: Mode, atMs: number, nowMs: number): string | undefined {
  if (before === undefined || before === now) return undefined;
  return `${before} until ${fmtModified(atMs, nowMs)}`;
}

/** "per-second: Token bucket, capacity 10, refills 10/s": one limit, for the legend. */
export function describeLimit(limit: Limit): string {
  return `${limit.name}: ${algorithmLabel(limit.algorithm)}, ${describeRule(limit)}`;
}

/** "14:03:27" today, "Nov 24, 14:03" before: when the file in force was written. */
export function fmtModified(ms: number, nowMs: number): string {
  const at = new Date(ms);
  const now = new Date(nowMs);
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
  if (at.toDateString() === now.toDateString()) return time;
  const month = at.toLocaleString("en-US", { month: "short" });
  return `${month} ${at.getDate()}, ${two(at.getHours())}:${two(at.getMinutes())}`;
}

/** What the card says above the charts: the file's trouble, Redis's, or nothing. */
export interface WatchMessages {
  /** The file on disk is refused: why, and what is in force instead. */
  file?: string;
  /** Redis cannot say: why, once for all policies when they share it. */
  redis?: string;
  /** Nothing watched, or a file with no policies: what to do. */
  empty?: string;
}

export function watchMessages(s: WatchStatus): WatchMessages {
  const out: WatchMessages = {};
  if (s.file === undefined) {
    out.empty = "Choose a policies file (TOML or JSON, as `ratelockr serve --policies` takes) to see what its policies decide in this Redis, live, whoever sends the traffic.";
    return out;
  }
  if (s.file_error) {
    const n = s.policies.length;
    out.file =
      n > 0
        ? `The file on disk is refused, so the ${n === 1 ? "policy" : `${fmtInt(n)} policies`} loaded before ${n === 1 ? "stays" : "stay"} in force (as serve and the layer do): ${s.file_error.message}`
        : `The file does not load, so no policy is in force: ${s.file_error.message}. It is taken up as soon as it loads.`;
  } else if (s.policies.length === 0) {
    out.empty = "This file holds no policies.";
  }
  const errors = [...new Set(s.policies.map((p) => p.error).filter((e): e is string => e !== undefined))];
  if (errors.length > 0) {
    out.redis = `Redis at ${s.redis} cannot say what was decided (${errors.join("; ")}). The counts come back when it answers.`;
  }
  return out;
}

/** Polls only while someone can see the card: it is on screen and the window is not hidden. */
export function shouldPoll(v: { watching: boolean; cardOnScreen: boolean; windowHidden: boolean }): boolean {
  return v.watching && v.cardOnScreen && !v.windowHidden;
}

export interface PollTimers {
  setTimeout: (fn: () => void, ms: number) => unknown;
  clearTimeout: (handle: unknown) => void;
}

export interface Poller {
  /** Starts (at once) or stops polling; a stop lets a call in flight land. */
  setActive(on: boolean): void;
  readonly active: boolean;
}

/**
 * Calls `read` about once every `everyMs` while active: the next call is scheduled when the
 * last one has landed, so calls never overlap and a slow Redis slows the polling down instead
 * of piling calls up.
 */
export function createPoller(read: () => Promise<void>, everyMs = 1000, timers: PollTimers = globalThis as unknown as PollTimers): Poller {
  let active = false;
  let inFlight = false;
  let timer: unknown;
  const tick = async () => {
    timer = undefined;
    if (!active || inFlight) return;
    inFlight = true;
    try {
      await read();
    } catch {
      // The read reports its own errors; polling goes on.
    } finally {
      inFlight = false;
      if (active && timer === undefined) timer = timers.setTimeout(() => void tick(), everyMs);
    }
  };
  return {
    setActive(on: boolean) {
      if (on === active) return;
      active = on;
      if (on && !inFlight && timer === undefined) void tick();
      if (!on && timer !== undefined) {
        timers.clearTimeout(timer);
        timer = undefined;
      }
    },
    get active() {
      return active;
    },
  };
}
