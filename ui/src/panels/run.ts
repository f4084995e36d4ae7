//! The run card: the selected run's chart (with overlays), its summary with latency labelled
//! for what it measures, and its exports.
import { api, toAppError } from "../api";
import type { SummaryRow } from "../bindings/SummaryRow";
import type { PeakWindow } from "../bindings/PeakWindow";
import type { RunInfo } from "../bindings/RunInfo";
import type { RunRecords } from "../bindings/RunRecords";
import { RunChart, type Pick } from "../charts/run";
import { $, h } from "../dom";
import { algorithmLabel, policyMakeup } from "../logic/algorithms";
import { compareRows, type CompareRow } from "../logic/compare";
import { fmtInt, fmtMicros, fmtOffset, fmtPercent } from "../logic/format";
import { inFlightPlot, type InFlightPlot } from "../logic/inflight";
import { burstAndRate, peakCount, peakExceeds, peakText, PROMISE_NOTE, spanText } from "../logic/peak";
import { recordIndices, OUTCOME } from "../logic/records";
import { runStatusText } from "../logic/runs";
import { buildRunView, markPeaks, type Layout, type Measure, type RunData } from "../logic/runview";
import { on, state } from "../store";
import { runInfo, selectedRunInfo } from "./history";
import { heatmapTables } from "./heatmap";
import { inspect } from "./inspector";
import { drawKeyState, initKeyState, shownKeyState } from "./keystate";
import { exportView } from "../logic/exportview";
import type { RunView } from "../logic/runview";

const view = { measure: "bin" as Measure, layout: "panels" as Layout };

/** Records of recently shown runs: a run's records do not change once it ended. */
const cache = new Map<string, RunRecords>();
export async function records(id: string): Promise<RunRecords> {
  const hit = cache.get(id);
  if (hit) return hit;
  const rec = await api.runRecords(id);
  if (runInfo(id)?.status !== "running") {
    cache.set(id, rec);
    while (cache.size > 6) cache.delete(cache.keys().next().value!);
  }
  return rec;
}

let chart: RunChart;
/** The run the chart shows now. */
let chartRun: string | undefined;
let drawSeq = 0;
/** What the chart shows now (for the export), with the run it is about. */
let drawn: { run: string; view: RunView; measure: Measure; inFlight?: InFlightPlot } | undefined;

async function draw() {
  const seq = ++drawSeq;
  const run = selectedRunInfo();
  drawn = undefined;
  renderHead(run);
  renderSummary(run);
  if (state.overlays.length === 0) $("compare").replaceChildren();
  if (!run) {
    chart.clear("Run a simulation: its own timeline appears here and stays.");
    chartRun = undefined;
    drawKeyState(chart, undefined, undefined, 0);
    return;
  }
  // Another run's chart must not sit under this run's title while its records load (a large
  // run takes a while): say what is coming instead.
  if (chartRun !== run.id && !cache.has(run.id)) {
    chart.clear(`Loading ${run.name}…`);
    chartRun = undefined;
  }
  try {
    const ids = [run.id, ...state.overlays];
    const data: RunData[] = [];
    for (const id of ids) data.push({ id, name: runInfo(id)?.name ?? id, records: await records(id) });
    if (seq !== drawSeq) return;
    if (data[0].records.t_ms.length === 0) {
      chart.clear(run.status === "running" ? "Running… the chart appears when the run ends." : "This run has no decisions to chart.");
      chartRun = undefined;
      drawKeyState(chart, undefined, undefined, 0);
      return;
    }
    renderCompare(data);
    const peaks = new Map((run.summary?.rows ?? []).flatMap((r) => (r.peak_window ? [[r.rule, { ...r.peak_window, burst: burstOf(run.id, r.rule) }] as const] : [])));
    const v = markPeaks(buildRunView(data, { ...view, envelope: true }), peaks);
    $("run-bin").textContent = `bins of ${v.binMs} ms`;
    const inFlight = inFlightPlot(data[0].records);
    chart.show(v, view.measure, inFlight);
    chartRun = run.id;
    openOnPeak(run);
    drawn = { run: run.id, view: v, measure: view.measure, inFlight };
    drawKeyState(chart, run.id, data[0].records, v.x[v.x.length - 1] ?? 0);
  } catch (err) {
    if (seq === drawSeq) {
      chart.clear(`The run could not be charted: ${toAppError(err).message}`);
      drawKeyState(chart, undefined, undefined, 0);
    }
  }
}

