import { describe, expect, it } from "vitest";
import type { Policy } from "../bindings/Policy";
import { describePolicy, draftFromForm, everyLimit, formFromPolicy, newLimit, newOverride, newPolicy, policyTitle } from "./policies";

/** A stack of a rate and a limit on requests in flight, as the policies file holds it. */
const api: Policy = {
  name: "api",
  key: "ip",
  mode: "enforce",
  limits: [
    { name: "per-second", algorithm: "token_bucket", capacity: 10, refill_per_sec: 10 },
    { name: "in-flight", algorithm: "concurrency", limit: 4, lease_ms: 30_000 },
  ],
  overrides: [{ tier: "premium", keys: ["premium_*"], limits: [{ name: "in-flight", algorithm: "concurrency", limit: 16, lease_ms: 60_000 }] }],
};

describe("policy form, a concurrency limit", () => {
  it("round-trips through the form: the lease life shown as a person writes it, saved in ms", () => {
    const form = formFromPolicy(api);
    expect(form.limits[1]).toMatchObject({ algorithm: "concurrency", limit: "4", lease_ms: "30s" });
    expect(form.overrides[0].limits[0]).toMatchObject({ limit: "16", lease_ms: "1m" });
    const back = draftFromForm(form);
    expect(back).toEqual({ ok: true, draft: { name: "api", key: "ip", mode: "enforce", limits: api.limits, overrides: api.overrides } });
  });

  it("sends only the kind's own fields: no window or capacity left over from another kind", () => {
    const form = newPolicy();
    form.name = "uploads";
    form.limits[0] = { ...form.limits[0], name: "in-flight", algorithm: "concurrency", limit: "2,000" };
    const d = draftFromForm(form);
    expect(d).toEqual({ ok: true, draft: { name: "uploads", key: "ip", mode: "enforce", limits: [{ name: "in-flight", algorithm: "concurrency", limit: 2000, lease_ms: 60_000 }] } });
  });

  it("writes the lease life explicitly (a new row holds the default, 1m); emptied, it is left to the engine's default", () => {
    expect(newLimit(0).lease_ms).toBe("1m");
    const form = newPolicy();
    form.name = "p";
    form.limits[0] = { ...form.limits[0], algorithm: "concurrency", limit: "3", lease_ms: "" };
    const d = draftFromForm(form);
    expect(d.ok && d.draft.limits).toEqual([{ name: "per-second", algorithm: "concurrency", limit: 3 }]);
  });

  it("names a lease life that is no length of time, under the limit's path", () => {
    const form = newPolicy();
    form.name = "p";
    form.limits.push({ ...newLimit(1), algorithm: "concurrency", lease_ms: "soon" });
    expect(draftFromForm(form)).toEqual({
      ok: false,
      errors: [{ field: "limits[1].lease_ms", message: "lease life must be a length of time (500ms, 1s, 1m, 24h, 1d), got “soon”" }],
    });
  });

  it("describes it in words, in the list and its title", () => {
    expect(describePolicy(api)).toBe("per-second: capacity 10, refills 10/s · in-flight: 4 in flight, lease 30 s · 1 tier");
    expect(policyTitle(api)).toContain("in-flight — Concurrency (in flight), 4 in flight, lease 30 s");
  });
});

describe("policy form, a calendar quota and a max delay", () => {
  it("sends a new calendar row's period and zone (UTC, the engine's default, written out)", () => {
    const form = newPolicy();
    form.name = "daily";
    form.limits[0] = { ...form.limits[0], name: "day", algorithm: "calendar", limit: "2 000", time_zone: "Asia/Kolkata" };
    const d = draftFromForm(form);
    expect(d.ok && d.draft.limits).toEqual([{ name: "day", algorithm: "calendar", limit: 2000, period: "day", time_zone: "Asia/Kolkata" }]);
    expect(newLimit(1)).toMatchObject({ period: "day", time_zone: "UTC" });
  });

  it("takes the max delay in human units, leaves 0 out (deny at once) and names text that is no length of time", () => {
    const form = newPolicy();
    form.name = "smooth";
    form.max_delay = "1.5s";
    let d = draftFromForm(form);
    expect(d.ok && d.draft.max_delay_ms).toBe(1500);
    form.max_delay = "0";
    d = draftFromForm(form);
    expect(d.ok && "max_delay_ms" in d.draft).toBe(false);
    form.max_delay = "a while";
    expect(draftFromForm(form)).toEqual({ ok: false, errors: [{ field: "max_delay_ms", message: "max delay must be a length of time (500ms, 1s, 1m, 24h, 1d), got “a while”" }] });
  });

  it("round-trips a delaying policy: the delay shown as a person writes it, and said in the list", () => {
    const p: Policy = { name: "smooth", mode: "enforce", limits: [{ name: "rate", algorithm: "gcra", limit: 10, window_ms: 1000, burst: 1 }], max_delay_ms: 500 };
    const form = formFromPolicy(p);
    expect(form.max_delay).toBe("500ms");
    expect(draftFromForm(form)).toEqual({ ok: true, draft: { name: "smooth", mode: "enforce", limits: p.limits, max_delay_ms: 500 } });
    expect(describePolicy(p)).toBe("rate: 10 per 1 s, burst 1 · delays up to 500 ms");
    expect(everyLimit({ ...form, overrides: [newOverride([newLimit(0)])] }).map((l) => l.algorithm)).toEqual(["gcra", "token_bucket"]);
  });
});
