//! The workload editor: target, pattern and its parameters, length, rate, servers, keys,
//! Zipf, cost, seed, retries, fresh or continued state; presets that fill it; a preview of the
//! offered traffic; run, cancel and progress.
import { api, events, toAppError } from "../api";
import type { SimProgress } from "../bindings/SimProgress";
import type { SimStatus } from "../bindings/SimStatus";
import { PreviewChart } from "../charts/preview";
import { $, h, showFieldErrors } from "../dom";
import { algorithmLabel } from "../logic/algorithms";
import { fmtInt } from "../logic/format";
import { runStatusText } from "../logic/runs";
import { describePolicy } from "../logic/policies";
import { describeRule } from "../logic/rules";
import { sweepParams } from "../logic/sweep";
import {
  activeFields,
  applyPreset,
  COMPARE,
  DEFAULT_FORM,
  formSlot,
  PATTERN_PARAMS,
  policyOf,
  POLICY_PREFIX,
  PRESETS,
  requestFromForm,
  type FieldError,
  type WorkloadForm,
} from "../logic/workload";
import { painter, setText } from "../paint";
import { emit, on, state } from "../store";

const form = () => $<HTMLFormElement>("sim-form");
const inputs = () => [...form().querySelectorAll<HTMLInputElement | HTMLSelectElement>("[data-wf]")];

export function readForm(): WorkloadForm {
  const values: Record<string, string | boolean> = { ...DEFAULT_FORM };
  for (const el of inputs()) {
    values[el.dataset.wf!] = el instanceof HTMLInputElement && el.type === "checkbox" ? el.checked : el.value;
  }
  return values as unknown as WorkloadForm;
}

function writeForm(values: WorkloadForm) {
  for (const el of inputs()) {
    const v = values[el.dataset.wf as keyof WorkloadForm];
    if (el instanceof HTMLInputElement && el.type === "checkbox") el.checked = Boolean(v);
    else if (el.dataset.wf === "target") {
      if ([...(el as HTMLSelectElement).options].some((o) => o.value === v)) el.value = String(v);
    } else el.value = String(v);
  }
  sync();
}

/** Shows the fields the current choices use; hides (and so does not send) the others. */
function sync() {
  const f = readForm();
  const used = new Set(activeFields(f));
  for (const el of form().querySelectorAll<HTMLElement>("[data-param]")) {
    const param = el.dataset.param as keyof WorkloadForm;
    el.classList.toggle("hidden", !PATTERN_PARAMS[f.pattern].includes(param));
  }
  form().querySelectorAll<HTMLElement>(".compare-only").forEach((el) => el.classList.toggle("hidden", f.target !== COMPARE));
  // Compare with an in-flight limit runs it beside the token bucket, not the five: the card says which.
  $("sim-card").classList.toggle("in-flight", f.target === COMPARE && f.in_flight.trim() !== "");
  // With a max delay, GCRA denying beside GCRA delaying (the smooth a burst demo).
  $("sim-card").classList.toggle("delaying", f.target === COMPARE && f.max_delay.trim() !== "");
  const policy = policyOf(f.target) !== null;
  form().querySelectorAll<HTMLElement>(".rule-only").forEach((el) => el.classList.toggle("hidden", f.target === COMPARE || policy));
  renderSweepParams(f.target);
  renderTargetAbout(f.target);
  form().querySelectorAll<HTMLElement>(".length-requests").forEach((el) => el.classList.toggle("hidden", f.length !== "requests"));
  form().querySelectorAll<HTMLElement>(".length-duration").forEach((el) => el.classList.toggle("hidden", f.length !== "duration"));
  $<HTMLInputElement>("sim-zipf-exponent").disabled = !used.has("zipf_exponent");
}

/** What the target holds, under its name: a rule's parameters, a policy's limits. */
function renderTargetAbout(target: string) {
  const rule = state.rules.find((r) => r.name === target);
  const policy = state.policies.find((p) => POLICY_PREFIX + p.name === target);
  $("sim-target-about").textContent = rule ? `${algorithmLabel(rule.algorithm)}, ${describeRule(rule)}` : policy ? describePolicy(policy) : "";
}

