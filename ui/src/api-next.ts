/**
 * TEMPORARY: the commands app-core has planned (/work/notes/app-api.md) and not yet committed,
 * so the panels can be written against them. Replaced by ./api.ts's wrappers and the generated
 * bindings at the merge.
 */
import { invoke } from "@tauri-apps/api/core";
import type { AppError } from "./bindings/AppError";
import type { Exported } from "./bindings/Exported";
import type { Rule } from "./bindings/Rule";
import type { RunSummary } from "./bindings/RunSummary";
import type { SimRequest } from "./bindings/SimRequest";
import { toAppError } from "./api";
import type { Records } from "./logic/records";

export type RunStatus = "running" | "finished" | "cancelled" | "failed";
export interface RunInfo {
  id: string;
  name: string;
  created_ms: number;
  status: RunStatus;
  workload: string;
  request: SimRequest;
  rules: Rule[];
  naive: boolean;
  summary?: RunSummary & { id?: string; status?: RunStatus; redis_cost?: RedisCost };
  error?: AppError;
  bytes: number;
  records: number;
}
export interface RedisCost {
  calls: number;
  usec: number;
  usec_per_call: number;
}
export interface RunHistory {
  runs: RunInfo[];
  warnings: string[];
  max_runs: number;
  max_bytes: number;
  bytes: number;
}
export interface RunRecords extends Records {
  id: string;
}
export interface ResetResult {
  rule: string;
  key?: string;
  deleted: number;
}
export interface Decision {
  allowed: boolean;
  remaining: number;
  retry_after_ms: number;
  reset_after_ms: number;
  fail_open: boolean;
}
export interface DecisionHttp {
  status: number;
  headers: [string, string][];
}
export interface WorkloadPreview {
  bin_ms: number;
  offered: number[];
  planned?: number;
  duration_ms: number;
  description: string;
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (err) {
    throw toAppError(err);
  }
}

export const apiNext = {
  limiterReset: (rule: string, key?: string) => call<ResetResult>("limiter_reset", { rule, key }),
  runsList: () => call<RunHistory>("runs_list"),
  runRename: (id: string, name: string) => call<RunInfo>("run_rename", { id, name }),
  runDelete: (id: string) => call<RunHistory>("run_delete", { id }),
  runRecords: (id: string) => call<RunRecords>("run_records", { id }),
  exportCsv: (id?: string) => call<Exported>("export_csv", { id }),
  exportChart: (format: "png" | "svg", id?: string) => call<Exported>("export_chart", { format, id }),
  decisionHeaders: (rule: Rule, decision: Decision) => call<DecisionHttp>("decision_headers", { rule, decision }),
  workloadPreview: (request: SimRequest) => call<WorkloadPreview>("workload_preview", { request }),
};
