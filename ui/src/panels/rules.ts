//! The rules card: the list, the editor (its fields follow the algorithm), validation while
//! typing, save, delete, and resetting a rule's (or one client key's) limiter state.
import { api, toAppError } from "../api";
import { fileName } from "../logic/policyfile";
import { checkDraft } from "./draft-check";
import type { Rule } from "../bindings/Rule";
import { $, h, showFieldErrors } from "../dom";
import { algorithmInfo, algorithmLabel, LIMIT_KINDS } from "../logic/algorithms";
import { focusAfterRuleClick } from "../logic/live";
import { logMemoryWarning } from "../logic/logmemory";
import { DEFAULT_PERIOD, DEFAULT_ZONE } from "../logic/calendar";
import { calendarFields } from "./calendar-fields";
import { describeRule, draftFromForm, formFromRule, nameProblem, PARAM_SPECS, paramLabel, type RuleForm } from "../logic/rules";
import type { FieldError } from "../logic/workload";
import { emit, on, state } from "../store";

/** Input ids kept from the first version (the E2E test and muscle memory use them). */
const INPUT_ID: Record<string, string> = { capacity: "rule-capacity", refill_per_sec: "rule-refill", limit: "rule-limit", window_ms: "rule-window", burst: "rule-burst", lease_ms: "rule-lease" };
const DEFAULTS: Record<string, string> = { capacity: "10", refill_per_sec: "5", limit: "10", window_ms: "1000", burst: "10", lease_ms: "1m", period: DEFAULT_PERIOD, time_zone: DEFAULT_ZONE, week_start: "monday" };

let editing: string | null = null;
/** Parameter text per field, kept when the algorithm changes. */
const values: Record<string, string> = { ...DEFAULTS };
/** The name field has been typed in: only then is an empty name worth saying. */
let nameTouched = false;

const algorithmSelect = () => $<HTMLSelectElement>("rule-algorithm");
const nameInput = () => $<HTMLInputElement>("rule-name");

function renderParams() {
  const box = $("rule-params");
  for (const input of box.querySelectorAll("input")) if (input.dataset.field) values[input.dataset.field] = input.value;
  const algorithm = algorithmSelect().value;
  const choices = algorithmInfo(algorithm).choices
    ? calendarFields({
        get: (param) => values[param],
        set: (param, value) => (values[param] = value),
        changed: (layout) => {
          if (layout) renderParams();
          validateSoon();
        },
        field: (param) => param,
        id: (param) => `rule-${param.replace(/_/g, "-")}`,
        slot: (param) => h("div", { className: "field-error", data: { errorFor: param } }),
      })
    : [];
  box.replaceChildren(
    ...algorithmInfo(algorithm).params.map((param) => {
      const spec = PARAM_SPECS[param];
      const input = h("input", { id: INPUT_ID[param] ?? `rule-${param}`, value: values[param] ?? "", data: { field: param } });
      input.inputMode = spec?.whole && !spec.duration ? "numeric" : "decimal";
      if (spec?.duration) input.placeholder = spec.placeholder ?? "1s, 500ms, 1m, 1d";
      if (spec?.title) input.title = spec.title;
      input.addEventListener("input", validateSoon);
      return h(
        "div",
        {},
        h("label", { htmlFor: input.id, text: paramLabel(algorithm, param) }),
        input,
        h("div", { className: "field-error", data: { errorFor: param } }),
      );
    }),
    ...choices,
  );
}

function readForm(): RuleForm {
  const form: RuleForm = { name: nameInput().value, algorithm: algorithmSelect().value };
  for (const input of $("rule-params").querySelectorAll("input")) if (input.dataset.field) form[input.dataset.field] = input.value;
  // A calendar quota's words are picked, not typed: kept as chosen.
  for (const param of algorithmInfo(form.algorithm).choices ?? []) form[param] = values[param] ?? "";
  return form;
}

function showErrors(errors: FieldError[]) {
  showFieldErrors($("rule-form"), "error-for", errors);
}

/** Client-side problems first (names, text that is no number), then the engine's verdict. */
async function validate(): Promise<boolean> {
  const form = readForm();
  const memory = logMemoryWarning(form.algorithm, form.limit);
  $("rule-memory-note").textContent = memory ?? "";
  $("rule-memory-note").classList.toggle("hidden", memory === null);
  const name = nameProblem(form.name, state.rules, editing);
  const errors = await checkDraft({
    nameProblem: name,
    showName: nameTouched || form.name.trim() !== "",
    parsed: draftFromForm(form),
    engine: (draft) => api.ruleValidate(draft),
  });
  showErrors(errors);
  return errors.length === 0 && !name;
}

let timer: ReturnType<typeof setTimeout> | undefined;
function validateSoon() {
  clearTimeout(timer);
  timer = setTimeout(() => void validate(), 200);
}

