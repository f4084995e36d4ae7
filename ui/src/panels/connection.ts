//! The connection card: which Redis (single node or cluster, plain TCP or TLS, INSECURE), its
//! round trip, a cluster's nodes, the TLS files, Test and Use this Redis.
import { api, toAppError } from "../api";
import type { AppError } from "../bindings/AppError";
import type { ConnectionStatus } from "../bindings/ConnectionStatus";
import type { Topology } from "../bindings/Topology";
import type { Transport } from "../bindings/Transport";
import { $, h, showFieldErrors } from "../dom";
import { formFromTls, hidePassword, markers, PASSWORD_MASK, serverText, TLS_FIELDS, tlsFromForm, topologyRows, topologySummary, wantsTls, withPassword, type TlsForm } from "../logic/connection";
import { fmtRtt } from "../logic/format";
import { painter, setData, setText } from "../paint";
import { emit, state } from "../store";

const STATE_TEXT = { connected: "Connected", embedded: "Embedded Redis", unreachable: "Unreachable" };

/** Draws the marks into `el` when they changed (the poll runs every 2 s). */
function renderMarks(el: HTMLElement, t: Transport) {
  const marks = markers(t);
  const key = marks.map((m) => `${m.tone}:${m.text}:${m.title}`).join("|");
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  el.replaceChildren(...marks.map((m) => h("span", { className: `mark ${m.tone}`, text: m.text, title: m.title, data: { testid: `mark-${m.text.toLowerCase().replace(/ /g, "-")}` } })));
}

/** The connection the topology was last read for: it is read again when this changes. */
let topologyFor: string | null = null;

function render(s: ConnectionStatus) {
  state.conn = s;
  setData($("conn-pill"), "state", s.state);
  setText($("conn-pill-text"), `${STATE_TEXT[s.state]} · ${fmtRtt(s.rtt_ms)}`);
  renderMarks($("conn-pill-marks"), s.transport);
  renderMarks($("conn-marks"), s.transport);
  setText(
    $("conn-state"),
    s.state === "embedded"
      ? "Embedded (a private redis-server started by this app)"
      : s.state === "connected"
        ? s.configured
          ? "Connected"
          : "Connected (local default)"
        : "Unreachable — failing open",
  );
  setData($("conn-state"), "state", s.state);
  // The reason (a TLS handshake's diagnosis...) is in the fail-open banner, and here on hover.
  const why = s.error ?? "";
  if ($("conn-state").title !== why) $("conn-state").title = why;
  setText($("conn-url"), s.url);
  if ($("conn-url").title !== s.url) $("conn-url").title = s.url;
  setText($("conn-rtt"), fmtRtt(s.rtt_ms));
  const server = serverText(s.server);
  setText($("conn-server"), server.text);
  $("conn-server").classList.toggle("bad", server.bad);
  if ($("conn-server").title !== server.title) $("conn-server").title = server.title;
  $("conn-topology").classList.toggle("hidden", !s.transport.cluster);
  const current = `${s.url}|${s.state}`;
  if (s.transport.cluster && topologyFor !== current) {
    topologyFor = current;
    void loadTopology();
  }
  fillTlsOnce(s.transport);
  emit("connection");
}

// --- the cluster's nodes: read on a connection change and on Refresh, never polled --------

function renderTopology(t: Topology) {
  setText($("conn-topology-summary"), topologySummary(t));
  $("conn-topology-rows").replaceChildren(
    ...topologyRows(t).map((r) =>
      h(
        "tr",
        { className: `${r.role}${r.bad ? " bad" : ""}`, title: r.title },
        h("td", { className: "mono", text: r.shown }),
        h("td", { text: r.role }),
        h("td", { className: "mono", text: r.detail }),
        h("td", { className: "num", text: r.rtt }),
      ),
    ),
  );
}

async function loadTopology() {
  setText($("conn-topology-note"), "Reading…");
  try {
    renderTopology(await api.connectionTopology());
    setText($("conn-topology-note"), "");
  } catch (err) {
    setText($("conn-topology-note"), toAppError(err).message);
  }
}

// --- the TLS form ---------------------------------------------------------------------------

const tlsInputs = () => ({
  ca: $<HTMLInputElement>("conn-tls-ca"),
  cert: $<HTMLInputElement>("conn-tls-cert"),
  key: $<HTMLInputElement>("conn-tls-key"),
  insecure: $<HTMLInputElement>("conn-tls-insecure"),
});

function readTls(): TlsForm {
  const i = tlsInputs();
  return { ca: i.ca.value, cert: i.cert.value, key: i.key.value, insecure: i.insecure.checked };
}

/**
 * The TLS options to send with `url`: the form's, when the URL asks for TLS or the user opened
 * the fields (then a file on a redis:// URL is refused by name, not ignored); none when they
 * stayed folded beside a plain URL, since they may only be left from the last connection.
 */
