//! The metrics card: the Prometheus endpoint on loopback, on or off, and its port.
import { api, toAppError } from "../api";
import type { MetricsStatus } from "../bindings/MetricsStatus";
import { $ } from "../dom";

async function render(promise: Promise<MetricsStatus>) {
  const note = $("metrics-note");
  try {
    const m = await promise;
    $<HTMLInputElement>("metrics-enabled").checked = m.settings.enabled;
    // The port actually bound (port 0 picks one), when the backend says it.
    const bound = m.port;
    $<HTMLInputElement>("metrics-port").value = String(bound ?? m.settings.port);
    note.textContent = m.error ? `✗ ${m.error}` : m.url ? `Serving ${m.url}` : "Off";
    note.classList.toggle("error", Boolean(m.error));
  } catch (err) {
    note.textContent = toAppError(err).message;
    note.classList.add("error");
  }
}

export function initMetrics() {
  $("metrics-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const port = Number($<HTMLInputElement>("metrics-port").value);
    void render(api.metricsConfigure({ enabled: $<HTMLInputElement>("metrics-enabled").checked, port }));
  });
  $("metrics-enabled").addEventListener("change", () => $<HTMLFormElement>("metrics-form").requestSubmit());
  void render(api.metricsStatus());
}