function renderHead(run: RunInfo | undefined) {
  $("run-title").textContent = run ? run.name : "";
  $("run-title").title = run ? run.name : "";
  for (const id of ["export-csv", "export-png", "export-svg"]) $<HTMLButtonElement>(id).disabled = !run || run.status === "running";
  for (const b of document.querySelectorAll<HTMLElement>("[data-measure]")) b.classList.toggle("active", b.dataset.measure === view.measure);
  for (const b of document.querySelectorAll<HTMLElement>("[data-layout]")) b.classList.toggle("active", b.dataset.layout === view.layout);
}

const ROUND_TRIP = "Client-observed time per decision, send to reply: includes queueing in the simulated servers and the connection, not only Redis.";

/** GCRA's burst for `rule` of run `id` (its peak's promise: burst + rate). */
/** A row's algorithm: a policy's by what it is made of (its limits, its delay). */
function algorithmCell(r: SummaryRow, id: string | undefined): string {
  const policy = r.algorithm === "policy" && id ? runInfo(id)?.targets.find((t) => t.rule.name === r.rule)?.policy : undefined;
  return policy ? `Policy: ${policyMakeup(policy)}` : algorithmLabel(r.algorithm);
}

function burstOf(id: string, rule: string): number | undefined {
  const r = runInfo(id)?.targets.find((t) => t.rule.name === rule)?.rule;
  return r?.algorithm === "gcra" ? r.burst : undefined;
}

/**
 * "60 / 40 in 2 s", marked when the window held more than the rule promises; a token bucket's
 * or GCRA's "78 / 40 + 40 in 2 s" said as their burst + rate; where it is on hover.
 */
function peakCell(p: PeakWindow | undefined, algorithm: string, burst: number | undefined) {
  if (!p) return h("td", { className: "num", text: "–" });
  const over = peakExceeds(p, algorithm, burst);
  const promised = burstAndRate(algorithm) && !over;
  const words = `${peakCount(p, algorithm, burst, fmtInt)} `;
  return h(
    "td",
    {
      className: "num peak" + (over ? " warn" : promised ? " promised" : ""),
      title: `${peakText(p)}: from ${(p.start_ms / 1000).toFixed(3)} s, key ${p.key}` + (promised ? `. A ${algorithmLabel(algorithm).toLowerCase()} promises its burst at once plus its rate over the window: ${PROMISE_NOTE}.` : ""),
      data: { testid: "peak-window" },
    },
    words,
    h("small", { text: `in ${spanText(p.window_ms)}` + (promised ? " · burst + rate" : "") }),
  );
}

