import { describe, expect, it } from "vitest";
import type { PolicyFileStatus } from "../bindings/PolicyFileStatus";
import { fileLine, fileName, lookNote, statusChanged } from "./policyfile";

const status = (over: Partial<PolicyFileStatus> = {}): PolicyFileStatus => ({
  file: "/srv/limits/policies.toml",
  exists: true,
  policies: [],
  version: "10-aa",
  reloaded: false,
  ...over,
});

describe("the policies file", () => {
  it("names the file, a new one, or none", () => {
    expect(fileName("/srv/limits/policies.toml")).toBe("policies.toml");
    expect(fileName("C:\\limits\\p.json")).toBe("p.json");
    expect(fileLine(status())).toBe("/srv/limits/policies.toml");
    expect(fileLine(status({ exists: false }))).toMatch(/new: written by its first save/);
    expect(fileLine(status({ file: undefined }))).toMatch(/^No policies file open/);
  });

  it("says an outside change was taken, and an invalid one once, with the engine's words", () => {
    expect(lookNote(status(), status())).toBeNull();
    expect(lookNote(status(), status({ reloaded: true, version: "11-bb" }))).toEqual({ text: "policies.toml changed on disk: reloaded.", error: false });
    const error = { code: "policy_file" as const, message: "invalid policies file /srv/limits/policies.toml: line 9: policies[0].limits[0].capacity: invalid capacity", field: "capacity" };
    const bad = status({ error });
    const note = lookNote(status(), bad);
    expect(note?.error).toBe(true);
    expect(note?.text).toMatch(/line 9: .*capacity.*last good ones; nothing was written/);
    expect(lookNote(bad, bad), "said once").toBeNull();
  });

  it("redraws only when the file, its version or its error moved", () => {
    expect(statusChanged(null, status())).toBe(true);
    expect(statusChanged(status(), status({ reloaded: true }))).toBe(false);
    expect(statusChanged(status(), status({ version: "12-cc" }))).toBe(true);
    expect(statusChanged(status(), status({ error: { code: "policy_file", message: "x" } }))).toBe(true);
  });
});
