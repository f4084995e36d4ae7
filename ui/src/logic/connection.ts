/**
 * Which Redis the app is on, in words and marks (single node or cluster, plain TCP or TLS,
 * INSECURE), the TLS form read into the options the backend takes, and a cluster's topology as
 * table rows: masters in slot order, each followed by its replicas.
 */
import type { ServerInfo } from "../bindings/ServerInfo";
import type { TlsOptions } from "../bindings/TlsOptions";
import type { Topology } from "../bindings/Topology";
import type { TopologyNode } from "../bindings/TopologyNode";
import type { Transport } from "../bindings/Transport";
import { fmtRtt } from "./format";

/** One mark beside the connection: `danger` is the INSECURE one. */
export interface Marker {
  text: string;
  tone: "neutral" | "cluster" | "tls" | "danger";
  /** The longer explanation, for a tooltip. */
  title: string;
}

/** What the pill and the card show: topology, transport, and INSECURE when not verified. */
export function markers(t: Transport): Marker[] {
  const out: Marker[] = [
    t.cluster
      ? { text: "Cluster", tone: "cluster", title: "A Redis Cluster: each key goes to the master of its slot" }
      : { text: "Single node", tone: "neutral", title: "One Redis server" },
    t.tls ? { text: "TLS", tone: "tls", title: t.description } : { text: "Plain TCP", tone: "neutral", title: t.description },
  ];
  if (t.insecure) {
    out.push({
      text: "INSECURE",
      tone: "danger",
      title: "TLS without certificate verification: anyone on the network path can pose as this Redis",
    });
  }
  return out;
}

const SERVER_NAMES = { redis: "Redis", valkey: "Valkey", dragonfly: "Dragonfly" };

/** The card's Server row: `Valkey 9.1.2 · Lua scripting`; `bad` when it cannot run scripts. */
export function serverText(s: ServerInfo | undefined): { text: string; bad: boolean; title: string } {
  if (!s) return { text: "—", bad: false, title: "" };
  const name = `${SERVER_NAMES[s.kind]} ${s.version}`;
  switch (s.scripting) {
    case "available":
      return { text: `${name} · Lua scripting`, bad: false, title: "Runs the limiters' Lua scripts" };
    case "missing":
      return { text: `${name} · no scripting`, bad: true, title: `Cannot run Lua scripts: no decision can be made here (${s.scripting_error ?? ""})` };
    default:
      return { text: `${name} · scripting not checked`, bad: false, title: `EVAL was refused (${s.scripting_error ?? ""}); EVALSHA may still be allowed` };
  }
}

/** True when the URL asks for TLS, so the TLS fields should be open. */
export function wantsTls(url: string): boolean {
  return /^\s*rediss(\+cluster)?:\/\//i.test(url) || /#insecure\s*$/i.test(url);
}

/** The TLS form's inputs. */
export interface TlsForm {
  ca: string;
  cert: string;
  key: string;
  insecure: boolean;
}

/** The form as the backend takes it: blank paths left out; null when nothing is set. */
export function tlsFromForm(form: TlsForm): TlsOptions | null {
  const opts: TlsOptions = { insecure: form.insecure };
  if (form.ca.trim()) opts.ca = form.ca.trim();
  if (form.cert.trim()) opts.cert = form.cert.trim();
  if (form.key.trim()) opts.key = form.key.trim();
  return opts.ca || opts.cert || opts.key || opts.insecure ? opts : null;
}

/** The saved options back into the form (after a restart). */
export function formFromTls(opts: TlsOptions | undefined): TlsForm {
  return { ca: opts?.ca ?? "", cert: opts?.cert ?? "", key: opts?.key ?? "", insecure: opts?.insecure ?? false };
}

/** The TLS fields of the form, and the one the URL's errors go to. */
export const TLS_FIELDS = ["tls_ca", "tls_cert", "tls_key", "tls_insecure"] as const;

/** Slot ranges as people read them: "0-5460", "7000", "0-10, 20-30". */
export function fmtSlots(slots: [number, number][]): string {
  return slots.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(", ");
}

/** How many slots the ranges hold. */
export function slotCount(slots: [number, number][]): number {
  return slots.reduce((n, [a, b]) => n + b - a + 1, 0);
}

