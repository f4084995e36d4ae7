//! The live 30-second chart's panel: which rules it shows, and the throttled refetch that
//! turns `refetch-stats` events into stats calls (design.md, "The live chart's refetch").
import { api, events } from "../api";
import type { RuleStats } from "../bindings/RuleStats";
import { ChartGrid } from "../charts/live";
import { $ } from "../dom";
import { algorithmFromName } from "../logic/algorithms";
import { liveNote, liveView } from "../logic/live";
import { painter, setText } from "../paint";
import { createThrottle, type Throttle } from "../throttle";
import { on, state } from "../store";

function algorithmOf(rule: string): string | undefined {
  return (
    state.rules.find((r) => r.name === rule)?.algorithm ??
    state.sim?.last?.rows.find((r) => r.rule === rule)?.algorithm ??
    algorithmFromName(rule)
  );
}

declare global {
  interface Window {
    /** The stats calls the live chart has made (read by the E2E test). */
    ratelockrStatsCalls?: number;
  }
}

let refetch: Throttle;

/** Asks for a refetch (through the throttle). */
export function refreshLive() {
  refetch?.trigger();
}

export function initLive() {
  const charts = new ChartGrid($("charts"), algorithmOf);
  let calls = 0;
  /** A draw is waiting for the shared frame: a newer fetch replaces it, changed or not. */
  let queued = false;
  const fetchStats = async () => {
    const shown = liveView({
      running: state.sim?.running ?? false,
      focus: state.liveFocus,
      runRules: state.sim?.rules ?? [],
      userRules: state.rules.map((r) => r.name),
    });
    const rules = shown.rules;
    setText($("live-note"), liveNote(shown));
    charts.setRules(rules);
    if (rules.length === 0) return;
    // Counted where the E2E test can see that a burst keeps the calls bounded: a property,
    // not an attribute, as any change to the document costs the webview a frame.
    window.ratelockrStatsCalls = ++calls;
    const stats: RuleStats[] = await api.stats(rules);
    // Fetched now (the throttle's guarantees are about fetches), drawn in a shared frame, and
    // only when it changes the picture: an idle chart asks for no frames at all.
    if (!queued && !charts.changes(stats)) return;
    queued = true;
    painter.later("live-chart", () => {
      queued = false;
      charts.update(stats);
    });
  };
  refetch = createThrottle(fetchStats);
  void events.onRefetchStats(() => refetch.trigger());
  // The chart is a moving 30-second window: keep it moving when nothing happens.
  setInterval(() => refetch.trigger(), 1000);
  for (const topic of ["rules", "selection", "sim"] as const) on(topic, () => refetch.trigger());
}
