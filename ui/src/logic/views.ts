//! The app's views (design.md, "one job per view"): which exist, which one a start opens on,
//! and what each keeps while another is shown: the workload it was given and the run it showed.
//! No DOM here: ../views.ts applies it.

export const VIEWS = ["compare", "simulate", "replay", "policies", "watch", "runs"] as const;
export type View = (typeof VIEWS)[number];

/** Where the last view shown is remembered (localStorage). */
export const VIEW_KEY = "ratelockr.view";

/** The view a first start opens on: the demos. */
export const FIRST_VIEW: View = "compare";

export function isView(v: unknown): v is View {
  return typeof v === "string" && (VIEWS as readonly string[]).includes(v);
}

/** The view to open on: the one remembered, if it still exists; else Compare. */
export function startView(stored: string | null | undefined): View {
  return isView(stored) ? stored : FIRST_VIEW;
}

/** The workload target that means "the five algorithms side by side" (logic/workload.ts). */
export const COMPARE_TARGET = "__compare";

/** Views that hold the workload form: each keeps its own values of it. */
export const WORKLOAD_VIEWS: readonly View[] = ["compare", "simulate"];

/**
 * The target a view's workload runs against. Compare: always the five algorithms. Simulate: the
 * rule or policy it had, while it is still offered; else the first rule or policy offered; the
 * comparison only when there is neither.
 */
export function targetFor(view: View, kept: string | undefined, offered: readonly string[]): string {
  if (view !== "simulate") return COMPARE_TARGET;
  const own = offered.filter((t) => t !== COMPARE_TARGET);
  if (kept !== undefined && kept !== COMPARE_TARGET && own.includes(kept)) return kept;
  return own[0] ?? COMPARE_TARGET;
}

/** A run as the views see it: its id and the rules it ran (a compare run's are `compare-…`). */
export interface RunLike {
  id: string;
  rules: readonly string[];
}

/** Which workload view a run belongs to: Compare for the five algorithms, else Simulate. */
export function runView(run: RunLike): View {
  return run.rules.length > 0 && run.rules.every((r) => r.startsWith("compare-") || r.startsWith("naive")) ? "compare" : "simulate";
}

/**
 * The run a view shows when it is shown again: the one it showed last, while it is still kept;
 * for Compare and Simulate with none yet, their newest own run (`runs` newest first); else
 * undefined (leave the selection as it is).
 */
export function runFor(view: View, kept: string | undefined, runs: readonly RunLike[]): string | undefined {
  if (kept !== undefined && runs.some((r) => r.id === kept)) return kept;
  if (!WORKLOAD_VIEWS.includes(view)) return undefined;
  return runs.find((r) => runView(r) === view)?.id;
}

/** What each view keeps while hidden. */
export interface Kept {
  /** The workload form's values, by field (`data-wf`, and `name` for the run's name). */
  form?: Record<string, string | boolean>;
  /** The run it showed (a history id). */
  run?: string;
}

/** Per view, what it keeps: saved when it is left, given back when it is shown again. */
export class ViewMemory {
  private kept = new Map<View, Kept>();

  save(view: View, what: Kept) {
    this.kept.set(view, { ...this.kept.get(view), ...what });
  }

  get(view: View): Kept {
    return this.kept.get(view) ?? {};
  }
}
