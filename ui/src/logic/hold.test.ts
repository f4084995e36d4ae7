import { describe, expect, it } from "vitest";
import { parseHold } from "./hold";

describe("parseHold", () => {
  it("takes the engine's three forms, in milliseconds or human units", () => {
    expect(parseHold("")).toEqual({ ok: true, value: undefined });
    expect(parseHold(" 80 ")).toEqual({ ok: true, value: "80" });
    expect(parseHold("80ms")).toEqual({ ok: true, value: "80" });
    expect(parseHold("1.5s")).toEqual({ ok: true, value: "1500" });
    expect(parseHold("uniform:20..200")).toEqual({ ok: true, value: "uniform:20..200" });
    expect(parseHold("uniform:20ms..1s")).toEqual({ ok: true, value: "uniform:20..1000" });
    expect(parseHold("lognormal:median=400ms, p99=1.5s")).toEqual({ ok: true, value: "lognormal:median=400,p99=1500" });
    expect(parseHold("LogNormal:p99=900,median=80")).toEqual({ ok: true, value: "lognormal:median=80,p99=900" });
  });

  it("names the field and echoes what was typed when it is none of them", () => {
    for (const bad of ["abc", "uniform:20", "uniform:a..200", "lognormal:median=80", "lognormal:mean=80,p99=900", "exp:80", "-5", "0.5ms"]) {
      const p = parseHold(bad);
      expect(p.ok, bad).toBe(false);
      if (!p.ok) {
        expect(p.field).toBe("hold_ms");
        expect(p.message).toMatch(/^hold /);
      }
    }
    const shape = parseHold("uniform:20");
    expect(!shape.ok && shape.message).toContain("“uniform:20”");
    expect(!shape.ok && shape.message).toContain("lognormal:median=400ms,p99=1.5s");
    const word = parseHold("slow");
    expect(!word.ok && word.message).toContain("uniform:20ms..200ms");
    const number = parseHold("0.5ms");
    expect(!number.ok && number.message).toContain("whole number");
    const part = parseHold("uniform:abc..200");
    expect(!part.ok && part.message).toContain("“abc”");
  });
});
