import { describe, expect, it } from "vitest";
import { COMPARE_TARGET, FIRST_VIEW, isView, runFor, runView, startView, targetFor, VIEWS, ViewMemory } from "./views";

describe("the view a start opens on", () => {
  it("is Compare the first time", () => {
    expect(FIRST_VIEW).toBe("compare");
    expect(startView(null)).toBe("compare");
    expect(startView(undefined)).toBe("compare");
  });

  it("is the one remembered", () => {
    for (const v of VIEWS) expect(startView(v)).toBe(v);
  });

  it("is Compare when what was remembered is no view (an older app's, or garbage)", () => {
    expect(startView("dashboard")).toBe("compare");
    expect(startView("")).toBe("compare");
    expect(isView("Compare")).toBe(false);
  });
});

describe("a view's workload target", () => {
  const offered = [COMPARE_TARGET, "checkout", "policy:api"];

  it("is always the five algorithms in Compare", () => {
    expect(targetFor("compare", "checkout", offered)).toBe(COMPARE_TARGET);
  });

  it("is the rule or policy Simulate had, while it is offered", () => {
    expect(targetFor("simulate", "policy:api", offered)).toBe("policy:api");
  });

  it("is the first rule or policy when Simulate had none, or had one since deleted", () => {
    expect(targetFor("simulate", undefined, offered)).toBe("checkout");
    expect(targetFor("simulate", COMPARE_TARGET, offered)).toBe("checkout");
    expect(targetFor("simulate", "gone", offered)).toBe("checkout");
    expect(targetFor("simulate", "gone", [COMPARE_TARGET, "policy:api"])).toBe("policy:api");
  });

  it("is the comparison only when there is no rule and no policy", () => {
    expect(targetFor("simulate", undefined, [COMPARE_TARGET])).toBe(COMPARE_TARGET);
  });
});

describe("the run a view shows again", () => {
  const runs = [
    { id: "r3", rules: ["checkout"] },
    { id: "r2", rules: ["compare-token-bucket", "compare-gcra", "compare-fixed-window"] },
    { id: "r1", rules: ["api"] },
  ];

  it("tells a comparison's run from a rule's", () => {
    expect(runView(runs[1])).toBe("compare");
    expect(runView(runs[0])).toBe("simulate");
  });

  it("is the one it showed, while it is kept", () => {
    expect(runFor("compare", "r1", runs)).toBe("r1");
    expect(runFor("runs", "r2", runs)).toBe("r2");
  });

  it("is its newest own run when it showed none, or one since deleted", () => {
    expect(runFor("compare", undefined, runs)).toBe("r2");
    expect(runFor("simulate", "deleted", runs)).toBe("r3");
  });

  it("leaves the selection alone for Runs with nothing kept, or with no run of its own", () => {
    expect(runFor("runs", undefined, runs)).toBeUndefined();
    expect(runFor("compare", undefined, [runs[0]])).toBeUndefined();
  });
});

describe("what each view keeps", () => {
  it("keeps each view's own form and run apart, and a later save adds to an earlier one", () => {
    const m = new ViewMemory();
    m.save("compare", { form: { target: COMPARE_TARGET, limit: "40" }, run: "r2" });
    m.save("simulate", { form: { target: "checkout" }, run: "r3" });
    m.save("compare", { run: "r4" });
    expect(m.get("compare")).toEqual({ form: { target: COMPARE_TARGET, limit: "40" }, run: "r4" });
    expect(m.get("simulate").form?.target).toBe("checkout");
    expect(m.get("replay")).toEqual({});
  });
});
