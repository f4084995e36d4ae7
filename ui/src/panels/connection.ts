//! The connection card: which Redis, its round trip, Test and Use this Redis.
import { api, toAppError } from "../api";
import type { ConnectionStatus } from "../bindings/ConnectionStatus";
import { $ } from "../dom";
import { fmtRtt } from "../logic/format";
import { painter, setData, setText } from "../paint";
import { emit, state } from "../store";

const STATE_TEXT = { connected: "Connected", embedded: "Embedded Redis", unreachable: "Unreachable" };

function render(s: ConnectionStatus) {
  state.conn = s;
  setData($("conn-pill"), "state", s.state);
  setText($("conn-pill-text"), `${STATE_TEXT[s.state]} · ${fmtRtt(s.rtt_ms)}`);
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
  setText($("conn-url"), s.url);
  if ($("conn-url").title !== s.url) $("conn-url").title = s.url;
  setText($("conn-rtt"), fmtRtt(s.rtt_ms));
  emit("connection");
}

let inFlight = false;
async function poll() {
  if (inFlight) return;
  inFlight = true;
  try {
    const s = await api.connectionStatus();
    // A poll is a streaming update: drawn in the painter's shared frames.
    painter.later("connection", () => render(s));
  } catch (err) {
    $("conn-note").textContent = toAppError(err).message;
  } finally {
    inFlight = false;
  }
}

export async function initConnection() {
  $("conn-test").addEventListener("click", async () => {
    const url = $<HTMLInputElement>("conn-input").value;
    $("conn-error").textContent = "";
    $("conn-note").textContent = "Testing…";
    try {
      const t = await api.connectionTest(url, null);
      $("conn-note").textContent = t.ok ? `✓ ${t.url} answered in ${fmtRtt(t.rtt_ms)}` : `✗ ${t.url} did not answer: ${t.error ?? "no reply"}`;
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
      const s = await api.connectionSwitch(input.value.trim() === "" ? null : input.value, null);
      render(s);
      input.value = "";
      // The backend warns when the saved URL does not answer (it is saved all the same).
      const warning = s.warning;
      $("conn-note").textContent = warning ? `⚠ ${warning}` : "Switched. The password, if any, is kept but never shown.";
    } catch (err) {
      $("conn-note").textContent = "";
      $("conn-error").textContent = toAppError(err).message;
    }
  });
  await poll();
  setInterval(poll, 2000);
}
