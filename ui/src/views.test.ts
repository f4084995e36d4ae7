import { beforeEach, describe, expect, it, vi } from "vitest";

// The run history the views read, and the selection they set (in the store the views loaded
// with): no backend here.
const selection = vi.hoisted(() => ({ select: (_id: string) => {} }));
vi.mock("./panels/history", () => ({
  history: {
    runs: [
      { id: "sim-1", targets: [{ rule: { name: "checkout" }, naive: false }] },
      { id: "cmp-1", targets: [{ rule: { name: "compare-token-bucket" }, naive: false }, { rule: { name: "compare-fixed-window" }, naive: false }] },
    ],
  },
  selectRun: (id: string) => selection.select(id),
}));

const VIEWS = ["compare", "simulate", "replay", "policies", "watch", "runs"];

/** The page's skeleton: the tabs, the views with their slots, the shared cards in Compare's. */
function page() {
  document.body.innerHTML = `
    <button id="conn-pill" aria-expanded="false"></button>
    <aside id="settings" class="hidden"><button id="settings-close"></button></aside>
    ${VIEWS.map((v) => `<button id="nav-${v}" data-view="${v}"></button>`).join("")}
    <section id="view-compare">
      <div data-slot="workload">
        <section id="sim-card">
          <div id="presets"><button data-preset="boundary"></button></div>
          <button id="sim-fold"></button>
          <select id="sim-target" data-wf="target">
            <option value="__compare">all</option><option value="checkout">checkout</option><option value="policy:api">api</option>
          </select>
          <input id="sim-limit" data-wf="limit" value="50" />
          <input id="sim-name" value="" />
        </section>
      </div>
      <div data-slot="run"><section id="run-card"></section></div>
      <div data-slot="inspector"><section id="inspector-card"></section></div>
      <div data-slot="perkey"><section id="perkey-card"></section></div>
    </section>
    <section id="view-simulate" class="hidden"><div data-slot="workload"></div><div data-slot="run"></div></section>
    <section id="view-replay" class="hidden"></section>
    <section id="view-policies" class="hidden"></section>
    <section id="view-watch" class="hidden"></section>
    <section id="view-runs" class="hidden"><div data-slot="run"></div></section>`;
}

/** Loads the views afresh (a new start of the app) and starts them; the store they share. */
async function start() {
  vi.resetModules();
  const store = await import("./store");
  selection.select = (id) => {
    store.state.selectedRun = id;
    store.emit("selection");
  };
  const views = await import("./views");
  views.initViews();
  state = store.state;
  return { ...views, emit: store.emit };
}
let state: typeof import("./store").state;

const $ = (id: string) => document.getElementById(id)!;
const value = (id: string) => ($(id) as HTMLInputElement).value;
const shown = () => VIEWS.filter((v) => !$(`view-${v}`).classList.contains("hidden"));

describe("the views", () => {
  beforeEach(() => {
    localStorage.clear();
    page();
  });

  it("open on Compare the first time, one view shown, its tab marked", async () => {
    await start();
    expect(shown()).toEqual(["compare"]);
    expect($("nav-compare").getAttribute("aria-current")).toBe("page");
    expect(document.body.dataset.view).toBe("compare");
    // Compare's own run: the newest comparison.
    expect(state.selectedRun).toBe("cmp-1");
  });

  it("show one view at a time from its tab, move the shared cards there, and remember it", async () => {
    await start();
    $("nav-simulate").click();
    expect(shown()).toEqual(["simulate"]);
    expect($("sim-card").closest("section[id^=view-]")!.id).toBe("view-simulate");
    expect($("run-card").closest("section[id^=view-]")!.id).toBe("view-simulate");
    expect($("nav-compare").hasAttribute("aria-current")).toBe(false);
    expect(localStorage.getItem("ratelockr.view")).toBe("simulate");
    $("nav-runs").click();
    expect($("run-card").closest("section[id^=view-]")!.id).toBe("view-runs");
    // A view without a workload slot leaves the workload where it was, unseen.
    expect($("sim-card").closest("section[id^=view-]")!.id).toBe("view-simulate");
    page();
    await start();
    expect(shown()).toEqual(["runs"]);
  });

  it("open on Compare when what was remembered is no view", async () => {
    localStorage.setItem("ratelockr.view", "dashboard");
    await start();
    expect(shown()).toEqual(["compare"]);
  });

  it("keep each view's workload and run while another is shown", async () => {
    await start();
    ($("sim-limit") as HTMLInputElement).value = "40";
    $("nav-simulate").click();
    // Simulate runs a rule: the first offered, and its own newest run.
    expect(value("sim-target")).toBe("checkout");
    expect(state.selectedRun).toBe("sim-1");
    ($("sim-target") as HTMLSelectElement).value = "policy:api";
    ($("sim-limit") as HTMLInputElement).value = "7";
    $("nav-compare").click();
    expect(value("sim-target")).toBe("__compare");
    expect(value("sim-limit")).toBe("40");
    expect(state.selectedRun).toBe("cmp-1");
    $("nav-simulate").click();
    expect(value("sim-target")).toBe("policy:api");
    expect(value("sim-limit")).toBe("7");
    expect(state.selectedRun).toBe("sim-1");
    // A run picked while Simulate is shown is the one it shows again, not its newest.
    selection.select("cmp-1");
    $("nav-runs").click();
    selection.select("sim-1");
    $("nav-simulate").click();
    expect(state.selectedRun).toBe("cmp-1");
  });

  it("give a run that ends to the view it was started from, while the view shown keeps its own", async () => {
    const { emit } = await start();
    const { history } = await import("./panels/history");
    // The boundary demo started on Compare; Simulate shown while it runs.
    state.sim = { running: true } as never;
    emit("sim");
    $("nav-simulate").click();
    expect(state.selectedRun).toBe("sim-1");
    // It ends: the history keeps it, newest first, and selects it (history.ts).
    history!.runs.unshift({ id: "cmp-2", targets: [{ rule: { name: "compare-gcra" }, naive: false }] } as never);
    state.sim = { running: false } as never;
    emit("sim");
    selection.select("cmp-2");
    expect(state.selectedRun).toBe("sim-1");
    $("nav-compare").click();
    expect(state.selectedRun).toBe("cmp-2");
  });

  it("open the settings from the connection pill; the close button and Escape close them", async () => {
    await start();
    $("conn-pill").click();
    expect($("settings").classList.contains("hidden")).toBe(false);
    expect($("conn-pill").getAttribute("aria-expanded")).toBe("true");
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    expect($("settings").classList.contains("hidden")).toBe(true);
    $("conn-pill").click();
    $("settings-close").click();
    expect($("settings").classList.contains("hidden")).toBe(true);
  });

  it("fold Compare's form when its run starts, and open it for a demo filled in", async () => {
    const { showView, emit } = await start();
    state.sim = { running: true } as never;
    emit("sim");
    expect($("sim-card").classList.contains("folded")).toBe(true);
    showView("simulate");
    expect($("sim-card").classList.contains("folded")).toBe(false);
    showView("compare");
    expect($("sim-card").classList.contains("folded")).toBe(true);
    (document.querySelector("[data-preset]") as HTMLElement).click();
    expect($("sim-card").classList.contains("folded")).toBe(false);
  });
});
