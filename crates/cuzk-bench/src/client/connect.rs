//! Where the daemon is and how to reach it: the global `--addr` (env `CUZK_ADDR`), accepting
//! `unix:///path/to.sock`, `http://host:port` or a bare `host:port`, and the tonic
//! `ProvingEngineClient` over it with Curio's 256 MiB message limits both ways.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use cuzk_proto::client::ProvingEngineClient;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

/// The daemon's default gRPC address (the `[daemon] listen` default).
pub const DEFAULT_ADDR: &str = "unix:///run/cuzk/cuzk.sock";
/// Largest message sent or accepted: what Curio's client allows (a 32 GiB C1 is ~50 MB).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;
/// How long establishing the connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The global `--addr` option.
#[derive(clap::Args, Clone, Debug)]
pub struct AddrArg {
    /// cuzk-daemon's gRPC address: unix:///path/to.sock, http://host:port or host:port.
    #[arg(long = "addr", global = true, env = "CUZK_ADDR", default_value = DEFAULT_ADDR)]
    pub addr: String,
}

/// A parsed daemon address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    Unix(PathBuf),
    /// An `http://host:port` URI.
    Http(String),
}

impl Addr {
    pub fn parse(s: &str) -> Result<Addr> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("unix:") {
            // unix:///abs/path (URI form) or unix:/abs/path (gRPC's short form).
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if !path.starts_with('/') {
                bail!("address {s:?}: a unix socket path must be absolute (unix:///run/cuzk/cuzk.sock)");
            }
            return Ok(Addr::Unix(path.into()));
        }
        if s.starts_with("https://") {
            bail!("address {s:?}: TLS is not supported; use http://host:port or unix:///path");
        }
        let hostport = s.strip_prefix("http://").unwrap_or(s).trim_end_matches('/');
        if hostport.is_empty() || hostport.contains("://") || !hostport.contains(':') {
            bail!("address {s:?}: expected unix:///path/to.sock, http://host:port or host:port");
        }
        Ok(Addr::Http(format!("http://{hostport}")))
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Unix(p) => write!(f, "unix://{}", p.display()),
            Addr::Http(u) => f.write_str(u),
        }
    }
}

/// The generated client type every subcommand uses.
pub type Client = ProvingEngineClient<Channel>;

/// Connect to the daemon at `addr` (eagerly: an unreachable daemon is an error here, not at
/// the first RPC).
pub async fn connect(addr: &str) -> Result<Client> {
    let parsed = Addr::parse(addr)?;
    let channel = match &parsed {
        Addr::Unix(path) => {
            let path = path.clone();
            // The URI is required by the API but unused: every connection goes to the socket.
            Endpoint::try_from("http://[::]:50051")?
                .connect_timeout(CONNECT_TIMEOUT)
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move { Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
                }))
                .await
        }
        Addr::Http(uri) => Endpoint::from_shared(uri.clone())?.connect_timeout(CONNECT_TIMEOUT).connect().await,
    }
    .map_err(|e| anyhow!("cannot connect to cuzk-daemon at {parsed}: {}", error_chain(&e)))?;
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}

/// An error and all its sources, "a: b: c" (tonic's transport errors say little on their own).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// A failed RPC as a readable error: "GetStatus: NotFound: job … is unknown".
pub fn rpc_error(rpc: &str, status: tonic::Status) -> anyhow::Error {
    let mut msg = format!("{rpc} failed: {:?}: {}", status.code(), status.message());
    if let Some(src) = std::error::Error::source(&status) {
        msg.push_str(&format!(" ({})", error_chain(src)));
    }
    anyhow!(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(Addr::parse("unix:///run/cuzk/cuzk.sock").unwrap(), Addr::Unix("/run/cuzk/cuzk.sock".into()));
        assert_eq!(Addr::parse("unix:/tmp/x.sock").unwrap(), Addr::Unix("/tmp/x.sock".into()));
        assert_eq!(Addr::parse("http://127.0.0.1:9820").unwrap(), Addr::Http("http://127.0.0.1:9820".into()));
        assert_eq!(Addr::parse("localhost:9820").unwrap(), Addr::Http("http://localhost:9820".into()));
        assert!(Addr::parse("unix://relative.sock").is_err());
        assert!(Addr::parse("https://x:1").is_err());
        assert!(Addr::parse("").is_err());
        assert!(Addr::parse("localhost").is_err());
    }
}
