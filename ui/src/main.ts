/** The dashboard: wires the panels to the typed API. */
import "./locale-guard"; // before uPlot: see the module
import "./styles.css";
import { api, events, toAppError } from "./api";
import type { AlgorithmKind } from "./bindings/AlgorithmKind";
import type { AppError } from "./bindings/AppError";
import type { ConnectionStatus } from "./bindings/ConnectionStatus";
import type { Rule } from "./bindings/Rule";
import type { RuleStats } from "./bindings/RuleStats";
import type { RunSummary } from "./bindings/RunSummary";
import type { SimProgress } from "./bindings/SimProgress";
import type { SimRequest } from "./bindings/SimRequest";
import type { SimStatus } from "./bindings/SimStatus";
import { ChartGrid } from "./charts";
import {
  algorithmLabel,
  describeRule,
  draftFromForm,
  fmtInt,
  fmtMicros,
  fmtPercent,
  fmtRtt,
  checkWholeNumbers,
  formFromRule,
  parseNumber,
  patternFromForm,
  progressFraction,
  recentFailOpen,
} from "./model";
import { createThrottle } from "./throttle";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

// Nothing fails silently: unexpected errors are shown in the warnings banner.
const unexpected: string[] = [];
function reportUnexpected(message: string) {
  unexpected.push(message);
  showWarnings(unexpected);
}
window.addEventListener("error", (e) => reportUnexpected(`Unexpected error: ${e.message}`));
window.addEventListener("unhandledrejection", (e) =>
  reportUnexpected(`Unexpected error: ${toAppError(e.reason).message}`),
);
const COMPARE = "__compare";

const state = {
  rules: [] as Rule[],
  editing: null as string | null,
  sim: null as SimStatus | null,
  conn: null as ConnectionStatus | null,
  failOpenSeen: false,
  /** What the chart follows: the current or last run, or the user's rules (after editing). */
  chartFocus: "run" as "run" | "rules",
};

// --- live chart ---------------------------------------------------------------------------

function algorithmOf(rule: string): string | undefined {
  const own = state.rules.find((r) => r.name === rule);
  if (own) return own.algorithm;
  const row = state.sim?.last?.rows.find((r) => r.rule === rule);
  if (row) return row.algorithm;
  if (rule.endsWith("-naive") || rule === "compare-naive") return "naive_get_set";
  if (rule.endsWith("token-bucket")) return "token_bucket";
  if (rule.endsWith("gcra")) return "gcra";
  if (rule.endsWith("sliding-window-log")) return "sliding_window_log";
  if (rule.endsWith("sliding-window-counter")) return "sliding_window_counter";
  if (rule.endsWith("fixed-window")) return "fixed_window";
  return undefined;
}

const charts = new ChartGrid($("charts"), algorithmOf);

/** The rules on the chart: the current (or last) run's, else the user's first four. */
function chartRules(): string[] {
  const running = state.sim?.running ?? false;
  if (state.sim && state.sim.rules.length > 0 && (running || state.chartFocus === "run")) return state.sim.rules;
  return state.rules.slice(0, 4).map((r) => r.name);
}

let statsCalls = 0;
async function fetchStats() {
  const rules = chartRules();
  charts.setRules(rules);
  if (rules.length === 0) return;
  // Counted where the E2E test can see that a burst keeps the calls bounded.
  document.body.dataset.statsCalls = String(++statsCalls);
  const stats: RuleStats[] = await api.stats(rules);
  charts.update(stats);
  state.failOpenSeen = stats.some((s) => recentFailOpen(s.points));
  renderBanner();
}

const refetch = createThrottle(fetchStats);
void events.onRefetchStats(() => refetch.trigger());
// The chart is a moving 30-second window: keep it moving when nothing happens.
setInterval(() => refetch.trigger(), 1000);

// --- banners ------------------------------------------------------------------------------

function renderBanner() {
  const down = state.conn?.state === "unreachable";
  const banner = $("failopen-banner");
  banner.classList.toggle("hidden", !(down || state.failOpenSeen));
  $("failopen-detail").textContent = down
    ? `Redis at ${state.conn?.url} does not answer (${state.conn?.error ?? "no reply"}). Requests are let through unlimited (remaining = −1); the app reconnects by itself.`
    : "Recent decisions were made without Redis and let through (remaining = −1).";
}

