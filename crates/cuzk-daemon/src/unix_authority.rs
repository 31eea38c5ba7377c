//! The unix listener's `:authority` fix: grpc-go (Curio) sends `localhost` on a unix socket,
//! but grpcio (Python, since 1.57), grpc-java, grpc-swift and others send the socket path,
//! percent-encoded or not. hyper's HTTP/2 layer (h2) parses `:authority` as a URI authority and
//! resets such a stream with PROTOCOL_ERROR before any cuzk code runs (hyperium/h2#487, open),
//! so those clients cannot call the daemon at all. On a unix socket the authority means
//! nothing (the socket path already chose the server), so the listener accepts any.
//!
//! How: every unix connection's client-to-server bytes pass through [`Rewriter`], which
//! follows the HTTP/2 framing. Frames other than HEADERS/CONTINUATION (DATA, SETTINGS, ...)
//! stream through untouched. A header block is gathered until END_HEADERS, decoded with the
//! client's HPACK context, an `:authority` that is not a valid authority is replaced by
//! `localhost`, and the block is re-encoded as plain literals (no dynamic table, so the
//! server's HPACK context never depends on ours) into one HEADERS frame and as many
//! CONTINUATION frames as the 16 KiB minimum frame size needs. Padding is dropped; the
//! END_STREAM flag and a PRIORITY field are kept. Every block is re-encoded, not only those
//! that need it: the client's dynamic-table entries exist only in our decoder, so a block
//! passed through verbatim could refer to entries the server never saw.
//!
//! Server-to-client bytes are not touched. Malformed framing or HPACK ends the connection
//! with an I/O error, as h2 itself would with a GOAWAY. TCP connections do not pass here.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use loona_hpack::encoder::encode_integer_into;
use loona_hpack::Decoder;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;

const PREFACE_LEN: usize = 24;
const FRAME_HEAD_LEN: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Every HTTP/2 peer accepts frames of this size (RFC 9113 §4.2), whatever it advertised.
const MAX_FRAME: usize = 16_384;
/// The HPACK table size the server advertises (h2's default; tonic does not change it): the
/// client's dynamic table can never be larger.
const HPACK_TABLE: usize = 4096;
/// A header block larger than this ends the connection (gRPC requests carry a few hundred
/// bytes; h2 itself refuses header lists over 16 KiB by default).
const MAX_BLOCK: usize = 1 << 20;
/// A decoded header list larger than this ends the connection (RFC 9113 §6.5.2 counts each
/// header as name + value + 32). The block's bytes are bounded by [`MAX_BLOCK`], but one-byte
/// references to a 4 KiB dynamic-table entry decode to ~4000 times their size: a 1 MiB block
/// to ~4 GiB (issue #36, item 3). gRPC requests carry a few hundred bytes of headers.
const MAX_HEADER_LIST: usize = 64 << 10;
/// What replaces an authority that is not one.
const LOCALHOST: &[u8] = b"localhost";

/// A header block being gathered: its HEADERS frame's stream, flags and priority field, and
/// the fragments so far.
struct Block {
    stream: u32,
    end_stream: bool,
    priority: Option<[u8; 5]>,
    fragment: Vec<u8>,
}

enum State {
    /// The client connection preface, passed through (h2 checks it).
    Preface { seen: usize },
    /// A frame header, `have` of its 9 bytes so far.
    Head { bytes: [u8; FRAME_HEAD_LEN], have: usize },
    /// The rest of a frame passed through untouched.
    Pass { left: usize },
    /// The payload of a HEADERS or CONTINUATION frame, gathered.
    Collect { kind: u8, flags: u8, stream: u32, len: usize, payload: Vec<u8> },
}

/// The client-to-server HTTP/2 byte stream of one connection, with every header block
/// re-encoded and invalid `:authority` values replaced.
pub struct Rewriter {
    state: State,
    block: Option<Block>,
    hpack: Decoder<'static>,
    /// How many `:authority` values were replaced (logged once per connection).
    replaced: u64,
}

