/**
 * Form text to numbers, refusing what the engine could not even receive.
 *
 * The engine validates ranges and names the field (one set of rules, in Rust). What it cannot
 * do is say what was typed when the text never became a number: `abc` would reach it as a
 * sentinel, `9007199254740993` rounded to …992, `-5` fail to decode as an unsigned integer.
 * Those are caught here, with the text echoed exactly as typed, in the field's own slot.
 */

export interface NumberSpec {
  /** The payload's field name, which is also the error slot's name. */
  field: string;
  /** How the message names it. */
  label: string;
  /** Whole numbers only (the engine's integer parameters). */
  whole: boolean;
  /** The smallest value the payload's type can carry (0 for unsigned, 1 where 0 is meaningless). */
  min: number;
  /** The largest value the payload's type can carry (u32 fields). */
  max?: number;
  /** Empty text is allowed (the field is then left out). */
  optional?: boolean;
  /** `min` and `max` are the engine's own range (a generated binding): every value outside it
   * is named with that range, as the engine would. */
  engineRange?: boolean;
  /** A length of time in milliseconds: `500ms`, `1s`, `1.5s`, `1m`, `24h`, `1d` are taken too. */
  duration?: boolean;
}

/** Milliseconds per unit of a duration as typed (`m` and `min` are minutes). */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Human text to plain decimal text: `2,000` and `2 000` (also with a no-break or thin space)
 * are 2000; a duration's `1.5s` is 1500, `1d` 86400000. Anything else is returned as typed, for
 * the checks that follow to refuse with the text echoed.
 */
export function plainNumber(text: string, duration = false): string {
  let t = text.trim();
  // Thousands separators only where they group whole thousands: "1,5" stays an error.
  if (/^[+-]?\d{1,3}([,\u0020\u00a0\u202f]\d{3})+(\.\d+)?([a-z]*)$/i.test(t)) t = t.replace(/[,\u0020\u00a0\u202f]/g, "");
  if (!duration) return t;
  const m = /^(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|min|h|d)$/i.exec(t);
  if (!m) return t;
  // 1.1 × 1000 is 1100.0000000000002 in doubles: rounded to a thousandth of a ms, so that
  // what is whole is whole and 0.5ms is still refused as no whole number.
  return String(Math.round(Number(m[1]) * UNIT_MS[m[2].toLowerCase()] * 1000) / 1000);
}

/** Milliseconds as a person writes them in a field: `1d`, `24h` stays `1d`, `90s`, `1500ms`. */
export function humanMs(ms: number): string {
  if (!Number.isInteger(ms) || ms <= 0) return String(ms);
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

export type Parsed = { ok: true; value: number | undefined } | { ok: false; field: string; message: string };

export const U32_MAX = 4_294_967_295;

/** The text, quoted and cut short: a message never grows with what was pasted. */
export function quoted(text: string): string {
  const t = text.length > 24 ? `${text.slice(0, 21)}…` : text;
  return `“${t}”`;
}

export function parseField(text: string, spec: NumberSpec): Parsed {
  const typed = text.trim();
  const t = plainNumber(typed, spec.duration);
  const fail = (message: string): Parsed => ({ ok: false, field: spec.field, message: `${spec.label} ${message}` });
  if (t === "") return spec.optional ? { ok: true, value: undefined } : fail("is required");
  // Number("") and Number(" ") are 0, Number("0x10") is 16: accept decimal notation only.
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) {
    const what = spec.duration ? "a length of time (500ms, 1s, 1m, 24h, 1d)" : spec.whole ? "a whole number" : "a number";
    return fail(`must be ${what}, got ${quoted(typed)}`);
  }
  const value = Number(t);
  // Where the engine's range is known, every value outside it gets that range, in its words.
  const range = () => fail(`must be ${spec.whole ? "a whole number" : "a number"} from ${fmtBound(spec.min)} to ${fmtBound(spec.max ?? 0)}, got ${quoted(typed)}`);
  if (spec.engineRange && spec.max !== undefined && (!Number.isFinite(value) || value < spec.min || value > spec.max)) return range();
  if (!Number.isFinite(value)) return fail(`is too large, got ${quoted(typed)}`);
  if (spec.whole) {
    if (!Number.isInteger(value)) return fail(`must be a whole number, got ${quoted(typed)}`);
    if (!Number.isSafeInteger(value)) {
      return fail(`must be at most ${Number.MAX_SAFE_INTEGER.toLocaleString("en-US")}, got ${quoted(typed)}`);
    }
  }
  if (value < spec.min) return fail(`must be ${spec.min} or more, got ${quoted(typed)}`);
  if (spec.max !== undefined && value > spec.max) {
    return fail(`must be at most ${spec.max.toLocaleString("en-US")}, got ${quoted(typed)}`);
  }
  return { ok: true, value };
}

/** A bound as the engine's messages write it: 1,000,000,000; 0.001. */
function fmtBound(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString("en-US") : String(n);
}

/** Parses several fields; the first failure wins (the form shows one message per field anyway). */
export function parseFields<K extends string>(
  texts: Record<K, string>,
  specs: Record<K, NumberSpec>,
): { ok: true; values: Record<K, number | undefined> } | { ok: false; errors: { field: string; message: string }[] } {
  const values = {} as Record<K, number | undefined>;
  const errors: { field: string; message: string }[] = [];
  for (const key of Object.keys(specs) as K[]) {
    const p = parseField(texts[key] ?? "", specs[key]);
    if (p.ok) values[key] = p.value;
    else errors.push({ field: p.field, message: p.message });
  }
  return errors.length ? { ok: false, errors } : { ok: true, values };
}
