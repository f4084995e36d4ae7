//! What the layer's tests share: an axum app served on a free loopback port.

use axum::Router;
use std::net::SocketAddr;

/// Serves `app` on a free loopback port, with peer addresses recorded (for
/// `KeyExtractor::peer_ip`), until the test's runtime ends.
pub async fn serve_app(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .expect("serve");
    });
    addr
}
