import { describe, expect, it } from "vitest";
import type { Rule } from "./bindings/Rule";
import {
  algorithmLabel,
  chartColumns,
  describeRule,
  draftFromForm,
  fmtDuration,
  fmtPercent,
  fmtRtt,
  formFromRule,
  parseNumber,
  patternFromForm,
  progressFraction,
  checkWholeNumbers,
  recentFailOpen,
  totals,
} from "./model";
import { toAppError } from "./api";
import { usableLanguage } from "./locale-guard";

const point = (second: number, allowed: number, denied: number, fail_open = 0) => ({
  second,
  allowed,
  denied,
  fail_open,
});

describe("rule form", () => {
  it("sends only the chosen algorithm's parameters", () => {
    const form = { name: " api ", capacity: "10", refill: "2.5", limit: "7", windowMs: "1000" };
    expect(draftFromForm({ ...form, algorithm: "token_bucket" })).toEqual({
      name: "api",
      algorithm: "token_bucket",
      capacity: 10,
      refill_per_sec: 2.5,
    });
    expect(draftFromForm({ ...form, algorithm: "fixed_window" })).toEqual({
      name: "api",
      algorithm: "fixed_window",
      limit: 7,
      window_ms: 1000,
    });
  });

  it("leaves empty fields out and turns garbage into a value the engine refuses by name", () => {
    const d = draftFromForm({ name: "a", algorithm: "sliding_window_log", capacity: "", refill: "", limit: "", windowMs: "abc" });
    expect(d.limit).toBeUndefined();
    expect(d.window_ms).toBe(-1);
    expect(parseNumber("  ")).toBeUndefined();
  });

  it("round-trips a rule through the form", () => {
    const rule: Rule = { name: "login", algorithm: "token_bucket", capacity: 20, refill_per_sec: 0.5 };
    const form = formFromRule(rule);
    expect(draftFromForm(form)).toEqual({ name: "login", algorithm: "token_bucket", capacity: 20, refill_per_sec: 0.5 });
    expect(describeRule(rule)).toBe("capacity 20, refills 0.5/s");
    expect(describeRule({ name: "x", algorithm: "fixed_window", limit: 100, window_ms: 60_000 })).toBe("100 per 1 min");
    expect(describeRule({ name: "g", algorithm: "gcra", limit: 10, window_ms: 1000, burst: 5 })).toBe(
      "10 per 1 s, bursts of 5",
    );
  });
});

describe("formatting", () => {
  it("formats durations, round trips and shares", () => {
    expect(fmtDuration(1500)).toBe("1500 ms");
    expect(fmtDuration(2000)).toBe("2 s");
    expect(fmtRtt(undefined)).toBe("—");
    expect(fmtRtt(0.25)).toBe("250 µs");
    expect(fmtRtt(3.21)).toBe("3.2 ms");
    expect(fmtPercent(1, 4)).toBe("25.0 %");
    expect(fmtPercent(1, 0)).toBe("—");
    expect(algorithmLabel("naive_get_set")).toBe("Naive GET/SET");
    expect(algorithmLabel("sliding_window_log")).toBe("Sliding window log");
  });

  it("computes progress only when the run's length is known", () => {
    expect(progressFraction(50, 200)).toBe(0.25);
    expect(progressFraction(300, 200)).toBe(1);
    expect(progressFraction(5, undefined)).toBeUndefined();
  });
});

describe("chart data", () => {
  const points = [point(100, 3, 1), point(101, 2, 0, 4), point(102, 0, 5)];

  it("builds uPlot columns oldest first", () => {
    expect(chartColumns(points)).toEqual([
      [100, 101, 102],
      [3, 2, 0],
      [1, 0, 5],
      [0, 4, 0],
    ]);
    expect(totals(points)).toEqual({ allowed: 5, denied: 6, fail_open: 4 });
  });

  it("flags recent fail-open seconds for the banner", () => {
    expect(recentFailOpen(points)).toBe(true);
    expect(recentFailOpen([point(1, 1, 0, 3), ...Array.from({ length: 5 }, (_, i) => point(i + 2, 1, 0))])).toBe(false);
  });

  it("maps the pattern choice to the engine's pattern", () => {
    expect(patternFromForm("constant", 100)).toEqual({ kind: "constant" });
    expect(patternFromForm("burst", 100)).toEqual({ kind: "burst", size: 50, every_ms: 500 });
    expect(patternFromForm("ramp", 10)).toEqual({ kind: "ramp", to_rps: 30 });
  });
});

describe("errors", () => {
  it("keeps AppErrors and wraps anything else", () => {
    expect(toAppError({ code: "invalid_rule", message: "m", field: "limit" })).toEqual({ code: "invalid_rule", message: "m", field: "limit" });
    expect(toAppError("boom")).toEqual({ code: "internal", message: "boom" });
  });
});

describe("locale guard", () => {
  it("replaces a language Intl refuses (LANG=C) and keeps valid ones", () => {
    expect(usableLanguage("C")).toBe("en-US");
    expect(usableLanguage(undefined)).toBe("en-US");
    expect(usableLanguage("de-DE")).toBe("de-DE");
  });
});

describe("simulator form", () => {
  it("names the first field that is not a whole number", () => {
    expect(checkWholeNumbers({ requests: 100, servers: 4 })).toBeNull();
    expect(checkWholeNumbers({ requests: 100, servers: Number.NaN })).toEqual({ field: "servers", message: "servers must be a whole number" });
    expect(checkWholeNumbers({ window_ms: 2.5 })?.field).toBe("window_ms");
  });
});