function edit(rule: Rule | null, fromClick = true) {
  editing = rule?.name ?? null;
  nameTouched = false;
  if (fromClick && rule) {
    state.liveFocus = focusAfterRuleClick(state.sim?.running ?? false, state.liveFocus);
    emit("selection");
  }
  $("rule-form-title").textContent = rule ? `Edit “${rule.name}”` : "New rule";
  $("rule-delete").classList.toggle("hidden", !rule);
  $("rule-to-file").classList.toggle("hidden", !rule);
  $("rule-file-note").textContent = "";
  $("rule-reset-box").classList.toggle("hidden", !rule);
  $("reset-note").textContent = "";
  if (rule) {
    const f = formFromRule(rule);
    nameInput().value = f.name;
    algorithmSelect().value = f.algorithm;
    for (const [k, v] of Object.entries(f)) if (k !== "name" && k !== "algorithm") values[k] = v;
  } else {
    nameInput().value = "";
  }
  renderParams();
  showErrors([]);
  renderList();
}

function renderList() {
  const list = $("rule-list");
  if (state.rules.length === 0) {
    list.replaceChildren(h("li", { className: "empty", text: "No rules yet. Create one below." }));
    return;
  }
  list.replaceChildren(
    ...state.rules.map((rule) => {
      const li = h(
        "li",
        { className: "rule-item" + (editing === rule.name ? " selected" : ""), tabIndex: 0, data: { rule: rule.name } },
        h("span", { className: "rule-name", text: rule.name }),
        h("span", { className: `badge ${rule.algorithm}`, text: algorithmLabel(rule.algorithm) }),
        h("span", { className: "rule-desc", text: describeRule(rule) }),
      );
      li.addEventListener("click", () => edit(rule));
      li.addEventListener("keydown", (e) => e.key === "Enter" && edit(rule));
      return li;
    }),
  );
}

async function reset(key: string | undefined) {
  const note = $("reset-note");
  if (!editing) return;
  note.classList.remove("error");
  note.textContent = "Resetting…";
  try {
    const r = await api.limiterReset(editing, key);
    note.textContent = `${r.key ? `Key “${r.key}”` : "Every key"} of “${r.rule}” starts full again (${r.deleted} Redis key${r.deleted === 1 ? "" : "s"} deleted).`;
  } catch (err) {
    note.classList.add("error");
    note.textContent = toAppError(err).message;
  }
}

export async function initRules() {
  algorithmSelect().replaceChildren(...LIMIT_KINDS.map((k) => new Option(algorithmLabel(k), k)));
  nameInput().addEventListener("input", () => {
    nameTouched = true;
    validateSoon();
  });
  algorithmSelect().addEventListener("change", () => {
    renderParams();
    validateSoon();
  });
  $("rule-new").addEventListener("click", () => edit(null));
  $("rule-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    nameTouched = true;
    clearTimeout(timer);
    if (!(await validate())) return;
    const parsed = draftFromForm(readForm());
    if (!parsed.ok) return;
    try {
      state.rules = await api.ruleSave(editing, parsed.draft);
      edit(state.rules.find((r) => r.name === parsed.draft.name) ?? null, false);
      emit("rules");
    } catch (err) {
      const x = toAppError(err);
      showErrors([{ field: x.field ?? "_form", message: x.message }]);
    }
  });
  $("rule-delete").addEventListener("click", async () => {
    if (!editing) return;
    try {
      state.rules = await api.ruleDelete(editing);
      edit(null, false);
      emit("rules");
    } catch (err) {
      const x = toAppError(err);
      showErrors([{ field: "_form", message: x.message }]);
    }
  });
  // What was tuned here, in the file serve and the layer load (the Policies view's open file).
  $("rule-to-file").addEventListener("click", async () => {
    const name = editing;
    const note = $("rule-file-note");
    if (!name) return;
    note.classList.remove("error");
    try {
      const done = await api.ruleToPoliciesFile(name);
      note.textContent = `“${name}” is in ${fileName(done.file ?? "the policies file")} as a policy of one limit, for ratelockr serve --policies.`;
      note.title = done.file ?? "";
    } catch (err) {
      note.classList.add("error");
      note.textContent = toAppError(err).message;
    }
  });
  $("rule-reset").addEventListener("click", () => void reset(undefined));
  $("rule-reset-key").addEventListener("click", () => {
    const key = $<HTMLInputElement>("reset-key").value.trim();
    if (key === "") {
      $("reset-note").textContent = "Type a client key to reset (e.g. client-0).";
      return;
    }
    void reset(key);
  });
  on("rules", renderList);
  state.rules = await api.rulesList().catch(() => []);
  edit(null, false);
  emit("rules");
}
