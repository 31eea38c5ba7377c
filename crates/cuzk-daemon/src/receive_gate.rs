//! A bound on how many proof requests are being *received* at once, before tonic reads their
//! bodies.
//!
//! Why: tonic reads and decodes a whole gRPC message (up to `daemon.max_message_bytes`,
//! 256 MiB by default) before our handler runs, so the handler's decoding slots
//! (`daemon.max_concurrent_decodes`) bound only the work after that. Without this gate, N
//! clients sending large SubmitProof/Prove messages at once put N × 256 MiB in memory. Here a
//! SubmitProof or Prove call takes a slot before its body is read, and gives it back when the
//! body has been read to its end (or dropped): tonic reads a unary message completely before
//! calling the handler, so a Prove's slot is free again long before its proof. A call that
//! waits longer than `wait` for a slot is answered RESOURCE_EXHAUSTED without its body being
//! read. While it waits, HTTP/2 flow control leaves at most one stream window of its data
//! buffered. Every other method passes straight through, so GetStatus never waits here.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{Bytes, Service};
use tonic::server::NamedService;
use tonic::Status;

/// The methods whose messages can be large (a C1 output, vanilla proofs).
const GATED: [&str; 2] = ["SubmitProof", "Prove"];

/// How long a large request waits for a slot: a burst of WindowPoSt partitions, or a few
/// Curio Prove calls at once, each received in well under a second over a local socket.
pub const RECEIVE_WAIT: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub struct ReceiveGate<S> {
    inner: S,
    slots: Arc<Semaphore>,
    wait: Duration,
}

impl<S> ReceiveGate<S> {
    /// `slots` requests received at once (the daemon uses `daemon.max_concurrent_decodes`).
    pub fn new(inner: S, slots: usize, wait: Duration) -> Self {
        ReceiveGate { inner, slots: Arc::new(Semaphore::new(slots.max(1))), wait }
    }
}

impl<S: NamedService> NamedService for ReceiveGate<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<Request<Body>> for ReceiveGate<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let method = req.uri().path().rsplit('/').next().unwrap_or("");
        if !GATED.contains(&method) {
            return Box::pin(self.inner.call(req));
        }
        let method = method.to_string();
        // The clone is what runs the call after the wait (tonic's services are always ready).
        let mut inner = self.inner.clone();
        let (slots, wait) = (self.slots.clone(), self.wait);
        Box::pin(async move {
            let permit = match tokio::time::timeout(wait, slots.acquire_owned()).await {
                Ok(Ok(p)) => p,
                _ => {
                    tracing::warn!(method, "request refused: every receiving slot busy (daemon.max_concurrent_decodes)");
                    let status = Status::resource_exhausted(format!(
                        "{method}: too many large requests are being received at once (daemon.max_concurrent_decodes); retry shortly"
                    ));
                    return Ok(status.into_http());
                }
            };
            let req = req.map(|body| Body::new(Held { body, permit: Some(permit) }));
            inner.call(req).await
        })
    }
}

/// A request body that holds its receiving slot until it has been read to its end.
struct Held {
    body: Body,
    permit: Option<OwnedSemaphorePermit>,
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) || self.body.is_end_stream() {
            self.permit = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;

    use super::*;

    /// Reads each request's body to its end only when told to, then answers OK.
    #[derive(Clone)]
    struct SlowReader {
        go: Arc<tokio::sync::Notify>,
    }

    impl Service<Request<Body>> for SlowReader {
        type Response = Response<Body>;
        type Error = Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: Request<Body>) -> Self::Future {
            let go = self.go.clone();
            Box::pin(async move {
                let path = req.uri().path().to_string();
                if path.ends_with("SubmitProof") {
                    go.notified().await;
                }
                let mut body = req.into_body();
                while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    frame.unwrap();
                }
                Ok(Status::ok("read").into_http())
            })
        }
    }

    fn request(method: &str) -> Request<Body> {
        let body = http_body_util::Full::new(Bytes::from(vec![7u8; 1 << 16]));
        Request::builder().uri(format!("/cuzk.v1.ProvingEngine/{method}")).body(Body::new(body)).unwrap()
    }

    fn code(r: &Response<Body>) -> String {
        r.headers().get("grpc-status").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default()
    }

    #[tokio::test]
    async fn large_requests_wait_for_a_slot_others_pass_and_slots_come_back() {
        let go = Arc::new(tokio::sync::Notify::new());
        let mut gate = ReceiveGate::new(SlowReader { go: go.clone() }, 1, Duration::from_millis(300));
        // The first SubmitProof takes the only slot and does not read its body yet.
        let first = tokio::spawn(gate.call(request("SubmitProof")));
        while gate.slots.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        // A second one finds no slot within the wait: refused, body unread.
        let refused = gate.call(request("Prove")).await.unwrap();
        assert_eq!(code(&refused), (tonic::Code::ResourceExhausted as i32).to_string());
        // Other methods never wait here.
        let status = gate.call(request("GetStatus")).await.unwrap();
        assert_eq!(code(&status), "0");
        // Once the first body is read to its end, its slot is free again.
        go.notify_one();
        assert_eq!(code(&first.await.unwrap().unwrap()), "0");
        let go2 = go.clone();
        let next = tokio::spawn(gate.call(request("SubmitProof")));
        go2.notify_one();
        assert_eq!(code(&next.await.unwrap().unwrap()), "0", "the slot was returned");
    }
}
