//! The Replay panel: open a log (dialog or drop), preview its first lines and their keys,
//! choose rules from the book, replay with progress and cancel, then each rule's results, the
//! top client keys, the sweep's heatmaps and the exports. Every replay is kept in the run
//! history; the kept ones are listed below the results (./replay-kept.ts) and reopen here.
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { api, events, toAppError } from "../api";
import type { AppError } from "../bindings/AppError";
import type { ChartFormat } from "../bindings/ChartFormat";
import type { LogFormat } from "../bindings/LogFormat";
import type { ParseSpec } from "../bindings/ParseSpec";
import type { ReplayProgress } from "../bindings/ReplayProgress";
import type { ReplayReport } from "../bindings/ReplayReport";
import type { ReplayStatus } from "../bindings/ReplayStatus";
import type { RuleReport } from "../bindings/RuleReport";
import type { SweepAxis } from "../bindings/SweepAxis";
import { $, h, showFieldErrors } from "../dom";
import { algorithmLabel } from "../logic/algorithms";
import { fmtClock, fmtInt } from "../logic/format";
import { sortKeys } from "../logic/perkey";
import { barShare, durationField, inFlightText, keyChoices, keyRows, progressShare } from "../logic/replay";
import { axesOf, sweepParams } from "../logic/sweep";
import { heatmapTables } from "./heatmap";
import { describePolicy } from "../logic/policies";
import { describeRule } from "../logic/rules";
import { painter, setText } from "../paint";
import { on, state } from "../store";
import { dropHandler } from "./replay-drop";
import { initKept, refreshKept } from "./replay-kept";

/** How far out of order a log's requests may be and still be sorted: the engine's default. */
const LOOKAHEAD_MS = 10_000;

let path = "";
let report: ReplayReport | null = null;
/** The shown replay's id in the run history: what the exports export. */
let shownId: string | null = null;
let running = false;
/** Rules ticked, by name; the first rule in the book is ticked when nothing is. */
const chosen = new Set<string>();
/** Policies ticked, by name: when any is, the replay runs them and no rule. */
const chosenPolicies = new Set<string>();
let previewSeq = 0;

const card = () => $("replay-card");

function parseSpec(): ParseSpec {
  const format = $<HTMLSelectElement>("replay-format").value;
  const methods = $<HTMLInputElement>("replay-methods").value.split(/[\s,]+/).filter(Boolean);
  const filter = $<HTMLInputElement>("replay-filter").value.trim();
  return {
    format: format === "" ? null : (format as LogFormat),
    fields: { time: null, cost: null, extra: [], duration: durationField($<HTMLInputElement>("replay-duration").value) },
    key: $<HTMLInputElement>("replay-key").value.trim() || "ip",
    methods,
    path: filter === "" ? null : filter,
    // The engine's default reorder window (DEFAULT_LOOKAHEAD_MS, crates/ratelockr-lab/src/replay/order.rs).
    lookahead_ms: LOOKAHEAD_MS,
  };
}

/** An engine error's field in the panel's terms (`path` is the regex there, the file here). */
function showErrors(errors: AppError[]) {
  showFieldErrors(
    card(),
    "error-for",
    errors.map((e) => ({ field: e.field === "path" && e.code === "invalid_replay" ? "path_filter" : (e.field ?? "_form"), message: e.message })),
  );
}

async function refreshPreview() {
  const table = $("replay-preview");
  if (!path) return;
  const seq = ++previewSeq;
  try {
    const preview = await api.replayPreview(path, parseSpec());
    if (seq !== previewSeq) return;
    showErrors([]);
    const head = h("tr", {}, ...["Line", "Time", "Key", "Cost", ""].map((t) => h("th", { text: t })));
    const rows = preview.lines.map((l) =>
      h(
        "tr",
        {},
        h("td", { className: "num", text: String(l.line) }),
        h("td", { className: "mono", text: l.time_ms == null ? "" : fmtClock(l.time_ms) }),
        h("td", { className: "mono", text: l.key ?? "" }),
        h("td", { className: "num", text: l.cost == null ? "" : String(l.cost) }),
        h("td", { className: l.issue ? "bad-soft" : "", text: l.issue ?? "" }),
      ),
    );
    const caption = h("caption", { text: `${preview.format ?? "unknown format"}${preview.gzip ? ", gzip" : ""}: the first ${preview.lines.length} lines and the key each yields` });
    table.replaceChildren(caption, head, ...rows);
    renderKeyFields(preview.fields);
  } catch (err) {
    if (seq !== previewSeq) return;
    table.replaceChildren();
    showErrors([toAppError(err)]);
  }
  renderButtons();
}

