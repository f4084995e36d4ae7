//! A response body that holds its request's leases (issue 35): the slots the request took in
//! its concurrency limits stay taken while the body streams, and are given back when it ends
//! or is dropped unfinished (a client that disconnects mid-response).

use axum::body::{Body, Bytes, HttpBody};
use http_body::{Frame, SizeHint};
use ratelockr::Lease;
use std::pin::Pin;
use std::task::{Context, Poll};

/// `inner`, holding `leases` until it has sent its last frame or is dropped.
pub(crate) struct LeasedBody {
    inner: Body,
    /// Released (in the background, on the runtime) as soon as the body is done.
    leases: Vec<Lease>,
}

impl LeasedBody {
    pub(crate) fn new(inner: Body, leases: Vec<Lease>) -> Self {
        LeasedBody { inner, leases }
    }
}

impl HttpBody for LeasedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.inner).poll_frame(cx);
        // The last frame is out: the request has ended for the client; its slots go back now,
        // not when the connection gets round to dropping the body.
        if let Poll::Ready(None) = frame {
            this.leases.clear();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
