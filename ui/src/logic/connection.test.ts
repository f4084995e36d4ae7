import { describe, expect, it } from "vitest";
import { fmtSlots, formFromTls, hidePassword, markers, serverText, tlsFromForm, topologyRows, topologySummary, wantsTls, withPassword } from "./connection";
import type { Topology } from "../bindings/Topology";
import type { Transport } from "../bindings/Transport";

const transport = (t: Partial<Transport>): Transport => ({ cluster: false, tls: false, insecure: false, description: "plain TCP (no TLS)", ...t });

describe("connection markers", () => {
  it("says single node or cluster, plain TCP or TLS", () => {
    expect(markers(transport({})).map((m) => m.text)).toEqual(["Single node", "Plain TCP"]);
    expect(markers(transport({ cluster: true })).map((m) => m.text)).toEqual(["Cluster", "Plain TCP"]);
    const tls = markers(transport({ tls: true, description: "TLS, verified against the CA in /ca.pem" }));
    expect(tls.map((m) => m.text)).toEqual(["Single node", "TLS"]);
    expect(tls[1].title).toContain("/ca.pem");
  });

  it("marks unverified TLS as INSECURE, in the danger tone, and only then", () => {
    const marks = markers(transport({ tls: true, insecure: true }));
    const danger = marks.filter((m) => m.tone === "danger");
    expect(danger.map((m) => m.text)).toEqual(["INSECURE"]);
    expect(danger[0].title).toMatch(/pose as this Redis/);
    expect(markers(transport({ tls: true })).some((m) => m.tone === "danger")).toBe(false);
  });
});

describe("the TLS form", () => {
  it("opens for rediss://, rediss+cluster:// and #insecure URLs only", () => {
    expect(wantsTls(" rediss://h:6380")).toBe(true);
    expect(wantsTls("rediss+cluster://a:1,b:2")).toBe(true);
    expect(wantsTls("REDISS://h")).toBe(true);
    expect(wantsTls("redis://h:6379")).toBe(false);
    expect(wantsTls("redis+cluster://a:1,b:2")).toBe(false);
    expect(wantsTls("")).toBe(false);
  });

  it("leaves blank paths out and sends nothing when nothing is set", () => {
    expect(tlsFromForm({ ca: " ", cert: "", key: "", insecure: false })).toBeNull();
    expect(tlsFromForm({ ca: " /etc/ca.pem ", cert: "", key: "", insecure: false })).toEqual({ ca: "/etc/ca.pem", insecure: false });
    expect(tlsFromForm({ ca: "", cert: "", key: "", insecure: true })).toEqual({ insecure: true });
    const saved = { ca: "/ca.pem", cert: "/c.pem", key: "/k.pem", insecure: false };
    expect(tlsFromForm(formFromTls(saved))).toEqual(saved);
    expect(formFromTls(undefined)).toEqual({ ca: "", cert: "", key: "", insecure: false });
  });
});

