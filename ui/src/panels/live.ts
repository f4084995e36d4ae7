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

let refetch: Throttle;

/** Asks for a refetch (through the throttle). */
export function refreshLive() {
  refetch?.trigger();
}

export function initLive() {
  const charts = new ChartGrid($("charts"), algorithmOf);
  let calls = 0;
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
    const n = ++calls;
    const stats: RuleStats[] = await api.stats(rules);
    // Fetched now (the throttle's guarantees are about fetches), drawn in a shared frame.
    painter.later("live-chart", () => {
      charts.update(stats);
      // Counted where the E2E test can see that a burst keeps the calls bounded; written
      // with the drawing, as a change to <body> costs the webview a frame of its own.
      document.body.dataset.statsCalls = String(n);
    });
  };
  refetch = createThrottle(fetchStats);
  void events.onRefetchStats(() => refetch.trigger());
  // The chart is a moving 30-second window: keep it moving when nothing happens.
  setInterval(() => refetch.trigger(), 1000);
  for (const topic of ["rules", "selection", "sim"] as const) on(topic, () => refetch.trigger());
}
