/** Kept runs: their status in words, and which run is selected as the history changes. */

/** A run's status as the backend says it ("finished", "cancelled", "failed"). */
export function runStatusText(summary: { status?: string; cancelled?: boolean } | undefined | null): string {
  const status = summary?.status ?? (summary?.cancelled ? "cancelled" : "finished");
  switch (status) {
    case "cancelled":
      return "Cancelled";
    case "failed":
      return "Failed";
    case "running":
      return "Running";
    default:
      return "Done";
  }
}

/**
 * The run to show after the history changed: the one just finished when there is one, else
 * the selection if it is still kept, else the newest.
 */
export function nextSelection(ids: string[], selected: string | null, finished?: string): string | null {
  if (finished && ids.includes(finished)) return finished;
  if (selected && ids.includes(selected)) return selected;
  return ids[0] ?? null;
}

/** "3.2 MB": the history's size. */
export function fmtBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
