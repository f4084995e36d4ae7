import { describe, expect, it } from "vitest";
import { keyDecisions, perKey, sortKeys } from "./perkey";
import { run } from "./testdata";

describe("per-key view", () => {
  // Target 1 (fixed window): client-1 denied three times in a row, then allowed, then denied.
  const rec = run(
    [
      [0, 1, 0, 0, 1],
      [10, 1, 1, 0, 1],
      [20, 1, 1, 1, 0],
      [40, 1, 1, 1, 0],
      [30, 1, 1, 1, 0],
      [50, 1, 1, 0, 0],
      [60, 1, 1, 1, 0],
      [70, 1, 0, 2, -1],
      [5, 0, 0, 1, 0],
    ],
    { keys: ["client-0", "client-1"] },
  );

  it("aggregates requests, denials, first denial and the longest streak, offenders first", () => {
    const rows = perKey(rec, 1);
    expect(rows.map((r) => r.name)).toEqual(["client-1", "client-0"]);
    expect(rows[0]).toEqual({ key: 1, name: "client-1", requests: 6, allowed: 2, denied: 4, failOpen: 0, deniedShare: 4 / 6, firstDeniedMs: 20, longestDeniedStreak: 3 });
    expect(rows[1]).toMatchObject({ requests: 2, allowed: 1, denied: 0, failOpen: 1, longestDeniedStreak: 0 });
    expect(rows[1].firstDeniedMs).toBeUndefined();
    // Another rule's records are not counted.
    expect(perKey(rec, 0)).toHaveLength(1);
  });

  it("sorts by any column; keys never denied sort last by first denial", () => {
    const rows = perKey(rec, 1);
    expect(sortKeys(rows, "requests", "asc").map((r) => r.name)).toEqual(["client-0", "client-1"]);
    expect(sortKeys(rows, "name", "desc").map((r) => r.name)).toEqual(["client-1", "client-0"]);
    expect(sortKeys(rows, "firstDeniedMs", "asc").map((r) => r.name)).toEqual(["client-1", "client-0"]);
    expect(sortKeys(rows, "firstDeniedMs", "desc").map((r) => r.name)).toEqual(["client-1", "client-0"]);
    const many = ["client-10", "client-9", "client-2"].map((name, key) => ({ ...rows[1], key, name }));
    expect(sortKeys(many, "name", "asc").map((r) => r.name)).toEqual(["client-2", "client-9", "client-10"]);
  });

  it("lists one key's decisions in sending order", () => {
    const d = keyDecisions(rec, 1, 1);
    expect(d.map((x) => x.t_ms)).toEqual([10, 20, 30, 40, 50, 60]);
    expect(d[1]).toMatchObject({ outcome: 1, retry_after_ms: 100, remaining: 0, attempt: 0 });
  });
});