function renderSummary(run: RunInfo | undefined) {
  const el = $("summary");
  const s = run?.summary;
  if (!run || !s) {
    el.replaceChildren(run?.error ? h("div", { className: "error", text: run.error.message }) : h("div", { className: "empty", text: run ? "No summary yet." : "No run yet." }));
    return;
  }
  // Retries (a retry storm's) only when there were any: the columns stay where the E2E reads them.
  const retries = s.rows.some((r) => r.retries > 0);
  // In flight only for a run with holds, likewise.
  const inFlight = s.rows.some((r) => r.peak_in_flight !== undefined);
  const head = ["Rule", "Algorithm", "Requests", "Allowed", "Denied", "Fail-open", "Over-admitted", "Peak in a window", ...(inFlight ? ["Most in flight"] : []), "p50", "p99", ...(retries ? ["Retries"] : [])];
  const titles: Record<string, string> = {
    "Peak in a window": "The most admitted for one client key in any window of the rule's length, against the rule's limit.",
    "Most in flight": "The most requests one client key had in flight at once: from an admitted request's answer until its hold ended.",
    p50: ROUND_TRIP,
    p99: ROUND_TRIP,
  };
  const thead = h(
    "thead",
    {},
    h(
      "tr",
      {},
      ...head.map((t, i) =>
        h("th", {
          className: i >= 2 ? "num" : "",
          text: t === "p50" || t === "p99" ? `${t} round trip` : t,
          title: titles[t] ?? "",
        }),
      ),
    ),
  );
  const body = h(
    "tbody",
    {},
    ...s.rows.map((r) => {
      const pct = (n: number) => h("small", { text: fmtPercent(n, r.requests) });
      const tr = h(
        "tr",
        { data: { rule: r.rule }, className: s.sweep_choice?.rule === r.rule ? "chosen" : "" },
        h("td", { text: r.rule }),
        h("td", { text: r.naive ? `${algorithmLabel("naive_get_set")}` : algorithmCell(r, run?.id) }),
        h("td", { className: "num", text: fmtInt(r.requests) }),
        h("td", { className: "num" }, fmtInt(r.allowed), " ", pct(r.allowed)),
        h("td", { className: "num" }, fmtInt(r.denied), " ", pct(r.denied), ...deniedBy(r)),
        h("td", { className: "num" + (r.fail_open > 0 ? " warn" : ""), text: fmtInt(r.fail_open) }),
        h("td", { className: "num" + (r.over_admitted > 0 ? " bad" : ""), text: fmtInt(r.over_admitted) }),
        peakCell(r.peak_window, r.algorithm, run ? burstOf(run.id, r.rule) : undefined),
        ...(inFlight ? [h("td", { className: "num", text: r.peak_in_flight === undefined ? "–" : fmtInt(r.peak_in_flight), data: { testid: "most-in-flight" } })] : []),
        h("td", { className: "num", text: fmtMicros(r.latency_p50_us) }),
        h("td", { className: "num", text: fmtMicros(r.latency_p99_us) }),
        ...(retries ? [h("td", { className: "num", text: fmtInt(r.retries) })] : []),
      );
      return tr;
    }),
  );
  const status = runStatusText(s);
  const caption = h("div", {
    className: "summary-caption",
    text: `${status} · ${s.workload} — ${fmtInt(s.requests_sent)} requests in ${(s.duration_ms / 1000).toFixed(1)} s (${fmtInt(s.achieved_rps)} req/s)`,
    data: { status: status.toLowerCase() },
  });
  const cost = s.redis_cost;
  const latency = h("div", {
    className: "hint latency-note",
    text:
      "p50/p99: the round trip each simulated server saw per decision (queueing, connection and Redis). " +
      (cost
        ? `Redis-side: ${fmtMicros(cost.usec_per_call)} per script call over ${fmtInt(cost.calls)} calls (INFO commandstats, evalsha; the whole server, other clients included).`
        : "Redis-side script time was not measured for this run."),
    data: { testid: "latency-note" },
  });
  const sweep = s.sweep?.length
    ? [
        ...(s.sweep_choice ? [h("p", { className: "sweep-choice", text: sentence(s.sweep_choice.sentence), data: { testid: "sweep-choice" } })] : []),
        h("div", { className: "run-heatmaps" }, ...heatmapTables(s.sweep, "Sweep")),
      ]
    : [];
  // A column more (requests in flight): a size smaller, so that rows stay one line each.
  el.replaceChildren(caption, h("table", { className: inFlight ? "summary wide" : "summary" }, thead, body), ...sweep, latency);
}

/** A policy's denials by limit under its denied count: "by daily 12, per-second 3"; a shadow policy's would-be denials. */
function deniedBy(r: { denied_by?: Record<string, number>; shadow_denied?: number }): HTMLElement[] {
  const by = Object.entries(r.denied_by ?? {}).sort((a, b) => b[1] - a[1]);
  if (by.length === 0) return [];
  const text = by.map(([limit, n]) => `${limit} ${fmtInt(n)}`).join(", ");
  const shadow = (r.shadow_denied ?? 0) > 0;
  return [h("div", { className: "denied-by", data: { testid: "denied-by" }, text: shadow ? `would deny ${fmtInt(r.shadow_denied ?? 0)}: ${text}` : `by ${text}` })];
}

/**
 * A demo preset's run opens on its moment: zoomed to its algorithm's busiest window with room
 * either side (the boundary burst, marked with its count), once, when the run has ended.
 */
function openOnPeak(run: RunInfo) {
  const focus = state.focusPeak;
  if (!focus || run.status === "running" || run.created_ms < focus.after) return;
  state.focusPeak = null;
  const peak = run.summary?.rows.find((r) => r.algorithm === focus.algorithm)?.peak_window;
  if (!peak) return;
  const from = peak.start_ms / 1000;
  const span = peak.window_ms / 1000;
  chart.zoomTo(Math.max(0, from - span / 2), from + span * 1.5);
}