function showWarnings(warnings: string[]) {
  const el = $("warnings-banner");
  el.classList.toggle("hidden", warnings.length === 0);
  el.replaceChildren(
    ...warnings.map((w) => {
      const p = document.createElement("div");
      p.textContent = `⚠ ${w}`;
      return p;
    }),
  );
}

// --- connection ---------------------------------------------------------------------------

const STATE_TEXT = { connected: "Connected", embedded: "Embedded Redis", unreachable: "Unreachable" };

function renderConnection(s: ConnectionStatus) {
  state.conn = s;
  const pill = $("conn-pill");
  pill.dataset.state = s.state;
  $("conn-pill-text").textContent = `${STATE_TEXT[s.state]} · ${fmtRtt(s.rtt_ms)}`;
  $("conn-state").textContent =
    s.state === "embedded"
      ? "Embedded (a private redis-server started by this app)"
      : s.state === "connected"
        ? s.configured
          ? "Connected"
          : "Connected (local default)"
        : "Unreachable — failing open";
  $("conn-state").dataset.state = s.state;
  $("conn-url").textContent = s.url;
  $("conn-url").title = s.url;
  $("conn-rtt").textContent = fmtRtt(s.rtt_ms);
  renderBanner();
}

let statusInFlight = false;
async function pollConnection() {
  if (statusInFlight) return;
  statusInFlight = true;
  try {
    renderConnection(await api.connectionStatus());
  } catch (err) {
    $("conn-note").textContent = toAppError(err).message;
  } finally {
    statusInFlight = false;
  }
}

$("conn-test").addEventListener("click", async () => {
  const url = $<HTMLInputElement>("conn-input").value;
  $("conn-error").textContent = "";
  $("conn-note").textContent = "Testing…";
  try {
    const t = await api.connectionTest(url);
    $("conn-note").textContent = t.ok
      ? `✓ ${t.url} answered in ${fmtRtt(t.rtt_ms)}`
      : `✗ ${t.url} did not answer: ${t.error ?? "no reply"}`;
  } catch (err) {
    $("conn-note").textContent = "";
    $("conn-error").textContent = toAppError(err).message;
  }
});

$("conn-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $<HTMLInputElement>("conn-input");
  $("conn-error").textContent = "";
  $("conn-note").textContent = "Switching…";
  try {
    renderConnection(await api.connectionSwitch(input.value.trim() === "" ? null : input.value));
    input.value = "";
    $("conn-note").textContent = "Switched. The password, if any, is kept but never shown.";
    refetch.trigger();
  } catch (err) {
    $("conn-note").textContent = "";
    $("conn-error").textContent = toAppError(err).message;
  }
});

// --- rules --------------------------------------------------------------------------------

const ruleForm = {
  name: $<HTMLInputElement>("rule-name"),
  algorithm: $<HTMLSelectElement>("rule-algorithm"),
  capacity: $<HTMLInputElement>("rule-capacity"),
  refill: $<HTMLInputElement>("rule-refill"),
  limit: $<HTMLInputElement>("rule-limit"),
  windowMs: $<HTMLInputElement>("rule-window"),
};

function readRuleForm() {
  return draftFromForm({
    name: ruleForm.name.value,
    algorithm: ruleForm.algorithm.value as AlgorithmKind,
    capacity: ruleForm.capacity.value,
    refill: ruleForm.refill.value,
    limit: ruleForm.limit.value,
    windowMs: ruleForm.windowMs.value,
  });
}

function showRuleError(err: AppError | null) {
  for (const el of document.querySelectorAll<HTMLElement>("[data-error-for]")) el.textContent = "";
  for (const el of document.querySelectorAll<HTMLElement>("#rule-form [data-field]")) el.classList.remove("invalid");
  if (!err) return;
  const field = err.field ?? "_form";
  const slot = document.querySelector<HTMLElement>(`[data-error-for="${field}"]`) ??
    document.querySelector<HTMLElement>(`[data-error-for="_form"]`);
  if (slot) slot.textContent = err.message;
  document.querySelector<HTMLElement>(`#rule-form [data-field="${field}"]`)?.classList.add("invalid");
}

