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
}

export type Parsed = { ok: true; value: number | undefined } | { ok: false; field: string; message: string };

export const U32_MAX = 4_294_967_295;

/** The text, quoted and cut short: a message never grows with what was pasted. */
export function quoted(text: string): string {
  const t = text.length > 24 ? `${text.slice(0, 21)}…` : text;
  return `“${t}”`;
}

export function parseField(text: string, spec: NumberSpec): Parsed {
  const t = text.trim();
  const fail = (message: string): Parsed => ({ ok: false, field: spec.field, message: `${spec.label} ${message}` });
  if (t === "") return spec.optional ? { ok: true, value: undefined } : fail("is required");
  // Number("") and Number(" ") are 0, Number("0x10") is 16: accept decimal notation only.
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) {
    return fail(`must be ${spec.whole ? "a whole number" : "a number"}, got ${quoted(t)}`);
  }
  const value = Number(t);
  // Where the engine's range is known, every value outside it gets that range, in its words.
  const range = () => fail(`must be ${spec.whole ? "a whole number" : "a number"} from ${fmtBound(spec.min)} to ${fmtBound(spec.max ?? 0)}, got ${quoted(t)}`);
  if (spec.engineRange && spec.max !== undefined && (!Number.isFinite(value) || value < spec.min || value > spec.max)) return range();
  if (!Number.isFinite(value)) return fail(`is too large, got ${quoted(t)}`);
  if (spec.whole) {
    if (!Number.isInteger(value)) return fail(`must be a whole number, got ${quoted(t)}`);
    if (!Number.isSafeInteger(value)) {
      return fail(`must be at most ${Number.MAX_SAFE_INTEGER.toLocaleString("en-US")}, got ${quoted(t)}`);
    }
  }
  if (value < spec.min) return fail(`must be ${spec.min} or more, got ${quoted(t)}`);
  if (spec.max !== undefined && value > spec.max) {
    return fail(`must be at most ${spec.max.toLocaleString("en-US")}, got ${quoted(t)}`);
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
