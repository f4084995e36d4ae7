import { describe, expect, it } from "vitest";
import { keyOptions, keyStateLine, stateLabel } from "./keystate";
import { run } from "./testdata";

describe("a key's state on the run chart", () => {
  // [t_ms, target, key, outcome, remaining]; completion order differs from sending order.
  const rec = run(
    [
      [0, 0, 0, 0, 1],
      [30, 0, 0, 1, 0],
      [10, 0, 0, 0, 0],
      [250, 0, 0, 2, -1],
      [400, 0, 0, 0, 1],
      [5, 1, 1, 0, 1],
      [6, 1, 1, 1, 0],
      [7, 1, 1, 1, 0],
      [8, 1, 0, 0, 1],
    ],
    { keys: ["client-0", "client-1"] },
  );

  it("is what was left after each decision, in sending order, from 0 to the chart's end", () => {
    const line = keyStateLine(rec, { target: 0, name: "client-0" }, 1.5)!;
    expect(line.x).toEqual([0, 0, 0.01, 0.03, 0.25, 0.4, 1.5]);
    // Unknown before the first decision and after the last; a fail-open knows nothing either.
    expect(line.values).toEqual([null, 1, 0, 0, null, 1, null]);
    expect(line.decisions).toBe(5);
    expect(line.label).toBe("tokens left");
    expect(line.title).toBe("client-0 on tb");
    expect(line.ceiling).toBe(2);
  });

  it("names the window's state remaining, under its limit, and ends at the last decision if later", () => {
    const line = keyStateLine(rec, { target: 1, name: "client-1" }, 0)!;
    expect(line.label).toBe("remaining");
    expect(line.ceiling).toBe(2);
    expect(line.x[line.x.length - 1]).toBe(0.007);
    expect(stateLabel({ algorithm: "gcra", limit: 3, window_ms: 1000, burst: 4 })).toBe("remaining");
  });

  it("is absent for a key that never sent to the rule, an unknown key, a naive target", () => {
    expect(keyStateLine(rec, { target: 0, name: "client-1" }, 1)).toBeUndefined();
    expect(keyStateLine(rec, { target: 0, name: "client-7" }, 1)).toBeUndefined();
    expect(keyStateLine(rec, { target: 5, name: "client-0" }, 1)).toBeUndefined();
    const naive = { ...rec, targets: rec.targets.map((t) => ({ ...t, naive: true })) };
    expect(keyStateLine(naive, { target: 0, name: "client-0" }, 1)).toBeUndefined();
  });

  it("offers each rule's top offenders, and keeps the current choice among them", () => {
    const opts = keyOptions(rec, 1);
    expect(opts).toEqual([
      { target: 0, name: "client-0", denied: 1, requests: 5 },
      { target: 1, name: "client-1", denied: 2, requests: 3 },
    ]);
    const kept = keyOptions(rec, 1, { target: 1, name: "client-0" });
    expect(kept.map((o) => `${o.target}:${o.name}`)).toEqual(["0:client-0", "1:client-1", "1:client-0"]);
    // A choice that names no key of the run is not invented.
    expect(keyOptions(rec, 1, { target: 1, name: "client-9" })).toHaveLength(2);
  });
});
