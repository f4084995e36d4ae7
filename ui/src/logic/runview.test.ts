import { describe, expect, it } from "vitest";
import type { Records } from "./records";
import { run } from "./testdata";
import { buildRunView, markPeaks, matchTarget, paler, RUN_COLORS } from "./runview";

/**
 * A boundary burst in miniature: the fixed window admits 4 in the bin after its boundary, the
 * sliding log 2; both see the same 4 offered.
 */
function boundary(): Records {
  const rows: [number, number, number, number, number][] = [];
  for (let i = 0; i < 4; i++) {
    rows.push([1000 + i, 0, 0, i < 2 ? 0 : 1, 0]);
    rows.push([1000 + i, 1, 0, 0, 0]);
  }
  rows.push([0, 0, 0, 0, 1], [0, 1, 0, 0, 1]);
  return run(rows, {
    targets: [
      { rule: { name: "compare-sliding-window-log", algorithm: "sliding_window_log", limit: 4, window_ms: 2000 }, naive: false },
      { rule: { name: "compare-fixed-window", algorithm: "fixed_window", limit: 4, window_ms: 1000 }, naive: false },
    ],
  });
}

describe("run view", () => {
  it("draws one panel per target on one shared y-scale", () => {
    const v = buildRunView([{ id: "a", name: "A", records: boundary() }], { measure: "bin", layout: "panels", envelope: true });
    expect(v.plots.map((p) => p.rule)).toEqual(["compare-sliding-window-log", "compare-fixed-window"]);
    expect(v.plots[0].lines.map((l) => l.kind)).toEqual(["offered", "allowed", "denied", "fail_open"]);
    expect(v.binMs).toBe(100);
    expect(v.x).toHaveLength(11);
    const allowed = (p: number) => Math.max(...(v.plots[p].lines[1].values as number[]));
    expect(allowed(1)).toBeGreaterThan(allowed(0));
    // The shared scale is the highest of all: the fixed window's 4 (and the 4 offered).
    expect(v.yMax).toBe(4);
  });

  it("adds the envelope in the cumulative view only", () => {
    const bins = buildRunView([{ id: "a", name: "A", records: boundary() }], { measure: "bin", layout: "panels", envelope: true });
    expect(bins.plots[1].lines.some((l) => l.kind === "envelope")).toBe(false);
    const cum = buildRunView([{ id: "a", name: "A", records: boundary() }], { measure: "cumulative", layout: "panels", envelope: true });
    const fw = cum.plots[1];
    expect(fw.lines.map((l) => l.kind)).toEqual(["allowed", "fail_open", "envelope"]);
    const env = fw.lines.find((l) => l.kind === "envelope")!;
    const allowed = fw.lines.find((l) => l.kind === "allowed")!;
    // Cumulative admissions never cross a correct limiter's envelope.
    allowed.values.forEach((a, i) => expect(a!).toBeLessThanOrEqual(env.values[i]!));
    expect(allowed.values.at(-1)).toBe(5);
  });

  it("makes a paler shade of a colour, still #rrggbb", () => {
    expect(paler("#000000", 0.5)).toBe("#808080");
    expect(paler("#4f46e5", 0)).toBe("#4f46e5");
    expect(paler("#4f46e5", 1)).toBe("#ffffff");
    expect(paler("#1f77b4")).toMatch(/^#[0-9a-f]{6}$/);
    expect(paler("red")).toBe("red");
  });

  it("overlays algorithms in one chart with distinct dashes, so equal lines stay visible", () => {
    const v = buildRunView([{ id: "a", name: "A", records: boundary() }], { measure: "bin", layout: "overlay", envelope: false });
    expect(v.plots).toHaveLength(1);
    const allowed = v.plots[0].lines.filter((l) => l.kind === "allowed");
    expect(allowed).toHaveLength(2);
    expect(allowed[0].dash).not.toEqual(allowed[1].dash);
    expect(allowed[0].color).not.toEqual(allowed[1].color);
    // Denials are drawn too, each in a paler shade of its rule's colour (told apart from the
    // admissions); no fail-open line when none failed open.
    const denied = v.plots[0].lines.filter((l) => l.kind === "denied");
    expect(denied.map((l) => l.color)).toEqual(allowed.map((l) => paler(l.color)));
    denied.forEach((d, i) => expect(d.color).not.toEqual(allowed[i].color));
    expect(v.plots[0].lines.some((l) => l.kind === "fail_open")).toBe(false);
  });

  it("shows fail-open in one chart: a run without Redis does not look like no traffic", () => {
    const r = boundary();
    // Every decision of the first half failed open.
    const half = Math.floor(r.outcome.length / 2);
    const failed = { ...r, outcome: r.outcome.map((o, i) => (i < half ? 2 : o)) };
    const v = buildRunView([{ id: "a", name: "A", records: failed }], { measure: "bin", layout: "overlay", envelope: false });
    const fo = v.plots[0].lines.filter((l) => l.kind === "fail_open");
    expect(fo).toHaveLength(1);
    const total = fo[0].values.reduce<number>((s, x) => s + (x ?? 0), 0);
    expect(total).toBe(half);
  });

  it("lays other runs over the selected one, each in its own colour, on the coarsest bins", () => {
    const a = { id: "a", name: "cap 10", records: boundary() };
    const b = { id: "b", name: "cap 20", records: { ...boundary(), bin_ms: 200 } };
    const over = buildRunView([a, b], { measure: "bin", layout: "overlay", envelope: false });
    expect(over.binMs).toBe(200);
    const allowed = over.plots[0].lines.filter((l) => l.kind === "allowed");
    expect(allowed.map((l) => l.run)).toEqual(["a", "a", "b", "b"]);
    expect(allowed[0].color).toBe(RUN_COLORS[0]);
    expect(allowed[2].color).toBe(RUN_COLORS[1]);
    expect(allowed[2].label).toContain("cap 20");
    const panels = buildRunView([a, b], { measure: "bin", layout: "panels", envelope: false });
    expect(panels.plots[1].lines.filter((l) => l.kind === "allowed").map((l) => l.run)).toEqual(["a", "b"]);
  });

  it("matches a target across runs by algorithm", () => {
    const r = boundary();
    const swapped = { ...r, targets: [...r.targets].reverse() };
    expect(matchTarget(r, 0, swapped)).toBe(1);
    expect(buildRunView([], { measure: "bin", layout: "panels", envelope: false }).plots).toEqual([]);
  });

  it("marks each rule's busiest window on its panel, with its count against the limit", () => {
    const v = buildRunView([{ id: "a", name: "A", records: boundary() }], { measure: "bin", layout: "panels", envelope: false });
    const marked = markPeaks(v, new Map([["compare-fixed-window", { admitted: 6, limit: 4, window_ms: 1000, start_ms: 500 }]]));
    expect(marked.plots[1].mark).toEqual({ from: 0.5, to: 1.5, label: "6 / 4 in 1 s", over: true });
    expect(marked.plots[0].mark).toBeUndefined();
    const overlay = buildRunView([{ id: "a", name: "A", records: boundary() }], { measure: "bin", layout: "overlay", envelope: false });
    expect(markPeaks(overlay, new Map([["compare-fixed-window", { admitted: 1, limit: 4, window_ms: 1000, start_ms: 0 }]])).plots[0].mark).toBeUndefined();
  });

  it("marks a token bucket's burst + rate as its promise, and only more than that as over", () => {
    const r = boundary();
    const bucket = { ...r, targets: [{ rule: { name: "compare-token-bucket", algorithm: "token_bucket" as const, capacity: 4, refill_per_sec: 2 }, naive: false }, r.targets[1]] };
    const v = buildRunView([{ id: "a", name: "A", records: bucket }], { measure: "bin", layout: "panels", envelope: false });
    const at = (admitted: number) => markPeaks(v, new Map([["compare-token-bucket", { admitted, limit: 4, window_ms: 2000, start_ms: 0 }]])).plots[0].mark;
    expect(at(8)).toEqual({ from: 0, to: 2, label: "8 / 4 + 4 in 2 s", over: false, note: "burst + rate: as promised" });
    expect(at(9)).toEqual({ from: 0, to: 2, label: "9 / 4 + 4 in 2 s", over: true });
  });
});