/** What a key can be built from in this log, one click each: the key field takes it. */
function renderKeyFields(fields: string[]) {
  const choices = keyChoices(fields);
  const input = $<HTMLInputElement>("replay-key");
  $("replay-key-fields").replaceChildren(
    ...(choices.length ? [h("span", { className: "hint", text: "In this log: " })] : []),
    ...choices.map((choice) => {
      const b = h("button", { type: "button", className: "chip", text: choice, data: { key: choice } });
      b.classList.toggle("active", input.value.trim() === choice);
      b.addEventListener("click", () => {
        input.value = choice;
        void refreshPreview();
      });
      return b;
    }),
  );
}

function setPath(p: string) {
  path = p;
  $("replay-path").textContent = p;
  void refreshPreview();
}

/** Policies and rules do not mix in one replay: ticking a policy clears the rules, and back. */
function renderPolicies() {
  const box = $("replay-policies");
  for (const name of [...chosenPolicies]) if (!state.policies.some((p) => p.name === name)) chosenPolicies.delete(name);
  if (state.policies.length === 0) {
    box.replaceChildren(h("span", { className: "hint", text: "Make a policy in the Policies view (or open a policies file there) to replay the log through it." }));
  } else {
    box.replaceChildren(
      ...state.policies.map((p) => {
        const input = h("input", { type: "checkbox", checked: chosenPolicies.has(p.name), data: { policy: p.name } });
        input.addEventListener("change", () => {
          if (input.checked) {
            chosenPolicies.add(p.name);
            chosen.clear();
            // The policy keys requests its own way: the form follows, unless typed over.
            const key = $<HTMLInputElement>("replay-key");
            if (p.key && key.dataset.typed !== "true" && key.value !== p.key) {
              key.value = p.key;
              void refreshPreview();
            }
          } else chosenPolicies.delete(p.name);
          renderRules();
        });
        return h("label", { className: "inline" }, input, ` ${p.name} `, h("small", { className: "hint", text: describePolicy(p) }));
      }),
    );
  }
}

function renderRules() {
  const box = $("replay-rules");
  for (const name of [...chosen]) if (!state.rules.some((r) => r.name === name)) chosen.delete(name);
  if (chosen.size === 0 && chosenPolicies.size === 0 && state.rules.length > 0) chosen.add(state.rules[0].name);
  if (state.rules.length === 0) {
    box.replaceChildren(h("span", { className: "hint", text: "Make a rule in the Simulate view (its Rules card) to replay the log through it." }));
  } else {
    box.replaceChildren(
      ...state.rules.map((rule) => {
        const input = h("input", { type: "checkbox", checked: chosen.has(rule.name), data: { rule: rule.name } });
        input.addEventListener("change", () => {
          if (input.checked) {
            chosen.add(rule.name);
            chosenPolicies.clear();
            renderPolicies();
          } else chosen.delete(rule.name);
          renderSweepParams();
          renderButtons();
        });
        return h("label", { className: "inline" }, input, ` ${rule.name} `, h("small", { className: "hint", text: `${algorithmLabel(rule.algorithm)}, ${describeRule(rule)}` }));
      }),
    );
  }
  renderPolicies();
  // A sweep varies one rule's parameters: none beside policies.
  $("replay-sweep-row").classList.toggle("hidden", chosenPolicies.size > 0);
  renderSweepParams();
  renderButtons();
}

