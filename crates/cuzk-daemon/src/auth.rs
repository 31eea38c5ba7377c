//! Who may call the gRPC API (issue #15, "who may connect").
//!
//! The unix socket is guarded by its file mode (0660, group `cuzk`). TCP has no such guard,
//! so: a bearer token (`daemon.auth_token`, sent as `authorization: Bearer <token>`) is
//! required on every call when one is configured, and configuring none is refused at start
//! unless the TCP address is loopback. The calls that change what the daemon holds or does
//! for others — CancelProof, PreloadSRS, EvictSRS — can be reserved for a second token
//! (`daemon.admin_token`); without one they need what every other call needs.
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
use tonic::body::Body;
use tonic::codegen::http::{HeaderMap, Request, Response};
use tonic::codegen::Service;
use tonic::server::NamedService;
use tonic::Status;

use crate::listen::Address;

/// Methods reserved for the admin token when one is configured.
const ADMIN_METHODS: [&str; 3] = ["CancelProof", "PreloadSRS", "EvictSRS"];

/// The tokens a listener checks; empty strings mean "not configured".
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    auth: String,
    admin: String,
}

impl Tokens {
    pub fn from_config(d: &DaemonConfig) -> Tokens {
        Tokens { auth: d.auth_token.trim().to_string(), admin: d.admin_token.trim().to_string() }
    }

    pub fn is_empty(&self) -> bool {
        self.auth.is_empty() && self.admin.is_empty()
    }

    /// Whether a call to `path` (`/cuzk.v1.ProvingEngine/<Method>`) with `headers` may go on.
    fn check(&self, path: &str, headers: &HeaderMap) -> Result<(), Status> {
        let presented = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim);
        let method = path.rsplit('/').next().unwrap_or("");
        if ADMIN_METHODS.contains(&method) && !self.admin.is_empty() {
            return match presented {
                Some(t) if same(t, &self.admin) => Ok(()),
                Some(_) => Err(Status::permission_denied(format!("{method} needs the admin token (daemon.admin_token)"))),
                None => Err(Status::unauthenticated(format!("{method} needs `authorization: Bearer <admin token>`"))),
            };
        }
        if self.auth.is_empty() {
            return Ok(());
        }
        match presented {
            // The admin token may do everything the ordinary one may.
            Some(t) if same(t, &self.auth) || (!self.admin.is_empty() && same(t, &self.admin)) => Ok(()),
            Some(_) => Err(Status::unauthenticated("wrong bearer token")),
            None => Err(Status::unauthenticated("this daemon needs `authorization: Bearer <token>` (daemon.auth_token)")),
        }
    }
}

/// Equality that takes as long whatever the first difference: a token must not leak one
/// byte at a time through response times.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuse a configuration that would let anyone who can reach a TCP port submit, cancel or
/// evict: a non-loopback TCP address needs `daemon.auth_token`.
pub fn check_exposure(d: &DaemonConfig) -> Result<()> {
    if let Address::Tcp(hostport) = Address::parse(&d.listen)? {
        if d.auth_token.trim().is_empty() && !is_loopback(&hostport) {
            bail!(
                "daemon.listen = {hostport:?} accepts connections from other hosts, and daemon.auth_token is empty: \
                 anyone who can reach the port could submit, cancel and evict. Set daemon.auth_token (clients send \
                 `authorization: Bearer <token>`), or listen on 127.0.0.1 / [::1] or a unix socket"
            );
        }
    }
    Ok(())
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
        let t = Tokens { auth: "user-secret".into(), admin: "admin-secret".into() };
        let status = "/cuzk.v1.ProvingEngine/GetStatus";
        let evict = "/cuzk.v1.ProvingEngine/EvictSRS";
        assert_eq!(t.check(status, &headers(None)).unwrap_err().code(), tonic::Code::Unauthenticated);
        assert_eq!(t.check(status, &headers(Some("Bearer nope"))).unwrap_err().code(), tonic::Code::Unauthenticated);
        t.check(status, &headers(Some("Bearer user-secret"))).unwrap();
        t.check(status, &headers(Some("Bearer admin-secret"))).unwrap();
        assert_eq!(t.check(evict, &headers(Some("Bearer user-secret"))).unwrap_err().code(), tonic::Code::PermissionDenied);
        t.check(evict, &headers(Some("Bearer admin-secret"))).unwrap();
        // No tokens: everything passes (the socket's mode is the guard).
        Tokens::default().check(evict, &headers(None)).unwrap();
        // Only an admin token: ordinary calls pass, admin calls need it.
        let a = Tokens { auth: String::new(), admin: "a".into() };
        a.check(status, &headers(None)).unwrap();
        assert!(a.check("/cuzk.v1.ProvingEngine/CancelProof", &headers(None)).is_err());
    }

    #[test]
    fn exposure_needs_a_token() {
        let mut d = DaemonConfig { listen: "0.0.0.0:9820".into(), ..Default::default() };
        assert!(check_exposure(&d).unwrap_err().to_string().contains("daemon.auth_token"));
        d.auth_token = "t".into();
        check_exposure(&d).unwrap();
        for ok in ["127.0.0.1:9820", "[::1]:9820", "localhost:9820", "unix:///run/cuzk/cuzk.sock"] {
            let d = DaemonConfig { listen: ok.into(), ..Default::default() };
            check_exposure(&d).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in ["10.0.0.5:9820", "[::]:9820", "myhost:9820"] {
            let d = DaemonConfig { listen: bad.into(), ..Default::default() };
            assert!(check_exposure(&d).is_err(), "{bad}");
        }
    }
}
