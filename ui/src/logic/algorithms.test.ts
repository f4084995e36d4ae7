import { describe, expect, it } from "vitest";
import { policyMakeup } from "./algorithms";

describe("a policy run's makeup", () => {
  it("names its limits' algorithms and its delay", () => {
    expect(policyMakeup({ limits: [{ algorithm: "gcra" }], max_delay_ms: 2000 })).toBe("GCRA, delays up to 2s");
    expect(policyMakeup({ limits: [{ algorithm: "token_bucket" }, { algorithm: "calendar" }] })).toBe("Token bucket + Calendar quota");
  });
});