function syncAlgorithmFields() {
  const tb = ruleForm.algorithm.value === "token_bucket";
  document.querySelectorAll<HTMLElement>(".tb-only").forEach((el) => el.classList.toggle("hidden", !tb));
  document.querySelectorAll<HTMLElement>(".win-only").forEach((el) => el.classList.toggle("hidden", tb));
}

function editRule(rule: Rule | null, focusChart = true) {
  state.editing = rule?.name ?? null;
  if (focusChart && rule) {
    state.chartFocus = "rules";
    refetch.trigger();
  }
  $("rule-form-title").textContent = rule ? `Edit “${rule.name}”` : "New rule";
  $("rule-delete").classList.toggle("hidden", !rule);
  if (rule) {
    const f = formFromRule(rule);
    ruleForm.name.value = f.name;
    ruleForm.algorithm.value = f.algorithm;
    if (f.capacity) ruleForm.capacity.value = f.capacity;
    if (f.refill) ruleForm.refill.value = f.refill;
    if (f.limit) ruleForm.limit.value = f.limit;
    if (f.windowMs) ruleForm.windowMs.value = f.windowMs;
  } else {
    ruleForm.name.value = "";
  }
  syncAlgorithmFields();
  showRuleError(null);
  renderRules();
}

function renderRules() {
  const list = $("rule-list");
  list.replaceChildren();
  if (state.rules.length === 0) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = "No rules yet. Create one below.";
    list.append(li);
  }
  for (const rule of state.rules) {
    const li = document.createElement("li");
    li.className = "rule-item" + (state.editing === rule.name ? " selected" : "");
    li.dataset.rule = rule.name;
    li.tabIndex = 0;
    const name = document.createElement("span");
    name.className = "rule-name";
    name.textContent = rule.name;
    const badge = document.createElement("span");
    badge.className = `badge ${rule.algorithm}`;
    badge.textContent = algorithmLabel(rule.algorithm);
    const desc = document.createElement("span");
    desc.className = "rule-desc";
    desc.textContent = describeRule(rule);
    li.append(name, badge, desc);
    li.addEventListener("click", () => editRule(rule));
    li.addEventListener("keydown", (e) => e.key === "Enter" && editRule(rule));
    list.append(li);
  }
  renderSimTargets();
}

let validateTimer: ReturnType<typeof setTimeout> | undefined;
function validateSoon() {
  clearTimeout(validateTimer);
  validateTimer = setTimeout(async () => {
    try {
      await api.ruleValidate(readRuleForm());
      showRuleError(null);
    } catch (err) {
      const e = toAppError(err);
      // An empty name while typing parameters is not worth shouting about yet.
      if (e.field === "name" && ruleForm.name.value.trim() === "") showRuleError(null);
      else showRuleError(e);
    }
  }, 200);
}

document.querySelectorAll<HTMLElement>("#rule-form [data-field]").forEach((el) =>
  el.addEventListener("input", validateSoon),
);
ruleForm.algorithm.addEventListener("change", () => {
  syncAlgorithmFields();
  validateSoon();
});
$("rule-new").addEventListener("click", () => editRule(null));

$("rule-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const draft = readRuleForm();
  try {
    state.rules = await api.ruleSave(state.editing, draft);
    const saved = state.rules.find((r) => r.name === draft.name) ?? null;
    editRule(saved);
    refetch.trigger();
  } catch (err) {
    showRuleError(toAppError(err));
  }
});

$("rule-delete").addEventListener("click", async () => {
  if (!state.editing) return;
  try {
    state.rules = await api.ruleDelete(state.editing);
    editRule(null);
    refetch.trigger();
  } catch (err) {
    showRuleError(toAppError(err));
  }
});

// --- metrics ------------------------------------------------------------------------------

async function renderMetrics(promise: ReturnType<typeof api.metricsStatus>) {
  try {
    const m = await promise;
    $<HTMLInputElement>("metrics-enabled").checked = m.settings.enabled;
    $<HTMLInputElement>("metrics-port").value = String(m.settings.port);
    $("metrics-note").textContent = m.error
      ? `✗ ${m.error}`
      : m.url
        ? `Serving ${m.url}`
        : "Off";
    $("metrics-note").classList.toggle("error", Boolean(m.error));
  } catch (err) {
    $("metrics-note").textContent = toAppError(err).message;
    $("metrics-note").classList.add("error");
  }
}

