import { describe, expect, it } from "vitest";
import { axisWidth, focusAfterRuleClick, liveColumns, liveNote, livePicture, liveRules, liveView, MAX_RUN_PANELS, totals } from "./live";

const point = (second: number, allowed: number, denied: number, fail_open = 0) => ({ second, allowed, denied, fail_open });

describe("live chart", () => {
  const points = [point(100, 3, 1), point(101, 2, 0, 4), point(102, 0, 5)];

  it("leaves the current, partial second out of the lines (it dipped at “now”)", () => {
    expect(liveColumns(points)).toEqual([
      [100, 101],
      [3, 2],
      [1, 0],
      [0, 4],
    ]);
  });

  it("draws a window that only moved on as the same picture, and any change as a new one", () => {
    const idle = (from: number) => ({ rule: "api", points: [point(from, 0, 0), point(from + 1, 0, 0), point(from + 2, 0, 0)] });
    expect(livePicture(idle(200))).toBe(livePicture(idle(201)));
    const shifted = { rule: "api", points: points.map((p) => ({ ...p, second: p.second + 7 })) };
    expect(livePicture(shifted)).toBe(livePicture({ rule: "api", points }));
    // A value on a line, the current second (only in the totals), and an error each show.
    expect(livePicture({ rule: "api", points: [point(200, 1, 0), point(201, 0, 0), point(202, 0, 0)] })).not.toBe(livePicture(idle(200)));
    expect(livePicture({ rule: "api", points: [point(200, 0, 0), point(201, 0, 0), point(202, 0, 1)] })).not.toBe(livePicture(idle(200)));
    expect(livePicture({ ...idle(200), error: "Redis is unreachable" })).not.toBe(livePicture(idle(200)));
    // The same values in another order are another picture.
    expect(livePicture({ rule: "api", points: [point(200, 1, 0), point(201, 0, 0), point(202, 0, 0)] })).not.toBe(
      livePicture({ rule: "api", points: [point(200, 0, 0), point(201, 1, 0), point(202, 0, 0)] }),
    );
  });

  it("totals every decision in the window, the current second included", () => {
    expect(totals(points)).toEqual({ allowed: 5, denied: 6, fail_open: 4 });
  });

  it("stays on the run when a rule is clicked during it (the chart switched away at its end)", () => {
    expect(focusAfterRuleClick(true, "run")).toBe("run");
    expect(focusAfterRuleClick(false, "run")).toBe("rules");
    const run = { runRules: ["compare-fixed-window"], userRules: ["a", "b", "c", "d", "e"] };
    expect(liveRules({ ...run, running: false, focus: focusAfterRuleClick(true, "run") })).toEqual(["compare-fixed-window"]);
    expect(liveRules({ ...run, running: false, focus: "rules" })).toEqual(["a", "b", "c", "d"]);
    expect(liveRules({ ...run, running: true, focus: "rules" })).toEqual(["compare-fixed-window"]);
    expect(liveRules({ runRules: [], userRules: ["a"], running: false, focus: "run" })).toEqual(["a"]);
  });

  it("says when it shows fewer rules than there are, never cutting silently", () => {
    const sweep = Array.from({ length: 100 }, (_, i) => `api.capacity-${i + 1}`);
    const v = liveView({ runRules: sweep, userRules: [], running: true, focus: "run" });
    expect(v.rules).toHaveLength(MAX_RUN_PANELS);
    expect(liveNote(v)).toBe(`showing ${MAX_RUN_PANELS} of 100 rules: the run's summary and the rules list have them all`);
    const idle = liveView({ runRules: [], userRules: ["a", "b", "c", "d", "e"], running: false, focus: "rules" });
    expect(liveNote(idle)).toMatch(/^showing 4 of 5 rules/);
    expect(liveNote(liveView({ runRules: ["x"], userRules: [], running: false, focus: "run" }))).toBe("");
  });

  it("sizes the y axis to its widest label (4,000 was clipped to ,000)", () => {
    const measure = (t: string) => t.length * 6;
    expect(axisWidth(["0", "2,000", "4,000"], measure, 10)).toBe(40);
    expect(axisWidth(["0", "1,000,000"], measure, 10)).toBe(64);
    expect(axisWidth([], measure, 10)).toBe(10);
  });
});