function tlsFor(url: string) {
  return wantsTls(url) || $<HTMLDetailsElement>("conn-tls").open ? tlsFromForm(readTls()) : null;
}

let tlsFilled = false;
/** After a start or a switch, the form shows the TLS files in use, once (never over typing). */
function fillTlsOnce(t: Transport) {
  if (tlsFilled) return;
  tlsFilled = true;
  const form = formFromTls(t.tls_options);
  const i = tlsInputs();
  i.ca.value = form.ca;
  i.cert.value = form.cert;
  i.key.value = form.key;
  i.insecure.checked = form.insecure;
}

/** Shows an error beside its field (opening the TLS fields when it is one of theirs). */
function showError(err: AppError | null) {
  const form = $("conn-form");
  showFieldErrors(form, "error-for", err ? [{ field: err.field ?? "_form", message: err.message }] : []);
  if (err?.field && (TLS_FIELDS as readonly string[]).includes(err.field)) $<HTMLDetailsElement>("conn-tls").open = true;
}

// --- the status poll and the buttons ---------------------------------------------------------

let inFlight = false;
/** Bumped by every switch: a poll begun before it describes the old Redis and is dropped
 * (drawn after the switch's own answer, it would show the old connection for 2 s). */
let generation = 0;
async function poll() {
  if (inFlight) return;
  inFlight = true;
  const asked = generation;
  try {
    const s = await api.connectionStatus();
    // A poll is a streaming update: drawn in the painter's shared frames.
    painter.later("connection", () => {
      if (asked === generation) render(s);
    });
  } catch (err) {
    $("conn-note").textContent = toAppError(err).message;
  } finally {
    inFlight = false;
  }
}

export async function initConnection() {
  const input = $<HTMLInputElement>("conn-input");
  // The field shows the URL (host, port, user) but never its password: a typed or pasted
  // password is kept here and the field shows a mask in its place.
  let password: string | null = null;
  const url = () => withPassword(input.value, password);
  // The TLS fields stay folded away (the card must leave room at 1024 × 640) until the URL
  // asks for TLS.
  input.addEventListener("input", () => {
    const hidden = hidePassword(input.value);
    if (hidden.password !== null) {
      password = hidden.password;
      input.value = hidden.shown;
    } else if (!input.value.includes(`:${PASSWORD_MASK}@`)) {
      password = null;
    }
    if (wantsTls(input.value)) $<HTMLDetailsElement>("conn-tls").open = true;
  });
  $("conn-topology-refresh").addEventListener("click", () => void loadTopology());
  // Browse…: the path from the native open dialog (the file is read on Test and Use).
  for (const button of document.querySelectorAll<HTMLButtonElement>("#conn-tls [data-pick]")) {
    button.addEventListener("click", async () => {
      const field = button.dataset.pick ?? "";
      try {
        const path = await api.connectionPickFile(field);
        const target = document.querySelector<HTMLInputElement>(`#conn-tls input[data-field="${field}"]`);
        if (target) target.value = path;
      } catch (err) {
        const e = toAppError(err);
        if (e.code !== "cancelled") showError(e);
      }
    });
  }

  $("conn-test").addEventListener("click", async () => {
    showError(null);
    $("conn-note").textContent = "Testing…";
    try {
      const t = await api.connectionTest(url(), tlsFor(input.value));
      const kind = markers(t.transport)
        .map((m) => m.text)
        .join(", ");
      const on = t.server ? `, ${serverText(t.server).text}` : "";
      $("conn-note").textContent = t.ok
        ? `✓ ${t.url} (${kind}${on}) answered in ${fmtRtt(t.rtt_ms)}`
        : t.server
          ? `✗ ${t.url} answered but cannot decide: ${t.error ?? "no scripting"}`
          : `✗ ${t.url} did not answer: ${t.error ?? "no reply"}`;
      // A handshake that failed because of a form field (an unknown CA...) is shown there too.
      if (!t.ok && t.field) showError({ code: "redis_unavailable", message: t.error ?? "no reply", field: t.field });
    } catch (err) {
      $("conn-note").textContent = "";
      showError(toAppError(err));
    }
  });

  $("conn-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    showError(null);
    $("conn-note").textContent = "Switching…";
    try {
      generation++;
      const s = await api.connectionSwitch(input.value.trim() === "" ? null : url(), tlsFor(input.value));
      generation++;
      tlsFilled = false;
      render(s);
      input.value = "";
      password = null;
      // The backend warns when the saved URL does not answer (it is saved all the same).
      const warning = s.warning;
      $("conn-note").textContent = warning ? `⚠ ${warning}` : "Switched. The password, if any, is kept but never shown.";
      if (s.error_field) showError({ code: "redis_unavailable", message: s.error ?? "no reply", field: s.error_field });
    } catch (err) {
      $("conn-note").textContent = "";
      showError(toAppError(err));
    }
  });
  await poll();
  setInterval(poll, 2000);
}
