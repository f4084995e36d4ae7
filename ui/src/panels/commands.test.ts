import { afterEach, describe, expect, it, vi } from "vitest";
import { renderCommands } from "./commands";

const URL = "redis://127.0.0.1:41234";
const commands = {
  serve: `ratelockr serve --redis ${URL} --policies '/home/me/rate limits/policies.toml'`,
  example: `cargo run -p ratelockr-tower --example api_key_service -- --redis ${URL} --policies '/home/me/rate limits/policies.toml' --policy api`,
  cli: "redis-cli -p 41234",
};

function mount() {
  document.body.innerHTML = `<div class="copy-commands hidden" id="conn-commands"><h3>h</h3><div id="conn-commands-note"></div></div>`;
}

describe("the commands to copy", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("shows each command whole, and Copy puts exactly it on the clipboard", async () => {
    mount();
    const writeText = vi.fn().mockResolvedValue(undefined);
    vi.stubGlobal("navigator", { clipboard: { writeText } });
    renderCommands(commands);
    renderCommands(commands); // the 2 s poll draws again: still one row each
    const card = document.getElementById("conn-commands")!;
    expect(card.classList.contains("hidden")).toBe(false);
    expect(card.querySelectorAll(".copy-row")).toHaveLength(3);
    for (const key of ["serve", "example", "cli"] as const) {
      expect(card.querySelector(`[data-testid="copy-${key}"]`)!.textContent).toBe(commands[key]);
    }
    card.querySelector<HTMLButtonElement>('[data-testid="copy-example-button"]')!.click();
    await vi.waitFor(() => expect(card.dataset.copied).toBe(commands.example));
    expect(writeText).toHaveBeenCalledWith(commands.example);
  });

  it("says what to do first, and hides without a connection", () => {
    mount();
    renderCommands({ ...commands, note: "No policies file is open." });
    expect(document.getElementById("conn-commands-note")!.textContent).toBe("No policies file is open.");
    renderCommands(undefined);
    expect(document.getElementById("conn-commands")!.classList.contains("hidden")).toBe(true);
  });
});
