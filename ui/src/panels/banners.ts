//! The two banners: Redis failing open, and warnings (settings problems, history drops,
//! unexpected errors), which the user can dismiss.
import { toAppError } from "../api";
import { $, h } from "../dom";
import { setText } from "../paint";
import { on, state } from "../store";

const warnings: string[] = [];

function renderWarnings() {
  const el = $("warnings-banner");
  el.classList.toggle("hidden", warnings.length === 0);
  if (warnings.length === 0) {
    el.replaceChildren();
    return;
  }
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

/**
 * The fail-open banner, from one connection reading (defect 10: the status said Connected
 * while a banner built from older stats still said unreachable): down, or recovered with
 * recent fail-open decisions still counted, or hidden.
 */
function renderFailOpen() {
  const conn = state.conn;
  const down = conn?.state === "unreachable";
  const recent = conn?.fail_open_recent ?? 0;
  $("failopen-banner").classList.toggle("hidden", !(down || recent > 0));
  setText($("failopen-title"), down ? "Redis is unreachable — decisions are failing open." : "Redis answers again.");
  setText(
    $("failopen-detail"),
    down
    ? `Redis at ${conn?.url} does not answer (${conn?.error ?? "no reply"}). Requests are let through unlimited (remaining = −1); ${
        conn?.kind === "embedded"
          ? "the app starts its embedded redis-server again by itself."
          : "the app reconnects by itself once Redis answers, or choose another under Connection."
      }`
      : `${recent} decision${recent === 1 ? " was" : "s were"} let through without Redis (remaining = −1) in the last 10 s.`,
  );
}

export function initBanners() {
  window.addEventListener("error", (e) => {
    // WebKit reports a ResizeObserver that had more to say in the same frame as an error; it
    // is not one (the charts get the size at the next frame).
    if (/ResizeObserver loop/.test(e.message)) return;
    reportUnexpected(`Unexpected error: ${e.message}`);
  });
  window.addEventListener("unhandledrejection", (e) => reportUnexpected(`Unexpected error: ${toAppError(e.reason).message}`));
  on("connection", renderFailOpen);
}