impl Default for Rewriter {
    fn default() -> Self {
        let mut hpack = Decoder::new();
        hpack.set_max_allowed_table_size(HPACK_TABLE);
        Rewriter { state: State::Preface { seen: 0 }, block: None, hpack, replaced: 0 }
    }
}

fn protocol(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("unix socket HTTP/2: {message}"))
}

impl Rewriter {
    /// Take `input` (any split of the stream) and append what the server should see to `out`.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        while !input.is_empty() {
            match &mut self.state {
                State::Preface { seen } => {
                    let n = (PREFACE_LEN - *seen).min(input.len());
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *seen += n;
                    if *seen == PREFACE_LEN {
                        self.state = State::Head { bytes: [0; FRAME_HEAD_LEN], have: 0 };
                    }
                }
                State::Head { bytes, have } => {
                    let n = (FRAME_HEAD_LEN - *have).min(input.len());
                    bytes[*have..*have + n].copy_from_slice(&input[..n]);
                    input = &input[n..];
                    *have += n;
                    if *have == FRAME_HEAD_LEN {
                        let head = *bytes;
                        self.start_frame(head, out)?;
                    }
                }
                State::Pass { left } => {
                    let n = (*left).min(input.len());
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n;
                    if *left == 0 {
                        self.state = State::Head { bytes: [0; FRAME_HEAD_LEN], have: 0 };
                    }
                }
                State::Collect { len, payload, .. } => {
                    let n = (*len - payload.len()).min(input.len());
                    payload.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if payload.len() == *len {
                        let State::Collect { kind, flags, stream, payload, .. } =
                            std::mem::replace(&mut self.state, State::Head { bytes: [0; FRAME_HEAD_LEN], have: 0 })
                        else {
                            unreachable!()
                        };
                        self.end_frame(kind, flags, stream, payload, out)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn start_frame(&mut self, head: [u8; FRAME_HEAD_LEN], out: &mut Vec<u8>) -> io::Result<()> {
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5] & 0x7f, head[6], head[7], head[8]]);
        let gathered = self.block.as_ref().map_or(0, |b| b.fragment.len());
        let header_frame = kind == HEADERS || (kind == CONTINUATION && self.block.is_some());
        if header_frame {
            if gathered + len > MAX_BLOCK {
                return Err(protocol(format!("a header block over {MAX_BLOCK} bytes")));
            }
            self.state = State::Collect { kind, flags, stream, len, payload: Vec::with_capacity(len) };
            if len == 0 {
                let State::Collect { payload, .. } =
                    std::mem::replace(&mut self.state, State::Head { bytes: [0; FRAME_HEAD_LEN], have: 0 })
                else {
                    unreachable!()
                };
                self.end_frame(kind, flags, stream, payload, out)?;
            }
            return Ok(());
        }
        if self.block.is_some() {
            return Err(protocol(format!("frame type {kind:#x} inside a header block (CONTINUATION expected)")));
        }
        // Anything else, a stray CONTINUATION included, is the server's to judge.
        out.extend_from_slice(&head);
        self.state =
            if len == 0 { State::Head { bytes: [0; FRAME_HEAD_LEN], have: 0 } } else { State::Pass { left: len } };
        Ok(())
    }

    fn end_frame(&mut self, kind: u8, flags: u8, stream: u32, payload: Vec<u8>, out: &mut Vec<u8>) -> io::Result<()> {
        if kind == HEADERS {
            if self.block.is_some() {
                return Err(protocol("HEADERS inside a header block (CONTINUATION expected)".into()));
            }
            let mut body = &payload[..];
            let mut pad = 0;
            if flags & PADDED != 0 {
                let (&p, rest) =
                    body.split_first().ok_or_else(|| protocol("PADDED HEADERS without a pad length".into()))?;
                pad = usize::from(p);
                body = rest;
            }
            let mut priority = None;
            if flags & PRIORITY != 0 {
                if body.len() < 5 {
                    return Err(protocol("HEADERS too short for its PRIORITY field".into()));
                }
                priority = Some(body[..5].try_into().unwrap());
                body = &body[5..];
            }
            if pad > body.len() {
                return Err(protocol("HEADERS padding longer than the frame".into()));
            }
            let fragment = body[..body.len() - pad].to_vec();
            self.block = Some(Block { stream, end_stream: flags & END_STREAM != 0, priority, fragment });
        } else {
            let block = self.block.as_mut().expect("CONTINUATION is collected only inside a block");
            if block.stream != stream {
                return Err(protocol(format!(
                    "CONTINUATION on stream {stream} inside stream {}'s header block",
                    block.stream
                )));
            }
            block.fragment.extend_from_slice(&payload);
        }
        if flags & END_HEADERS != 0 {
            let block = self.block.take().expect("set above");
            self.emit(block, out)?;
        }
        Ok(())
    }

