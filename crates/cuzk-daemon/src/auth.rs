//! Who may call the gRPC API (issue #15, "who may connect").
//!
//! The unix socket is guarded by its file mode (0660, group `cuzk`). TCP has no such guard,
//! so: a bearer token (`daemon.auth_token`, sent as `authorization: Bearer <token>`) is
//! required on every call when one is configured, and configuring none is refused at start
//! (on a loopback address too, unless `daemon.allow_tokenless_loopback`). The calls that
//! change what the daemon holds or does for others — CancelProof, PreloadSRS, EvictSRS —
//! can be reserved for a second token (`daemon.admin_token`); without one they need what
//! every other call needs. Tokens are compared as SHA-256 digests, in constant time.
//!
//! The check wraps the generated service, so it runs before any request body is decoded, and
//! answers with a gRPC status (UNAUTHENTICATED, PERMISSION_DENIED) the client can read.

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::{bail, Result};
use cuzk_core::config::DaemonConfig;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;
use tonic::body::Body;
use tonic::codegen::http::{HeaderMap, Request, Response};
use tonic::codegen::Service;
use tonic::server::NamedService;
use tonic::Status;

use crate::listen::Address;

/// Methods reserved for the admin token when one is configured.
const ADMIN_METHODS: [&str; 3] = ["CancelProof", "PreloadSRS", "EvictSRS"];

/// SHA-256 of a bearer token.
type Digest = [u8; 32];

/// The tokens a listener checks, as digests (None: not configured), so that what a
/// comparison costs does not depend on the configured token at all (see [`same_digest`]).
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    auth: Option<Digest>,
    admin: Option<Digest>,
}

impl Tokens {
    pub fn from_config(d: &DaemonConfig) -> Tokens {
        Tokens::new(&d.auth_token, &d.admin_token)
    }

    /// From the configured strings; empty (after trimming) means not configured.
    fn new(auth: &str, admin: &str) -> Tokens {
        let configured = |t: &str| Some(t.trim()).filter(|t| !t.is_empty()).map(digest);
        Tokens { auth: configured(auth), admin: configured(admin) }
    }

    pub fn is_empty(&self) -> bool {
        self.auth.is_none() && self.admin.is_none()
    }

    /// Whether a call to `path` (`/cuzk.v1.ProvingEngine/<Method>`) with `headers` may go on.
    fn check(&self, path: &str, headers: &HeaderMap) -> Result<(), Status> {
        let presented = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(|t| digest(t.trim()));
        let method = path.rsplit('/').next().unwrap_or("");
        if let (true, Some(admin)) = (ADMIN_METHODS.contains(&method), &self.admin) {
            return match &presented {
                Some(t) if same_digest(t, admin) => Ok(()),
                Some(_) => {
                    Err(Status::permission_denied(format!("{method} needs the admin token (daemon.admin_token)")))
                }
                None => Err(Status::unauthenticated(format!("{method} needs `authorization: Bearer <admin token>`"))),
            };
        }
        let Some(auth) = &self.auth else { return Ok(()) };
        match &presented {
            // The admin token may do everything the ordinary one may.
            Some(t) if same_digest(t, auth) || self.admin.as_ref().is_some_and(|a| same_digest(t, a)) => Ok(()),
            Some(_) => Err(Status::unauthenticated("wrong bearer token")),
            None => {
                Err(Status::unauthenticated("this daemon needs `authorization: Bearer <token>` (daemon.auth_token)"))
            }
        }
    }
}

