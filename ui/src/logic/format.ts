/** Numbers, durations and shares as the dashboard writes them (en-US grouping everywhere). */

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function fmtRate(n: number): string {
  return Number.isInteger(n) ? fmtInt(n) : n.toFixed(n < 1 ? 3 : 2).replace(/\.?0+$/, "");
}

export function fmtDuration(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** A time offset inside a run: "850 ms", "2.35 s", "1 min 5 s". */
export function fmtOffset(ms: number): string {
  if (Math.abs(ms) < 1000) return `${Math.round(ms)} ms`;
  if (Math.abs(ms) < 60_000) return `${(ms / 1000).toFixed(2).replace(/\.?0+$/, "")} s`;
  const min = Math.floor(ms / 60_000);
  return `${min} min ${Math.round((ms - min * 60_000) / 1000)} s`;
}

export function fmtRtt(ms: number | undefined): string {
  if (ms === undefined) return "—";
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
}

export function fmtMicros(us: number): string {
  if (us < 1000) return `${Math.round(us * 10) / 10} µs`;
  return `${(us / 1000).toFixed(1)} ms`;
}

export function fmtPercent(part: number, whole: number): string {
  if (whole === 0) return "—";
  return `${((100 * part) / whole).toFixed(1)} %`;
}

/** A chart axis label: whole numbers grouped ("4,000"), fractions kept short. */
export function fmtAxis(n: number): string {
  if (Number.isInteger(n)) return fmtInt(n);
  return n.toLocaleString("en-US", { maximumFractionDigits: 2 });
}

/** When a run started, in the user's local time: "14:03:27". */
export function fmtClock(unixMs: number): string {
  const d = new Date(unixMs);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
