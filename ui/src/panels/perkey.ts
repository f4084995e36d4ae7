//! The per-key view: a table of the selected run's client keys for one rule (requests,
//! allowed, denied, % denied, first denial, longest denied streak), sortable, top offenders
//! first; a key opens its state over time and its decisions, each one inspectable.
import type uPlot from "uplot";
import { toAppError } from "../api";
import { stateChart } from "../charts/state";
import { $, h } from "../dom";
import { algorithmLabel } from "../logic/algorithms";
import { fmtInt, fmtOffset } from "../logic/format";
import { keyDecisions, perKey, sortKeys, type KeyColumn, type KeyRow } from "../logic/perkey";
import { keyStateLine } from "../logic/keystate";
import { OUTCOME, spanMs, type Records } from "../logic/records";
import { emit, on, state } from "../store";
import { inspect } from "./inspector";
import { records } from "./run";

/** Rows shown at first (the top offenders); "Show 500 more" and "Show all" add the rest. */
const FIRST_ROWS = 15;
const PAGE_ROWS = 500;
let shownRows = FIRST_ROWS;
const MAX_DECISIONS = 400;

const COLUMNS: { key: KeyColumn; label: string; num: boolean }[] = [
  { key: "name", label: "Key", num: false },
  { key: "requests", label: "Requests", num: true },
  { key: "allowed", label: "Allowed", num: true },
  { key: "denied", label: "Denied", num: true },
  { key: "failOpen", label: "Fail-open", num: true },
  { key: "deniedShare", label: "% denied", num: true },
  { key: "firstDeniedMs", label: "First denial", num: true },
  { key: "longestDeniedStreak", label: "Longest streak", num: true },
];

/** A policy's keys add their tier and which limits denied them. */
const POLICY_COLUMNS: { key: KeyColumn; label: string; num: boolean }[] = [
  { key: "tier", label: "Tier", num: false },
  { key: "deniedBy", label: "Denied by", num: false },
];

const columns = () => (rec?.targets[state.selectedTarget]?.policy ? [...COLUMNS, ...POLICY_COLUMNS] : COLUMNS);

let sort: { column: KeyColumn; dir: "asc" | "desc" } = { column: "denied", dir: "desc" };
let rows: KeyRow[] = [];
let rec: Records | null = null;
let plot: uPlot | undefined;
let seq = 0;

function renderTargets() {
  const select = $<HTMLSelectElement>("perkey-target");
  const targets = rec?.targets ?? [];
  select.replaceChildren(...targets.map((t, i) => new Option(`${t.rule.name} (${t.policy ? "policy" : t.naive ? "naive" : algorithmLabel(t.rule.algorithm)})`, String(i))));
  select.value = String(state.selectedTarget);
}

function renderTable() {
  const table = $("perkey-table");
  const sorted = sortKeys(rows, sort.column, sort.dir);
  const head = h(
    "tr",
    {},
    ...columns().map((c) => {
      const arrow = sort.column === c.key ? (sort.dir === "desc" ? " ▼" : " ▲") : "";
      const th = h("th", { className: (c.num ? "num " : "") + "sortable", text: c.label + arrow, data: { column: c.key } });
      th.addEventListener("click", () => {
        sort = { column: c.key, dir: sort.column === c.key && sort.dir === "desc" ? "asc" : c.key === "name" ? "asc" : "desc" };
        renderTable();
      });
      return th;
    }),
  );
  const shown = Math.min(shownRows, sorted.length);
  const body = sorted.slice(0, shown).map((r) => {
    const tr = h(
      "tr",
      { className: "key-row" + (state.selectedKey === r.key ? " selected" : ""), tabIndex: 0, data: { key: r.name } },
      h("td", { className: "mono", text: r.name }),
      h("td", { className: "num", text: fmtInt(r.requests) }),
      h("td", { className: "num", text: fmtInt(r.allowed) }),
      h("td", { className: "num" + (r.denied > 0 ? " bad-soft" : ""), text: fmtInt(r.denied) }),
      h("td", { className: "num" + (r.failOpen > 0 ? " warn" : ""), text: fmtInt(r.failOpen) }),
      h("td", { className: "num", text: `${(r.deniedShare * 100).toFixed(1)} %` }),
      h("td", { className: "num", text: r.firstDeniedMs === undefined ? "—" : fmtOffset(r.firstDeniedMs) }),
      h("td", { className: "num", text: fmtInt(r.longestDeniedStreak) }),
      ...(r.tier === undefined ? [] : [h("td", { text: r.tier || "(own limits)" }), h("td", { className: "mono", text: r.deniedBy || "—" })]),
    );
    const open = () => {
      state.selectedKey = r.key;
      renderTable();
      renderDetail();
    };
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (e) => e.key === "Enter" && open());
    return tr;
  });
  const more: HTMLElement[] = [];
  const left = sorted.length - shown;
  if (left > 0) {
    const td = h("td", { colSpan: columns().length, className: "hint" }, `${fmtInt(left)} more keys. `);
    const button = (text: string, rows: number, testid: string) => {
      const b = h("button", { type: "button", className: "ghost small", text, data: { testid } });
      b.addEventListener("click", () => {
        shownRows = rows;
        renderTable();
      });
      return b;
    };
    if (left > PAGE_ROWS) td.append(button(`Show ${fmtInt(PAGE_ROWS)} more`, shown + PAGE_ROWS, "keys-more"), " ");
    td.append(button(`Show all ${fmtInt(sorted.length)}`, sorted.length, "keys-all"));
    more.push(h("tr", {}, td));
  }
  table.replaceChildren(h("thead", {}, head), h("tbody", {}, ...body, ...more));
}