/** The sweep varies the first chosen rule's parameters. */
function renderSweepParams() {
  const first = state.rules.find((r) => chosen.has(r.name));
  const params = first ? sweepParams(first.algorithm) : [];
  for (const [id, fallback] of [["replay-sweep-x", 0], ["replay-sweep-y", 1]] as const) {
    const select = $<HTMLSelectElement>(id);
    const current = select.value;
    select.replaceChildren(...params.map((p) => new Option(p, p)));
    select.value = params.includes(current) ? current : (params[fallback] ?? "");
  }
}

function sweepAxes(): { ok: true; axes: SweepAxis[] } | { ok: false; message: string } {
  const value = (id: string) => $<HTMLInputElement | HTMLSelectElement>(id).value;
  return axesOf([
    [value("replay-sweep-x"), value("replay-sweep-xs")],
    [value("replay-sweep-y"), value("replay-sweep-ys")],
  ]);
}

function renderButtons() {
  $<HTMLButtonElement>("replay-run").disabled = running || !path || (chosen.size === 0 && chosenPolicies.size === 0);
  $<HTMLButtonElement>("replay-cancel").disabled = !running;
  const done = !running && report !== null;
  $<HTMLButtonElement>("replay-export-csv").disabled = !done;
  $<HTMLButtonElement>("replay-export-png").disabled = !done;
  $<HTMLButtonElement>("replay-export-heatmap").disabled = !done || (report?.sweep.length ?? 0) === 0;
}

function renderProgress(p: ReplayProgress | null, text?: string) {
  const share = p ? progressShare(p) : undefined;
  const width = `${Math.round(barShare(share, running, report !== null) * 100)}%`;
  // Written only when changed: each write costs the webview a frame.
  if ($("replay-bar").style.width !== width) $("replay-bar").style.width = width;
  setText(
    $("replay-progress"),
    text ?? (p ? `${fmtInt(p.requests)} requests decided${p.log_ms != null ? `, log time ${fmtClock(p.log_ms)}` : ""}${share !== undefined ? ` (${Math.round(share * 100)} % read)` : ""}` : "Idle"),
  );
}

const pct = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} %`;

function ruleRow(r: RuleReport) {
  const s = r.suggestion;
  const peak = r.peak_rates;
  return h(
    "tr",
    {},
    h("td", { text: r.rule }, h("small", { text: algorithmLabel(r.algorithm) })),
    h("td", { className: "num", text: fmtInt(r.requests) }),
    h("td", { className: "num", text: fmtInt(r.allowed) }, h("small", { text: pct(r.allowed_pct) })),
    h("td", { className: "num" + (r.denied > 0 ? " bad-soft" : ""), text: fmtInt(r.denied) }, h("small", { text: pct(r.denied_pct) })),
    h("td", { className: "num", text: `${fmtInt(r.keys_denied)} of ${fmtInt(r.keys)}` }, h("small", { text: pct(r.keys_denied_pct) })),
    h("td", { className: "num" + (r.fail_open > 0 ? " warn" : ""), text: fmtInt(r.fail_open) }),
    h("td", { text: peak ? `${fmtInt(peak.p50)} / ${fmtInt(peak.p90)} / ${fmtInt(peak.p99)}` : "—", title: peak ? `each key's most requests in one ${peak.window_ms} ms window; max ${peak.max}` : "" }),
    r.policy
      ? h("td", { text: policyFigures(r), data: { testid: "replay-denied-by" } })
      : h("td", {
          text: s ? `${s.parameter} ${fmtInt(s.value)}` : "—",
          title: s ? `the smallest ${s.parameter} that denies at most ${s.max_keys_denied_pct} % of keys (${s.keys_denied_pct} % here; ${s.method})` : "",
        }),
  );
}

