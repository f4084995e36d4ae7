/**
 * One client key's limiter state as a series for the run chart (and the per-key view): what
 * was left after each of its decisions, on the run's time axis, under the rule's ceiling. And
 * the keys worth offering for it: each rule's top offenders.
 */
import { perKey } from "./perkey";
import { OUTCOME, recordIndices, stateCeiling, type Records, type RuleParams } from "./records";

/** A key the user put on the run chart: by name, so it carries over to another run. */
export interface KeyChoice {
  target: number;
  name: string;
}

export interface KeyStateLine {
  choice: KeyChoice;
  /** What the values are: "tokens left" for a bucket, "remaining" for the others. */
  label: string;
  /** "client-3 on fixed-window". */
  title: string;
  /** Seconds from the run's start: 0, each decision, the chart's end. */
  x: number[];
  /** After each decision; null at the two ends (unknown) and where it failed open. */
  values: (number | null)[];
  /** The most the limiter can hold (capacity, burst or limit): the line's ceiling. */
  ceiling?: number;
  /** How many of the key's decisions are drawn. */
  decisions: number;
}

/** The state's name for a rule: a bucket holds tokens, the others count what remains. */
export function stateLabel(rule: RuleParams): string {
  return rule.capacity !== undefined ? "tokens left" : "remaining";
}

/**
 * `choice`'s state over `rec`, drawn from 0 to `endS` seconds so that it lines up with the
 * run chart's x axis; undefined when the run has no such rule or the key never sent to it.
 */
export function keyStateLine(rec: Records, choice: KeyChoice, endS: number): KeyStateLine | undefined {
  const target = rec.targets[choice.target];
  const key = rec.keys.indexOf(choice.name);
  if (!target || target.naive || key < 0) return undefined;
  const idx = recordIndices(rec, choice.target, key);
  if (idx.length === 0) return undefined;
  const x = [0, ...idx.map((i) => rec.t_ms[i] / 1000)];
  const values: (number | null)[] = [null, ...idx.map((i) => (rec.outcome[i] === OUTCOME.failOpen ? null : rec.remaining[i]))];
  const last = x[x.length - 1];
  x.push(Math.max(endS, last));
  values.push(null);
  return {
    choice,
    label: stateLabel(target.rule),
    title: `${choice.name} on ${target.rule.name}`,
    x,
    values,
    ceiling: stateCeiling(target.rule),
    decisions: idx.length,
  };
}

export interface KeyOption extends KeyChoice {
  denied: number;
  requests: number;
}

/**
 * The keys to offer: each real rule's `perRule` most denied keys (most denied first; a run
 * without denials offers its busiest), and `keep` (the current choice) even when it is not
 * among them.
 */
export function keyOptions(rec: Records, perRule = 5, keep?: KeyChoice | null): KeyOption[] {
  const out: KeyOption[] = [];
  rec.targets.forEach((t, target) => {
    if (t.naive) return;
    const rows = perKey(rec, target).sort((a, b) => b.denied - a.denied || b.requests - a.requests || a.name.localeCompare(b.name, "en", { numeric: true }));
    for (const r of rows.slice(0, perRule)) out.push({ target, name: r.name, denied: r.denied, requests: r.requests });
    if (keep && keep.target === target && !out.some((o) => o.target === target && o.name === keep.name)) {
      const row = rows.find((r) => r.name === keep.name);
      if (row) out.push({ target, name: row.name, denied: row.denied, requests: row.requests });
    }
  });
  return out;
}
