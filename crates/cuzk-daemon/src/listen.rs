//! The gRPC listener: `unix:///path/to.sock` (parent directory created, a stale socket
//! replaced, mode 0660 from the start, the file removed again on shutdown; any `:authority`
//! accepted) or a TCP `host:port`, and the tonic server on it with the configured
//! message-size limits.

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
            let listener =
                TcpListener::bind(&hostport).await.with_context(|| format!("binding gRPC listener {hostport}"))?;
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
    create_socket(path)
}

/// Create the socket at `path`, mode 0660 from the moment it appears there. bind(2) creates
/// the file with the process's umask (0755, or wider), and a chmod after it left a moment in
/// which anyone could connect and keep the connection. So it is bound in a fresh directory
/// of its own (0700: nobody else can reach what is in it) beside `path`, set to 0660 there,
/// and hard-linked to `path`: link(2), unlike rename(2), fails if `path` exists, so a daemon
/// that bound it in the meantime keeps it. (Not a temporary umask: the umask is the whole
/// process's, and other threads create files and directories at the same time.)
fn create_socket(path: &Path) -> Result<UnixListener> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // Removed again when dropped, with the name it held (the socket lives on at `path`).
    let private = tempfile::Builder::new()
        .prefix(".cuzk-bind")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(dir)
        .with_context(|| format!("creating a private directory in {} to bind the socket in", dir.display()))?;
    let inner = private.path().join("s");
    let listener = UnixListener::bind(&inner).with_context(|| format!("binding unix socket {}", inner.display()))?;
    std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o660))
        .with_context(|| format!("setting mode 0660 on {}", inner.display()))?;
    std::fs::hard_link(&inner, path).with_context(|| format!("binding unix socket {}", path.display()))?;
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

    /// Issue #36 item 9d: the socket file is never wider than 0660, not even for the moment
    /// between its creation and a chmod: whoever connects in that moment keeps the connection.
    #[tokio::test]
    async fn the_socket_is_never_wider_than_0660() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cuzk.sock");
        // The widest umask, whatever the runner's: bind(2) would then create the file 0777.
        // SAFETY: umask(2) cannot fail; nothing else in this test binary creates files.
        let old = unsafe { libc::umask(0) };
        let created = create_socket(&path);
        unsafe { libc::umask(old) };
        let _listener = created.unwrap();
        let mode = std::fs::symlink_metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode & !0o660, 0, "mode {mode:o} right after the socket was created");
        // Nothing is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["cuzk.sock"]);
        // And the whole listener: a stale socket is replaced, the result still 0660.
        drop(_listener);
        let _listener = bind_unix(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o660);
    }
}