/** A policy's row: which limits denied how many, the shadow denials, the keys per tier. */
function policyFigures(r: RuleReport): string {
  const p = r.policy!;
  const by = Object.entries(p.denied_by)
    .sort((a, b) => b[1] - a[1])
    .map(([limit, n]) => `${limit} ${fmtInt(n)}`);
  const parts = [by.length ? `${p.policy.mode === "shadow" ? "would deny: " : ""}${by.join(", ")}` : "none"];
  if (p.shadow_denied > 0) parts.push(`shadow: ${fmtInt(p.shadow_denied)} admitted`);
  const tiers = Object.entries(p.tier_keys).map(([tier, n]) => `${fmtInt(n)} keys ${tier ? `in ${tier}` : "on own limits"}`);
  if (tiers.length) parts.push(tiers.join(", "));
  return parts.join(" · ");
}

/** Side by side: how each candidate decides the log differently from the first, and for whom. */
function changesBlock(r: ReplayReport): HTMLElement[] {
  const signed = (n: number, what: string) => (n === 0 ? `as many ${what}` : `${fmtInt(Math.abs(n))} ${n > 0 ? "more" : "fewer"} ${what}`);
  return (r.changes ?? []).map((c) => {
    const keys = (list: typeof c.more) =>
      list.map((k) => h("li", {}, h("span", { className: "mono", text: k.key }), ` ${fmtInt(k.base_denied)} → ${fmtInt(k.denied)} denied of ${fmtInt(k.requests)}`));
    return h(
      "div",
      { className: "replay-change", data: { testid: "replay-change", rule: c.rule } },
      h("p", {
        className: "sweep-choice",
        text: `${c.rule} beside ${c.base}: ${signed(c.denied, "requests denied")}, ${signed(c.keys_denied, "keys denied")} (${fmtInt(c.newly_denied_keys)} newly, ${fmtInt(c.no_longer_denied_keys)} no longer)${c.exact ? "" : ", estimated"}.`,
      }),
      ...(c.more.length ? [h("div", { className: "hint", text: "Denied more:" }), h("ul", { className: "change-keys" }, ...keys(c.more))] : []),
      ...(c.fewer.length ? [h("div", { className: "hint", text: "Denied less:" }), h("ul", { className: "change-keys" }, ...keys(c.fewer))] : []),
    );
  });
}

function renderResults() {
  const box = $("replay-results");
  const select = $<HTMLSelectElement>("replay-keys-rule");
  if (!report) {
    box.replaceChildren();
    select.replaceChildren();
    $("replay-keys").replaceChildren();
    $("replay-heatmap").replaceChildren();
    return;
  }
  const r = report;
  const policies = r.rules.some((x) => x.policy);
  const head = h("tr", {}, ...[policies ? "Policy" : "Rule", "Requests", "Allowed", "Denied", "Keys denied", "Fail-open", "Peak p50/p90/p99", policies ? "Denied by" : "Suggestion"].map((t, i) => h("th", { className: i > 0 && i < 6 ? "num" : "", text: t })));
  const skipped = r.malformed + r.filtered + r.no_key + r.out_of_order;
  const about = h("div", {
    className: "hint",
    text:
      `${r.format}${r.gzip ? " (gzip)" : ""}, key ${r.key}: ${fmtInt(r.requests)} requests from ${fmtInt(r.keys)} keys` +
      (r.first_ms != null && r.last_ms != null ? `, ${fmtClock(r.first_ms)} to ${fmtClock(r.last_ms)}` : "") +
      (skipped ? `; ${fmtInt(r.malformed)} malformed, ${fmtInt(r.filtered)} filtered out, ${fmtInt(r.no_key)} without a key, ${fmtInt(r.out_of_order)} out of order` : "") +
      (r.cancelled ? " — cancelled: the figures cover what was decided" : "") +
      (r.input_error ? ` — the input ended early: ${r.input_error}` : ""),
  });
  // Each rule's suggestion as a sentence on screen (reports kept before sentences have none).
  const suggestions = r.rules
    .filter((x) => x.suggestion?.sentence)
    .map((x) => h("p", { className: "sweep-choice", text: `${x.rule}: ${x.suggestion!.sentence}.`, data: { testid: "replay-suggestion" } }));
  const inFlight = r.rules.flatMap((x) => {
    const text = inFlightText(x.rule, x.in_flight);
    return text ? [h("p", { className: "hint", text, data: { testid: "replay-in-flight" } })] : [];
  });
  box.replaceChildren(about, h("table", { className: "summary", data: { testid: "replay-rules-table" } }, head, ...r.rules.map(ruleRow)), ...suggestions, ...inFlight, ...changesBlock(r));
  const current = select.value;
  select.replaceChildren(...r.rules.map((rule) => new Option(rule.rule, rule.rule)));
  select.value = r.rules.some((x) => x.rule === current) ? current : (r.rules[0]?.rule ?? "");
  renderKeys();
  renderHeatmap();
}

