import { describe, expect, it } from "vitest";
import { applyPreset, COMPARE, DEFAULT_FORM, formSlot, PRESETS, requestFromForm } from "./workload";

describe("the smooth a burst demo", () => {
  it("runs GCRA denying beside GCRA delaying up to 2 s, on a spike on one key", () => {
    const smooth = PRESETS.find((p) => p.id === "smooth")!;
    expect(smooth.label).toBe("Smooth a burst");
    const r = requestFromForm(applyPreset(smooth));
    expect(r.ok && r.request.target).toEqual({ kind: "compare", limit: 50, window_ms: 1000, max_delay_ms: 2000 });
    expect(r.ok && r.request.pattern).toEqual({ kind: "spike", multiplier: 8, start_ms: 2000, length_ms: 1000 });
    // Another demo after it runs the five again: no delay left over.
    expect(applyPreset(PRESETS[0]).max_delay).toBe("");
  });

  it("takes the max delay in human units, and names it when it is no length of time", () => {
    const ok = requestFromForm({ ...DEFAULT_FORM, max_delay: "1.5s" });
    expect(ok.ok && ok.request.target).toMatchObject({ max_delay_ms: 1500 });
    const none = requestFromForm(DEFAULT_FORM);
    expect(none.ok && "max_delay_ms" in none.request.target).toBe(false);
    const bad = requestFromForm({ ...DEFAULT_FORM, max_delay: "soon" });
    expect(!bad.ok && bad.errors).toEqual([{ field: "max_delay", message: "max delay must be a length of time (500ms, 1s, 1m, 24h, 1d), got “soon”" }]);
    // The engine's refusal (max_delay_ms) lands in the field's own slot.
    expect(formSlot("max_delay_ms", { target: COMPARE })).toBe("max_delay");
  });
});
