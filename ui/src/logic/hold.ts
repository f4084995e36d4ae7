/**
 * The workload's hold (how long an admitted request is in flight), as typed in the form, to
 * the engine's `--hold-ms` text: `80`, `uniform:20..200`, `lognormal:median=80,p99=900`, in
 * milliseconds. Each time may be written in human units as the rest of the app takes them
 * (`80ms`, `1s`, `1.5s`); empty is no hold. Ranges (a low end above the high, the longest
 * hold) are the engine's to refuse: it names the field too.
 */
import { parseField, quoted, type NumberSpec } from "./numbers";

export const HOLD_FIELD = "hold_ms";

const FORMS = "80ms, uniform:20ms..200ms or lognormal:median=400ms,p99=1.5s";

const TIME: NumberSpec = { field: HOLD_FIELD, label: "hold", whole: true, min: 0, duration: true };

export type ParsedHold = { ok: true; value: string | undefined } | { ok: false; field: string; message: string };

/** The hold as the engine takes it, or what is wrong with it (in the `hold_ms` slot). */
export function parseHold(text: string): ParsedHold {
  const typed = text.trim();
  if (typed === "") return { ok: true, value: undefined };
  const fail = (message: string): ParsedHold => ({ ok: false, field: HOLD_FIELD, message });
  const shape = () => fail(`hold must be ${FORMS}, got ${quoted(typed)}`);
  const ms = (part: string): number | string => {
    const p = parseField(part, TIME);
    if (!p.ok) return p.message;
    return p.value ?? 0;
  };
  const lower = typed.toLowerCase();
  if (lower.startsWith("uniform:")) {
    const ends = typed.slice("uniform:".length).split("..");
    if (ends.length !== 2) return shape();
    const [low, high] = ends.map(ms);
    if (typeof low === "string") return fail(low);
    if (typeof high === "string") return fail(high);
    return { ok: true, value: `uniform:${low}..${high}` };
  }
  if (lower.startsWith("lognormal:")) {
    const got: Record<string, number> = {};
    for (const part of typed.slice("lognormal:".length).split(",")) {
      const [name, value, ...rest] = part.split("=");
      const key = name?.trim().toLowerCase();
      if (rest.length || value === undefined || (key !== "median" && key !== "p99")) return shape();
      const v = ms(value);
      if (typeof v === "string") return fail(v);
      got[key] = v;
    }
    if (got.median === undefined || got.p99 === undefined) return shape();
    return { ok: true, value: `lognormal:median=${got.median},p99=${got.p99}` };
  }
  // Words that are no time at all: say every form it could take, not only a time's.
  if (/[:=]|\.\./.test(typed) || !/^[\d.+-]/.test(typed)) return shape();
  const v = ms(typed);
  return typeof v === "string" ? fail(v) : { ok: true, value: String(v) };
}