    /// Decode `block`, fix its authority, and write it re-encoded as frames.
    fn emit(&mut self, block: Block, out: &mut Vec<u8>) -> io::Result<()> {
        // The decoder is third-party code reading the client's bytes: a panic in it must end
        // this connection, not unwind through hyper's connection task.
        // Re-encoded as the decoder hands each header over, never gathered as owned copies,
        // and only up to MAX_HEADER_LIST: past that nothing more is kept (references to the
        // dynamic table come in as borrows) and the block is refused once decoded.
        let hpack = &mut self.hpack;
        let replaced = &mut self.replaced;
        let mut encoded = Vec::with_capacity(block.fragment.len() * 2);
        let mut list = 0usize;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            hpack.decode_with_cb(&block.fragment, |name, value| {
                list = list.saturating_add(name.len() + value.len() + 32);
                if list > MAX_HEADER_LIST {
                    return;
                }
                let value: &[u8] = if name.as_ref() == b":authority" && http::uri::Authority::try_from(value.as_ref()).is_err() {
                    *replaced += 1;
                    if *replaced == 1 {
                        tracing::debug!(authority = %String::from_utf8_lossy(&value), "unix socket: the client's :authority is not an authority; treated as localhost");
                    }
                    LOCALHOST
                } else {
                    &value
                };
                literal(&mut encoded, &name, value);
            })
        }))
        .map_err(|_| protocol("the HPACK decoder panicked on a header block".into()))?
        .map_err(|e| protocol(format!("HPACK: {e:?}")))?;
        if list > MAX_HEADER_LIST {
            return Err(protocol(format!("a header list of {list} bytes decoded, over {MAX_HEADER_LIST}")));
        }
        write_frames(out, &block, &encoded);
        Ok(())
    }
}

/// One header as an HPACK "literal header field without indexing, new name", no Huffman.
fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x00);
    for s in [name, value] {
        encode_integer_into(s.len(), 7, 0, out).expect("writing to a Vec");
        out.extend_from_slice(s);
    }
}

/// The re-encoded block as HEADERS (+ CONTINUATION) frames of at most [`MAX_FRAME`] bytes.
fn write_frames(out: &mut Vec<u8>, block: &Block, encoded: &[u8]) {
    let head = |out: &mut Vec<u8>, len: usize, kind: u8, flags: u8| {
        out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
        out.extend_from_slice(&block.stream.to_be_bytes());
    };
    let prefix = if block.priority.is_some() { 5 } else { 0 };
    let first = encoded.len().min(MAX_FRAME - prefix);
    let mut flags = if block.end_stream { END_STREAM } else { 0 };
    if block.priority.is_some() {
        flags |= PRIORITY;
    }
    if first == encoded.len() {
        flags |= END_HEADERS;
    }
    head(out, prefix + first, HEADERS, flags);
    if let Some(p) = &block.priority {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(&encoded[..first]);
    let mut rest = &encoded[first..];
    while !rest.is_empty() {
        let n = rest.len().min(MAX_FRAME);
        head(out, n, CONTINUATION, if n == rest.len() { END_HEADERS } else { 0 });
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
    }
}

/// A unix connection whose client-to-server bytes pass through a [`Rewriter`].
pub struct AuthorityFix {
    inner: UnixStream,
    rewriter: Rewriter,
    /// Rewritten bytes not yet read by the server, from `taken`.
    ready: Vec<u8>,
    taken: usize,
    scratch: Box<[u8]>,
}

impl AuthorityFix {
    pub fn new(inner: UnixStream) -> Self {
        AuthorityFix {
            inner,
            rewriter: Rewriter::default(),
            ready: Vec::new(),
            taken: 0,
            scratch: vec![0; 64 << 10].into_boxed_slice(),
        }
    }
}

impl AsyncRead for AuthorityFix {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.taken < this.ready.len() {
                let n = (this.ready.len() - this.taken).min(buf.remaining());
                buf.put_slice(&this.ready[this.taken..this.taken + n]);
                this.taken += n;
                if this.taken == this.ready.len() {
                    this.ready.clear();
                    this.taken = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                return Poll::Ready(Ok(())); // end of stream
            }
            this.rewriter.feed(read.filled(), &mut this.ready)?;
        }
    }
}