$("metrics-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const port = Number($<HTMLInputElement>("metrics-port").value);
  void renderMetrics(
    api.metricsConfigure({ enabled: $<HTMLInputElement>("metrics-enabled").checked, port }),
  );
});
$("metrics-enabled").addEventListener("change", () => $<HTMLFormElement>("metrics-form").requestSubmit());

// --- simulator ----------------------------------------------------------------------------

const simTarget = $<HTMLSelectElement>("sim-target");

function renderSimTargets() {
  const current = simTarget.value || COMPARE;
  simTarget.replaceChildren();
  const compare = new Option("All five algorithms side by side", COMPARE);
  simTarget.append(compare);
  for (const rule of state.rules) {
    simTarget.append(new Option(`${rule.name} — ${algorithmLabel(rule.algorithm)}, ${describeRule(rule)}`, rule.name));
  }
  simTarget.value = [...simTarget.options].some((o) => o.value === current) ? current : COMPARE;
  syncSimFields();
}

function syncSimFields() {
  const compare = simTarget.value === COMPARE;
  document.querySelectorAll<HTMLElement>(".compare-only").forEach((el) => el.classList.toggle("hidden", !compare));
}
simTarget.addEventListener("change", syncSimFields);

function num(id: string): number {
  return parseNumber($<HTMLInputElement>(id).value) ?? Number.NaN;
}

function readSimForm(): SimRequest {
  const rps = num("sim-rps");
  const whole: Record<string, number> = {
    requests: num("sim-requests"),
    servers: num("sim-servers"),
    keys: num("sim-keys"),
  };
  if (simTarget.value === COMPARE) {
    whole.limit = num("sim-limit");
    whole.window_ms = num("sim-window");
  }
  const bad = checkWholeNumbers(whole);
  if (bad) throw { code: "invalid_workload", message: bad.message, field: bad.field } satisfies AppError;
  if (!Number.isFinite(rps)) {
    throw { code: "invalid_workload", message: "rate must be a number (0 = as fast as possible)", field: "rps" } satisfies AppError;
  }
  return {
    target:
      simTarget.value === COMPARE
        ? { kind: "compare", limit: num("sim-limit"), window_ms: num("sim-window") }
        : { kind: "rule", name: simTarget.value },
    pattern: patternFromForm($<HTMLSelectElement>("sim-pattern").value, rps),
    rps,
    requests: num("sim-requests"),
    servers: num("sim-servers"),
    keys: num("sim-keys"),
    zipf: $<HTMLInputElement>("sim-zipf").checked,
    naive: $<HTMLInputElement>("sim-naive").checked,
  };
}

function showSimError(err: AppError | null) {
  for (const el of document.querySelectorAll<HTMLElement>("[data-sim-error-for]")) el.textContent = "";
  if (!err) return;
  const slot =
    document.querySelector<HTMLElement>(`[data-sim-error-for="${err.field ?? "_form"}"]`) ??
    document.querySelector<HTMLElement>(`[data-sim-error-for="_form"]`);
  if (slot) slot.textContent = err.message;
}

function renderProgress(p: SimProgress | undefined, running: boolean) {
  const fraction = p ? progressFraction(p.completed, p.planned) : undefined;
  const bar = $("sim-bar");
  bar.style.width = `${Math.round((fraction ?? (running ? 0 : 0)) * 100)}%`;
  bar.classList.toggle("running", running);
  if (!p) {
    $("sim-progress").textContent = running ? "Starting…" : "Idle";
    return;
  }
  const planned = p.planned !== undefined ? ` / ${fmtInt(p.planned)}` : "";
  const failOpen = p.fail_open > 0 ? ` · ${fmtInt(p.fail_open)} fail-open` : "";
  $("sim-progress").textContent =
    `${running ? "Running" : "Done"} · ${fmtInt(p.completed)}${planned} requests · ${(p.elapsed_ms / 1000).toFixed(1)} s${failOpen}`;
}

function renderSim(status: SimStatus) {
  state.sim = status;
  $<HTMLButtonElement>("sim-run").disabled = status.running;
  $<HTMLButtonElement>("sim-cancel").disabled = !status.running;
  const canExport = !status.running && Boolean(status.last);
  for (const id of ["export-csv", "export-png", "export-svg"]) $<HTMLButtonElement>(id).disabled = !canExport;
  renderProgress(status.progress, status.running);
  if (status.last) renderSummary(status.last);
  if (status.error) showSimError(status.error);
}