/** One row of the topology table. */
export interface TopologyRow {
  address: string;
  /** The address as the table shows it: `:7001` when every node is on the same host (the
   * port is what tells them apart, and a cut-off `127.0.0.1:7…` would hide it). */
  shown: string;
  role: "master" | "replica";
  /** A master's slot ranges, or "replica of <address>" ("replica" when its master is unknown). */
  detail: string;
  rtt: string;
  /** A failing node, or one that did not answer its PING. */
  bad: boolean;
  /** Why, for a tooltip. */
  title: string;
}

/** `host` when every node is on it (then the table shows ports only), else null. */
export function sharedHost(t: Topology): string | null {
  const hosts = new Set(t.nodes.map((n) => n.address.slice(0, n.address.lastIndexOf(":"))));
  return hosts.size === 1 ? [...hosts][0] : null;
}

function row(n: TopologyNode, host: string | null): TopologyRow {
  const problems = [n.failing ? "marked failing by the cluster" : "", n.error ?? ""].filter(Boolean);
  const slots = slotCount(n.slots);
  const short = (address: string) => (host !== null && address.startsWith(`${host}:`) ? address.slice(host.length) : address);
  return {
    address: n.address,
    shown: short(n.address),
    role: n.role,
    detail: n.role === "master" ? fmtSlots(n.slots) || "no slots" : n.follows ? `of ${short(n.follows)}` : "master unknown",
    rtt: n.error ? "no answer" : fmtRtt(n.rtt_ms),
    bad: n.failing || n.error !== undefined,
    // A replica is PINGed on a connection opened for it (the cluster connection reaches
    // masters only), so its round trip includes connecting: say so, or it looks slow.
    title: [
      n.address,
      n.role === "master" ? `${slots} slots` : `replica of ${n.follows ?? "an unknown master"}; its round trip includes opening a connection`,
      ...problems,
    ].join("; "),
  };
}

/** Masters by their first slot, each followed by its replicas; replicas of no listed master last. */
export function topologyRows(t: Topology): TopologyRow[] {
  const first = (n: TopologyNode) => n.slots[0]?.[0] ?? Number.MAX_SAFE_INTEGER;
  const masters = t.nodes.filter((n) => n.role === "master").sort((a, b) => first(a) - first(b) || a.address.localeCompare(b.address));
  const replicas = t.nodes.filter((n) => n.role === "replica").sort((a, b) => a.address.localeCompare(b.address));
  const host = sharedHost(t);
  const out: TopologyRow[] = [];
  for (const m of masters) {
    out.push(row(m, host));
    for (const r of replicas.filter((r) => r.follows === m.address)) out.push(row(r, host));
  }
  const listed = new Set(masters.map((m) => m.address));
  for (const r of replicas.filter((r) => !r.follows || !listed.has(r.follows))) out.push(row(r, host));
  return out;
}

/** "3 masters, 3 replicas on 127.0.0.1" (with how many are in trouble). */
export function topologySummary(t: Topology): string {
  const masters = t.nodes.filter((n) => n.role === "master").length;
  const replicas = t.nodes.length - masters;
  const bad = t.nodes.filter((n) => n.failing || n.error !== undefined).length;
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;
  const host = sharedHost(t);
  return `${plural(masters, "master")}, ${plural(replicas, "replica")}${host ? ` on ${host}` : ""}${bad ? ` (${bad} not answering)` : ""}`;
}

/** What the URL field shows in place of a password. */
export const PASSWORD_MASK = "•••";

/**
 * A URL's password taken out, so the field can show the host, the port and the user but never
 * the password: `redis://app:s3cret@h:6379/0` shows as `redis://app:•••@h:6379/0`. A URL without
 * a password (or already masked) comes back as it is, with `password` null.
 */
export function hidePassword(url: string): { shown: string; password: string | null } {
  const m = /^(\s*[a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@(.*)$/is.exec(url);
  if (!m) return { shown: url, password: null };
  const [, scheme, userinfo, rest] = m;
  const colon = userinfo.indexOf(":");
  if (colon < 0) return { shown: url, password: null };
  const password = userinfo.slice(colon + 1);
  if (password === "" || password === PASSWORD_MASK) return { shown: url, password: null };
  return { shown: `${scheme}${userinfo.slice(0, colon)}:${PASSWORD_MASK}@${rest}`, password };
}

/** The URL to send: the field's text with the hidden password put back where the mask is. */
export function withPassword(shown: string, password: string | null): string {
  if (password === null) return shown;
  const at = shown.indexOf(`:${PASSWORD_MASK}@`);
  if (at < 0) return shown;
  return `${shown.slice(0, at)}:${password}${shown.slice(at + PASSWORD_MASK.length + 1)}`;
}
