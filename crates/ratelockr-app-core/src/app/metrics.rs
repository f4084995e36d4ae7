//! The Prometheus endpoint on 127.0.0.1: its state, started as the saved settings say,
//! reconfigured (and remembered) from the form; a taken port is reported, not fatal.

use super::{lock, AppCore};
use crate::error::AppError;
use crate::settings::{MetricsDraft, MetricsSettings};
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddr};
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

/// The metrics endpoint's state.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct MetricsStatus {
    pub settings: MetricsSettings,
    /// `http://127.0.0.1:<port>/api/metrics` while serving.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The port actually served on (the system's pick when the settings say 0).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why the metrics endpoint did not start, in the app's terms (the engine's message names the
/// CLI's `--addr`, which means nothing here).
fn metrics_error(err: &ratelockr::metrics::ServeError, port: u16) -> String {
    match err {
        ratelockr::metrics::ServeError::AddrInUse { .. } => format!(
            "port {port} is in use by another program; choose another port here, or 0 for any free one"
        ),
        other => other.to_string(),
    }
}

impl AppCore {
    pub fn metrics_status(&self) -> MetricsStatus {
        let slot = lock(&self.metrics_slot);
        MetricsStatus {
            settings: slot.settings,
            url: slot.url.clone(),
            port: slot.port,
            error: slot.error.clone(),
        }
    }

    /// Applies (and remembers) the metrics settings: stops the endpoint, and starts it again on
    /// 127.0.0.1:`port` when enabled. A taken port is reported in the status, not fatal.
    pub async fn metrics_configure(&self, draft: MetricsDraft) -> Result<MetricsStatus, AppError> {
        let settings = draft.to_settings()?;
        let _applying = self.metrics_apply.lock().await;
        self.apply_metrics(settings).await
    }

    async fn apply_metrics(&self, settings: MetricsSettings) -> Result<MetricsStatus, AppError> {
        if let Some(old) = lock(&self.metrics_slot).shutdown.take() {
            old.cancel();
        }
        let (url, port, error, shutdown) = if settings.enabled {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, settings.port));
            match ratelockr::metrics::MetricsServer::bind(self.metrics.clone(), addr).await {
                Ok(server) => {
                    let bound = server
                        .local_addr()
                        .map(|a| a.port())
                        .unwrap_or(settings.port);
                    let token = CancellationToken::new();
                    let stop = token.clone();
                    tokio::spawn(async move {
                        if let Err(err) = server.run(stop.cancelled_owned()).await {
                            tracing::warn!("metrics endpoint stopped: {err}");
                        }
                    });
                    (
                        Some(format!(
                            "http://127.0.0.1:{bound}{}",
                            ratelockr::metrics::METRICS_PATH
                        )),
                        Some(bound),
                        None,
                        Some(token),
                    )
                }
                Err(err) => (None, None, Some(metrics_error(&err, settings.port)), None),
            }
        } else {
            (None, None, None, None)
        };
        {
            let mut slot = lock(&self.metrics_slot);
            slot.settings = settings;
            slot.applied = true;
            slot.url = url;
            slot.port = port;
            slot.error = error;
            slot.shutdown = shutdown;
        }
        self.save()?;
        Ok(self.metrics_status())
    }

    /// Starts the endpoint as the saved settings say (at app start).
    pub async fn metrics_start(&self) -> MetricsStatus {
        let _applying = self.metrics_apply.lock().await;
        let (settings, applied) = {
            let slot = lock(&self.metrics_slot);
            (slot.settings, slot.applied)
        };
        if applied {
            return self.metrics_status();
        }
        match self.apply_metrics(settings).await {
            Ok(status) => status,
            Err(err) => {
                let mut status = self.metrics_status();
                status.error = Some(err.message);
                status
            }
        }
    }
}
