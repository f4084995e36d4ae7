/**
 * The views and the navigation (design.md, "one job per view"): one view shown at a time, from
 * the tabs in the header; the last one shown is remembered. The workload, run, per-key and
 * inspector cards serve Compare, Simulate and Runs alike: they move into the shown view's slot of
 * the same name (`data-slot`), and each of those views keeps its own workload and run while
 * another is shown. The connection pill opens the settings (connection, metrics endpoint).
 */
import "./views.css";
import { $ } from "./dom";
import { history, selectRun } from "./panels/history";
import { emit, on, state } from "./store";
import {
  COMPARE_TARGET,
  runFor,
  startView,
  VIEW_KEY,
  VIEWS,
  ViewMemory,
  WORKLOAD_VIEWS,
  targetFor,
  type Kept,
  type View,
} from "./logic/views";

/** The cards shared by several views, by slot name. */
const SHARED: Record<string, string> = { workload: "sim-card", run: "run-card", perkey: "perkey-card", inspector: "inspector-card" };

const memory = new ViewMemory();
/** Whether Compare's workload form is folded (Simulate's never is: its form is its job). */
let compareFolded = false;
let current: View | undefined;

const viewEl = (v: View) => $(`view-${v}`);

/** The workload form's fields: its `data-wf` inputs and the run's name. */
function formFields(): (HTMLInputElement | HTMLSelectElement)[] {
  return [...$("sim-card").querySelectorAll<HTMLInputElement | HTMLSelectElement>("[data-wf], #sim-name")];
}
const fieldKey = (el: HTMLInputElement | HTMLSelectElement) => el.dataset.wf ?? el.id;

function readFields(): Record<string, string | boolean> {
  return Object.fromEntries(formFields().map((el) => [fieldKey(el), el instanceof HTMLInputElement && el.type === "checkbox" ? el.checked : el.value]));
}

/** Writes `values` into the form, the target first (it decides which other fields exist). */
function writeFields(values: Record<string, string | boolean>) {
  const fields = formFields();
  const target = fields.find((el) => el.dataset.wf === "target");
  const ordered = target ? [target, ...fields.filter((el) => el !== target)] : fields;
  for (const el of ordered) {
    const v = values[fieldKey(el)];
    if (v === undefined) continue;
    if (el instanceof HTMLInputElement && el.type === "checkbox") el.checked = Boolean(v);
    else el.value = String(v);
    // The workload panel follows edits (which fields show, the sweep's parameters, the preview).
    el.dispatchEvent(new Event("change", { bubbles: true }));
  }
}

function offeredTargets(): string[] {
  return [...$<HTMLSelectElement>("sim-target").options].map((o) => o.value);
}

/** Points the workload at the view's own target (Compare: the five algorithms). */
function settleTarget(view: View) {
  const select = $<HTMLSelectElement>("sim-target");
  const want = targetFor(view, memory.get(view).form?.target as string | undefined ?? select.value, offeredTargets());
  if (select.value !== want) {
    select.value = want;
    select.dispatchEvent(new Event("change", { bubbles: true }));
  }
}

function runsNewestFirst() {
  return (history?.runs ?? []).map((r) => ({ id: r.id, rules: r.targets.filter((t) => !t.naive).map((t) => t.rule.name) }));
}

function leave(view: View) {
  const kept: Kept = { run: state.selectedRun ?? undefined };
  if (WORKLOAD_VIEWS.includes(view)) kept.form = readFields();
  memory.save(view, kept);
}

function enter(view: View) {
  const el = viewEl(view);
  // The shared cards this view has a slot for come into it.
  for (const slot of el.querySelectorAll<HTMLElement>("[data-slot]")) {
    const card = document.getElementById(SHARED[slot.dataset.slot!] ?? "");
    if (card && card.parentElement !== slot) slot.append(card);
  }
  const kept = memory.get(view);
  if (WORKLOAD_VIEWS.includes(view)) {
    foldForm(view === "compare" && compareFolded);
    if (kept.form) writeFields(kept.form);
    settleTarget(view);
  }
  const run = runFor(view, kept.run, runsNewestFirst());
  if (run && run !== state.selectedRun) selectRun(run);
}

