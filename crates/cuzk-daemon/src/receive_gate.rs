//! A bound on how many large proof requests are in the daemon at once: from before tonic
//! reads their bodies until the handler has a decoding slot for them.
//!
//! Why: tonic reads and decodes a whole gRPC message (up to `daemon.max_message_bytes`,
//! 256 MiB by default) before our handler runs, and the handler then waits up to 10 s for one
//! of its decoding slots (`daemon.max_concurrent_decodes`) while it holds the message. Without
//! this gate, N clients sending large SubmitProof/Prove messages at once put N × 256 MiB in
//! memory. Here a SubmitProof or Prove call takes a slot before its body is read, and keeps
//! it, in its request's extensions ([`Received`]), until the handler has a decoding slot
//! for the message or lets go of it (refused, client gone, or tonic refusing the message
//! before the handler runs). Giving the slot back at the end of the body, as this gate first
//! did, bounded receiving only: every received message then waited for a decoding slot
//! with nothing bounding how many did (issue #36, item 4).
//!
//! The bound, with D = `daemon.max_concurrent_decodes` (the number of slots here and of
//! decoding slots): at most D large messages hold a receiving slot (being received, or
//! received and waiting for a decoding slot: each once, twice while tonic decodes it from
//! its wire buffer), and at most D hold a decoding slot (being decoded and split, each
//! peaking at 3–4 times its size). So at most 2·D messages of up to `max_message_bytes` are
//! in the daemon at once, all others outside it: a call that waits longer than `wait` for a
//! slot is answered RESOURCE_EXHAUSTED without its body being read, and while it waits,
//! HTTP/2 flow control leaves at most one stream window of its data buffered. The slot is
//! handed over at the decoding slot rather than held through the decoding so that the next
//! message is received while one is decoded. A Prove's slot is free again long before its
//! proof. Every other method passes straight through, so GetStatus never waits here.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::Service;
use tonic::server::NamedService;
use tonic::Status;

/// The methods whose messages can be large (a C1 output, vanilla proofs).
const GATED: [&str; 2] = ["SubmitProof", "Prove"];

/// How long a large request waits for a slot: a burst of WindowPoSt partitions, or a few
/// Curio Prove calls at once, each received in well under a second over a local socket and
/// then holding its slot until a decoding slot is free (the service waits up to 10 s).
pub const RECEIVE_WAIT: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub struct ReceiveGate<S> {
    inner: S,
    slots: Arc<Semaphore>,
    wait: Duration,
    /// Large messages let in and not yet let go of (see [`Received`]).
    resident: Arc<AtomicUsize>,
}

impl<S> ReceiveGate<S> {
    /// `slots` large requests received or waiting for a decoding slot at once (the daemon uses
    /// `daemon.max_concurrent_decodes`, the number of decoding slots).
    pub fn new(inner: S, slots: usize, wait: Duration) -> Self {
        ReceiveGate { inner, slots: Arc::new(Semaphore::new(slots.max(1))), wait, resident: Arc::default() }
    }

    /// How many large messages are in the daemon now: let in by this gate (being received,
    /// waiting for a decoding slot, or being decoded) and not yet decoded and queued or
    /// refused. What the bound above is about (at most twice the slots); read by the tests.
    #[cfg(test)]
    pub fn resident(&self) -> Arc<AtomicUsize> {
        self.resident.clone()
    }
}

/// One large message the gate let in, with its receiving slot, from then until whoever holds
/// the message lets go of it. It rides in the request's extensions; the handler takes it out
/// ([`Received::take`]), keeps it while it holds the message, and hands the slot over once
/// it has a decoding slot. Clone only because extensions must be: nothing clones it, so the
/// last copy is the handler's (or, when tonic refuses the message before the handler runs,
/// the request's, dropped with it), and the slot is back when that copy is dropped.
#[derive(Clone)]
pub struct Received(Arc<Admitted>);

