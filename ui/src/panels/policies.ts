//! The Policies view: the open policies file (the one truth: the file `ratelockr serve
//! --policies` and the layer load), its list, the editor (a policy's name, key, mode, its stack
//! of limits and its tiers, each limit's fields following its algorithm), validation while
//! typing with every message beside its field, save and delete in the file itself.
//!
//! The file is looked at every second: a change made outside the app is shown and taken (the
//! form follows it unless the user is editing), an invalid one is shown with the engine's error
//! and the last good policies stay. A save carries the file's version when its edit began; the
//! backend refuses it when the file changed since, and the view asks: reload or overwrite.
import { api, toAppError } from "../api";
import { checkDraft } from "./draft-check";
import type { FileVersion } from "../bindings/FileVersion";
import type { Policy } from "../bindings/Policy";
import type { PolicyFileStatus } from "../bindings/PolicyFileStatus";
import { $, h, showFieldErrors } from "../dom";
import { algorithmInfo, algorithmLabel, LIMIT_KINDS } from "../logic/algorithms";
import {
  describePolicy,
  draftFromForm,
  formFromPolicy,
  MAX_LIMITS,
  newLimit,
  newOverride,
  newPolicy,
  everyLimit,
  policyNameProblem,
  policyTitle,
  type LimitForm,
  type PolicyForm,
} from "../logic/policies";
import { fileLine, fileName, lookNote, statusChanged } from "../logic/policyfile";
import { delayAllowed } from "../logic/calendar";
import { PARAM_SPECS, paramLabel } from "../logic/rules";
import { calendarFields } from "./calendar-fields";
import type { FieldError } from "../logic/workload";
import { emit, on, state } from "../store";

let editing: string | null = null;
let form: PolicyForm = newPolicy();
let nameTouched = false;
/** The open file as last looked at. */
let file: PolicyFileStatus | null = null;
/** The file's version when the form's edit began: what a save is checked against. */
let base: FileVersion = "absent";
/** The user changed the form since it was loaded: a reload leaves it as it is. */
let dirty = false;
/** A refused save or delete waiting for the user's word (reload, or overwrite). */
let pending: ((overwrite: boolean) => Promise<void>) | null = null;
/** Bumped by every write and open, so a look that began before one does not undo it. */
let epoch = 0;

const slot = (path: string) => h("div", { className: "field-error", data: { policyErrorFor: path } });

/** One limit's row: name, algorithm, the algorithm's parameters, remove. */
function limitRow(rows: LimitForm[], i: number, path: string): HTMLElement {
  const row = rows[i];
  const at = `${path}[${i}]`;
  const name = h("input", { value: row.name, data: { field: `${at}.name` }, ariaLabel: `${at} name` });
  name.spellcheck = false;
  name.addEventListener("input", () => {
    row.name = name.value;
    validateSoon();
  });
  const kind = h("select", { data: { field: `${at}.algorithm` }, ariaLabel: `${at} algorithm` }, ...LIMIT_KINDS.map((k) => new Option(algorithmLabel(k), k)));
  kind.value = row.algorithm;
  kind.addEventListener("change", () => {
    row.algorithm = kind.value;
    // Whether the policy may delay changes with its kinds: the max delay field follows.
    render();
    validateSoon();
  });
  const remove = h("button", { type: "button", className: "ghost small", text: "✕", title: "Remove this limit" });
  remove.disabled = rows.length === 1;
  remove.addEventListener("click", () => {
    rows.splice(i, 1);
    render();
    validateSoon();
  });
  const params = algorithmInfo(row.algorithm).params.map((param) => {
    const spec = PARAM_SPECS[param];
    const input = h("input", { value: row[param] ?? "", data: { field: `${at}.${param}` }, ariaLabel: `${at} ${param}` });
    input.inputMode = spec?.whole && !spec.duration ? "numeric" : "decimal";
    input.placeholder = param === "burst" ? "= limit" : spec?.duration ? (spec.placeholder ?? "1s, 1m, 1d") : "";
    if (spec?.title) input.title = spec.title;
    input.addEventListener("input", () => {
      row[param] = input.value;
      validateSoon();
    });
    return h("div", { className: "param" }, h("label", { text: paramLabel(row.algorithm, param) }), input, slot(`${at}.${param}`));
  });
  if (algorithmInfo(row.algorithm).choices) {
    params.push(
      ...calendarFields({
        get: (param) => row[param],
        set: (param, value) => (row[param] = value),
        changed: (layout) => {
          if (layout) render();
          validateSoon();
        },
        field: (param) => `${at}.${param}`,
        slot: (param) => slot(`${at}.${param}`),
      }),
    );
  }
  return h(
    "div",
    { className: "policy-limit", data: { limit: at } },
    h(
      "div",
      { className: "limit-head" },
      h("div", {}, h("label", { text: `Limit ${i + 1}` }), name, slot(`${at}.name`)),
      h("div", {}, h("label", { text: "Algorithm" }), kind, slot(`${at}.algorithm`)),
      remove,
    ),
    h("div", { className: "grid3" }, ...params),
  );
}

