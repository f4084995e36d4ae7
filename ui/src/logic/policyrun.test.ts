import { describe, expect, it } from "vitest";
import { deniedByLimit, envelope, limitNames } from "./records";
import { deniedByText } from "./replay";
import { run } from "./testdata";

const policy = {
  name: "api",
  mode: "enforce",
  limits: [
    { name: "per-second", algorithm: "token_bucket", capacity: 10, refill_per_sec: 10 },
    { name: "daily", algorithm: "fixed_window", limit: 200, window_ms: 86_400_000 },
  ],
  overrides: [{ tier: "premium", keys: ["client-0"], limits: [{ name: "per-second", algorithm: "token_bucket", capacity: 100, refill_per_sec: 100 }] }],
};

/** Two keys of one policy target: client-0 premium, client-1 on the policy's own limits. */
function policyRun() {
  return run(
    [
      [0, 0, 0, 0, 5],
      [0, 0, 1, 0, 5],
      [500, 0, 1, 1, 0],
      [900, 0, 0, 0, 5],
    ],
    {
      targets: [{ rule: { ...policy.limits[0], name: "api" }, naive: false, policy }],
      binding: [1, 1, 1, 1],
      tier: [2, 0, 0, 2],
      would_deny: [0, 0, 1, 0],
      labels: ["", "per-second", "premium"],
    },
  );
}

describe("a policy's run", () => {
  it("draws each limit's envelope, every key under its tier's limit of that name", () => {
    const rec = policyRun();
    expect(limitNames(policy)).toEqual(["per-second", "daily"]);
    // At 1 s: client-0 (premium) 100 + 100, client-1 10 + 10.
    expect(envelope(rec, 0, 1000, 1, undefined, "per-second")).toEqual([220]);
    // The premium tier has no daily limit: only client-1 is held to one.
    expect(envelope(rec, 0, 1000, 1, undefined, "daily")).toEqual([200]);
  });

  it("counts denials per limit that decided them", () => {
    const by = deniedByLimit(policyRun(), 0, 1000, 1);
    expect([...by]).toEqual([["per-second", [1]]]);
  });
});

describe("a replayed policy's keys", () => {
  it("say which limits denied them, most first", () => {
    expect(deniedByText({ "per-second": 86, daily: 15730 })).toBe("daily 15,730, per-second 86");
    expect(deniedByText({})).toBe("");
  });
});