function renderKeys() {
  const table = $("replay-keys");
  const rule = report?.rules.find((x) => x.rule === $<HTMLSelectElement>("replay-keys-rule").value);
  if (!rule) {
    table.replaceChildren();
    return;
  }
  const policy = rule.policy !== undefined;
  const head = h(
    "tr",
    {},
    ...["Key", "Requests", "Allowed", "Denied", "% denied", "First denial", "Longest denied streak", ...(policy ? ["Denied by"] : [])].map((t, i) => h("th", { className: i && t !== "Denied by" ? "num" : "", text: t })),
  );
  const rows = sortKeys(keyRows(rule.top_keys), "denied", "desc").map((k) =>
    h(
      "tr",
      { data: { key: k.name } },
      h("td", { className: "mono", text: k.name }),
      h("td", { className: "num", text: fmtInt(k.requests) }),
      h("td", { className: "num", text: fmtInt(k.allowed) }),
      h("td", { className: "num" + (k.denied ? " bad-soft" : ""), text: fmtInt(k.denied) }),
      h("td", { className: "num", text: pct(k.deniedShare * 100) }),
      h("td", { className: "num", text: k.firstDeniedMs === undefined ? "—" : fmtClock(k.firstDeniedMs) }),
      h("td", { className: "num", text: fmtInt(k.longestDeniedStreak) }),
      ...(policy ? [h("td", { className: "mono", text: k.deniedBy ?? "—", data: { testid: "key-denied-by" } })] : []),
    ),
  );
  const note = rule.top_keys_exact ? [] : [h("caption", { text: "More keys than the table holds: denial counts are upper bounds (space-saving)." })];
  table.replaceChildren(...note, head, ...(rows.length ? rows : [h("tr", {}, h("td", { text: "No key was denied." }))]));
}

function renderHeatmap() {
  const box = $("replay-heatmap");
  if (!report || report.sweep.length === 0) {
    box.replaceChildren();
    return;
  }
  box.replaceChildren(...heatmapTables(report.sweep, `Sweep of ${report.rules[0]?.rule ?? "the first rule"}`));
}

/** How the shown replay ended, in words: a cancelled one never reads as done. */
function endText(status: ReplayStatus): string | undefined {
  const name = status.name ? `${status.name}: ` : "";
  if (status.error) return `Failed: ${name}${status.error.message}`;
  const r = status.report;
  if (!r) return undefined;
  const secs = (r.elapsed_ms / 1000).toFixed(1);
  if (status.cancelled || r.cancelled) return `Cancelled: ${name}only the first ${fmtInt(r.requests)} requests were decided (${secs} s); the results cover those alone`;
  return `Done: ${name}${fmtInt(r.requests)} requests in ${secs} s`;
}

function applyStatus(status: ReplayStatus) {
  running = status.running;
  if (status.id) shownId = status.id;
  report = status.report ?? (status.id ? null : report);
  if (status.error) showErrors([status.error]);
  card().dataset.replayState = status.running ? "running" : status.error ? "failed" : status.cancelled || status.report?.cancelled ? "cancelled" : status.report ? "finished" : "idle";
  renderProgress(status.progress, status.running ? undefined : endText(status));
  if (status.notes.length) $("replay-note").textContent = status.notes.join(" ");
  renderButtons();
  renderResults();
}