function limitsBlock(rows: LimitForm[], path: string): HTMLElement {
  const add = h("button", { type: "button", className: "secondary small", text: "+ Limit", data: { addLimit: path } });
  add.disabled = rows.length >= MAX_LIMITS;
  add.title = add.disabled ? `At most ${MAX_LIMITS} limits: what one script call decides` : "Add a limit to the stack (all must admit)";
  add.addEventListener("click", () => {
    rows.push(newLimit(rows.length));
    render();
    validateSoon();
  });
  return h("div", { className: "policy-limits" }, ...rows.map((_, i) => limitRow(rows, i, path)), slot(path), add);
}

function tierBlock(i: number): HTMLElement {
  const o = form.overrides[i];
  const at = `overrides[${i}]`;
  const tier = h("input", { value: o.tier, data: { field: `${at}.tier` }, ariaLabel: `${at} tier` });
  tier.addEventListener("input", () => {
    o.tier = tier.value;
    validateSoon();
  });
  const keys = h("input", { value: o.keys, placeholder: "premium_*, alice", data: { field: `${at}.keys` }, ariaLabel: `${at} keys` });
  keys.spellcheck = false;
  keys.addEventListener("input", () => {
    o.keys = keys.value;
    validateSoon();
  });
  const remove = h("button", { type: "button", className: "ghost small", text: "Remove tier" });
  remove.addEventListener("click", () => {
    form.overrides.splice(i, 1);
    render();
    validateSoon();
  });
  return h(
    "div",
    { className: "policy-tier", data: { tier: at } },
    h("div", { className: "grid2" }, h("div", {}, h("label", { text: "Tier" }), tier, slot(`${at}.tier`)), h("div", {}, h("label", { text: "Keys (exact or globs * ?)" }), keys, slot(`${at}.keys`))),
    limitsBlock(o.limits, `${at}.limits`),
    slot(at),
    h("div", { className: "row" }, h("span", { className: "spacer" }), remove),
  );
}

/**
 * The policy's max delay (delay instead of deny): usable when every limit, the tiers' too, is a
 * token bucket or GCRA; otherwise disabled and the reason given. A delay already set stays
 * editable beside a limit that cannot delay, so the engine's refusal shows here and the value
 * can be cleared: nothing is dropped unseen.
 */
function delayBlock(): HTMLElement {
  const allowed = delayAllowed(everyLimit(form));
  const input = h("input", { id: "policy-max-delay", value: form.max_delay, placeholder: "0: deny at once", data: { field: "max_delay_ms", testid: "policy-max-delay" } });
  input.inputMode = "decimal";
  input.spellcheck = false;
  input.disabled = !allowed.ok && form.max_delay.trim() === "";
  input.addEventListener("input", () => {
    form.max_delay = input.value;
    validateSoon();
  });
  const hint = allowed.ok
    ? "a request that would pass within this wait is admitted now with delay_ms, instead of a 429: 500ms, 1s"
    : allowed.why;
  return h(
    "div",
    { className: "policy-delay", data: { delay: allowed.ok ? "on" : "off" } },
    h("label", { htmlFor: "policy-max-delay", text: "Max delay " }, h("span", { className: "hint", text: "delay instead of deny" })),
    input,
    h("div", { className: allowed.ok ? "hint" : "hint delay-off", text: hint, data: { testid: "policy-delay-note" } }),
    slot("max_delay_ms"),
  );
}

