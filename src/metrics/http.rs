//! `GET /api/metrics` over HTTP/1, for the CLI's `serve` and the desktop app alike.

use super::Metrics;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::future::Future;
use std::net::SocketAddr;

/// Where the metrics are served.
pub const METRICS_PATH: &str = "/api/metrics";
/// The Prometheus text exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Why the endpoint could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{addr} is already in use (another `ratelockr serve`, or a Prometheus exporter?): stop it or choose another address with --addr")]
    AddrInUse { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the metrics server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A bound, not yet running, metrics endpoint. Binding first lets callers learn the port
/// (bind to port 0 in tests) and report a taken port before anything else starts.
#[derive(Debug)]
pub struct MetricsServer {
    listener: tokio::net::TcpListener,
    metrics: Metrics,
}

impl MetricsServer {
    /// Binds `addr`. Pass a loopback address unless the metrics are meant for the network:
    /// they name rules and reveal traffic.
    pub async fn bind(metrics: Metrics, addr: SocketAddr) -> Result<Self, ServeError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::AddrInUse => ServeError::AddrInUse { addr },
                _ => ServeError::Bind { addr, source },
            })?;
        Ok(MetricsServer { listener, metrics })
    }

    /// The address actually bound (the real port when `addr` asked for port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        self.run_with(Router::new(), shutdown).await
    }

    /// As [`MetricsServer::run`], with more routes beside the metrics (`serve`'s decision
    /// endpoint, [`crate::api`]).
    pub async fn run_with(
        self,
        routes: Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let metrics = self.metrics;
        let app = routes
            .route(METRICS_PATH, get(move || render(metrics.clone())))
            .fallback(|| async {
                // In the decision endpoint's error shape: a client of it reads one shape.
                let error = serde_json::json!({"error": {
                    "code": "not_found",
                    "message": "not found; metrics are at /api/metrics, decisions at POST /api/check",
                    "field": null,
                }});
                (StatusCode::NOT_FOUND, axum::Json(error))
            });
        // The peer address in every request's extensions: a layer keying by `ip` reads it.
        let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
        axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown)
            .await?;
        Ok(())
    }
}

/// Binds `addr` and serves `GET /api/metrics` until `shutdown` completes. A taken port is
/// [`ServeError::AddrInUse`].
pub async fn serve(
    metrics: Metrics,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    MetricsServer::bind(metrics, addr)
        .await?
        .run(shutdown)
        .await
}

async fn render(metrics: Metrics) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], metrics.render())
}
