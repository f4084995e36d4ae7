/**
 * The dashboard's shared state and a tiny publish/subscribe: panels read the state and say
 * what changed; the others redraw. No framework: a handful of topics is all there is.
 */
import type { ConnectionStatus } from "./bindings/ConnectionStatus";
import type { Policy } from "./bindings/Policy";
import type { Rule } from "./bindings/Rule";
import type { SimStatus } from "./bindings/SimStatus";
import type { KeyChoice } from "./logic/keystate";
import type { ChartFocus } from "./logic/live";

export type Topic = "rules" | "policies" | "sim" | "connection" | "history" | "selection" | "key" | "chartKey" | "view";

export const state = {
  rules: [] as Rule[],
  policies: [] as Policy[],
  sim: null as SimStatus | null,
  conn: null as ConnectionStatus | null,
  /** What the live chart follows: the current or last run, or the user's rules. */
  liveFocus: "run" as ChartFocus,
  /** The run the run chart, summary and per-key view show (a history id). */
  selectedRun: null as string | null,
  /** Other runs laid over the selected one. */
  overlays: [] as string[],
  /** The selected run's target (rule) the per-key view is about. */
  selectedTarget: 0,
  /** The client key opened in the per-key view (an index into the run's keys). */
  selectedKey: null as number | null,
  /** The client key whose limiter state is drawn under the run chart (by name: it carries over). */
  chartKey: null as KeyChoice | null,
  /**
   * A demo preset's moment to open on: the first run that ends after `after` (ms since the
   * epoch) is zoomed to the busiest window of its `algorithm` (the boundary burst).
   */
  focusPeak: null as { after: number; algorithm: string } | null,
};

const listeners = new Map<Topic, Set<() => void>>();

export function on(topic: Topic, fn: () => void) {
  let set = listeners.get(topic);
  if (!set) listeners.set(topic, (set = new Set()));
  set.add(fn);
}

export function emit(topic: Topic) {
  for (const fn of listeners.get(topic) ?? []) fn();
}
