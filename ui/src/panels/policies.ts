//! The Policies card: the list, the editor (a policy's name, key, mode, its stack of limits and
//! its tiers, each limit's fields following its algorithm), validation while typing with every
//! message beside its field, save, delete, and import and export of a policies file.
import { api, toAppError } from "../api";
import { checkDraft } from "./draft-check";
import type { Policy } from "../bindings/Policy";
import { $, h, showFieldErrors } from "../dom";
import { algorithmInfo, algorithmLabel } from "../logic/algorithms";
import {
  describePolicy,
  draftFromForm,
  formFromPolicy,
  MAX_LIMITS,
  newLimit,
  newOverride,
  newPolicy,
  policyNameProblem,
  policyTitle,
  type LimitForm,
  type PolicyForm,
} from "../logic/policies";
import { PARAM_SPECS } from "../logic/rules";
import type { FieldError } from "../logic/workload";
import { emit, on, state } from "../store";

const KINDS = ["token_bucket", "gcra", "sliding_window_log", "sliding_window_counter", "fixed_window"];

let editing: string | null = null;
let form: PolicyForm = newPolicy();
let nameTouched = false;

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
  const kind = h("select", { data: { field: `${at}.algorithm` }, ariaLabel: `${at} algorithm` }, ...KINDS.map((k) => new Option(algorithmLabel(k), k)));
  kind.value = row.algorithm;
  kind.addEventListener("change", () => {
    row.algorithm = kind.value;
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
    input.inputMode = spec?.whole ? "numeric" : "decimal";
    input.placeholder = param === "burst" ? "= limit" : "";
    input.addEventListener("input", () => {
      row[param] = input.value;
      validateSoon();
    });
    return h("div", { className: "param" }, h("label", { text: spec?.input ?? param }), input, slot(`${at}.${param}`));
  });
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

/** Redraws the limits and tiers from the form (the simple fields are inputs of their own). */
function render() {
  $("policy-limits").replaceChildren(limitsBlock(form.limits, "limits"));
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
  clearTimeout(timer);
  timer = setTimeout(() => void validate(), 200);
}

function edit(policy: Policy | null) {
  editing = policy?.name ?? null;
  nameTouched = false;
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
    list.replaceChildren(h("li", { className: "empty", text: "No policies yet. Create one below, or import a policies file." }));
    return;
  }
  list.replaceChildren(
    ...state.policies.map((p) => {
      const li = h(
        "li",
        { className: "rule-item" + (editing === p.name ? " selected" : ""), tabIndex: 0, title: policyTitle(p), data: { policy: p.name } },
        h("span", { className: "rule-name", text: p.name }),
        h("span", { className: `badge ${p.mode === "shadow" ? "shadow" : "policy"}`, text: p.mode === "shadow" ? "shadow" : `${p.limits.length} limit${p.limits.length === 1 ? "" : "s"}` }),
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
    if (!parsed.ok) return;
    try {
      state.policies = await api.policySave(editing, parsed.draft);
      edit(state.policies.find((p) => p.name === parsed.draft.name) ?? null);
      note("");
      emit("policies");
    } catch (err) {
      const x = toAppError(err);
      showErrors([{ field: x.field ?? "_form", message: x.message }]);
    }
  });
  $("policy-delete").addEventListener("click", async () => {
    if (!editing) return;
    try {
      state.policies = await api.policyDelete(editing);
      edit(null);
      emit("policies");
    } catch (err) {
      showErrors([{ field: "_form", message: toAppError(err).message }]);
    }
  });
  $("policy-import").addEventListener("click", async () => {
    try {
      const done = await api.policiesImport();
      state.policies = done.policies;
      const replaced = done.replaced.length ? `; replaced ${done.replaced.join(", ")}` : "";
      note(`Imported ${done.added.length + done.replaced.length} from ${done.path}${replaced}.`);
      edit(state.policies.find((p) => p.name === (done.added[0] ?? done.replaced[0])) ?? null);
      emit("policies");
    } catch (err) {
      const x = toAppError(err);
      if (x.code !== "cancelled") note(x.message, true);
    }
  });
  $("policy-export").addEventListener("click", async () => {
    try {
      const done = await api.policiesExport();
      note(`Exported the policies and rules to ${done.path}: load it with ratelockr serve --policies.`);
    } catch (err) {
      const x = toAppError(err);
      if (x.code !== "cancelled") note(x.message, true);
    }
  });
  on("policies", renderList);
  state.policies = await api.policiesList().catch(() => []);
  edit(null);
  emit("policies");
}