struct Admitted {
    /// The receiving slot, when the message still holds it.
    slot: Mutex<Option<OwnedSemaphorePermit>>,
    resident: Arc<AtomicUsize>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.resident.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Received {
    fn new(slot: OwnedSemaphorePermit, resident: Arc<AtomicUsize>) -> Received {
        resident.fetch_add(1, Ordering::SeqCst);
        Received(Arc::new(Admitted { slot: Mutex::new(Some(slot)), resident }))
    }

    /// The message's admission, out of its request's extensions (None for a method the gate
    /// does not hold, or a request that did not pass through it).
    pub fn take(extensions: &mut tonic::Extensions) -> Option<Received> {
        extensions.remove::<Received>()
    }

    /// Give the receiving slot back: the message holds a decoding slot now, which bounds it
    /// from here on.
    pub fn hand_over(&self) {
        self.0.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
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

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let method = req.uri().path().rsplit('/').next().unwrap_or("");
        if !GATED.contains(&method) {
            return Box::pin(self.inner.call(req));
        }
        let method = method.to_string();
        // The clone is what runs the call after the wait (tonic's services are always ready).
        let mut inner = self.inner.clone();
        let (slots, wait, resident) = (self.slots.clone(), self.wait, self.resident.clone());
        Box::pin(async move {
            let permit = match tokio::time::timeout(wait, slots.acquire_owned()).await {
                Ok(Ok(p)) => p,
                _ => {
                    tracing::warn!(
                        method,
                        "request refused: every receiving slot busy (daemon.max_concurrent_decodes)"
                    );
                    let status = Status::resource_exhausted(format!(
                        "{method}: too many large requests are being received or wait to be decoded (daemon.max_concurrent_decodes); retry shortly"
                    ));
                    return Ok(status.into_http());
                }
            };
            req.extensions_mut().insert(Received::new(permit, resident));
            inner.call(req).await
        })
    }
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;
    use tonic::codegen::Bytes;

    use super::*;

    /// A SubmitProof is handled as the service does: its admission taken out, its body read to
    /// the end (then `read` is signalled), the admission kept until `go`. A Prove's request is
    /// dropped unread, as tonic drops one it refuses before any handler runs.
    #[derive(Clone)]
    struct SlowHandler {
        read: Arc<tokio::sync::Notify>,
        go: Arc<tokio::sync::Notify>,
    }

    impl Service<Request<Body>> for SlowHandler {
        type Response = Response<Body>;
        type Error = Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: Request<Body>) -> Self::Future {
            let (read, go) = (self.read.clone(), self.go.clone());
            Box::pin(async move {
                if !req.uri().path().ends_with("SubmitProof") {
                    return Ok(Status::ok("dropped").into_http());
                }
                let (mut parts, mut body) = req.into_parts();
                let received = Received::take(&mut parts.extensions).expect("the gate admitted it");
                drop(parts);
                while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    frame.unwrap();
                }
                read.notify_one();
                go.notified().await;
                drop(received);
                Ok(Status::ok("handled").into_http())
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

    /// A large request's slot outlives its body: it is back only when the handler lets go
    /// of the message (issue #36, item 4), or when the request is dropped before any handler
    /// takes it. Meanwhile another large request waits and is refused; other methods pass.
    #[tokio::test]
    async fn a_slot_is_held_until_the_message_is_let_go_of_not_to_the_end_of_its_body() {
        let (read, go) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Notify::new()));
        let mut gate =
            ReceiveGate::new(SlowHandler { read: read.clone(), go: go.clone() }, 1, Duration::from_millis(300));
        let resident = gate.resident();
        let first = tokio::spawn(gate.call(request("SubmitProof")));
        read.notified().await;
        assert_eq!(gate.slots.available_permits(), 0, "the slot is still held after the body was read");
        assert_eq!(resident.load(Ordering::SeqCst), 1);
        // A second one finds no slot within the wait: refused, body unread.
        let refused = gate.call(request("Prove")).await.unwrap();
        assert_eq!(code(&refused), (tonic::Code::ResourceExhausted as i32).to_string());
        // Other methods never wait here.
        let status = gate.call(request("GetStatus")).await.unwrap();
        assert_eq!(code(&status), "0");
        // The handler lets go: the slot is back.
        go.notify_one();
        assert_eq!(code(&first.await.unwrap().unwrap()), "0");
        assert_eq!((gate.slots.available_permits(), resident.load(Ordering::SeqCst)), (1, 0));
        // A request dropped before any handler took its admission gives the slot back too.
        assert_eq!(code(&gate.call(request("Prove")).await.unwrap()), "0");
        assert_eq!((gate.slots.available_permits(), resident.load(Ordering::SeqCst)), (1, 0), "the slot was returned");
    }
}