/** A kept replay, reopened from the list. */
function showKept(status: ReplayStatus) {
  if (running) return;
  showErrors([]);
  $("replay-note").textContent = "";
  if (status.path) {
    // Not previewed: the log may have moved since; Replay reads it again.
    path = status.path;
    $("replay-path").textContent = path;
  }
  applyStatus(status);
}

async function start() {
  const sweep = sweepAxes();
  if (!sweep.ok) {
    showErrors([{ code: "invalid_replay", message: sweep.message, field: "sweep" }]);
    return;
  }
  showErrors([]);
  $("replay-note").textContent = "";
  try {
    const policies = state.policies.filter((p) => chosenPolicies.has(p.name)).map((p) => p.name);
    const rules = policies.length ? [] : state.rules.filter((r) => chosen.has(r.name)).map((r) => r.name);
    running = true;
    renderProgress(null, "Starting…");
    const started = await api.replayStart({ path, parse: parseSpec(), rules, policies, sweep: policies.length ? [] : sweep.axes });
    applyStatus(started);
    void refreshKept(started.id);
  } catch (err) {
    running = false;
    renderProgress(null, "Idle");
    showErrors([toAppError(err)]);
    renderButtons();
  }
}

async function exportWith(run: () => Promise<{ path: string }>) {
  const note = $("replay-note");
  try {
    note.textContent = `Saved ${(await run()).path}`;
  } catch (err) {
    const e = toAppError(err);
    note.textContent = e.code === "cancelled" ? "" : e.message;
  }
}

function initDrop() {
  const choose = (p: string) => {
    setPath(p);
    card().scrollIntoView({ block: "start" });
  };
  void getCurrentWebview()
    .onDragDropEvent(dropHandler($("replay-drop"), choose))
    .catch(() => undefined);
}

export async function initReplay() {
  $("replay-open").addEventListener("click", async () => {
    try {
      setPath(await api.replayOpen());
    } catch (err) {
      const e = toAppError(err);
      if (e.code !== "cancelled") showErrors([e]);
    }
  });
  $("replay-sample").addEventListener("click", async () => {
    try {
      setPath(await api.replaySample());
    } catch (err) {
      showErrors([toAppError(err)]);
    }
  });
  // The preview follows the form as it is typed (a moment after the last key), not only on
  // leaving a field.
  let typing: ReturnType<typeof setTimeout> | undefined;
  for (const id of ["replay-format", "replay-key", "replay-methods", "replay-filter"]) {
    $(id).addEventListener("change", () => void refreshPreview());
    $(id).addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => void refreshPreview(), 300);
    });
  }
  $("replay-run").addEventListener("click", () => void start());
  $("replay-cancel").addEventListener("click", async () => applyStatus(await api.replayCancel()));
  $("replay-keys-rule").addEventListener("change", renderKeys);
  const id = () => shownId ?? undefined;
  $("replay-export-csv").addEventListener("click", () => exportWith(() => api.replayExportCsv(id())));
  $("replay-export-png").addEventListener("click", () => exportWith(() => api.replayExportChart("png" as ChartFormat, false, id())));
  $("replay-export-heatmap").addEventListener("click", () => exportWith(() => api.replayExportChart("svg" as ChartFormat, true, id())));
  await events.onReplayProgress((p) => {
    // A streaming update: drawn in the painter's shared frames. The end (applyStatus) is
    // drawn at once, so a progress frame due after it must not overwrite it.
    painter.later("replay-progress", () => {
      if (running) renderProgress(p);
    });
  });
  await events.onReplayFinished((status) => {
    applyStatus(status);
    void refreshKept(status.id);
  });
  initDrop();
  on("rules", renderRules);
  on("policies", renderRules);
  $("replay-key").addEventListener("input", () => ($("replay-key").dataset.typed = "true"));
  renderRules();
  const status = await api.replayStatus();
  if (status.path) {
    path = status.path;
    $("replay-path").textContent = path;
  }
  applyStatus(status);
  await initKept(showKept);
}