describe("the topology table", () => {
  const topology: Topology = {
    cluster: true,
    server: { kind: "redis", version: "7.0.15", scripting: "available" },
    nodes: [
      { address: "127.0.0.1:7004", role: "replica", follows: "127.0.0.1:7002", slots: [], failing: false, rtt_ms: 0.4 },
      { address: "127.0.0.1:7002", role: "master", slots: [[5461, 10922]], failing: false, rtt_ms: 0.3 },
      { address: "127.0.0.1:7001", role: "master", slots: [[0, 5460], [16000, 16000]], failing: false, rtt_ms: 12.34 },
      { address: "127.0.0.1:7003", role: "replica", follows: "127.0.0.1:7001", slots: [], failing: true, error: "timeout: no answer" },
      { address: "127.0.0.1:7009", role: "replica", slots: [], failing: false, rtt_ms: 1 },
    ],
  };

  it("lists masters in slot order, each followed by its replicas", () => {
    const rows = topologyRows(topology);
    expect(rows.map((r) => r.address)).toEqual(["127.0.0.1:7001", "127.0.0.1:7003", "127.0.0.1:7002", "127.0.0.1:7004", "127.0.0.1:7009"]);
    expect(rows[0]).toMatchObject({ shown: ":7001", role: "master", detail: "0-5460, 16000", rtt: "12 ms", bad: false });
    expect(rows[0].title).toBe("127.0.0.1:7001; 5462 slots");
    expect(rows[1]).toMatchObject({ shown: ":7003", role: "replica", detail: "of :7001", rtt: "no answer", bad: true });
    expect(rows[1].title).toContain("marked failing");
    expect(rows[3].title).toContain("includes opening a connection");
    expect(rows[3].rtt).toBe("400 µs");
    expect(rows[4].detail).toBe("master unknown");
  });

  it("summarises the nodes and those in trouble", () => {
    expect(topologySummary(topology)).toBe("2 masters, 3 replicas on 127.0.0.1 (1 not answering)");
    expect(topologySummary({ cluster: true, server: topology.server, nodes: topology.nodes.slice(1, 2) })).toBe("1 master, 0 replicas on 127.0.0.1");
  });

  it("shows whole addresses when the nodes are on different hosts", () => {
    const spread: Topology = {
      cluster: true,
      server: topology.server,
      nodes: [
        { address: "10.0.0.1:6379", role: "master", slots: [[0, 16383]], failing: false, rtt_ms: 1 },
        { address: "10.0.0.2:6379", role: "replica", follows: "10.0.0.1:6379", slots: [], failing: false, rtt_ms: 1 },
      ],
    };
    expect(topologyRows(spread).map((r) => [r.shown, r.detail])).toEqual([
      ["10.0.0.1:6379", "0-16383"],
      ["10.0.0.2:6379", "of 10.0.0.1:6379"],
    ]);
    expect(topologySummary(spread)).toBe("1 master, 1 replica");
    expect(fmtSlots([])).toBe("");
  });
});

describe("the URL field hides only the password", () => {
  it("shows the host, port and user, and masks the password", () => {
    expect(hidePassword("redis://app:s3cret@10.0.0.5:6380/2")).toEqual({ shown: "redis://app:•••@10.0.0.5:6380/2", password: "s3cret" });
    expect(hidePassword("rediss://:pw@h:6379#insecure")).toEqual({ shown: "rediss://:•••@h:6379#insecure", password: "pw" });
    expect(hidePassword("redis+cluster://u:p%40ss@a:7000,b:7001")).toEqual({ shown: "redis+cluster://u:•••@a:7000,b:7001", password: "p%40ss" });
  });

  it("leaves a URL without a password, or already masked, as it is", () => {
    for (const url of ["redis://127.0.0.1:6379", "redis://user@h:1", "redis://:@h:1", "", "not a url", "redis://app:•••@h:1"]) {
      expect(hidePassword(url)).toEqual({ shown: url, password: null });
    }
  });

  it("puts the password back exactly where the mask stands, and nowhere else", () => {
    const { shown, password } = hidePassword("redis://app:s3cret@h:6379/0");
    expect(withPassword(shown, password)).toBe("redis://app:s3cret@h:6379/0");
    // The user edited the host around the mask: the password follows.
    expect(withPassword("redis://app:•••@other:6390/0", password)).toBe("redis://app:s3cret@other:6390/0");
    // The mask was deleted: the password is not smuggled back in.
    expect(withPassword("redis://app@h:6379", password)).toBe("redis://app@h:6379");
    expect(withPassword("redis://h:6379", null)).toBe("redis://h:6379");
  });
});

describe("the server row", () => {
  it("names the server, its version and whether it runs scripts", () => {
    expect(serverText({ kind: "valkey", version: "9.1.2", scripting: "available" })).toMatchObject({ text: "Valkey 9.1.2 · Lua scripting", bad: false });
    const none = serverText({ kind: "valkey", version: "9.1.2", scripting: "missing", scripting_error: "Could not find scripting engine 'lua'" });
    expect(none).toMatchObject({ text: "Valkey 9.1.2 · no scripting", bad: true });
    expect(none.title).toContain("scripting engine 'lua'");
    expect(serverText({ kind: "dragonfly", version: "df-v1.25.0", scripting: "unknown" }).text).toBe("Dragonfly df-v1.25.0 · scripting not checked");
    expect(serverText(undefined).text).toBe("—");
  });
});
