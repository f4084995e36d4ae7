//! A calendar quota's word fields, shared by the policy editor and the rule form: the period as
//! words ("per day"), the time zone (a list of IANA zones with a search box above it: typing
//! "berlin" picks Europe/Berlin) and, for a weekly quota only, the week's first day.
import { h } from "../dom";
import { DEFAULT_PERIOD, DEFAULT_ZONE, PERIODS, searchZones, WEEK_STARTS, webviewZones } from "../logic/calendar";

export interface CalendarFieldsOptions {
  /** The text of a field (`period`, `time_zone`, `week_start`). */
  get(param: string): string | undefined;
  set(param: string, value: string): void;
  /** After a change; `layout` when the fields shown change (the period became or left week). */
  changed(layout: boolean): void;
  /** A field's `data-field` (the path its errors are named by: `limits[0].period`). */
  field(param: string): string;
  /** A field's element id, where the form has ids. */
  id?(param: string): string;
  /** The slot under a field where its error goes. */
  slot(param: string): HTMLElement;
}

let zones: string[] | null = null;
/** The webview's zones, looked up once. */
function allZones(): string[] {
  zones ??= webviewZones();
  return zones;
}

function zoneOptions(select: HTMLSelectElement, list: string[], current: string) {
  // A zone the webview does not list (an alias from the file) is still shown, as written.
  const shown = list.includes(current) || current === "" ? list : [current, ...list];
  select.replaceChildren(...shown.map((z) => new Option(z, z)));
}

/** The fields, one grid cell each. */
export function calendarFields(o: CalendarFieldsOptions): HTMLDivElement[] {
  const cell = (param: string, label: string, ...inputs: HTMLElement[]) => {
    const id = o.id?.(param);
    if (id) inputs[inputs.length - 1].id = id;
    return h("div", { className: `param calendar-${param.replace(/_/g, "-")}` }, h("label", { text: label, ...(id ? { htmlFor: id } : {}) }), ...inputs, o.slot(param));
  };
  const period = h("select", { data: { field: o.field("period") }, ariaLabel: `${o.field("period")}` }, ...PERIODS.map((p) => new Option(p.label, p.value)));
  period.value = o.get("period") || DEFAULT_PERIOD;
  if (!o.get("period")) o.set("period", period.value);
  period.addEventListener("change", () => {
    const layout = (period.value === "week") !== (o.get("period") === "week");
    o.set("period", period.value);
    o.changed(layout);
  });

  const zone = h("select", { className: "zone-select", data: { field: o.field("time_zone") }, ariaLabel: `${o.field("time_zone")}` });
  const current = o.get("time_zone") || DEFAULT_ZONE;
  zoneOptions(zone, allZones(), current);
  zone.value = current;
  zone.title = "The calendar's zone: a day runs from its local midnight (23 or 25 hours across a daylight-saving change)";
  zone.addEventListener("change", () => {
    o.set("time_zone", zone.value);
    o.changed(false);
  });
  const search = h("input", { className: "zone-search", placeholder: "search: berlin, new york", data: { zoneSearch: o.field("time_zone") }, ariaLabel: "Search time zones" });
  search.type = "search";
  search.spellcheck = false;
  search.addEventListener("input", () => {
    const found = searchZones(allZones(), search.value);
    const keep = zone.value;
    zoneOptions(zone, found.length ? found : allZones(), found.length && !found.includes(keep) ? "" : keep);
    // The first match is taken, so typing a city is enough; no match keeps the zone as it was.
    const next = found.length && !found.includes(keep) ? found[0] : keep;
    zone.value = next;
    if (next !== o.get("time_zone")) {
      o.set("time_zone", next);
      o.changed(false);
    }
  });

  const fields = [cell("period", "Period", period), cell("time_zone", "Time zone", search, zone)];
  if (period.value === "week") {
    const start = h("select", { data: { field: o.field("week_start") }, ariaLabel: `${o.field("week_start")}` }, ...WEEK_STARTS.map((w) => new Option(w.label, w.value)));
    start.value = o.get("week_start") || "monday";
    start.addEventListener("change", () => {
      o.set("week_start", start.value);
      o.changed(false);
    });
    fields.push(cell("week_start", "Week starts", start));
  }
  return fields;
}
