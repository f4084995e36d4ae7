//! The commands that point `ratelockr serve`, the example service and `redis-cli` at the Redis
//! the app uses (the embedded one's port included), ready to copy: shown whole (wrapped, never
//! cut), a password as `***`. They come with each connection status (Rust builds them).
import type { CopyCommands } from "../bindings/CopyCommands";
import { $, h } from "../dom";
import { setText } from "../paint";
import { on, state } from "../store";
import "./commands.css";

const ROWS: { key: keyof Omit<CopyCommands, "note">; label: string; title: string }[] = [
  { key: "serve", label: "serve", title: "The decision and metrics endpoints, on this Redis and the open policies file" },
  { key: "example", label: "Example service", title: "The tower layer's example HTTP service, held to the open file's policy" },
  { key: "cli", label: "redis-cli", title: "A shell on this Redis" },
];

/** Puts `text` on the clipboard: the webview's clipboard, else a selected text area's copy. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { value: text });
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

function row(key: string, label: string, title: string): HTMLElement {
  const code = h("code", { className: "copy-command", data: { testid: `copy-${key}` } });
  const button = h("button", { type: "button", className: "secondary small", text: "Copy", title: `Copy the ${label} command`, data: { testid: `copy-${key}-button` } });
  button.addEventListener("click", async () => {
    const text = code.textContent ?? "";
    const ok = await copyText(text);
    const card = $("conn-commands");
    card.dataset.copied = ok ? text : "";
    setText(button, ok ? "Copied" : "Copy failed");
    setTimeout(() => setText(button, "Copy"), 1500);
  });
  return h("div", { className: "copy-row", title }, h("div", { className: "copy-label", text: label }), code, button);
}

/** Draws the commands of the current connection (unchanged text is not touched). */
export function renderCommands(commands: CopyCommands | undefined) {
  const card = $("conn-commands");
  card.classList.toggle("hidden", !commands);
  if (!commands) return;
  if (!card.querySelector(".copy-row")) {
    $("conn-commands-note").before(...ROWS.map((r) => row(r.key, r.label, r.title)));
  }
  for (const r of ROWS) setText(card.querySelector<HTMLElement>(`[data-testid="copy-${r.key}"]`)!, commands[r.key]);
  setText($("conn-commands-note"), commands.note ?? "");
}

export function initCommands() {
  on("connection", () => renderCommands(state.conn?.commands));
}
