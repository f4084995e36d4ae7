//! A book's editor (rules, policies) checks its form the same way: the client's own problems
//! first (the name, text that is no number), then, when there are none, the engine's verdict
//! on the draft, which names the field it refuses.
import { toAppError } from "../api";
import type { FieldError } from "../logic/workload";

export interface DraftCheck<D> {
  /** What is wrong with the name (empty, taken), or null. */
  nameProblem: string | null;
  /** Say the name's problem (once it was typed in, or is not empty). */
  showName: boolean;
  parsed: { ok: true; draft: D } | { ok: false; errors: FieldError[] };
  /** The engine's validation of a draft; rejects with an AppError naming the field. */
  engine: (draft: D) => Promise<unknown>;
}

/** Every problem of the form, each under its field ("_form" when the engine names none). */
export async function checkDraft<D>(c: DraftCheck<D>): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (c.nameProblem && c.showName) errors.push({ field: "name", message: c.nameProblem });
  if (!c.parsed.ok) errors.push(...c.parsed.errors);
  if (errors.length === 0 && c.parsed.ok && !c.nameProblem) {
    try {
      await c.engine(c.parsed.draft);
    } catch (err) {
      const e = toAppError(err);
      errors.push({ field: e.field ?? "_form", message: e.message });
    }
  }
  return errors;
}
