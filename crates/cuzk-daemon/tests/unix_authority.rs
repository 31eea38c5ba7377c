//! The daemon answers whatever `:authority` a client sends on the unix socket (issue #15):
//! grpc-go (Curio) sends `localhost`, grpcio the percent-encoded socket path, grpc-java the
//! bare path. hyper's h2 alone resets the last two with PROTOCOL_ERROR; the listener's
//! rewriter (`src/unix_authority.rs`) replaces them first. No Rust client library can send
//! such an authority (the `http` crate refuses it client side too), so this test speaks
//! HTTP/2 by hand: the preface, an empty SETTINGS frame, one HEADERS frame (HPACK literals,
//! no Huffman) and one DATA frame with an empty GetStatus message. A grpcio client with its
//! default authority is `crates/cuzk-bench/tests/python_wire_compat.rs`.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// One HTTP/2 frame: 24-bit length, type, flags, stream id.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// HPACK "literal header field without indexing, new name" (names and values under 127 bytes).
fn literal(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0x00);
    block.push(name.len() as u8);
    block.extend_from_slice(name.as_bytes());
    block.push(value.len() as u8);
    block.extend_from_slice(value.as_bytes());
}

/// What the server does with stream 1: Some(error code) for RST_STREAM, None for a response.
fn call_with_authority(socket: &std::path::Path, authority: &str) -> Option<u32> {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(0x4, 0, 0, &[])); // SETTINGS, defaults
    let mut block = Vec::new();
    literal(&mut block, ":method", "POST");
    literal(&mut block, ":scheme", "http");
    literal(&mut block, ":path", "/cuzk.v1.ProvingEngine/GetStatus");
    literal(&mut block, ":authority", authority);
    literal(&mut block, "content-type", "application/grpc");
    literal(&mut block, "te", "trailers");
    out.extend(frame(0x1, 0x4, 1, &block)); // HEADERS, END_HEADERS
    out.extend(frame(0x0, 0x1, 1, &[0, 0, 0, 0, 0])); // DATA: an empty message, END_STREAM
    s.write_all(&out).unwrap();
    loop {
        let mut head = [0u8; 9];
        s.read_exact(&mut head).expect("the server closed or said nothing about stream 1");
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let stream = u32::from_be_bytes([head[5] & 0x7f, head[6], head[7], head[8]]);
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).unwrap();
        match (head[3], stream) {
            (0x3, 1) => return Some(u32::from_be_bytes(payload[..4].try_into().unwrap())),
            (0x1, 1) => return None,
            (0x7, _) => panic!("GOAWAY before an answer on stream 1: {payload:?}"),
            // The server's SETTINGS: acknowledge, as a client must.
            (0x4, 0) if head[4] & 0x1 == 0 => s.write_all(&frame(0x4, 0x1, 0, &[])).unwrap(),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_answers_any_authority() {
    let params = tempfile::tempdir().unwrap();
    let running = common::start(params.path(), "", "").await;
    let socket = running.socket.clone();
    let answers = tokio::task::spawn_blocking(move || {
        let path = socket.display().to_string();
        ["localhost".to_string(), path.replace('/', "%2F"), path, String::new()]
            .map(|a| (call_with_authority(&socket, &a), a))
    })
    .await
    .unwrap();
    for (reset, authority) in answers {
        assert_eq!(reset, None, "`:authority: {authority}` was reset instead of answered");
    }
    running.stop(Duration::from_secs(30));
}
