/**
 * The Policies view's file as plain values: what the file bar says, what a look at the file
 * tells the user (a change made outside the app taken, or refused with the engine's error),
 * and whether the editor's form follows a reload (only while the user has not edited it).
 */
import type { PolicyFileStatus } from "../bindings/PolicyFileStatus";

/** The file's own name (`policies.toml`) from its path. */
export function fileName(path: string): string {
  return path.split(/[\\/]/).filter(Boolean).pop() ?? path;
}

/** The file bar's line: which file is the truth, or how to get one. */
export function fileLine(status: PolicyFileStatus): string {
  if (!status.file) return "No policies file open: open one, or make a new one (saving a policy asks where to write it).";
  if (!status.exists) return `${status.file} (new: written by its first save)`;
  return status.file;
}

/** What a look at the file tells the user, or null when there is nothing new to say. */
export function lookNote(prev: PolicyFileStatus | null, next: PolicyFileStatus): { text: string; error: boolean } | null {
  if (!next.file) return null;
  const name = fileName(next.file);
  if (next.error) {
    if (prev?.error?.message === next.error.message) return null;
    return { text: `${next.error.message}. The policies shown are the last good ones; nothing was written.`, error: true };
  }
  if (next.reloaded) return { text: `${name} changed on disk: reloaded.`, error: false };
  return null;
}

/** Whether a status differs from the one shown (so the list and the other views redraw). */
export function statusChanged(prev: PolicyFileStatus | null, next: PolicyFileStatus): boolean {
  return prev?.file !== next.file || prev?.version !== next.version || prev?.exists !== next.exists || prev?.error?.message !== next.error?.message;
}
