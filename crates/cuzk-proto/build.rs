//! Compiles `proto/cuzk/v1/proving.proto` (at the workspace root) into Rust at build time.
//! The .proto is parsed by protox, a protobuf compiler written in Rust, so no system
//! `protoc` is needed; tonic-prost-build generates messages, client and server from the
//! resulting FileDescriptorSet.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto").canonicalize()?;
    let file = root.join("cuzk/v1/proving.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let fds = protox::compile([&file], [&root])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(fds)?;
    Ok(())
}
