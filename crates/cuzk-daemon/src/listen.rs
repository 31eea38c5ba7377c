//! The gRPC listener: `unix:///path/to.sock` (parent directory created, a stale socket
//! replaced, mode 0660, the file removed again on shutdown; any `:authority` accepted) or a TCP
//! `host:port`, and the tonic server on it with the configured message-size limits.

use std::future::Future;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cuzk_proto::server::ProvingEngineServer;
use tokio::net::{TcpListener, UnixListener};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tokio_stream::StreamExt;

use crate::auth::{Checked, Tokens};
use crate::receive_gate::{ReceiveGate, RECEIVE_WAIT};
use crate::service::Service;
use crate::unix_authority::AuthorityFix;

/// Where the gRPC server listens, parsed from `daemon.listen`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    Unix(PathBuf),
    Tcp(String),
}

impl Address {
    pub fn parse(s: &str) -> Result<Address> {
        let s = s.trim();
        if let Some(path) = s.strip_prefix("unix://") {
            if !path.starts_with('/') {
                bail!("listen address {s:?}: a unix socket path must be absolute (unix:///run/cuzk/cuzk.sock)");
            }
            return Ok(Address::Unix(path.into()));
        }
        if s.is_empty() {
            bail!("listen address is empty (expected unix:///path/to.sock or host:port)");
        }
        if s.contains("://") {
            bail!("listen address {s:?}: only unix:// or a plain host:port is supported");
        }
        Ok(Address::Tcp(s.to_string()))
    }
}

/// The unix socket file, removed when dropped (after the server has stopped).
pub struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        match std::fs::remove_file(&self.0) {
            Ok(()) => tracing::info!(path = %self.0.display(), "removed socket"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %self.0.display(), error = %e, "could not remove socket"),
        }
    }
}

enum Inner {
    Unix(UnixListener),
    Tcp(TcpListener),
}

/// A bound gRPC listener, ready to serve.
pub struct GrpcListener {
    inner: Inner,
    description: String,
}

impl GrpcListener {
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Serve `service` until `shutdown` completes; then stop accepting connections, let the
    /// RPCs in progress finish, and return.
    pub async fn serve(
        self,
        service: Service,
        max_message_bytes: usize,
        receive_slots: usize,
        tokens: Tokens,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<()> {
        let svc = ProvingEngineServer::new(service)
            .max_decoding_message_size(max_message_bytes)
            .max_encoding_message_size(max_message_bytes);
        // Authentication first, so that a caller without the token never takes a receiving slot.
        let gated = ReceiveGate::new(svc, receive_slots, RECEIVE_WAIT);
        let router = tonic::transport::Server::builder().add_service(Checked::new(gated, tokens));
        match self.inner {
            // Any :authority is accepted on the unix socket (unix_authority.rs).
            Inner::Unix(l) => {
                let incoming = UnixListenerStream::new(l).map(|c| c.map(AuthorityFix::new));
                router.serve_with_incoming_shutdown(incoming, shutdown).await
            }
            Inner::Tcp(l) => router.serve_with_incoming_shutdown(TcpListenerStream::new(l), shutdown).await,
        }
        .with_context(|| format!("gRPC server on {}", self.description))
    }
}

/// Bind `addr`. For a unix socket also returns the guard that removes the file.
pub async fn bind(addr: &str) -> Result<(GrpcListener, Option<SocketFile>)> {
    match Address::parse(addr)? {
        Address::Unix(path) => {
            let listener = bind_unix(&path)?;
            let description = format!("unix://{}", path.display());
            Ok((GrpcListener { inner: Inner::Unix(listener), description }, Some(SocketFile(path))))
        }
        Address::Tcp(hostport) => {
            let listener = TcpListener::bind(&hostport).await.with_context(|| format!("binding gRPC listener {hostport}"))?;
            let description = listener.local_addr().map(|a| a.to_string()).unwrap_or(hostport);
            Ok((GrpcListener { inner: Inner::Tcp(listener), description }, None))
        }
    }
}

fn bind_unix(path: &Path) -> Result<UnixListener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating socket directory {}", dir.display()))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            // A socket someone still answers on belongs to a running daemon: leave it alone.
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                bail!("{} is in use (another cuzk-daemon is listening on it)", path.display());
            }
            std::fs::remove_file(path).with_context(|| format!("removing stale socket {}", path.display()))?;
            tracing::info!(path = %path.display(), "removed stale socket");
        }
        Ok(_) => bail!("{} exists and is not a socket; refusing to replace it", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("checking {}", path.display())),
    }
    let listener = UnixListener::bind(path).with_context(|| format!("binding unix socket {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
        .with_context(|| format!("setting mode 0660 on {}", path.display()))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(Address::parse("unix:///run/cuzk/cuzk.sock").unwrap(), Address::Unix("/run/cuzk/cuzk.sock".into()));
        assert_eq!(Address::parse("127.0.0.1:9820").unwrap(), Address::Tcp("127.0.0.1:9820".into()));
        assert!(Address::parse("unix://relative.sock").is_err());
        assert!(Address::parse("http://x:1").is_err());
        assert!(Address::parse("").is_err());
    }
}