fn digest(token: &str) -> Digest {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether two token digests are equal, in time independent of where they differ. Comparing
/// the tokens themselves byte by byte leaked the expected token's length (a wrong length was
/// refused at once) and invited prefix-guessing through response times; both digests are 32
/// bytes whatever the tokens, and hashing the presented token tells the caller nothing it did
/// not send.
fn same_digest(a: &Digest, b: &Digest) -> bool {
    a.ct_eq(b).into()
}

/// [`same_digest`] of two tokens as given (tests; the checks hash the configured ones once).
#[cfg(test)]
fn same(presented: &str, expected: &str) -> bool {
    same_digest(&digest(presented), &digest(expected))
}

/// Refuse a configuration that would let anyone who can reach a TCP port submit, cancel or
/// evict: a TCP address needs `daemon.auth_token`. On loopback the operator may waive it
/// (`daemon.allow_tokenless_loopback`; [`tokenless_warning`] then says so at every start):
/// every local user, and any container sharing the host's network, can reach a loopback
/// port, so an open one must be a decision, not a default.
pub fn check_exposure(d: &DaemonConfig) -> Result<()> {
    if let Address::Tcp(hostport) = Address::parse(&d.listen)? {
        if !d.auth_token.trim().is_empty() {
            return Ok(());
        }
        if !is_loopback(&hostport) {
            bail!(
                "daemon.listen = {hostport:?} accepts connections from other hosts, and daemon.auth_token is empty: \
                 anyone who can reach the port could submit, cancel and evict. Set daemon.auth_token (clients send \
                 `authorization: Bearer <token>`), or listen on a unix socket"
            );
        }
        if !d.allow_tokenless_loopback {
            bail!(
                "daemon.listen = {hostport:?} is a TCP address and daemon.auth_token is empty: every local user, and any \
                 container on this host's network, could submit, cancel and evict. Listen on a unix socket (its file \
                 mode guards it), set daemon.auth_token (clients send `authorization: Bearer <token>`), or set \
                 daemon.allow_tokenless_loopback = true to accept that"
            );
        }
    }
    Ok(())
}

/// The warning to log at start for a TCP listener without `daemon.auth_token` (which
/// [`check_exposure`] lets through only on loopback with `daemon.allow_tokenless_loopback`);
/// None for a token or a unix socket.
pub fn tokenless_warning(d: &DaemonConfig) -> Option<String> {
    match Address::parse(&d.listen) {
        Ok(Address::Tcp(hostport)) if d.auth_token.trim().is_empty() => Some(format!(
            "gRPC on {hostport} WITHOUT AUTHENTICATION (daemon.allow_tokenless_loopback = true): every local user and \
             any container on this host's network can submit, cancel and evict; use the unix socket or set \
             daemon.auth_token"
        )),
        _ => None,
    }
}

/// `127.x.x.x:port`, `[::1]:port` or `localhost:port`.
pub fn is_loopback(hostport: &str) -> bool {
    let host = match hostport.rsplit_once(':') {
        Some((h, _)) => h,
        None => hostport,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The generated service with the token check in front of it.
#[derive(Clone)]
pub struct Checked<S> {
    inner: S,
    tokens: Arc<Tokens>,
}

impl<S> Checked<S> {
    pub fn new(inner: S, tokens: Tokens) -> Self {
        Checked { inner, tokens: Arc::new(tokens) }
    }
}

impl<S: NamedService> NamedService for Checked<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<Request<Body>> for Checked<S>
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
        match self.tokens.check(req.uri().path(), req.headers()) {
            Ok(()) => Box::pin(self.inner.call(req)),
            Err(status) => {
                tracing::warn!(path = req.uri().path(), message = status.message(), "gRPC call refused");
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic::codegen::http::HeaderValue;

    use super::*;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert("authorization", HeaderValue::from_str(a).unwrap());
        }
        h
    }

    #[test]
    fn tokens_are_checked_per_method() {
        let t = Tokens::new("user-secret", "admin-secret");
        let status = "/cuzk.v1.ProvingEngine/GetStatus";
        let evict = "/cuzk.v1.ProvingEngine/EvictSRS";
        assert_eq!(t.check(status, &headers(None)).unwrap_err().code(), tonic::Code::Unauthenticated);
        assert_eq!(t.check(status, &headers(Some("Bearer nope"))).unwrap_err().code(), tonic::Code::Unauthenticated);
        t.check(status, &headers(Some("Bearer user-secret"))).unwrap();
        t.check(status, &headers(Some("Bearer admin-secret"))).unwrap();
        assert_eq!(
            t.check(evict, &headers(Some("Bearer user-secret"))).unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
        t.check(evict, &headers(Some("Bearer admin-secret"))).unwrap();
        // No tokens: everything passes (the socket's mode is the guard).
        Tokens::default().check(evict, &headers(None)).unwrap();
        // Only an admin token: ordinary calls pass, admin calls need it.
        let a = Tokens::new(" ", "a");
        a.check(status, &headers(None)).unwrap();
        assert!(a.check("/cuzk.v1.ProvingEngine/CancelProof", &headers(None)).is_err());
    }

    /// Issue #36 item 9a: on loopback every local user (and any container on the host's
    /// network) can connect, so a tokenless TCP listener there needs the operator's say-so.
    #[test]
    fn tokenless_loopback_tcp_needs_the_explicit_key() {
        for addr in ["127.0.0.1:9820", "[::1]:9820", "localhost:9820"] {
            let mut d = DaemonConfig { listen: addr.into(), ..Default::default() };
            let e = check_exposure(&d).expect_err(addr).to_string();
            assert!(e.contains("daemon.allow_tokenless_loopback") && e.contains("daemon.auth_token"), "{addr}: {e}");
            d.allow_tokenless_loopback = true;
            check_exposure(&d).unwrap_or_else(|e| panic!("{addr} with the key set: {e}"));
            d.allow_tokenless_loopback = false;
            d.auth_token = "t".into();
            check_exposure(&d).unwrap_or_else(|e| panic!("{addr} with a token: {e}"));
        }
        // The unix socket's file mode is its guard: no token, no key needed.
        check_exposure(&DaemonConfig { listen: "unix:///run/cuzk/cuzk.sock".into(), ..Default::default() }).unwrap();
    }

    /// Issue #36 item 9b: a wrong token is refused whatever its length, the right one passes.
    #[test]
    fn wrong_tokens_of_any_length_are_refused() {
        let expected = "user-secret";
        assert!(same("user-secret", expected));
        for wrong in ["user-secreT", "xser-secret", "user-secret-", "user", "", "user-secret-and-then-some"] {
            assert!(!same(wrong, expected), "{wrong:?}");
        }
    }

    /// Issue #36 item 9b: how long a comparison takes must not tell whether the presented
    /// token has the expected one's length. With a 4 MiB expected token, a wrong token of the
    /// same length and one a byte longer take the same time to refuse (a length check first
    /// refuses the second at once and walks all 4 MiB for the first: a ratio of thousands).
    /// The fastest of several runs of each, so a busy machine cannot fake a difference.
    #[test]
    fn refusing_a_token_takes_as_long_whatever_its_length() {
        let expected = "a".repeat(4 << 20);
        let same_len = "b".repeat(4 << 20);
        let longer = "b".repeat((4 << 20) + 1);
        let fastest = |presented: &str| {
            (0..15)
                .map(|_| {
                    let t = std::time::Instant::now();
                    assert!(!same(std::hint::black_box(presented), std::hint::black_box(&expected)));
                    t.elapsed()
                })
                .min()
                .unwrap()
        };
        let (a, b) = (fastest(&same_len), fastest(&longer));
        let ratio = a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        assert!((0.25..4.0).contains(&ratio), "same length {a:?}, one byte longer {b:?}");
    }

    #[test]
    fn exposure_needs_a_token() {
        let mut d = DaemonConfig { listen: "0.0.0.0:9820".into(), ..Default::default() };
        assert!(check_exposure(&d).unwrap_err().to_string().contains("daemon.auth_token"));
        d.auth_token = "t".into();
        check_exposure(&d).unwrap();
        for bad in ["10.0.0.5:9820", "[::]:9820", "myhost:9820"] {
            let mut d = DaemonConfig { listen: bad.into(), ..Default::default() };
            assert!(check_exposure(&d).is_err(), "{bad}");
            // The loopback waiver does not reach other hosts.
            d.allow_tokenless_loopback = true;
            assert!(check_exposure(&d).is_err(), "{bad} with allow_tokenless_loopback");
            assert!(tokenless_warning(&d).is_some());
        }
        let mut d =
            DaemonConfig { listen: "127.0.0.1:9820".into(), allow_tokenless_loopback: true, ..Default::default() };
        assert!(tokenless_warning(&d).unwrap().contains("WITHOUT AUTHENTICATION"));
        d.auth_token = "t".into();
        assert_eq!(tokenless_warning(&d), None);
        assert_eq!(tokenless_warning(&DaemonConfig::default()), None, "the unix socket");
    }
}