function renderSummary(s: RunSummary) {
  const el = $("summary");
  const table = document.createElement("table");
  table.className = "summary";
  table.innerHTML =
    "<thead><tr><th>Rule</th><th>Algorithm</th><th class=num>Requests</th><th class=num>Allowed</th>" +
    "<th class=num>Denied</th><th class=num>Fail-open</th><th class=num>Over-admitted</th>" +
    "<th class=num>p50</th><th class=num>p99</th></tr></thead>";
  const body = document.createElement("tbody");
  for (const r of s.rows) {
    const tr = document.createElement("tr");
    tr.dataset.rule = r.rule;
    const cells = [
      r.rule,
      algorithmLabel(r.algorithm),
      fmtInt(r.requests),
      `${fmtInt(r.allowed)} <small>${fmtPercent(r.allowed, r.requests)}</small>`,
      `${fmtInt(r.denied)} <small>${fmtPercent(r.denied, r.requests)}</small>`,
      fmtInt(r.fail_open),
      fmtInt(r.over_admitted),
      fmtMicros(r.latency_p50_us),
      fmtMicros(r.latency_p99_us),
    ];
    cells.forEach((c, i) => {
      const td = document.createElement("td");
      if (i === 0) td.textContent = c;
      else td.innerHTML = c;
      if (i >= 2) td.className = "num";
      if (i === 6 && r.over_admitted > 0) td.classList.add("bad");
      if (i === 5 && r.fail_open > 0) td.classList.add("warn");
      tr.append(td);
    });
    body.append(tr);
  }
  table.append(body);
  const caption = document.createElement("div");
  caption.className = "summary-caption";
  caption.textContent =
    `${s.workload} — ${fmtInt(s.requests_sent)} requests in ${(s.duration_ms / 1000).toFixed(1)} s ` +
    `(${fmtInt(s.achieved_rps)} req/s)${s.cancelled ? " — cancelled" : ""}`;
  el.replaceChildren(caption, table);
}

$("sim-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  showSimError(null);
  $("export-note").textContent = "";
  try {
    renderSim(await api.simStart(readSimForm()));
    state.chartFocus = "run";
    refetch.trigger();
  } catch (err) {
    showSimError(toAppError(err));
  }
});

$("sim-cancel").addEventListener("click", async () => {
  try {
    renderSim(await api.simCancel());
  } catch (err) {
    showSimError(toAppError(err));
  }
});

void events.onSimProgress((p) => renderProgress(p, true));
let runsFinished = 0;
void events.onSimFinished(async (f) => {
  if (f.error) showSimError(f.error);
  // Counted where the E2E test can wait for the end of a run it started.
  document.body.dataset.runsFinished = String(++runsFinished);
  renderSim(await api.simStatus());
  refetch.trigger();
});

// --- export -------------------------------------------------------------------------------

async function runExport(what: () => Promise<{ path: string }>) {
  const note = $("export-note");
  note.classList.remove("error");
  note.textContent = "Exporting…";
  try {
    const done = await what();
    note.textContent = `Saved ${done.path}`;
  } catch (err) {
    const e = toAppError(err);
    note.textContent = e.code === "cancelled" ? "" : `Export failed: ${e.message}`;
    note.classList.toggle("error", e.code !== "cancelled");
  }
}
$("export-csv").addEventListener("click", () => runExport(api.exportCsv));
$("export-png").addEventListener("click", () => runExport(() => api.exportChart("png")));
$("export-svg").addEventListener("click", () => runExport(() => api.exportChart("svg")));

// --- start --------------------------------------------------------------------------------

async function start() {
  syncAlgorithmFields();
  try {
    const info = await api.appInfo();
    unexpected.push(...info.warnings);
    showWarnings(unexpected);
  } catch (err) {
    reportUnexpected(toAppError(err).message);
  }
  state.rules = await api.rulesList().catch(() => []);
  editRule(null, false);
  renderSim(await api.simStatus());
  void renderMetrics(api.metricsStatus());
  await pollConnection();
  setInterval(pollConnection, 2000);
  refetch.trigger();
  document.body.dataset.ready = "true";
}

start().catch((err) => reportUnexpected(`The dashboard did not start: ${toAppError(err).message}`));
