/**
 * Typed wrappers around invoke(): one function per Rust command, with the payload types
 * generated from Rust (./bindings). Every rejection is an AppError `{code, message, field?}`.
 */
import { invoke } from "@tauri-apps/api/core";
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import type { AppError } from "./bindings/AppError";
import type { AppInfo } from "./bindings/AppInfo";
import type { ChartFormat } from "./bindings/ChartFormat";
import type { ChartView } from "./bindings/ChartView";
import type { ConnectionStatus } from "./bindings/ConnectionStatus";
import type { ConnectionTest } from "./bindings/ConnectionTest";
import type { TlsOptions } from "./bindings/TlsOptions";
import type { Topology } from "./bindings/Topology";
import type { Exported } from "./bindings/Exported";
import type { MetricsSettings } from "./bindings/MetricsSettings";
import type { MetricsStatus } from "./bindings/MetricsStatus";
import type { Policy } from "./bindings/Policy";
import type { FileVersion } from "./bindings/FileVersion";
import type { PolicyFileStatus } from "./bindings/PolicyFileStatus";
import type { Rule } from "./bindings/Rule";
import type { RuleDraft } from "./bindings/RuleDraft";
import type { RuleStats } from "./bindings/RuleStats";
import type { SimFinished } from "./bindings/SimFinished";
import type { SimProgress } from "./bindings/SimProgress";
import type { SimRequest } from "./bindings/SimRequest";
import type { SimStatus } from "./bindings/SimStatus";
import type { Decision } from "./bindings/Decision";
import type { HistorySettings } from "./bindings/HistorySettings";
import type { HttpAnswer } from "./bindings/HttpAnswer";
import type { KeyPeek } from "./bindings/KeyPeek";
import type { ResetResult } from "./bindings/ResetResult";
import type { RunHistory } from "./bindings/RunHistory";
import type { RunInfo } from "./bindings/RunInfo";
import type { RunRecords } from "./bindings/RunRecords";
import type { WorkloadPreview } from "./bindings/WorkloadPreview";
import type { ParseSpec } from "./bindings/ParseSpec";
import type { Preview } from "./bindings/Preview";
import type { ReplayProgress } from "./bindings/ReplayProgress";
import type { ReplayRequest } from "./bindings/ReplayRequest";
import type { ReplayStatus } from "./bindings/ReplayStatus";
import type { ReplayRunInfo } from "./bindings/ReplayRunInfo";
import type { WatchStatus } from "./bindings/WatchStatus";

/** Narrows anything thrown by invoke() to an AppError. */
export function toAppError(err: unknown): AppError {
  if (typeof err === "object" && err !== null && "code" in err && "message" in err) {
    return err as AppError;
  }
  return { code: "internal", message: err instanceof Error ? err.message : String(err) };
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (err) {
    throw toAppError(err);
  }
}