function renderDetail() {
  const detail = $("perkey-detail");
  plot?.destroy();
  plot = undefined;
  if (!rec || state.selectedKey === null) {
    detail.replaceChildren(h("div", { className: "empty", text: rows.length ? "Click a key to see its limiter state over time and its decisions." : "No keys for this rule." }));
    return;
  }
  const r = rec;
  const t = state.selectedTarget;
  const k = state.selectedKey;
  const target = r.targets[t];
  const line = keyStateLine(r, { target: t, name: r.keys[k] }, spanMs(r) / 1000);
  const label = line?.label ?? "remaining";
  const chartEl = h("div", { className: "state-chart" });
  const decisions = keyDecisions(r, t, k);
  const list = h(
    "ol",
    { className: "decisions", data: { testid: "key-decisions" } },
    ...decisions.slice(0, MAX_DECISIONS).map((d) => {
      const verdict = d.outcome === OUTCOME.allowed ? "allowed" : d.outcome === OUTCOME.denied ? "denied" : "fail-open";
      const li = h(
        "li",
        { className: `decision ${verdict}`, tabIndex: 0, ariaLabel: "Show in the decision inspector" },
        h("span", { className: "mono", text: fmtOffset(d.t_ms) }),
        h("span", { className: "verdict", text: verdict + (d.attempt > 0 ? ` (retry ${d.attempt})` : "") }),
        h("span", { className: "mono hint", text: d.outcome === OUTCOME.denied ? `retry after ${fmtInt(d.retry_after_ms)} ms` : `${fmtInt(d.remaining)} left` }),
      );
      li.addEventListener("click", () => void inspect(r, d.index));
      li.addEventListener("keydown", (e) => e.key === "Enter" && void inspect(r, d.index));
      return li;
    }),
  );
  const more = decisions.length > MAX_DECISIONS ? h("div", { className: "hint", text: `First ${MAX_DECISIONS} of ${fmtInt(decisions.length)} decisions.` }) : "";
  const onChart = h("button", { type: "button", className: "secondary small", text: "Show on the run chart", data: { testid: "key-to-chart" }, disabled: target.naive });
  onChart.addEventListener("click", () => {
    state.chartKey = { target: t, name: r.keys[k] };
    emit("chartKey");
    document.getElementById("run-card")?.scrollIntoView?.({ block: "start", behavior: "smooth" });
  });
  detail.replaceChildren(
    h("div", { className: "row" }, h("h3", { text: `${r.keys[k]} on ${target.rule.name}`, data: { testid: "key-title" } }), h("span", { className: "spacer" }), onChart),
    h("div", { className: "hint", text: `${label} after each decision (the dashed line: the most it can hold)` }),
    chartEl,
    h("h3", { text: "Decisions" }),
    list,
    more,
  );
  if (line) plot = stateChart(chartEl, line, { width: Math.max(240, chartEl.clientWidth), height: 160 });
}

async function load() {
  const mine = ++seq;
  const id = state.selectedRun;
  if (!id) {
    rec = null;
    rows = [];
  } else {
    try {
      const r = await records(id);
      if (mine !== seq) return;
      rec = r;
      if (state.selectedTarget >= r.targets.length) state.selectedTarget = 0;
      if (r !== rec) shownRows = FIRST_ROWS;
      rows = r.targets.length ? perKey(r, state.selectedTarget) : [];
    } catch (err) {
      if (mine !== seq) return;
      rec = null;
      rows = [];
      $("perkey-detail").replaceChildren(h("div", { className: "error", text: toAppError(err).message }));
    }
  }
  renderTargets();
  renderTable();
  renderDetail();
}

export function initPerKey() {
  $("perkey-target").addEventListener("change", () => {
    state.selectedTarget = Number($<HTMLSelectElement>("perkey-target").value);
    state.selectedKey = null;
    emit("key");
  });
  on("key", () => void load());
  on("selection", () => void load());
}
