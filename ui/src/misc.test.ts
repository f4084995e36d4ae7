import { describe, expect, it } from "vitest";
import { toAppError } from "./api";
import { panRange, zoomRange } from "./charts/axes";
import { usableLanguage } from "./locale-guard";

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

describe("zoom and pan", () => {
  it("zooms around the pointer and stays inside the run", () => {
    expect(zoomRange(0, 10, 5, 0.5, [0, 10])).toEqual([2.5, 7.5]);
    expect(zoomRange(0, 10, 0, 0.5, [0, 10])).toEqual([0, 5]);
    expect(zoomRange(2, 4, 3, 100, [0, 10])).toEqual([0, 10]);
  });

  it("pans without leaving the run", () => {
    expect(panRange(2, 4, 1, [0, 10])).toEqual([3, 5]);
    expect(panRange(2, 4, -5, [0, 10])).toEqual([0, 2]);
    expect(panRange(2, 4, 50, [0, 10])).toEqual([8, 10]);
  });
});
