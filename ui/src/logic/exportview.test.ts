import { describe, expect, it } from "vitest";
import { exportView, isStepped, isZoomed } from "./exportview";
import { inFlightPlot } from "./inflight";
import { keyStateLine } from "./keystate";
import { buildRunView, RUN_COLORS } from "./runview";
import { run } from "./testdata";

describe("the exported view is the one on screen", () => {
  const rec = run([
    [0, 0, 0, 0, 1],
    [150, 0, 0, 1, 0],
    [250, 0, 0, 0, 0],
    [20, 1, 1, 0, 1],
  ]);
  const runs = [
    { id: "a", name: "cap 2", records: rec },
    { id: "b", name: "cap 4", records: rec },
  ];

  it("takes the cumulative measure, the overlaid runs and their colours as drawn", () => {
    const v = buildRunView(runs, { measure: "cumulative", layout: "overlay", envelope: true });
    const out = exportView(v, "cumulative", { title: "cap 2", subtitle: "token bucket", columns: 1 });
    expect(out.panels).toHaveLength(1);
    expect(out.panels[0].y_label).toBe("so far");
    const labels = out.panels[0].lines.map((l) => l.label);
    expect(labels.some((l) => l.includes("cap 2"))).toBe(true);
    expect(labels.some((l) => l.includes("cap 4"))).toBe(true);
    // Running totals and envelopes are joined, never stepped.
    expect(out.panels[0].lines.every((l) => !l.stepped)).toBe(true);
    const line = v.plots[0].lines[0];
    expect(out.panels[0].lines[0]).toEqual({ label: line.label, look: { colour: line.color, dash: line.dash, width: line.width }, values: line.values, stepped: false });
    expect(out.panels[0].lines[0].look.colour).toBe(RUN_COLORS[0]);
    expect(out.x).toEqual(v.x);
    expect(out.y_max).toBe(v.yMax);
    expect(out.subtitle).toContain("cumulative");
    expect(out.x_range).toBeUndefined();
    expect(out.key_state).toBeUndefined();
  });

  it("steps counts per bin, keeps a zoom and the chosen key's state, at most three panels a row", () => {
    const v = buildRunView([runs[0]], { measure: "bin", layout: "panels", envelope: true });
    const key = keyStateLine(rec, { target: 0, name: "client-0" }, v.x[v.x.length - 1]);
    const out = exportView(v, "bin", { title: "t", subtitle: "", columns: 5, xRange: [0.1, 0.2], key });
    expect(out.panels.map((p) => p.title)).toEqual(["tb", "fw"]);
    expect(out.panels[0].y_label).toBe("per 100 ms");
    expect(out.panels[0].lines.every((l) => l.stepped)).toBe(true);
    expect(out.columns).toBe(3);
    expect(out.x_range).toEqual([0.1, 0.2]);
    expect(out.subtitle).toBe("per 100 ms bin · zoomed to 0.10–0.20 s");
    expect(out.key_state).toEqual({ title: "client-0 on tb", label: "tokens left", x: key!.x, values: key!.values, ceiling: 2 });
  });

  it("adds a run's in-flight panel on its own scale, carried on past the last send to the last hold's end", () => {
    const v = buildRunView([runs[0]], { measure: "bin", layout: "panels", envelope: true });
    const onScreen = v.plots[0].lines[0].values.slice();
    const inFlight = inFlightPlot({
      bin_ms: v.binMs,
      targets: [{ rule: { name: "cc", algorithm: "concurrency", limit: 2 }, naive: false }],
      in_flight: [[1, 2, 2, 1, 1, 0]],
    })!;
    const out = exportView(v, "bin", { title: "t", subtitle: "", columns: 2, inFlight });
    const panel = out.panels[out.panels.length - 1];
    expect(panel.title).toBe(inFlight.title);
    expect(panel.y_max).toBeGreaterThanOrEqual(2);
    expect(out.y_max).toBe(v.yMax);
    // One x for every panel, now to the last hold's end; the rate lines have nothing there.
    expect(out.x.length).toBeGreaterThanOrEqual(6);
    for (const p of out.panels) for (const l of p.lines) expect(l.values).toHaveLength(out.x.length);
    expect(out.panels[0].lines[0].values.slice(v.x.length).every((x) => x === null)).toBe(true);
    expect(panel.lines.map((l) => l.label)).toEqual(["cc in flight", "cc limit (2)"]);
    expect(panel.lines[0].values.slice(0, 6)).toEqual([1, 2, 2, 1, 1, 0]);
    expect(panel.lines[1].values.every((x) => x === 2)).toBe(true);
    // The screen's own lines are left as drawn.
    expect(v.plots[0].lines[0].values).toEqual(onScreen);
  });

  it("knows a zoom from the whole range, and what is stepped", () => {
    expect(isZoomed([0, 1, 2], [0, 2])).toBe(false);
    expect(isZoomed([0, 1, 2], undefined)).toBe(false);
    expect(isZoomed([0, 1, 2], [0.5, 2])).toBe(true);
    expect(isStepped("bin", { kind: "allowed" })).toBe(true);
    expect(isStepped("bin", { kind: "envelope" })).toBe(false);
    expect(isStepped("cumulative", { kind: "allowed" })).toBe(false);
  });
});
