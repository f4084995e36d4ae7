import { describe, expect, it } from "vitest";
import { applyPreset, COMPARE, DEFAULT_FORM, formSlot, PRESETS, requestFromForm, type WorkloadForm } from "./workload";

const form = (over: Partial<WorkloadForm>): WorkloadForm => ({ ...DEFAULT_FORM, ...over });

describe("workload form", () => {
  it("sends a sweep of the rule's parameters, and names its field when it cannot", () => {
    const swept = requestFromForm(form({ target: "api", sweep_x: "capacity", sweep_xs: "10, 20 50", sweep_y: "refill_per_sec", sweep_ys: "5,10" }));
    expect(swept.ok && swept.request.sweep).toEqual([
      { param: "capacity", values: [10, 20, 50] },
      { param: "refill_per_sec", values: [5, 10] },
    ]);
    // No values: no sweep. The compare target has none either.
    const plain = requestFromForm(form({ target: "api", sweep_x: "capacity", sweep_xs: " " }));
    expect(plain.ok && plain.request.sweep).toBeUndefined();
    const compare = requestFromForm(form({ target: COMPARE, sweep_x: "capacity", sweep_xs: "10" }));
    expect(compare.ok && compare.request.sweep).toBeUndefined();
    const bad = requestFromForm(form({ target: "api", sweep_x: "capacity", sweep_xs: "10, ten" }));
    expect(bad.ok ? [] : bad.errors.map((e) => e.field)).toEqual(["sweep"]);
    const twice = requestFromForm(form({ target: "api", sweep_x: "capacity", sweep_xs: "10", sweep_y: "capacity", sweep_ys: "20" }));
    expect(twice.ok ? "" : twice.errors[0].message).toMatch(/two different parameters/);
  });

  it("sends every parameter the CLI has, and only the chosen pattern's", () => {
    const r = requestFromForm(
      form({ pattern: "spike", rps: "10", spike_multiplier: "20", spike_start_ms: "4000", spike_length_ms: "4000", length: "duration", duration_s: "14", servers: "8", connections: "2", keys: "50", zipf: true, zipf_exponent: "1.5", cost: "2", seed: "7", retries: "3", continue_state: true }),
      " my run ",
    );
    expect(r).toEqual({
      ok: true,
      request: {
        target: { kind: "compare", limit: 20, window_ms: 1000 },
        pattern: { kind: "spike", multiplier: 20, start_ms: 4000, length_ms: 4000 },
        rps: 10,
        duration_ms: 14000,
        servers: 8,
        connections: 2,
        keys: 50,
        zipf: true,
        zipf_exponent: 1.5,
        cost: 2,
        seed: 7,
        naive: false,
        retry: { max_attempts: 3 },
        continue_state: true,
        name: "my run",
      },
    });
  });

  it("starts fresh by default, with requests as the length and no seed or retries", () => {
    const r = requestFromForm(form({ target: "api" }));
    expect(r.ok && r.request).toMatchObject({ target: { kind: "rule", name: "api" }, requests: 1000, continue_state: false });
    expect(r.ok && r.request.seed).toBeUndefined();
    // One Redis connection per server unless shared ones are asked for.
    expect(r.ok && r.request.connections).toBeUndefined();
    expect(r.ok && r.request.retry).toBeUndefined();
    expect(r.ok && r.request.duration_ms).toBeUndefined();
  });

  it("ignores the hidden fields of other patterns and the rate for bursts", () => {
    const r = requestFromForm(form({ pattern: "burst", burst_size: "20", burst_every_ms: "500", rps: "garbage", spike_multiplier: "x" }));
    expect(r.ok && r.request.pattern).toEqual({ kind: "burst", size: 20, every_ms: 500 });
    // Not 0: the engine refuses 0 ("as fast as possible") with any pattern but constant.
    expect(r.ok && r.request.rps).toBe(1);
  });

  it("puts every bad field in its own slot", () => {
    const r = requestFromForm(form({ servers: "-5", connections: "1.5", keys: "abc", limit: "0.5" }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.map((e) => e.field)).toEqual(["limit", "servers", "connections", "keys"]);
  });

  it("maps the engine's field names to the compare form's slots (Limit 0 said “invalid capacity” form-wide)", () => {
    expect(formSlot("capacity", { target: COMPARE })).toBe("limit");
    expect(formSlot("refill_per_sec", { target: COMPARE })).toBe("window_ms");
    expect(formSlot("duration_ms", { target: "api" })).toBe("duration_s");
    expect(formSlot("retry.max_attempts", { target: "api" })).toBe("retries");
    expect(formSlot(undefined, { target: "api" })).toBe("_form");
    expect(formSlot("servers", { target: "api" })).toBe("servers");
  });

  it("has the five demo presets, each filling a form that sends", () => {
    expect(PRESETS.map((p) => p.id)).toEqual(["boundary", "race", "hotkey", "retry", "slow", "smooth"]);
    for (const p of PRESETS) {
      const r = requestFromForm(applyPreset(p, "api"));
      expect(r.ok, p.id).toBe(true);
    }
    const race = requestFromForm(applyPreset(PRESETS[1]));
    expect(race.ok && race.request.naive).toBe(true);
    const hot = requestFromForm(applyPreset(PRESETS[2]));
    expect(hot.ok && hot.request.zipf).toBe(true);
    const storm = requestFromForm(applyPreset(PRESETS[3]));
    expect(storm.ok && storm.request.retry).toEqual({ max_attempts: 3 });
    // A preset resets what it does not set: no Zipf left over from the hot key.
    expect(applyPreset(PRESETS[0]).zipf).toBe(false);
    // The slow endpoint: a concurrency limit of 10 beside the token bucket, on slow requests.
    const slow = requestFromForm(applyPreset(PRESETS[4]));
    expect(slow.ok && slow.request.target).toEqual({ kind: "compare", limit: 40, window_ms: 1000, in_flight: 10 });
    expect(slow.ok && slow.request.hold_ms).toBe("lognormal:median=400,p99=1500");
    expect(applyPreset(PRESETS[0]).hold_ms).toBe("");
  });

  it("sends the hold as the engine takes it, and names the field when it is wrong", () => {
    const form = { ...DEFAULT_FORM, hold_ms: "uniform:20ms..1s" };
    const ok = requestFromForm(form);
    expect(ok.ok && ok.request.hold_ms).toBe("uniform:20..1000");
    expect(requestFromForm(DEFAULT_FORM).ok && (requestFromForm(DEFAULT_FORM) as { request: { hold_ms?: string } }).request.hold_ms).toBeUndefined();
    const bad = requestFromForm({ ...form, hold_ms: "slow" });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.errors).toEqual([{ field: "hold_ms", message: expect.stringContaining("“slow”") }]);
    const slots = requestFromForm({ ...DEFAULT_FORM, in_flight: "0" });
    expect(!slots.ok && slots.errors[0].field).toBe("in_flight");
  });
});
