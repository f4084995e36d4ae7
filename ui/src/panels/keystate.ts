//! A client key's limiter state under the run chart: the key picker (each rule's top
//! offenders, or the key opened in the per-key view), its state over the run on the chart's
//! x range, and Peek: the key's live state read now through the engine's peek (cost 0,
//! nothing spent), with what an HTTP client asking now would receive.
import { api, toAppError } from "../api";
import type { KeyPeek } from "../bindings/KeyPeek";
import type { RunChart } from "../charts/run";
import { $, h } from "../dom";
import { fmtInt } from "../logic/format";
import { keyOptions, keyStateLine, stateLabel, type KeyChoice, type KeyStateLine } from "../logic/keystate";
import { stateCeiling, type Records } from "../logic/records";
import { emit, state } from "../store";

/** The run the key is drawn for, its line, and the peek's sequence (a late answer is dropped). */
let shown: { run: string; rec: Records } | undefined;
let shownLine: KeyStateLine | undefined;
let peekSeq = 0;

const value = (c: KeyChoice) => `${c.target}|${c.name}`;

function parse(v: string): KeyChoice | null {
  const at = v.indexOf("|");
  return at < 0 ? null : { target: Number(v.slice(0, at)), name: v.slice(at + 1) };
}

function renderPicker(rec: Records | undefined) {
  const select = $<HTMLSelectElement>("chart-key");
  const many = (rec?.targets.filter((t) => !t.naive).length ?? 0) > 1;
  const options = rec ? keyOptions(rec, 5, state.chartKey) : [];
  select.replaceChildren(
    new Option("none", ""),
    ...options.map((o) => {
      const rule = rec?.targets[o.target]?.rule.name ?? "";
      const denied = o.denied ? `${fmtInt(o.denied)} denied` : `${fmtInt(o.requests)} sent`;
      return new Option(`${o.name}${many ? ` · ${rule}` : ""} (${denied})`, value(o));
    }),
  );
  select.value = state.chartKey && options.some((o) => value(o) === value(state.chartKey!)) ? value(state.chartKey) : "";
  select.disabled = !rec;
}

/** Draws the chosen key for `rec` (the selected run) after the run chart was drawn. */
export function drawKeyState(chart: RunChart, run: string | undefined, rec: Records | undefined, endS: number) {
  if (shown?.run !== run) clearPeek();
  shown = run && rec ? { run, rec } : undefined;
  renderPicker(rec);
  const choice = state.chartKey;
  const line = rec && choice ? keyStateLine(rec, choice, endS) : undefined;
  shownLine = line;
  const note = $("chart-key-note");
  const card = $("key-state");
  card.dataset.key = line ? line.title : "";
  card.classList.toggle("open", !!line);
  if (!choice) note.textContent = "pick a client key to draw its limiter state under the chart";
  else if (!line) note.textContent = `${choice.name} did not send to that rule in this run`;
  else note.textContent = `${line.title}: ${line.label} after each of its ${fmtInt(line.decisions)} decisions; dashed: the most it can hold (${fmtInt(line.ceiling ?? 0)})`;
  chart.showKey($("key-chart"), line);
  $<HTMLButtonElement>("key-peek").disabled = !line;
}

/** The last value the run left (the line's last known point). */
function lastKnown(line: KeyStateLine | undefined): number | undefined {
  for (let i = (line?.values.length ?? 0) - 1; i >= 0; i--) {
    const v = line?.values[i];
    if (v !== null && v !== undefined) return v;
  }
  return undefined;
}

/** The key's state as drawn now, for the export. */
export function shownKeyState(): KeyStateLine | undefined {
  return shownLine;
}

function clearPeek() {
  peekSeq++;
  $("key-peek-out").replaceChildren(h("span", { className: "hint", text: "Peek reads this key's state in Redis now, without spending anything." }));
}

function renderPeek(p: KeyPeek) {
  const d = p.decision;
  const label = stateLabel(p.rule);
  const ceiling = stateCeiling(p.rule) ?? 0;
  const now = new Date(p.at_ms).toLocaleTimeString("en-GB");
  // Beside what the run left, so "4 now" next to a line ending at 0 reads as a refill.
  const left = lastKnown(shownLine);
  const since = left === undefined || d.fail_open ? "" : left === d.remaining ? " · as the run left it" : ` · the run left ${fmtInt(left)}`;
  const head = d.fail_open
    ? h("div", { className: "warn", text: `Redis did not answer at ${now}: the peek failed open (remaining −1), so nothing is known about ${p.key}.` })
    : h(
        "div",
        { className: "peek-now" },
        h("strong", { text: `${fmtInt(d.remaining)} ${label}` }),
        ` of ${fmtInt(ceiling)} now${since} · full again in ${(d.reset_after_ms / 1000).toFixed(1)} s`,
      );
  const reason = p.answer.status === 429 ? "Too Many Requests" : "OK";
  // Resets the very state peeked (this run's copy of the key, or the shared one), then peeks.
  const reset = h("button", { type: "button", className: "ghost small", text: "Reset it", title: `Delete ${p.decided_as}'s limiter state, then peek again`, data: { testid: "peek-reset" } });
  reset.addEventListener("click", async () => {
    try {
      await api.limiterReset(p.rule.name, p.decided_as);
      await peek();
    } catch (err) {
      $("key-peek-out").replaceChildren(h("div", { className: "error", text: `Not reset: ${toAppError(err).message}` }));
    }
  });
  $("key-peek-out").replaceChildren(
    h(
      "div",
      { className: "peek", data: { remaining: String(d.remaining), testid: "peek-result" } },
      head,
      h("div", {
        className: "hint",
        text: `Read from Redis at ${now} without spending anything (a cost-0 check) on ${p.decided_as === p.key ? "the shared state" : "this run's own copy"} of ${p.key} (${p.decided_as}). A client asking now would get:`,
      }),
      h("div", {}, reset),
      h("pre", { className: "mono http-response", data: { status: String(p.answer.status) } }, `HTTP/1.1 ${p.answer.status} ${reason}\n` + p.answer.headers.map(([k, v]) => `${k}: ${v}`).join("\n")),
    ),
  );
}

async function peek() {
  const choice = state.chartKey;
  if (!shown || !choice) return;
  const mine = ++peekSeq;
  const out = $("key-peek-out");
  out.replaceChildren(h("div", { className: "hint", text: "Peeking…" }));
  try {
    const p = await api.limiterPeek(shown.run, choice.target, choice.name);
    if (mine === peekSeq) renderPeek(p);
  } catch (err) {
    if (mine === peekSeq) out.replaceChildren(h("div", { className: "error", text: `No peek: ${toAppError(err).message}` }));
  }
}

export function initKeyState() {
  $("chart-key").addEventListener("change", () => {
    state.chartKey = parse($<HTMLSelectElement>("chart-key").value);
    clearPeek();
    emit("chartKey");
  });
  $("key-peek").addEventListener("click", () => void peek());
}
