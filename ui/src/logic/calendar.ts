/**
 * A calendar quota's words (its period as "per day", the week's first day), the time zones its
 * picker offers, and when a policy may delay instead of deny (`max_delay_ms`: token-bucket and
 * GCRA limits only, as the engine's Policy::check_delay says).
 */
import type { Period } from "../bindings/Period";
import type { WeekStart } from "../bindings/WeekStart";
import { algorithmLabel } from "./algorithms";

/** The periods in the order the select offers them, as a person says them. */
export const PERIODS: readonly { value: Period; label: string }[] = [
  { value: "hour", label: "per hour" },
  { value: "day", label: "per day" },
  { value: "week", label: "per week" },
  { value: "month", label: "per month" },
];

export const WEEK_STARTS: readonly { value: WeekStart; label: string }[] = [
  { value: "monday", label: "Monday" },
  { value: "sunday", label: "Sunday" },
];

/** A new calendar quota's period: "2,000 a day" is what teams sell. */
export const DEFAULT_PERIOD: Period = "day";
/** The engine's zone when none is given. */
export const DEFAULT_ZONE = "UTC";

/** "per day" for `day`; a word the list does not know is shown as typed. */
export function periodWords(period: string): string {
  return PERIODS.find((p) => p.value === period)?.label ?? `per ${period}`;
}

/**
 * Zones IANA renamed that the webview's ICU still lists by their old names (CLDR keeps them):
 * someone in Kolkata searches "kolkata", not "calcutta". Both names are the same zone in the
 * tzdb the engine uses (the old one a backward link), so the picker offers the current one.
 */
const RENAMED: Record<string, string> = {
  "Africa/Asmera": "Africa/Asmara",
  "America/Buenos_Aires": "America/Argentina/Buenos_Aires",
  "America/Catamarca": "America/Argentina/Catamarca",
  "America/Coral_Harbour": "America/Atikokan",
  "America/Cordoba": "America/Argentina/Cordoba",
  "America/Godthab": "America/Nuuk",
  "America/Indianapolis": "America/Indiana/Indianapolis",
  "America/Jujuy": "America/Argentina/Jujuy",
  "America/Louisville": "America/Kentucky/Louisville",
  "America/Mendoza": "America/Argentina/Mendoza",
  "Asia/Calcutta": "Asia/Kolkata",
  "Asia/Katmandu": "Asia/Kathmandu",
  "Asia/Rangoon": "Asia/Yangon",
  "Asia/Saigon": "Asia/Ho_Chi_Minh",
  "Atlantic/Faeroe": "Atlantic/Faroe",
  "Europe/Kiev": "Europe/Kyiv",
  "Pacific/Enderbury": "Pacific/Kanton",
  "Pacific/Ponape": "Pacific/Pohnpei",
  "Pacific/Truk": "Pacific/Chuuk",
};

/** A zone by its current IANA name. */
export function currentZoneName(zone: string): string {
  return RENAMED[zone] ?? zone;
}

/**
 * The zones the picker offers: UTC (the engine's default) first, then the user's own zone, then
 * every other IANA zone the webview knows, by current name, in order. `supported` is
 * `Intl.supportedValuesOf("timeZone")` where the webview has it (it leaves UTC out).
 */
export function zoneChoices(supported: readonly string[], local: string | undefined): string[] {
  const first = [DEFAULT_ZONE, ...(local ? [currentZoneName(local)] : [])];
  const rest = [...new Set(supported.map(currentZoneName))].filter((z) => !first.includes(z)).sort();
  return [...new Set(first), ...rest];
}

/** The webview's zones (none where `Intl.supportedValuesOf` is missing) and its own zone. */
export function webviewZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  let supported: string[] = [];
  try {
    supported = intl.supportedValuesOf?.("timeZone") ?? [];
  } catch {
    supported = [];
  }
  let local: string | undefined;
  try {
    local = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch {
    local = undefined;
  }
  return zoneChoices(supported, local);
}

/**
 * The zones of a search: every zone holding each word typed (`new york`, `berlin`, `kolkata`),
 * spaces matching the underscores of IANA names, case aside, in the list's order.
 */
export function searchZones(zones: readonly string[], text: string): string[] {
  const words = text.trim().toLowerCase().replace(/_/g, " ").split(/\s+/).filter((w) => w !== "");
  if (words.length === 0) return [...zones];
  return zones.filter((z) => {
    const name = z.toLowerCase().replace(/_/g, " ");
    return words.every((w) => name.includes(w));
  });
}

/** The kinds that delay instead of deny (the engine's Policy::check_delay). */
const DELAYING = ["token_bucket", "gcra"];

/**
 * Whether the policy's max delay field can be used, given every limit of the policy and of its
 * tiers, and why not: the first limit of another kind, named.
 */
export function delayAllowed(limits: readonly { name: string; algorithm: string }[]): { ok: true } | { ok: false; why: string } {
  const other = limits.find((l) => !DELAYING.includes(l.algorithm));
  if (!other) return { ok: true };
  const name = other.name.trim() || "a limit";
  return { ok: false, why: `Delay works with token bucket and GCRA limits only: “${name}” is ${article(algorithmLabel(other.algorithm))}.` };
}

function article(label: string): string {
  return `${/^[aeiou]/i.test(label) ? "an" : "a"} ${label.toLowerCase().replace("gcra", "GCRA")}`;
}