/** The sweep varies the target rule's own parameters: the selects offer those. */
function renderSweepParams(target: string) {
  const rule = state.rules.find((r) => r.name === target);
  const params = rule ? sweepParams(rule.algorithm) : [];
  for (const [id, fallback] of [["sim-sweep-x", 0], ["sim-sweep-y", 1]] as const) {
    const select = $<HTMLSelectElement>(id);
    const current = select.value;
    if ([...select.options].map((o) => o.value).join() !== params.join()) select.replaceChildren(...params.map((p) => new Option(p, p)));
    select.value = params.includes(current) ? current : (params[fallback] ?? "");
  }
}

function showErrors(errors: FieldError[]) {
  const f = readForm();
  // A message for a field the current choices hide goes to the form-wide slot: never unseen.
  const visible = (field: string) => {
    const slot = form().querySelector(`[data-sim-error-for="${field}"]`);
    return slot !== null && slot.closest(".hidden") === null;
  };
  showFieldErrors(
    form(),
    "sim-error-for",
    errors.map((e) => {
      const field = formSlot(e.field, f);
      return { ...e, field: visible(field) ? field : "_form" };
    }),
  );
}

function renderTargets() {
  const select = $<HTMLSelectElement>("sim-target");
  const current = select.value || COMPARE;
  select.replaceChildren(
    new Option("All algorithms side by side (compare)", COMPARE),
    // The name in the list, whole; what it holds under it (sim-target-about), where it wraps.
    ...state.rules.map((r) => new Option(`${r.name} (${algorithmLabel(r.algorithm)})`, r.name)),
    ...state.policies.map((p) => new Option(`policy ${p.name}`, POLICY_PREFIX + p.name)),
  );
  select.value = [...select.options].some((o) => o.value === current) ? current : COMPARE;
  sync();
}

/**
 * The presets: the name fills the form (to look at, change and run); ▶ beside it fills it and
 * runs it at once, so a demo is one click.
 */
function renderPresets() {
  const apply = (p: (typeof PRESETS)[number]) => {
    writeForm(applyPreset(p, $<HTMLSelectElement>("sim-target").value));
    presetApplied = { focus: p.focus, version: formVersion };
    $("preset-about").textContent = `${p.label}: ${p.about}`;
    showErrors([]);
    previewSoon();
  };
  $("presets").replaceChildren(
    ...PRESETS.map((p) => {
      const fill = h("button", { type: "button", className: "secondary small", text: p.label, title: "Fill the form with this demo", data: { preset: p.id } });
      fill.addEventListener("click", () => apply(p));
      const run = h("button", { type: "button", className: "secondary small preset-run", text: "▶", title: `Run the ${p.label} demo now`, ariaLabel: `Run ${p.label}`, data: { presetRun: p.id } });
      run.addEventListener("click", () => {
        apply(p);
        if (!state.sim?.running) form().requestSubmit();
      });
      return h("span", { className: "preset" }, fill, run);
    }),
  );
}

// --- preview ------------------------------------------------------------------------------

let preview: PreviewChart | undefined;
let previewTimer: ReturnType<typeof setTimeout> | undefined;
let previewSeq = 0;
/** Bumped by every edit of the form: what a refusal of *Run simulation* was about. */
let formVersion = 0;
/** The form version a run's refusal was shown for: a preview clears it only after an edit. */
let refusedAt = -1;
/** The last preset applied, and the form version then: an untouched preset's run opens on its moment. */
let presetApplied: { focus?: string; version: number } | undefined;
function previewSoon() {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(async () => {
    const seq = ++previewSeq;
    const parsed = requestFromForm(readForm());
    if (!parsed.ok) {
      showErrors(parsed.errors);
      return;
    }
    try {
      const p = await api.workloadPreview(parsed.request);
      if (seq !== previewSeq) return;
      // The preview knows only the workload: a run refused for the rule (a cost above its
      // capacity) stays said until the form changes.
      if (refusedAt !== formVersion) showErrors([]);
      preview ??= new PreviewChart($("preview-chart"));
      preview.show(p.offered, p.bin_ms);
      const planned = p.planned !== undefined ? `${fmtInt(p.planned)} requests` : "as many requests as the servers can send";
      const note = p.note ? ` — ${p.note}` : "";
      $("preview-text").textContent =
        (p.offered.length === 0 ? `${p.description}: as fast as possible, no schedule to draw` : `${p.description}: ${planned} over ${(p.duration_ms / 1000).toFixed(1)} s, per ${p.bin_ms} ms`) + note;
    } catch (err) {
      if (seq !== previewSeq) return;
      const e = toAppError(err);
      showErrors([{ field: e.field ?? "_form", message: e.message }]);
    }
  }, 250);
}

