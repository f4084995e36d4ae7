// A measurement, not a test (docs/app-performance.md): one 200,000-request run at the maximum
// rate in the real window, with the CPU each process spent over the run (from /proc) and the
// webview's main-thread lag (how late a 50 ms timer fires: a click waits at most that long).
// Run by scripts/measure-webview.sh, which starts Xvfb and tauri-driver like scripts/e2e.sh.
import { spawn, execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { remote } from "webdriverio";

const ROOT = resolve(import.meta.dirname, "../..");
const APP = join(ROOT, "target/debug/ratelockr-app");
const DRIVER = new URL(process.env.TAURI_DRIVER_URL);
const REQUESTS = Number(process.env.REQUESTS ?? 200_000);
const dataDir = process.env.RATELOCKR_DATA_DIR;

const freePort = () =>
  new Promise((ok) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system) of every process whose command name starts with `name`. */
function cpuSeconds(name) {
  const hz = 100;
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (!comm.startsWith(name)) continue;
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended
    }
  }
  return ticks / hz;
}
const NAMES = { webview: "WebKitWebProces", app: "ratelockr-app", redis: "redis-server" };
const snapshot = () => Object.fromEntries(Object.entries(NAMES).map(([k, n]) => [k, cpuSeconds(n)]));

const redisPort = await freePort();
const redis = spawn("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
await sleep(500);
execFileSync("redis-cli", ["-p", String(redisPort), "PING"]);
writeFileSync(
  join(dataDir, "settings.json"),
  JSON.stringify({
    redis_url: `redis://127.0.0.1:${redisPort}`,
    metrics: { enabled: false, port: 9464 },
    rules: [{ name: "api", algorithm: "token_bucket", capacity: 100, refill_per_sec: 50 }],
  }),
);
const browser = await remote({
  hostname: DRIVER.hostname,
  port: Number(DRIVER.port),
  logLevel: "warn",
  connectionRetryTimeout: 120_000,
  capabilities: { "wdio:enforceWebDriverClassic": true, browserName: "wry", "tauri:options": { application: APP } },
});
try {
  for (let i = 0; i < 300 && !(await browser.execute(() => document.body.dataset.ready === "true")); i++) await sleep(100);
  const fill = (sel, value) =>
    browser.execute((s, v) => {
      const el = document.querySelector(s);
      if (el.type === "checkbox") el.checked = v;
      else el.value = v;
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
    }, sel, value);
  await fill("#sim-target", "api");
  await fill("#sim-pattern", "constant");
  await fill("#sim-length", "requests");
  await fill("#sim-rps", "0");
  await fill("#sim-requests", String(REQUESTS));
  await fill("#sim-servers", "4");
  await fill("#sim-keys", "100");
  // Where the webview's work goes: DOM mutations by the nearest element with an id, and
  // canvas redraws (uPlot clears its canvas on every redraw). Counted idle, then over the run.
  const countWork = () =>
    browser.execute(() => {
      const mutations = {};
      window.__mutations = mutations;
      const region = (n) => {
        for (let e = n.nodeType === 1 ? n : n.parentElement; e; e = e.parentElement) if (e.id) return e.id;
        return "(none)";
      };
      window.__observer?.disconnect();
      window.__observer = new MutationObserver((list) => {
        for (const m of list) mutations[region(m.target)] = (mutations[region(m.target)] ?? 0) + 1;
      });
      window.__observer.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
      const draws = { n: 0 };
      window.__draws = draws;
      if (!window.__clear) {
        window.__clear = CanvasRenderingContext2D.prototype.clearRect;
        CanvasRenderingContext2D.prototype.clearRect = function (...a) {
          window.__draws.n++;
          return window.__clear.apply(this, a);
        };
      }
    });
  const work = () => browser.execute(() => ({ mutations: window.__mutations, draws: window.__draws.n }));
  const workText = (w, secs) =>
    `canvas redraws ${w.draws} (${(w.draws / secs).toFixed(1)}/s); DOM mutations by region (per s): ${Object.entries(w.mutations).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${(n / secs).toFixed(1)}`).join(", ") || "none"}`;
  // The same processes idle, for comparison: what the window costs when nothing runs (after
  // 10 s for the start-up's own drawing to settle).
  const IDLE_S = 10;
  await sleep(10_000);
  await countWork();
  const idle0 = snapshot();
  await sleep(IDLE_S * 1000);
  const idle1 = snapshot();
  const idleWork = await work();
  const before = Number(await browser.execute(() => document.body.dataset.runsFinished ?? 0));
  // The lag probe: a 50 ms timer chain; how late each tick fires is how long a click waits.
  await browser.execute(() => {
    const lags = [];
    window.__lags = lags;
    let last = performance.now();
    const tick = () => {
      const now = performance.now();
      lags.push(now - last - 50);
      last = now;
      if (!window.__stopLag) setTimeout(tick, 50);
    };
    setTimeout(tick, 50);
  });
  await countWork();
  const cpu0 = snapshot();
  const t0 = Date.now();
  await (await browser.$("#sim-run")).click();
  while (Number(await browser.execute(() => document.body.dataset.runsFinished ?? 0)) <= before) await sleep(250);
  const wall = (Date.now() - t0) / 1000;
  const cpu1 = snapshot();
  const runWork = await work();
  const rawLags = await browser.execute(() => {
    window.__stopLag = true;
    window.__observer.disconnect();
    return window.__lags;
  });
  const lags = rawLags.sort((a, b) => a - b);
  const q = (p) => lags[Math.min(lags.length - 1, Math.floor(p * lags.length))];
  const status = await browser.execute(() => document.querySelector("#sim-progress")?.textContent ?? "");
  const pct = (k) => ((cpu1[k] - cpu0[k]) / wall) * 100;
  console.log(`requests ${REQUESTS}, run ${wall.toFixed(1)} s wall; ${status.trim()}`);
  console.log(`CPU idle for ${IDLE_S} s before the run (% of one core): webview ${(((idle1.webview - idle0.webview) / IDLE_S) * 100).toFixed(1)} %, app ${(((idle1.app - idle0.app) / IDLE_S) * 100).toFixed(1)} %`);
  console.log(`CPU over the run (% of one core): webview ${pct("webview").toFixed(1)} %, app ${pct("app").toFixed(1)} %, redis-server ${pct("redis").toFixed(1)} %`);
  console.log(`idle: ${workText(idleWork, IDLE_S)}`);
  console.log(`run: ${workText(runWork, wall)}`);
  console.log(`webview main-thread lag (50 ms timer, ${lags.length} ticks): p50 ${q(0.5).toFixed(1)} ms, p99 ${q(0.99).toFixed(1)} ms, max ${lags[lags.length - 1].toFixed(1)} ms`);
} finally {
  await browser.deleteSession().catch(() => {});
  redis.kill("SIGKILL");
}
