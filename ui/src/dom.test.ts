import { describe, expect, it } from "vitest";
import { h, showFieldErrors } from "./dom";

describe("field error slots", () => {
  it("puts each message in its field's slot, an unknown field in the form-wide one, and clears old ones", () => {
    const form = h(
      "form",
      {},
      h("input", { data: { field: "limit" } }),
      h("div", { data: { simErrorFor: "limit" } }),
      h("div", { data: { simErrorFor: "_form" } }),
    );
    showFieldErrors(form, "sim-error-for", [{ field: "limit", message: "limit must be 1 or more, got “0”" }]);
    expect(form.querySelector('[data-sim-error-for="limit"]')!.textContent).toBe("limit must be 1 or more, got “0”");
    expect(form.querySelector("input")!.classList.contains("invalid")).toBe(true);
    showFieldErrors(form, "sim-error-for", [{ field: "mystery", message: "boom" }]);
    expect(form.querySelector('[data-sim-error-for="limit"]')!.textContent).toBe("");
    expect(form.querySelector('[data-sim-error-for="_form"]')!.textContent).toBe("boom");
    expect(form.querySelector("input")!.classList.contains("invalid")).toBe(false);
  });
});