/** Redraws the limits and tiers from the form (the simple fields are inputs of their own). */
function render() {
  $("policy-limits").replaceChildren(limitsBlock(form.limits, "limits"), delayBlock());
  $("policy-tiers").replaceChildren(...form.overrides.map((_, i) => tierBlock(i)));
}

function showErrors(errors: FieldError[]) {
  showFieldErrors($("policy-form"), "policy-error-for", errors);
}

/** Client-side problems first (the name, text that is no number), then the engine's verdict. */
async function validate(): Promise<boolean> {
  form.name = $<HTMLInputElement>("policy-name").value;
  form.key = $<HTMLInputElement>("policy-key").value;
  form.mode = $<HTMLSelectElement>("policy-mode").value === "shadow" ? "shadow" : "enforce";
  const name = policyNameProblem(form.name, state.policies, editing);
  const errors = await checkDraft({
    nameProblem: name,
    showName: nameTouched || form.name.trim() !== "",
    parsed: draftFromForm(form),
    engine: (draft) => api.policyValidate(draft),
  });
  showErrors(errors);
  return errors.length === 0 && !name;
}

let timer: ReturnType<typeof setTimeout> | undefined;
function validateSoon() {
  dirty = true;
  clearTimeout(timer);
  timer = setTimeout(() => void validate(), 200);
}

function edit(policy: Policy | null) {
  editing = policy?.name ?? null;
  nameTouched = false;
  dirty = false;
  base = file?.version ?? "absent";
  showConflict(null);
  form = policy ? formFromPolicy(policy) : newPolicy();
  $("policy-form-title").textContent = policy ? `Edit policy “${policy.name}”` : "New policy";
  $("policy-delete").classList.toggle("hidden", !policy);
  $("policy-copy").classList.toggle("hidden", !policy);
  $<HTMLInputElement>("policy-name").value = form.name;
  $<HTMLInputElement>("policy-key").value = form.key;
  $<HTMLSelectElement>("policy-mode").value = form.mode;
  render();
  showErrors([]);
  renderList();
}

function renderList() {
  const list = $("policy-list");
  if (state.policies.length === 0) {
    const text = file?.file ? `No policies in ${fileName(file.file)} yet: create one, and saving writes the file.` : "No policies file open: open one, or make a new one.";
    list.replaceChildren(h("li", { className: "empty", text }));
    return;
  }
  list.replaceChildren(
    ...state.policies.map((p) => {
      const li = h(
        "li",
        { className: "rule-item" + (editing === p.name ? " selected" : ""), tabIndex: 0, title: policyTitle(p), data: { policy: p.name } },
        h("span", { className: "rule-name", text: p.name }),
        h("span", { className: `badge ${p.mode === "shadow" ? "shadow" : "policy"}`, text: `${p.mode} · ${p.limits.length} limit${p.limits.length === 1 ? "" : "s"}` }),
        h("span", { className: "rule-desc", text: describePolicy(p) }),
      );
      li.addEventListener("click", () => edit(p));
      li.addEventListener("keydown", (e) => e.key === "Enter" && edit(p));
      return li;
    }),
  );
}

function note(text: string, error = false) {
  const el = $("policy-note");
  el.textContent = text;
  el.classList.toggle("error", error);
}

function showConflict(message: string | null) {
  $("policy-conflict").classList.toggle("hidden", message === null);
  $("policy-conflict-text").textContent = message ?? "";
  if (message === null) pending = null;
}

/** Takes a status from the backend: the list, the file bar, and the form when it is not being edited. */
function take(next: PolicyFileStatus) {
  const prev = file;
  const said = lookNote(prev, next);
  file = next;
  if (said) note(said.text, said.error);
  else if (!next.error && prev?.error) note("");
  if (!statusChanged(prev, next)) return;
  state.policies = next.policies;
  $("policy-file-path").textContent = fileLine(next);
  $("policy-file-path").title = next.file ? `ratelockr serve --policies ${next.file}` : "";
  $("policy-file").dataset.version = next.version;
  if (!dirty) {
    // Nothing typed since the form was loaded: it shows the policy as the file holds it now.
    edit(state.policies.find((p) => p.name === editing) ?? null);
  } else {
    renderList();
  }
  emit("policies");
}

