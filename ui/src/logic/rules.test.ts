import { describe, expect, it } from "vitest";
import type { Rule } from "../bindings/Rule";
import { describeRule, draftFromForm, formFromRule, nameProblem } from "./rules";

describe("rule form", () => {
  it("sends only the chosen algorithm's parameters", () => {
    const form = { name: " api ", capacity: "10", refill_per_sec: "2.5", limit: "7", window_ms: "1000" };
    expect(draftFromForm({ ...form, algorithm: "token_bucket" })).toEqual({ ok: true, draft: { name: "api", algorithm: "token_bucket", capacity: 10, refill_per_sec: 2.5 } });
    expect(draftFromForm({ ...form, algorithm: "fixed_window" })).toEqual({ ok: true, draft: { name: "api", algorithm: "fixed_window", limit: 7, window_ms: 1000 } });
  });

  it("names a field whose text is no number, with the text (abc used to read “got -1”)", () => {
    const d = draftFromForm({ name: "a", algorithm: "sliding_window_log", limit: "", window_ms: "abc" });
    expect(d).toEqual({ ok: false, errors: [{ field: "window_ms", message: "window must be a whole number, got “abc”" }] });
    // Empty is left out, so the engine names it (“limit is required”).
    const e = draftFromForm({ name: "a", algorithm: "sliding_window_log", limit: "", window_ms: "5" });
    expect(e).toEqual({ ok: true, draft: { name: "a", algorithm: "sliding_window_log", window_ms: 5 } });
  });

  it("round-trips a rule through the form and describes it", () => {
    const rule: Rule = { name: "login", algorithm: "token_bucket", capacity: 20, refill_per_sec: 0.5 };
    expect(draftFromForm(formFromRule(rule))).toEqual({ ok: true, draft: rule });
    expect(describeRule(rule)).toBe("capacity 20, refills 0.5/s");
    expect(describeRule({ name: "x", algorithm: "fixed_window", limit: 100, window_ms: 60_000 })).toBe("100 per 1 min");
    expect(describeRule({ algorithm: "gcra", limit: 10, window_ms: 1000, burst: 20 })).toBe("10 per 1 s, burst 20");
  });

  it("catches empty and duplicate names while typing, not only on Save", () => {
    const rules = [{ name: "api" }, { name: "login" }];
    expect(nameProblem("  ", rules, null)).toBe("name is required");
    expect(nameProblem("api", rules, null)).toBe("a rule named “api” already exists");
    expect(nameProblem("api", rules, "api")).toBeNull();
    expect(nameProblem("login", rules, "api")).toBe("a rule named “login” already exists");
    expect(nameProblem("new", rules, null)).toBeNull();
  });
});