export const api = {
  appInfo: () => call<AppInfo>("app_info"),
  connectionStatus: () => call<ConnectionStatus>("connection_status"),
  /** `tls` goes with a rediss:// URL: CA file, client certificate and key, insecure. */
  connectionTest: (url: string, tls: TlsOptions | null) =>
    call<ConnectionTest>("connection_test", { url, tls }),
  connectionSwitch: (url: string | null, tls: TlsOptions | null) =>
    call<ConnectionStatus>("connection_switch", { url, tls }),
  /** The cluster's nodes (none on a single Redis): on demand, never polled. */
  connectionTopology: () => call<Topology>("connection_topology"),
  /** A TLS file's path from the open dialog (`field`: tls_ca, tls_cert or tls_key). */
  connectionPickFile: (field: string) => call<string>("connection_pick_file", { field }),
  rulesList: () => call<Rule[]>("rules_list"),
  ruleValidate: (draft: RuleDraft) => call<Rule>("rule_validate", { draft }),
  ruleSave: (original: string | null, draft: RuleDraft) =>
    call<Rule[]>("rule_save", { original, draft }),
  ruleDelete: (name: string) => call<Rule[]>("rule_delete", { name }),
  /** `draft`: the policy in its policies-file JSON form; refusals name the path (`limits[1].capacity`). */
  policyValidate: (draft: unknown) => call<Policy>("policy_validate", { draft }),
  /** The open policies file looked at again: an outside change taken, an invalid one reported. */
  policiesFile: () => call<PolicyFileStatus>("policies_file"),
  /** A policies file from the open dialog, edited in place from now on (code `cancelled` when closed). */
  policiesFileOpen: () => call<PolicyFileStatus>("policies_file_open"),
  /** A new policies file where the save dialog confirmed, written by its first save. */
  policiesFileNew: () => call<PolicyFileStatus>("policies_file_new"),
  /** Saves a policy in the open file; refused with code `file_changed` when the file moved past `base`, unless `overwrite`. */
  policyFileSave: (original: string | null, draft: unknown, base: FileVersion, overwrite = false) =>
    call<PolicyFileStatus>("policy_file_save", { original, draft, base, overwrite }),
  policyFileDelete: (name: string, base: FileVersion, overwrite = false) =>
    call<PolicyFileStatus>("policy_file_delete", { name, base, overwrite }),
  /** A rule put into the open policies file as a policy of one limit (its mode and key kept when it is there). */
  ruleToPoliciesFile: (name: string) => call<PolicyFileStatus>("rule_to_policies_file", { name }),
  stats: (rules: string[]) => call<RuleStats[]>("stats", { rules }),
  simStart: (request: SimRequest) => call<SimStatus>("sim_start", { request }),
  simCancel: () => call<SimStatus>("sim_cancel"),
  simStatus: () => call<SimStatus>("sim_status"),
  /** Exports a kept run's CSV; `id` omitted: the last run. */
  exportCsv: (id?: string) => call<Exported>("export_csv", { id: id ?? null }),
  /** Exports a kept run's chart: `view` as on screen, else its default view; `id` omitted: the last run. */
  exportChart: (format: ChartFormat, id?: string, view?: ChartView) =>
    call<Exported>("export_chart", { format, id: id ?? null, view: view ?? null }),
  runsList: () => call<RunHistory>("runs_list"),
  runRename: (id: string, name: string) => call<RunInfo>("run_rename", { id, name }),
  runDelete: (id: string) => call<RunHistory>("run_delete", { id }),
  runRecords: (id: string) => call<RunRecords>("run_records", { id }),
  historyConfigure: (settings: HistorySettings) =>
    call<RunHistory>("history_configure", { settings }),
  /** Clears a rule's limiter state: one client key's, or (key omitted) every key's. */
  limiterReset: (rule: string, key?: string) =>
    call<ResetResult>("limiter_reset", { rule, key: key ?? null }),
  /** A kept run's client key read live (cost 0: nothing is spent). */
  limiterPeek: (run: string, target: number, key: string) =>
    call<KeyPeek>("limiter_peek", { run, target, key }),
  decisionHeaders: (rule: Rule, decision: Decision) =>
    call<HttpAnswer>("decision_headers", { rule, decision }),
  workloadPreview: (request: SimRequest) => call<WorkloadPreview>("workload_preview", { request }),
  metricsStatus: () => call<MetricsStatus>("metrics_status"),
  metricsConfigure: (settings: MetricsSettings) =>
    call<MetricsStatus>("metrics_configure", { settings }),
  /** The log to replay, from the open dialog (code `cancelled` when closed). */
  replayOpen: () => call<string>("replay_open"),
  replaySample: () => call<string>("replay_sample"),
  /** The first lines of a log and the key each yields. */
  replayPreview: (path: string, parse: ParseSpec) => call<Preview>("replay_preview", { path, parse }),
  replayStart: (request: ReplayRequest) => call<ReplayStatus>("replay_start", { request }),
  replayCancel: () => call<ReplayStatus>("replay_cancel"),
  replayStatus: () => call<ReplayStatus>("replay_status"),
  /** A kept replay, to show again (after a restart too). */
  replayReopen: (id: string) => call<ReplayStatus>("replay_reopen", { id }),
  replayRename: (id: string, name: string) => call<ReplayRunInfo>("replay_rename", { id, name }),
  /** A kept replay's decisions, one CSV row each; `id` omitted: the newest replay. */
  replayExportCsv: (id?: string) => call<Exported>("replay_export_csv", { id: id ?? null }),
  /** A kept replay's chart, or (heatmap) its sweep's heatmaps; `id` omitted: the newest. */
  replayExportChart: (format: ChartFormat, heatmap: boolean, id?: string) =>
    call<Exported>("replay_export_chart", { format, heatmap, id: id ?? null }),
  /** Watch: a policies file from the open dialog, followed live from now on (code `cancelled` when closed). */
  watchChoose: () => call<WatchStatus>("watch_choose"),
  /** The watched file looked at again (reloaded if it changed), and its policies' last 30 s. */
  watchRead: () => call<WatchStatus>("watch_read"),
  watchClose: () => call<WatchStatus>("watch_close"),
};

/** The events the backend emits (see src-tauri/src/events.rs). */
export const events = {
  onRefetchStats: (handler: () => void): Promise<UnlistenFn> =>
    listen("refetch-stats", () => handler()),
  onSimProgress: (handler: (p: SimProgress) => void): Promise<UnlistenFn> =>
    listen<SimProgress>("sim-progress", (e) => handler(e.payload)),
  onSimFinished: (handler: (f: SimFinished) => void): Promise<UnlistenFn> =>
    listen<SimFinished>("sim-finished", (e) => handler(e.payload)),
  onReplayProgress: (handler: (p: ReplayProgress) => void): Promise<UnlistenFn> =>
    listen<ReplayProgress>("replay-progress", (e) => handler(e.payload)),
  onReplayFinished: (handler: (s: ReplayStatus) => void): Promise<UnlistenFn> =>
    listen<ReplayStatus>("replay-finished", (e) => handler(e.payload)),
};
