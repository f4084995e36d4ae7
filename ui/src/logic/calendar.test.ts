import { describe, expect, it } from "vitest";
import { delayAllowed, periodWords, searchZones, zoneChoices } from "./calendar";
import { describeRule, draftFromForm, formFromRule } from "./rules";
import type { Rule } from "../bindings/Rule";

describe("calendar quota words", () => {
  it("says periods as a person does", () => {
    expect(["hour", "day", "week", "month"].map(periodWords)).toEqual(["per hour", "per day", "per week", "per month"]);
  });

  it("offers UTC first (the engine's default), then the user's own zone, then the rest in order, once each", () => {
    const supported = ["Europe/Berlin", "America/New_York", "Asia/Kolkata"];
    expect(zoneChoices(supported, "Europe/Berlin")).toEqual(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]);
    // A machine on UTC, and a webview without Intl.supportedValuesOf: UTC alone, not twice.
    expect(zoneChoices([], "UTC")).toEqual(["UTC"]);
    expect(zoneChoices(supported, undefined)[0]).toBe("UTC");
    // The webview's ICU lists Kolkata and Kyiv by their old names: offered by the current ones, once.
    expect(zoneChoices(["Asia/Calcutta", "Asia/Kolkata", "Europe/Kiev"], "Asia/Calcutta")).toEqual(["UTC", "Asia/Kolkata", "Europe/Kyiv"]);
  });

  it("finds a zone by a city typed in any case, spaces for underscores", () => {
    const zones = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe"];
    expect(searchZones(zones, "berlin")).toEqual(["Europe/Berlin"]);
    expect(searchZones(zones, "new york")).toEqual(["America/New_York"]);
    expect(searchZones(zones, "lord_howe")).toEqual(["Australia/Lord_Howe"]);
    expect(searchZones(zones, "  ")).toEqual(zones);
    expect(searchZones(zones, "atlantis")).toEqual([]);
  });
});

describe("a calendar quota in the rule form", () => {
  it("sends its limit (2,000 accepted) and its words; a week start only for a weekly quota", () => {
    const form = { name: "daily", algorithm: "calendar", limit: "2,000", period: "day", time_zone: "Europe/Berlin", week_start: "sunday", window_ms: "1s" };
    expect(draftFromForm(form)).toEqual({ ok: true, draft: { name: "daily", algorithm: "calendar", limit: 2000, period: "day", time_zone: "Europe/Berlin" } });
    expect(draftFromForm({ ...form, period: "week" })).toEqual({
      ok: true,
      draft: { name: "daily", algorithm: "calendar", limit: 2000, period: "week", time_zone: "Europe/Berlin", week_start: "sunday" },
    });
    expect(draftFromForm({ ...form, limit: "lots" })).toEqual({ ok: false, errors: [{ field: "limit", message: "limit must be a whole number, got “lots”" }] });
  });

  it("round-trips and describes a quota in words", () => {
    const rule: Rule = { name: "monthly", algorithm: "calendar", limit: 1_000_000, period: "week", time_zone: "America/New_York", week_start: "sunday" };
    expect(draftFromForm(formFromRule(rule))).toEqual({ ok: true, draft: rule });
    expect(describeRule(rule)).toBe("1,000,000 per week from Sunday, America/New_York");
    expect(describeRule({ ...rule, period: "day", week_start: "monday" })).toBe("1,000,000 per day, America/New_York");
  });
});

describe("delay instead of deny", () => {
  it("is offered when every limit is a token bucket or GCRA, and otherwise names the limit that cannot delay", () => {
    expect(delayAllowed([{ name: "a", algorithm: "gcra" }, { name: "b", algorithm: "token_bucket" }])).toEqual({ ok: true });
    expect(delayAllowed([{ name: "a", algorithm: "gcra" }, { name: "daily", algorithm: "calendar" }])).toEqual({
      ok: false,
      why: "Delay works with token bucket and GCRA limits only: “daily” is a calendar quota.",
    });
    expect(delayAllowed([{ name: "", algorithm: "fixed_window" }])).toMatchObject({ why: expect.stringContaining("“a limit” is a fixed window") });
  });
});
