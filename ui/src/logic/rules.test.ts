import { describe, expect, it } from "vitest";
import type { Rule } from "../bindings/Rule";
import { describeRule, draftFromForm, formFromRule, nameProblem, paramLabel } from "./rules";

describe("rule form", () => {
  it("sends only the chosen algorithm's parameters", () => {
    const form = { name: " api ", capacity: "10", refill_per_sec: "2.5", limit: "7", window_ms: "1000" };
    expect(draftFromForm({ ...form, algorithm: "token_bucket" })).toEqual({ ok: true, draft: { name: "api", algorithm: "token_bucket", capacity: 10, refill_per_sec: 2.5 } });
    expect(draftFromForm({ ...form, algorithm: "fixed_window" })).toEqual({ ok: true, draft: { name: "api", algorithm: "fixed_window", limit: 7, window_ms: 1000 } });
  });

  it("names a field whose text is no number, with the text (abc used to read “got -1”)", () => {
    const d = draftFromForm({ name: "a", algorithm: "sliding_window_log", limit: "", window_ms: "abc" });
    expect(d).toEqual({ ok: false, errors: [{ field: "window_ms", message: "window must be a length of time (500ms, 1s, 1m, 24h, 1d), got “abc”" }] });
    // Empty is left out, so the engine names it (“limit is required”).
    const e = draftFromForm({ name: "a", algorithm: "sliding_window_log", limit: "", window_ms: "5" });
    expect(e).toEqual({ ok: true, draft: { name: "a", algorithm: "sliding_window_log", window_ms: 5 } });
  });

  it("names the engine's own range for every value outside it, never a contradictory one (issue 20)", () => {
    const range = "must be a whole number from 1 to 1,000,000,000";
    const cases: [string, string][] = [
      ["-1", `capacity ${range}, got “-1”`], // was “0 or more”, though 0 is refused
      ["0", `capacity ${range}, got “0”`],
      ["1e20", `capacity ${range}, got “1e20”`], // was “at most 9,007,199,254,740,991”
      ["1000000001", `capacity ${range}, got “1000000001”`],
      ["9".repeat(301), `capacity ${range}, got “${"9".repeat(21)}…”`], // never printed whole
    ];
    for (const [text, message] of cases) {
      expect(draftFromForm({ name: "a", algorithm: "token_bucket", capacity: text, refill_per_sec: "1" })).toEqual({ ok: false, errors: [{ field: "capacity", message }] });
    }
    const refill = draftFromForm({ name: "a", algorithm: "token_bucket", capacity: "5", refill_per_sec: "0.0001" });
    expect(refill).toEqual({ ok: false, errors: [{ field: "refill_per_sec", message: "refill rate must be a number from 0.001 to 1,000,000,000, got “0.0001”" }] });
    expect(draftFromForm({ name: "a", algorithm: "token_bucket", capacity: "1000000000", refill_per_sec: "0.001" }).ok).toBe(true);
  });

  it("round-trips a rule through the form and describes it", () => {
    const rule: Rule = { name: "login", algorithm: "token_bucket", capacity: 20, refill_per_sec: 0.5 };
    expect(draftFromForm(formFromRule(rule))).toEqual({ ok: true, draft: rule });
    expect(describeRule(rule)).toBe("capacity 20, refills 0.5/s");
    expect(describeRule({ name: "x", algorithm: "fixed_window", limit: 100, window_ms: 60_000 })).toBe("100 per 1 min");
    expect(describeRule({ algorithm: "gcra", limit: 10, window_ms: 1000, burst: 20 })).toBe("10 per 1 s, burst 20");
  });

  it("shows a window as a person writes it, and reads it back exactly", () => {
    const daily: Rule = { name: "daily", algorithm: "fixed_window", limit: 2000, window_ms: 86_400_000 };
    const form = formFromRule(daily);
    expect(form.window_ms).toBe("1d");
    expect(draftFromForm(form)).toEqual({ ok: true, draft: daily });
    expect(draftFromForm({ ...form, limit: "2,000", window_ms: "24h" })).toEqual({ ok: true, draft: daily });
  });

  it("takes a concurrency limit's lease life in human units, as window fields are", () => {
    const form = { name: "uploads", algorithm: "concurrency", limit: "10", window_ms: "1s", capacity: "5" };
    const lease = (text: string) => draftFromForm({ ...form, lease_ms: text });
    for (const [text, ms] of [["60s", 60_000], ["1m", 60_000], ["500ms", 500], ["1.5s", 1500], ["90000", 90_000], ["1d", 86_400_000]] as const) {
      expect(lease(text)).toEqual({ ok: true, draft: { name: "uploads", algorithm: "concurrency", limit: 10, lease_ms: ms } });
    }
    // Empty: left out, for the engine's default (a minute).
    expect(lease("")).toEqual({ ok: true, draft: { name: "uploads", algorithm: "concurrency", limit: 10 } });
    expect(lease("soon")).toEqual({ ok: false, errors: [{ field: "lease_ms", message: "lease life must be a length of time (500ms, 1s, 1m, 24h, 1d), got “soon”" }] });
    expect(lease("0.5ms")).toEqual({ ok: false, errors: [{ field: "lease_ms", message: "lease life must be a whole number from 1 to 2,592,000,000, got “0.5ms”" }] });
    expect(lease("31d")).toEqual({ ok: false, errors: [{ field: "lease_ms", message: "lease life must be a whole number from 1 to 2,592,000,000, got “31d”" }] });
  });

  it("round-trips a concurrency rule and says it in words", () => {
    const rule: Rule = { name: "uploads", algorithm: "concurrency", limit: 8, lease_ms: 90_000 };
    const form = formFromRule(rule);
    expect(form).toEqual({ name: "uploads", algorithm: "concurrency", limit: "8", lease_ms: "90s" });
    expect(draftFromForm(form)).toEqual({ ok: true, draft: rule });
    expect(describeRule(rule)).toBe("8 in flight, lease 90 s");
    expect(describeRule({ algorithm: "concurrency", limit: 2000, lease_ms: 60_000 })).toBe("2,000 in flight, lease 1 min");
    expect(paramLabel("concurrency", "limit")).toBe("In flight at once");
    expect(paramLabel("concurrency", "lease_ms")).toBe("Lease life");
    expect(paramLabel("fixed_window", "limit")).toBe("Limit");
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
