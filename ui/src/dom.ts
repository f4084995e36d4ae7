/** Small DOM helpers: find by id, build an element. */

export const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el as T;
};

type Props = { className?: string; text?: string; title?: string; data?: Record<string, string> } & Record<string, unknown>;

/** `h("td", {className: "num", text: "4"})`: an element with its class, text, data and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  const { className, text, title, data, ...rest } = props;
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  if (title !== undefined) el.title = title;
  if (data) for (const [k, v] of Object.entries(data)) el.dataset[k] = v;
  Object.assign(el, rest);
  el.append(...children);
  return el;
}

/** A value for an attribute selector's quotes (CSS.escape is missing in jsdom). */
const quoteAttr = (v: string) => v.replace(/["\\]/g, "\\$&");

/** Clears every `[data-<attr>]` slot under `root`, then writes each message in its own slot. */
export function showFieldErrors(root: ParentNode, attr: string, errors: { field: string; message: string }[]) {
  for (const el of root.querySelectorAll<HTMLElement>(`[data-${attr}]`)) el.textContent = "";
  for (const el of root.querySelectorAll<HTMLElement>(".invalid")) el.classList.remove("invalid");
  for (const e of errors) {
    const slot =
      root.querySelector<HTMLElement>(`[data-${attr}="${quoteAttr(e.field)}"]`) ?? root.querySelector<HTMLElement>(`[data-${attr}="_form"]`);
    if (slot) slot.textContent = slot.textContent ? `${slot.textContent} ${e.message}` : e.message;
    root.querySelector<HTMLElement>(`[data-field="${quoteAttr(e.field)}"]`)?.classList.add("invalid");
  }
}