/** Shows `view` alone; the one shown before keeps its state. */
export function showView(view: View) {
  if (view === current) return;
  if (current) leave(current);
  for (const v of VIEWS) {
    viewEl(v).classList.toggle("hidden", v !== view);
    const tab = $(`nav-${v}`);
    tab.classList.toggle("active", v === view);
    if (v === view) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  current = view;
  document.body.dataset.view = view;
  enter(view);
  try {
    localStorage.setItem(VIEW_KEY, view);
  } catch {
    // No storage (a locked-down webview): the view is simply not remembered.
  }
  emit("view");
}

export function currentView(): View | undefined {
  return current;
}

function openSettings(open: boolean) {
  $("settings").classList.toggle("hidden", !open);
  $("conn-pill").setAttribute("aria-expanded", String(open));
}

/** The view the run under way was started from: its run, when it ends, is that view's. */
let startedIn: View | undefined;
/** The run selected before the last change of selection. */
let lastSelected: string | null = null;

/**
 * A run that ends is selected (history.ts). It belongs to the view it was started from: that
 * view shows it when shown again, and Compare or Simulate, shown meanwhile, keeps its own run.
 */
function followFinished() {
  const id = state.selectedRun;
  const before = lastSelected;
  lastSelected = id;
  if (!startedIn || state.sim?.running || !id || id !== history?.runs[0]?.id) return;
  const owner = startedIn;
  startedIn = undefined;
  if (owner === current) return;
  memory.save(owner, { run: id });
  if (current && WORKLOAD_VIEWS.includes(current) && before && before !== id && history?.runs.some((r) => r.id === before)) selectRun(before);
}

/**
 * Folds the workload form to its one-line description (and its run button), or unfolds it. In
 * Compare a run folds it, so the chart and its numbers take the window.
 */
function foldForm(fold: boolean) {
  if (current === "compare") compareFolded = fold;
  $("sim-card").classList.toggle("folded", fold);
  const button = $("sim-fold");
  button.setAttribute("aria-expanded", String(!fold));
  button.textContent = fold ? "Edit the workload" : "Hide the form";
}

export function initViews() {
  $("sim-fold").addEventListener("click", () => foldForm(!$("sim-card").classList.contains("folded")));
  // A demo filled in (its name, not its ▶) is there to be looked at: the form opens.
  $("presets").addEventListener("click", (e) => {
    if ((e.target as HTMLElement).closest("[data-preset]")) foldForm(false);
  });
  let running = false;
  on("sim", () => {
    const now = Boolean(state.sim?.running);
    if (now && !running) {
      if (current === "compare") foldForm(true);
      startedIn = current;
    }
    running = now;
  });
  on("selection", followFinished);
  for (const v of VIEWS) $(`nav-${v}`).addEventListener("click", () => showView(v));
  const pill = $("conn-pill");
  pill.addEventListener("click", () => openSettings($("settings").classList.contains("hidden")));
  $("settings-close").addEventListener("click", () => openSettings(false));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !$("settings").classList.contains("hidden")) openSettings(false);
  });
  // A rule or policy made while Simulate is shown becomes its target: it was made to be run.
  let known = new Set(offeredTargets());
  const retarget = () => {
    const offered = offeredTargets();
    const made = offered.find((t) => !known.has(t));
    known = new Set(offered);
    if (current !== "simulate") return;
    const select = $<HTMLSelectElement>("sim-target");
    if (made !== undefined && made !== select.value) {
      select.value = made;
      select.dispatchEvent(new Event("change", { bubbles: true }));
    } else if (select.value === COMPARE_TARGET) settleTarget("simulate");
  };
  on("rules", retarget);
  on("policies", retarget);
  let stored: string | null = null;
  try {
    stored = localStorage.getItem(VIEW_KEY);
  } catch {
    stored = null;
  }
  showView(startView(stored));
}