impl AsyncWrite for AuthorityFix {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for AuthorityFix {
    type ConnectInfo = <UnixStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// Parse `bytes` (after the preface) into frames: (kind, flags, stream, payload).
    fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
        let mut v = Vec::new();
        while !bytes.is_empty() {
            let len = (usize::from(bytes[0]) << 16) | (usize::from(bytes[1]) << 8) | usize::from(bytes[2]);
            let stream = u32::from_be_bytes([bytes[5] & 0x7f, bytes[6], bytes[7], bytes[8]]);
            v.push((bytes[3], bytes[4], stream, bytes[9..9 + len].to_vec()));
            bytes = &bytes[9 + len..];
        }
        v
    }

    /// The headers of each header block in `frames`, decoded by a fresh server-side decoder.
    fn server_view(frames: &[(u8, u8, u32, Vec<u8>)]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut decoder = Decoder::new();
        let mut blocks = Vec::new();
        let mut fragment = Vec::new();
        for (kind, flags, _, payload) in frames {
            match *kind {
                HEADERS => fragment = payload[if flags & PRIORITY != 0 { 5 } else { 0 }..].to_vec(),
                CONTINUATION => fragment.extend_from_slice(payload),
                _ => continue,
            }
            if flags & END_HEADERS != 0 {
                blocks.push(decoder.decode(&fragment).unwrap());
            }
        }
        blocks
    }

    fn authority(headers: &[(Vec<u8>, Vec<u8>)]) -> String {
        let (_, v) = headers.iter().find(|(n, _)| n.as_slice() == b":authority").unwrap();
        String::from_utf8(v.clone()).unwrap()
    }

