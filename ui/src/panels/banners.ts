//! The two banners: Redis failing open, and warnings (settings problems, history drops,
//! unexpected errors), which the user can dismiss.
import { toAppError } from "../api";
import { $, h } from "../dom";
import { on, state } from "../store";

const warnings: string[] = [];

function renderWarnings() {
  const el = $("warnings-banner");
  el.classList.toggle("hidden", warnings.length === 0);
  const close = h("button", { type: "button", className: "ghost small close", text: "Dismiss", title: "Hide these warnings", data: { testid: "warnings-dismiss" } });
  close.addEventListener("click", () => {
    warnings.length = 0;
    renderWarnings();
  });
  el.replaceChildren(h("div", { className: "warnings" }, ...warnings.map((w) => h("div", { text: `⚠ ${w}` }))), close);
}

/** Adds warnings to the banner (each shown once until dismissed). */
export function warn(...messages: string[]) {
  for (const m of messages) if (!warnings.includes(m)) warnings.push(m);
  renderWarnings();
}

/** Nothing fails silently: unexpected errors go to the warnings banner. */
export function reportUnexpected(message: string) {
  warn(message);
}

function renderFailOpen() {
  const down = state.conn?.state === "unreachable";
  $("failopen-banner").classList.toggle("hidden", !(down || state.failOpenSeen));
  $("failopen-detail").textContent = down
    ? `Redis at ${state.conn?.url} does not answer (${state.conn?.error ?? "no reply"}). Requests are let through unlimited (remaining = −1); the app reconnects by itself.`
    : "Recent decisions were made without Redis and let through (remaining = −1).";
}

export function initBanners() {
  window.addEventListener("error", (e) => reportUnexpected(`Unexpected error: ${e.message}`));
  window.addEventListener("unhandledrejection", (e) => reportUnexpected(`Unexpected error: ${toAppError(e.reason).message}`));
  on("connection", renderFailOpen);
  on("failopen", renderFailOpen);
}
