//! The run history: every kept run with its editable name, workload, rules and status;
//! click to chart it, tick to lay it over, export or delete it. The history's own warnings
//! (runs dropped to stay in bounds) are shown above the list.
import { api, events, toAppError } from "../api";
import type { RunHistory } from "../bindings/RunHistory";
import type { RunInfo } from "../bindings/RunInfo";
import { $, h } from "../dom";
import { algorithmLabel } from "../logic/algorithms";
import { fmtClock, fmtInt } from "../logic/format";
import { describeRule } from "../logic/rules";
import { overlaysOnSelect } from "../logic/compare";
import { fmtBytes, nextSelection, runStatusText } from "../logic/runs";
import { emit, on, state } from "../store";
import { renderSim } from "./workload";
import { warn } from "./banners";

export let history: RunHistory | null = null;

export function selectedRunInfo(): RunInfo | undefined {
  return history?.runs.find((r) => r.id === state.selectedRun);
}

export function runInfo(id: string): RunInfo | undefined {
  return history?.runs.find((r) => r.id === id);
}

/** Shows run `id` in the run card, as a click on it in the list does. */
export function selectRun(id: string) {
  select(id);
}

function select(id: string) {
  if (state.selectedRun === id) return;
  const previous = state.selectedRun;
  state.selectedRun = id;
  state.overlays = overlaysOnSelect(history?.runs.map((r) => r.id) ?? [], state.overlays, previous, id);
  state.selectedTarget = 0;
  state.selectedKey = null;
  render();
  emit("selection");
}

function nameEditor(run: RunInfo): { name: HTMLElement; rename: () => void } {
  const name = h("span", { className: "run-name", text: run.name, title: "Double-click to rename" });
  const rename = () => {
    const input = h("input", { className: "run-name-input", value: run.name, data: { testid: "run-name-input" } });
    const error = h("div", { className: "field-error" });
    const save = async () => {
      try {
        await api.runRename(run.id, input.value);
        await refresh();
      } catch (err) {
        error.textContent = toAppError(err).message;
        input.classList.add("invalid");
      }
    };
    input.addEventListener("click", (ev) => ev.stopPropagation());
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") void save();
      if (ev.key === "Escape") render();
    });
    input.addEventListener("blur", () => void save());
    name.replaceWith(h("div", { className: "stack grow" }, input, error));
    input.focus();
    input.select();
  };
  name.addEventListener("dblclick", (e) => {
    e.stopPropagation();
    rename();
  });
  return { name, rename };
}

function renderRun(run: RunInfo): HTMLElement {
  const selected = run.id === state.selectedRun;
  const overlay = h("input", { type: "checkbox", title: "Lay this run over the selected one", checked: state.overlays.includes(run.id), disabled: selected, data: { testid: "run-overlay" } });
  overlay.addEventListener("click", (e) => e.stopPropagation());
  overlay.addEventListener("change", () => {
    state.overlays = overlay.checked ? [...state.overlays, run.id] : state.overlays.filter((id) => id !== run.id);
    emit("selection");
  });
  const del = h("button", { type: "button", className: "ghost small danger", text: "Delete", title: "Delete this run from the history" });
  del.addEventListener("click", async (e) => {
    e.stopPropagation();
    try {
      history = await api.runDelete(run.id);
      afterHistory();
    } catch (err) {
      warn(`Could not delete run “${run.name}”: ${toAppError(err).message}`);
    }
  });
  const editor = nameEditor(run);
  const renameButton = h("button", { type: "button", className: "ghost small", text: "Rename", data: { testid: "run-rename" } });
  renameButton.addEventListener("click", (e) => {
    e.stopPropagation();
    editor.rename();
  });
  const status = runStatusText({ status: run.status });
  const rules = run.targets.map((t) => (t.naive ? "naive GET/SET beside" : `${algorithmLabel(t.rule.algorithm)} ${describeRule(t.rule)}`)).join(" · ");
  const li = h(
    "li",
    { className: "run-item" + (selected ? " selected" : ""), tabIndex: 0, data: { run: run.id, status: run.status } },
    h("div", { className: "run-line" }, overlay, editor.name, h("span", { className: `status-badge ${run.status}`, text: status })),
    h("div", { className: "run-desc", text: `${fmtClock(run.created_ms)} · ${run.workload}${run.fresh_state ? "" : " · continued state"}` }),
    h("div", { className: "run-desc", text: rules }),
    h("div", { className: "run-line small" }, h("span", { className: "hint", text: run.summary ? `${fmtInt(run.summary.requests_sent)} requests · ${fmtBytes(run.bytes)}` : fmtBytes(run.bytes) }), h("span", { className: "spacer" }), renameButton, del),
  );
  li.addEventListener("click", () => select(run.id));
  li.addEventListener("keydown", (e) => e.key === "Enter" && select(run.id));
  return li;
}

function render() {
  const list = $("run-list");
  const runs = history?.runs ?? [];
  $("history-size").textContent = history ? `${runs.length} of ${history.settings.max_runs} · ${fmtBytes(history.bytes)} of ${fmtBytes(history.settings.max_bytes)}` : "";
  const warnings = $("history-warnings");
  warnings.replaceChildren(...(history?.warnings ?? []).map((w) => h("div", { text: `⚠ ${w}` })));
  if (runs.length === 0) {
    list.replaceChildren(h("li", { className: "empty", text: "No runs yet." }));
    return;
  }
  list.replaceChildren(...runs.map(renderRun));
}

function afterHistory(finished?: string) {
  const ids = history?.runs.map((r) => r.id) ?? [];
  const before = state.selectedRun;
  state.selectedRun = nextSelection(ids, state.selectedRun, finished);
  state.overlays = overlaysOnSelect(ids, state.overlays, before, state.selectedRun);
  if (before !== state.selectedRun) {
    state.selectedTarget = 0;
    state.selectedKey = null;
  }
  render();
  emit("history");
  emit("selection");
}

export async function refresh(finished?: string) {
  try {
    history = await api.runsList();
  } catch (err) {
    warn(`The run history could not be read: ${toAppError(err).message}`);
  }
  afterHistory(finished);
}

export async function initHistory() {
  let runsFinished = 0;
  void events.onSimFinished(async (f) => {
    if (f.warnings.length) warn(...f.warnings);
    renderSim(await api.simStatus());
    const id = f.summary?.id;
    await refresh(id);
    // Counted where the E2E test can wait for the end of a run it started (and its history).
    document.body.dataset.runsFinished = String(++runsFinished);
  });
  on("sim", () => {
    // A run started: show it in the list as soon as the backend keeps it.
    if (state.sim?.running && !history?.runs.some((r) => r.status === "running")) void refresh();
  });
  await refresh();
}
