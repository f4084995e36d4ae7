//! The kept replays, in the Replay panel: every replay the run history holds (it survives a
//! restart), with its editable name, the log it read (name, size, SHA-256 prefix), its rules
//! and how it ended; open one to show its results and export them again, or delete it.
import { api, toAppError } from "../api";
import type { ReplayRunInfo } from "../bindings/ReplayRunInfo";
import type { ReplayStatus } from "../bindings/ReplayStatus";
import { $, h } from "../dom";
import { algorithmLabel } from "../logic/algorithms";
import { fmtClock, fmtInt } from "../logic/format";
import { describeRule } from "../logic/rules";
import { fmtBytes, runStatusText } from "../logic/runs";

let replays: ReplayRunInfo[] = [];
let shown: string | null = null;
let open: (status: ReplayStatus) => void = () => undefined;

function nameInput(r: ReplayRunInfo): HTMLElement {
  const input = h("input", { className: "run-name-input grow", value: r.name, title: "The replay's name: edit and press Enter", data: { testid: "replay-kept-name" } });
  const error = h("div", { className: "field-error" });
  const save = async () => {
    if (input.value === r.name) return;
    try {
      r.name = (await api.replayRename(r.id, input.value)).name;
      input.value = r.name;
      // What the backend kept (the E2E test waits on it).
      input.dataset.saved = r.name;
      input.classList.remove("invalid");
      error.textContent = "";
    } catch (err) {
      error.textContent = toAppError(err).message;
      input.classList.add("invalid");
    }
  };
  input.addEventListener("keydown", (ev) => ev.key === "Enter" && void save());
  input.addEventListener("blur", () => void save());
  return h("div", { className: "stack grow" }, input, error);
}

function item(r: ReplayRunInfo): HTMLElement {
  const reopen = h("button", { type: "button", className: "ghost small", text: "Open", disabled: r.status === "running", data: { testid: "replay-kept-open" } });
  reopen.addEventListener("click", async () => {
    try {
      shown = r.id;
      open(await api.replayReopen(r.id));
      render();
    } catch (err) {
      $("replay-note").textContent = toAppError(err).message;
    }
  });
  const del = h("button", { type: "button", className: "ghost small danger", text: "Delete", disabled: r.status === "running" });
  del.addEventListener("click", async () => {
    try {
      replays = (await api.runDelete(r.id)).replays;
      render();
    } catch (err) {
      $("replay-note").textContent = toAppError(err).message;
    }
  });
  const rules = r.rules.map((rule) => `${rule.name}: ${algorithmLabel(rule.algorithm)} ${describeRule(rule)}`).join(" · ");
  const ended = r.error ? ` · ${r.error.message}` : "";
  return h(
    "li",
    { className: "run-item" + (r.id === shown ? " selected" : ""), data: { replay: r.id, status: r.status } },
    h("div", { className: "run-line" }, nameInput(r), h("span", { className: `status-badge ${r.status}`, text: runStatusText({ status: r.status }) })),
    h("div", { className: "run-desc", text: `${fmtClock(r.created_ms)} · ${r.log.name} (${fmtBytes(r.log.bytes)}, sha256 ${r.log.sha256.slice(0, 12)}…)`, title: `${r.log.path}\nsha256 ${r.log.sha256}` }),
    h("div", { className: "run-desc", text: rules }),
    h("div", { className: "run-line small" }, h("span", { className: "hint", text: `${r.requests == null ? "no report" : `${fmtInt(r.requests)} requests`} · ${fmtBytes(r.bytes)}${ended}` }), h("span", { className: "spacer" }), reopen, del),
  );
}

function render() {
  const list = $("replay-kept");
  list.replaceChildren(...(replays.length ? replays.map(item) : [h("li", { className: "empty", text: "No replays kept yet." })]));
}

/** Reads the list again (after a replay ends, and at start). `current`: the replay shown. */
export async function refreshKept(current?: string | null) {
  if (current !== undefined) shown = current;
  try {
    replays = (await api.runsList()).replays;
  } catch (err) {
    $("replay-note").textContent = `The kept replays could not be read: ${toAppError(err).message}`;
  }
  render();
}

/** `show` puts a reopened replay in the panel. */
export async function initKept(show: (status: ReplayStatus) => void) {
  open = show;
  await refreshKept();
}
