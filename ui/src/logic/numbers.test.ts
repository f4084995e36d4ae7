import { describe, expect, it } from "vitest";
import { humanMs, parseField, quoted, type NumberSpec } from "./numbers";

const whole: NumberSpec = { field: "servers", label: "servers", whole: true, min: 1 };
const decimal: NumberSpec = { field: "rps", label: "rate", whole: false, min: 0 };

describe("form numbers (defect 6)", () => {
  it("echoes text that is no number as typed, not as the -1 it used to become", () => {
    expect(parseField("abc", whole)).toEqual({ ok: false, field: "servers", message: "servers must be a whole number, got “abc”" });
    expect(parseField("0x10", whole).ok).toBe(false);
    expect(parseField("2.5", whole)).toMatchObject({ ok: false, message: "servers must be a whole number, got “2.5”" });
  });

  it("says what is wrong with a negative whole number instead of calling it not whole", () => {
    expect(parseField("-5", whole)).toMatchObject({ ok: false, message: "servers must be 1 or more, got “-5”" });
  });

  it("refuses integers past 2^53 with the digits typed, not the rounded ones", () => {
    const p = parseField("9007199254740993", whole);
    expect(p.ok).toBe(false);
    if (!p.ok) {
      expect(p.message).toContain("9007199254740993");
      expect(p.message).not.toContain("…992");
    }
    expect(parseField("9007199254740991", whole)).toEqual({ ok: true, value: 9007199254740991 });
  });

  it("keeps messages short whatever was pasted (a long message stretched the form)", () => {
    const p = parseField("1".repeat(400), decimal);
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.message.length).toBeLessThan(80);
    expect(quoted("1e300")).toBe("“1e300”");
  });

  it("accepts decimals, exponents and surrounding blanks; empty only when optional", () => {
    expect(parseField(" 2.5 ", decimal)).toEqual({ ok: true, value: 2.5 });
    expect(parseField("1e3", whole)).toEqual({ ok: true, value: 1000 });
    expect(parseField("", decimal)).toMatchObject({ ok: false, message: "rate is required" });
    expect(parseField("", { ...decimal, optional: true })).toEqual({ ok: true, value: undefined });
    expect(parseField("5000000000", { ...whole, max: 4_294_967_295 })).toMatchObject({ ok: false, message: "servers must be at most 4,294,967,295, got “5000000000”" });
  });
});

describe("human units", () => {
  const count: NumberSpec = { field: "limit", label: "limit", whole: true, min: 1 };
  const window: NumberSpec = { field: "window_ms", label: "window", whole: true, min: 1, duration: true };
  it("takes thousands as people group them", () => {
    for (const text of ["2,000", "2 000", "2\u00a0000", "2\u202f000", "1,000,000"]) {
      const p = parseField(text, count);
      expect(p.ok && p.value, text).toBe(text.startsWith("1,") ? 1_000_000 : 2000);
    }
    // Not a grouping: refused with the text as typed.
    for (const text of ["1,5", "20,00", "2,0000"]) {
      const p = parseField(text, count);
      expect(p.ok, text).toBe(false);
      if (!p.ok) expect(p.message).toContain(quoted(text));
    }
  });
  it("takes a length of time with its unit, in milliseconds", () => {
    const cases: [string, number][] = [["500ms", 500], ["1s", 1000], ["1.5s", 1500], ["1.1s", 1100], ["1m", 60_000], ["2min", 120_000], ["24h", 86_400_000], ["1d", 86_400_000], ["86400000", 86_400_000], ["86,400,000", 86_400_000], ["1 s", 1000]];
    for (const [text, ms] of cases) {
      const p = parseField(text, window);
      expect(p.ok && p.value, text).toBe(ms);
    }
    const half = parseField("0.5ms", window);
    expect(half.ok).toBe(false);
    if (!half.ok) expect(half.message).toBe("window must be a whole number, got “0.5ms”");
    const bad = parseField("1w", window);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.message).toBe("window must be a length of time (500ms, 1s, 1m, 24h, 1d), got “1w”");
    // A count takes no unit.
    expect(parseField("1s", count).ok).toBe(false);
  });
  it("shows milliseconds as a person writes them", () => {
    expect([86_400_000, 3_600_000, 90_000, 60_000, 1000, 1500, 250].map(humanMs)).toEqual(["1d", "1h", "90s", "1m", "1s", "1500ms", "250ms"]);
    for (const ms of [86_400_000, 90_000, 1500, 250]) {
      const p = parseField(humanMs(ms), window);
      expect(p.ok && p.value).toBe(ms);
    }
  });
});