/** Looks at the file (an outside change taken, an invalid one shown); errors go to the note. */
async function look() {
  const at = epoch;
  try {
    const next = await api.policiesFile();
    if (at === epoch) take(next);
  } catch (err) {
    note(toAppError(err).message, true);
  }
}

/** Runs a save or a delete; a file changed since the edit began asks first. */
async function write(action: (overwrite: boolean) => Promise<PolicyFileStatus>, after: (next: PolicyFileStatus) => void) {
  const run = async (overwrite: boolean) => {
    epoch++;
    try {
      const next = await action(overwrite);
      showConflict(null);
      dirty = false;
      take(next);
      after(next);
    } catch (err) {
      const x = toAppError(err);
      if (x.code === "file_changed") {
        showConflict(x.message);
        pending = run;
      } else {
        showErrors([{ field: x.field ?? "_form", message: x.message }]);
      }
    }
  };
  await run(false);
}

/** A file for the first save when none is open: the save dialog's new file. */
async function ensureFile(): Promise<boolean> {
  if (file?.file) return true;
  epoch++;
  try {
    const next = await api.policiesFileNew();
    base = next.version;
    take(next);
    return true;
  } catch (err) {
    const x = toAppError(err);
    if (x.code !== "cancelled") note(x.message, true);
    return false;
  }
}

async function openWith(choose: () => Promise<PolicyFileStatus>, what: string) {
  if (dirty) {
    // Nothing is lost without the user's word: the edit is saved, or dropped by New policy.
    note("This policy has an unsaved edit: save it, or drop it with + New policy, before opening another file.", true);
    return;
  }
  epoch++;
  try {
    const next = await choose();
    dirty = false;
    take(next);
    edit(null);
    if (next.file) note(`${what} ${next.file}: saved in place, as serve and the layer load it.`);
  } catch (err) {
    const x = toAppError(err);
    if (x.code !== "cancelled") note(x.message, true);
  }
}

export async function initPolicies() {
  $("policy-name").addEventListener("input", () => {
    nameTouched = true;
    validateSoon();
  });
  $("policy-key").addEventListener("input", validateSoon);
  $("policy-mode").addEventListener("change", validateSoon);
  $("policy-add-tier").addEventListener("click", () => {
    form.overrides.push(newOverride(form.limits));
    render();
    validateSoon();
  });
  $("policy-new").addEventListener("click", () => edit(null));
  // An edited copy beside the original: what a side-by-side simulation or replay compares.
  $("policy-copy").addEventListener("click", () => {
    const original = editing;
    editing = null;
    form.name = `${original ?? "policy"}-edited`;
    $<HTMLInputElement>("policy-name").value = form.name;
    $("policy-form-title").textContent = `New policy, a copy of “${original}”`;
    $("policy-delete").classList.add("hidden");
    $("policy-copy").classList.add("hidden");
    renderList();
    validateSoon();
  });
  $("policy-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    nameTouched = true;
    clearTimeout(timer);
    if (!(await validate())) return;
    const parsed = draftFromForm(form);
    if (!parsed.ok || !(await ensureFile())) return;
    const original = editing;
    await write(
      (overwrite) => api.policyFileSave(original, parsed.draft, base, overwrite),
      (next) => {
        edit(next.policies.find((p) => p.name === parsed.draft.name) ?? null);
        note(`Saved “${String(parsed.draft.name)}” in ${fileName(next.file ?? "")}.`);
      },
    );
  });
  $("policy-delete").addEventListener("click", async () => {
    const name = editing;
    if (!name) return;
    await write(
      (overwrite) => api.policyFileDelete(name, base, overwrite),
      (next) => {
        edit(null);
        note(`Deleted “${name}” from ${fileName(next.file ?? "")}.`);
      },
    );
  });
  $("policy-reload").addEventListener("click", async () => {
    // The edit is dropped: the form shows the policy as the file holds it now.
    dirty = false;
    showConflict(null);
    await look();
    edit(state.policies.find((p) => p.name === editing) ?? null);
  });
  $("policy-overwrite").addEventListener("click", () => void pending?.(true));
  $("policy-open").addEventListener("click", () => void openWith(api.policiesFileOpen, "Opened"));
  $("policy-file-new").addEventListener("click", () => void openWith(api.policiesFileNew, "New file"));
  on("policies", renderList);
  await look();
  edit(null);
  setInterval(() => void look(), 1000);
}