/** "capacity 20 is …" as a sentence on screen: capitalized, with its full stop. */
function sentence(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

/** Every run on the chart in one table, the selected run first: what tuning is judged by. */
function renderCompare(data: RunData[]) {
  const el = $("compare");
  const runs = data.flatMap((d) => {
    const rows = runInfo(d.id)?.summary?.rows;
    return rows ? [{ id: d.id, name: d.name, rows, records: d.records }] : [];
  });
  if (data.length < 2 || runs.length < 2) {
    el.replaceChildren();
    return;
  }
  const rows = compareRows(runs);
  const head = ["Run", "Rule", "Allowed", "Denied", "Keys denied", "Fail-open", "Peak in a window", "Worst wait"];
  const titles: Record<string, string> = {
    "Keys denied": "Client keys denied at least once, of the keys that sent to the rule.",
    "Peak in a window": "The most admitted for one client key in any window of the rule's length, against the rule's limit.",
    "Worst wait": "The longest Retry-After a denial carried.",
  };
  const cell = (r: CompareRow) => {
    const pct = (n: number) => fmtPercent(n, r.requests);
    return h(
      "tr",
      { data: { run: r.run, rule: r.rule } },
      h("td", { text: r.runName, title: r.runName }),
      h("td", { text: r.rule, title: algorithmLabel(r.algorithm) }),
      h("td", { className: "num", text: pct(r.allowed) }),
      h("td", { className: "num", text: pct(r.denied) }),
      h("td", { className: "num", text: `${fmtInt(r.keysDenied)} of ${fmtInt(r.keys)}` }),
      h("td", { className: "num" + (r.failOpen > 0 ? " warn" : ""), text: fmtInt(r.failOpen) }),
      peakCell(r.peak, r.algorithm, burstOf(r.run, r.rule)),
      h("td", { className: "num", text: r.worstWaitMs > 0 ? fmtOffset(r.worstWaitMs) : "–" }),
    );
  };
  el.replaceChildren(
    h("div", { className: "summary-caption", text: `${runs.length} runs on the chart, compared` }),
    h(
      "table",
      { className: "summary compare-table", data: { testid: "compare-table" } },
      h("thead", {}, h("tr", {}, ...head.map((t, i) => h("th", { className: i >= 2 ? "num" : "", text: t, title: titles[t] ?? "" })))),
      h("tbody", {}, ...rows.map(cell)),
    ),
  );
}

/**
 * The clicked bin's decision for the inspector: its first denial, else its last decision; in
 * an empty bin (a quiet stretch), the decision nearest to it.
 */
async function onPick(p: Pick) {
  const rec = await records(p.run);
  const all = recordIndices(rec, p.target);
  if (all.length === 0) return;
  const inBin = all.filter((i) => rec.t_ms[i] >= p.fromMs && rec.t_ms[i] < p.toMs);
  const mid = (p.fromMs + p.toMs) / 2;
  const nearest = () => all.reduce((a, b) => (Math.abs(rec.t_ms[b] - mid) < Math.abs(rec.t_ms[a] - mid) ? b : a));
  const i = inBin.length ? (inBin.find((j) => rec.outcome[j] === OUTCOME.denied) ?? inBin[inBin.length - 1]) : nearest();
  void inspect(rec, i);
}

async function runExport(what: (id: string) => Promise<{ path: string }>) {
  const note = $("export-note");
  const run = state.selectedRun;
  if (!run) return;
  note.classList.remove("error");
  note.textContent = "Exporting…";
  try {
    note.textContent = `Saved ${(await what(run)).path}`;
  } catch (err) {
    const e = toAppError(err);
    note.textContent = e.code === "cancelled" ? "" : `Export failed: ${e.message}`;
    note.classList.toggle("error", e.code !== "cancelled");
  }
}

/** The chart on screen as the view to export: measure, overlays, envelope, key, zoom. */
function screenView(id: string) {
  if (!drawn || drawn.run !== id) return undefined;
  const run = runInfo(id);
  return exportView(drawn.view, drawn.measure, {
    title: run?.name ?? id,
    subtitle: run?.workload ?? "",
    columns: chart.columns(),
    xRange: chart.xRange(),
    key: shownKeyState(),
    inFlight: drawn.inFlight,
  });
}

export function initRun() {
  chart = new RunChart($("run-charts"), $("run-legend"), (p) => void onPick(p));
  for (const b of document.querySelectorAll<HTMLElement>("[data-measure]")) {
    b.addEventListener("click", () => {
      view.measure = b.dataset.measure as Measure;
      void draw();
    });
  }
  for (const b of document.querySelectorAll<HTMLElement>("[data-layout]")) {
    b.addEventListener("click", () => {
      view.layout = b.dataset.layout as Layout;
      void draw();
    });
  }
  $("export-csv").addEventListener("click", () => runExport((id) => api.exportCsv(id)));
  $("export-png").addEventListener("click", () => runExport((id) => api.exportChart("png", id, screenView(id))));
  $("export-svg").addEventListener("click", () => runExport((id) => api.exportChart("svg", id, screenView(id))));
  initKeyState();
  on("selection", () => void draw());
  on("chartKey", () => void draw());
}
