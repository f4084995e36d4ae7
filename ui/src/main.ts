/** The dashboard: starts each panel (ui/src/panels/), which share ./store.ts, then the views (./views.ts). */
import "./locale-guard"; // before uPlot: see the module
import "./styles.css";
import { api, toAppError } from "./api";
import { initBanners, reportUnexpected, warn } from "./panels/banners";
import { initCommands } from "./panels/commands";
import { initConnection } from "./panels/connection";
import { initHistory } from "./panels/history";
import { initLive } from "./panels/live";
import { initMetrics } from "./panels/metrics";
import { initPerKey } from "./panels/perkey";
import { initPolicies } from "./panels/policies";
import { initReplay } from "./panels/replay";
import { initRules } from "./panels/rules";
import { initRun } from "./panels/run";
import { initWatch } from "./panels/watch";
import { initWorkload } from "./panels/workload";
import { initViews } from "./views";

async function start() {
  initBanners();
  try {
    warn(...(await api.appInfo()).warnings);
  } catch (err) {
    reportUnexpected(toAppError(err).message);
  }
  initLive();
  initRun();
  initPerKey();
  await initRules();
  await initPolicies();
  await initWorkload();
  initMetrics();
  await initHistory();
  await initReplay();
  initCommands();
  await initConnection();
  await initWatch();
  // Last: a view's run and targets come from the panels above.
  initViews();
  document.body.dataset.ready = "true";
}

start().catch((err) => reportUnexpected(`The dashboard did not start: ${toAppError(err).message}`));
