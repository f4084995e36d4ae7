import { describe, expect, it } from "vitest";
import { parseField, quoted, type NumberSpec } from "./numbers";

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
