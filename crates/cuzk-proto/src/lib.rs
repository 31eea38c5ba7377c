//! cuzk's gRPC API, generated at build time from `proto/cuzk/v1/proving.proto`.
//!
//! `v1` holds the messages and enums of package `cuzk.v1`; `v1::proving_engine_client` and
//! `v1::proving_engine_server` (re-exported as [`client`] and [`server`]) hold the tonic
//! client and the server trait.

/// Package `cuzk.v1`: messages, enums, client and server.
pub mod v1 {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("cuzk.v1");
}

/// The tonic client: `ProvingEngineClient`.
pub mod client {
    pub use crate::v1::proving_engine_client::ProvingEngineClient;
}

/// The server side: the `ProvingEngine` trait to implement and `ProvingEngineServer` to serve it.
pub mod server {
    pub use crate::v1::proving_engine_server::{ProvingEngine, ProvingEngineServer};
}