// --- run ----------------------------------------------------------------------------------

function renderProgress(p: SimProgress | undefined, running: boolean) {
  const bar = $("sim-bar");
  const fraction = p && p.planned ? Math.min(1, p.completed / p.planned) : 0;
  const width = `${Math.round(fraction * 100)}%`;
  if (bar.style.width !== width) bar.style.width = width;
  bar.classList.toggle("running", running);
  const progress = $("sim-progress");
  if (!p) {
    setText(progress, running ? "Starting…" : "Idle");
    return;
  }
  const planned = p.planned !== undefined ? ` / ${fmtInt(p.planned)}` : "";
  const failOpen = p.fail_open > 0 ? ` · ${fmtInt(p.fail_open)} fail-open` : "";
  // The backend's status of the last run: a cancelled run says so, not "Done".
  const status = running ? "Running" : runStatusText(state.sim?.last);
  setText(progress, `${status} · ${fmtInt(p.completed)}${planned} requests · ${(p.elapsed_ms / 1000).toFixed(1)} s${failOpen}`);
}

export function renderSim(status: SimStatus) {
  state.sim = status;
  $<HTMLButtonElement>("sim-run").disabled = status.running;
  $<HTMLButtonElement>("sim-cancel").disabled = !status.running;
  renderProgress(status.progress, status.running);
  if (status.error) showErrors([{ field: status.error.field ?? "_form", message: status.error.message }]);
  emit("sim");
}

export async function initWorkload() {
  writeForm(DEFAULT_FORM);
  renderPresets();
  for (const el of inputs()) {
    el.addEventListener("input", () => {
      formVersion++;
      sync();
      previewSoon();
    });
    el.addEventListener("change", () => {
      formVersion++;
      sync();
      previewSoon();
    });
  }
  form().addEventListener("submit", async (e) => {
    e.preventDefault();
    showErrors([]);
    $("export-note").textContent = "";
    const parsed = requestFromForm(readForm(), $<HTMLInputElement>("sim-name").value);
    if (!parsed.ok) {
      showErrors(parsed.errors);
      return;
    }
    try {
      state.liveFocus = "run";
      const focus = presetApplied?.version === formVersion ? presetApplied.focus : undefined;
      state.focusPeak = focus ? { after: Date.now() - 1000, algorithm: focus } : null;
      renderSim(await api.simStart(parsed.request));
      $<HTMLInputElement>("sim-name").value = "";
    } catch (err) {
      const x = toAppError(err);
      refusedAt = formVersion;
      showErrors([{ field: x.field ?? "_form", message: x.message }]);
    }
  });
  $("sim-cancel").addEventListener("click", async () => {
    try {
      renderSim(await api.simCancel());
    } catch (err) {
      showErrors([{ field: "_form", message: toAppError(err).message }]);
    }
  });
  on("rules", renderTargets);
  on("policies", renderTargets);
  renderTargets();
  // Drawn in the painter's shared frames (../paint.ts). A progress cue that lands, or is
  // drawn, after the run ended must not turn "Cancelled" back into "Running".
  void events.onSimProgress((p) => painter.later("sim-progress", () => state.sim?.running !== false && renderProgress(p, true)));
  renderSim(await api.simStatus());
  previewSoon();
}