    /// Feed `input` to a rewriter in pieces of `step` bytes.
    fn rewrite(input: &[u8], step: usize) -> io::Result<Vec<u8>> {
        let mut r = Rewriter::default();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            r.feed(piece, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn authorities_are_fixed_through_the_clients_dynamic_table_and_other_frames_pass_untouched() {
        // The client's own encoder indexes headers, so the second request refers to the first
        // request's entries: only a rewriter that decoded the first block can read it.
        let mut client = loona_hpack::Encoder::new();
        let request = |path: &str, authority: &str, extra: &str| -> Vec<(Vec<u8>, Vec<u8>)> {
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", path),
                (":authority", authority),
                ("te", "trailers"),
                ("x-extra", extra),
            ]
            .iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
        };
        let first = request("/cuzk.v1.ProvingEngine/GetStatus", "%2Frun%2Fcuzk%2Fcuzk.sock", "a");
        let second = request("/cuzk.v1.ProvingEngine/GetStatus", "%2Frun%2Fcuzk%2Fcuzk.sock", "a");
        // Too long for any table: re-encoded, it needs CONTINUATION frames.
        let third = request("/cuzk.v1.ProvingEngine/Prove", "localhost:1", &"v".repeat(40_000));
        let encode = |c: &mut loona_hpack::Encoder, h: &[(Vec<u8>, Vec<u8>)]| {
            c.encode(h.iter().map(|(n, v)| (n.as_slice(), v.as_slice())))
        };
        let (b1, b2, b3) = (encode(&mut client, &first), encode(&mut client, &second), encode(&mut client, &third));
        assert!(b2.len() < 100, "the client's second block is indexed ({} bytes)", b2.len());

        let mut input = CLIENT_PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100])); // SETTINGS
                                                               // Block 1: PADDED and PRIORITY, split over a CONTINUATION.
        let mut p = vec![4u8];
        p.extend_from_slice(&[0, 0, 0, 0, 15]);
        p.extend_from_slice(&b1[..10]);
        p.extend_from_slice(&[0; 4]);
        input.extend(frame(HEADERS, PADDED | PRIORITY, 1, &p));
        input.extend(frame(CONTINUATION, END_HEADERS, 1, &b1[10..]));
        input.extend(frame(0x0, END_STREAM, 1, &[0, 0, 0, 0, 0])); // DATA
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &b2));
        input.extend(frame(HEADERS, END_HEADERS, 5, &b3));
        input.extend(frame(0x0, 0, 5, &vec![7u8; 40_000])); // DATA larger than any read

        for step in [1, 7, 4096, input.len()] {
            let out = rewrite(&input, step).unwrap();
            assert_eq!(&out[..CLIENT_PREFACE.len()], CLIENT_PREFACE);
            let fs = frames(&out[CLIENT_PREFACE.len()..]);
            let blocks = server_view(&fs);
            assert_eq!(blocks.len(), 3);
            assert_eq!(authority(&blocks[0]), "localhost");
            assert_eq!(authority(&blocks[1]), "localhost");
            assert_eq!(authority(&blocks[2]), "localhost:1", "a valid authority is kept");
            for (got, sent) in blocks.iter().zip([&first, &second, &third]) {
                let others = |h: &[(Vec<u8>, Vec<u8>)]| {
                    h.iter().filter(|(n, _)| n.as_slice() != b":authority").cloned().collect::<Vec<_>>()
                };
                assert_eq!(others(got), others(sent), "every other header as sent, in order");
            }
            // Frames: SETTINGS untouched; block 1 keeps PRIORITY and loses its padding; every
            // header frame within the minimum frame size; END_STREAM where the client put it.
            assert_eq!(fs[0], (0x4, 0, 0, vec![0, 3, 0, 0, 0, 100]));
            let (kind, flags, stream, payload) = &fs[1];
            assert_eq!((*kind, *stream, flags & (PRIORITY | PADDED | END_STREAM)), (HEADERS, 1, PRIORITY));
            assert_eq!(&payload[..5], &[0, 0, 0, 0, 15]);
            assert!(fs.iter().filter(|f| f.0 == HEADERS || f.0 == CONTINUATION).all(|f| f.3.len() <= MAX_FRAME));
            let data: Vec<_> = fs.iter().filter(|f| f.0 == 0).collect();
            assert_eq!(data[0], &(0u8, END_STREAM, 1u32, vec![0u8; 5]));
            assert_eq!(data[1].3, vec![7u8; 40_000]);
            let stream3 = fs.iter().find(|f| f.0 == HEADERS && f.2 == 3).unwrap();
            assert_eq!(stream3.1 & END_STREAM, END_STREAM);
            let continuations = fs.iter().filter(|f| f.0 == CONTINUATION && f.2 == 5).count();
            assert!(continuations >= 2, "a 40 kB block is split: {continuations} CONTINUATION frames");
            // Only the last frame of each block ends it.
            let block5: Vec<_> = fs.iter().filter(|f| (f.0 == HEADERS || f.0 == CONTINUATION) && f.2 == 5).collect();
            let ends: Vec<bool> = block5.iter().map(|f| f.1 & END_HEADERS != 0).collect();
            assert_eq!(ends, (0..block5.len()).map(|i| i + 1 == block5.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn malformed_framing_and_hpack_end_the_connection() {
        let with = |frames: &[Vec<u8>]| {
            let mut input = CLIENT_PREFACE.to_vec();
            for f in frames {
                input.extend_from_slice(f);
            }
            rewrite(&input, 3)
        };
        // A DATA frame where the header block's CONTINUATION must come.
        assert!(with(&[frame(HEADERS, 0, 1, &[0x82]), frame(0x0, 0, 1, &[])]).is_err());
        // A CONTINUATION of another stream.
        assert!(with(&[frame(HEADERS, 0, 1, &[0x82]), frame(CONTINUATION, END_HEADERS, 3, &[0x84])]).is_err());
        // Padding longer than the frame; a PRIORITY field cut short.
        assert!(with(&[frame(HEADERS, END_HEADERS | PADDED, 1, &[9, 0x82])]).is_err());
        assert!(with(&[frame(HEADERS, END_HEADERS | PRIORITY, 1, &[0, 0])]).is_err());
        // An index into an empty dynamic table; a table size over the advertised one.
        assert!(with(&[frame(HEADERS, END_HEADERS, 1, &[0xbe])]).is_err());
        assert!(with(&[frame(HEADERS, END_HEADERS, 1, &[0x3f, 0xe1, 0xff, 0x03])]).is_err());
        // A block that never ends grows no further than the bound.
        let big = vec![0u8; MAX_FRAME];
        let mut fs = vec![frame(HEADERS, 0, 1, &big)];
        fs.extend((0..MAX_BLOCK / MAX_FRAME).map(|_| frame(CONTINUATION, 0, 1, &big)));
        assert!(with(&fs).is_err());
        // Random bytes after the preface: an error or a pass, never a panic.
        random_bytes_never_panic();
    }

    /// Issue #36, item 3: a 4 KiB literal put in the dynamic table, then one-byte references
    /// to it, decode to far more than the block's size; the block is refused once its header
    /// list passes MAX_HEADER_LIST, and nothing of that size is built.
    #[test]
    fn references_to_a_large_table_entry_cannot_blow_up_a_small_block() {
        let mut block = vec![0x40, 0x01, b'x'];
        let value = vec![b'v'; 4000];
        encode_integer_into(value.len(), 7, 0, &mut block).unwrap();
        block.extend_from_slice(&value);
        // Index 62, the newest dynamic entry, 200,000 times: ~800 MB of decoded headers.
        block.extend(std::iter::repeat_n(0xbe, 200_000));
        let mut input = CLIENT_PREFACE.to_vec();
        let mut chunks = block.chunks(MAX_FRAME).peekable();
        let mut first = true;
        while let Some(c) = chunks.next() {
            let flags = if chunks.peek().is_none() { END_HEADERS } else { 0 };
            input.extend_from_slice(&frame(if first { HEADERS } else { CONTINUATION }, flags, 1, c));
            first = false;
        }
        let e = rewrite(&input, 1 << 16).unwrap_err();
        assert!(e.to_string().contains("header list"), "{e}");
        // Ten references (~44 KiB of headers) are below the cap and pass.
        let mut small = vec![0x40, 0x01, b'x'];
        encode_integer_into(value.len(), 7, 0, &mut small).unwrap();
        small.extend_from_slice(&value);
        small.extend(std::iter::repeat_n(0xbe, 10));
        let mut input = CLIENT_PREFACE.to_vec();
        input.extend_from_slice(&frame(HEADERS, END_HEADERS, 1, &small));
        let out = rewrite(&input, 7).unwrap();
        let view = server_view(&frames(&out[PREFACE_LEN..]));
        assert_eq!(view[0].len(), 11);
    }

    fn random_bytes_never_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut bytes = Vec::new();
            for _ in 0..64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                bytes.push(x as u8);
            }
            // Small lengths, so that frames end within the input.
            bytes[0] = 0;
            bytes[1] = 0;
            bytes[2] &= 0x1f;
            bytes[3] = if x & 1 == 0 { HEADERS } else { CONTINUATION };
            let mut input = CLIENT_PREFACE.to_vec();
            input.extend_from_slice(&bytes);
            let _ = rewrite(&input, 5);
        }
    }
}
