// Long sppark Pippenger MSMs cut into chunks of points, with the caller's pause between them.
//
// Why: the wide path (msm_wide.cuh) pauses inside itself, but some long MSMs never reach it:
//   - streaming contexts (points on the host): a streaming 32 GiB PoRep's H, ~1.1 s;
//   - host scalars (the host path's B in G2: 2.6 s over the ~92 M dense points of a 32 GiB
//     WindowPoSt partition), or a dense MSM whose wide temporaries do not fit.
// Deadline work arriving then waited for all of it. Σ over the whole vector is the sum of the
// chunks' MSMs, so each chunk is one msm_t call and the pause runs between two of them.
//
// Cost: msm_t itself runs a long MSM as batches of ~2^24 points (its window is capped at 18
// bits), each batch ending in its own bucket reduction and host collect, so chunks of about
// that size add little work. What a chunk boundary loses is msm_t's overlap of the next
// batch's point upload with this batch's buckets; for host points that is put back here: the
// next chunk's points are copied into a second device buffer on a side stream while this
// chunk runs. Nothing of this MSM runs during a pause (the copy is waited for first).
//
// Declined (the caller runs msm_t over everything) without a pause hook, when the MSM fits in
// one chunk, or when the prefetch buffers do not fit on the device.
#pragma once

#include <algorithm>
#include <cstdint>

// Points per chunk, by default: about msm_t's own batch at these sizes (G1: 2^27 points in 8
// batches; G2: 92 M in 8), ~0.15 s of streaming G1 and ~0.3 s of resident G2 on an H200.
static const size_t CHUNK_G1_POINTS = (size_t)1 << 24;
static const size_t CHUNK_G2_POINTS = (size_t)3 << 22;

// A side stream that is destroyed however the scope is left.
struct side_stream_t {
    cudaStream_t s = nullptr;
    side_stream_t()  { CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
    ~side_stream_t() { if (s) (void)cudaStreamDestroy(s); }
    side_stream_t(const side_stream_t&) = delete;
    side_stream_t& operator=(const side_stream_t&) = delete;
};

// Σ over n points in chunks of at most max_chunk, pausing between chunks. host_points: null
// for resident points, else the host vector (its chunks are copied ahead, see above).
// run_range(d_points, offset, len, part): msm_t over points [offset, offset + len) and the
// same scalars; d_points is the chunk's copy for host points (its first point is point
// `offset`), null for resident ones. Returns false when declined, having run nothing.
template<class point, class affine, class run_t>
static bool chunked_msm(const gpu_t& gpu, const affine* host_points, size_t n, size_t max_chunk,
                        pause_hook_t& pause, point& out, run_t&& run_range)
{
    if (!pause.active() || max_chunk == 0 || n <= max_chunk)
        return false;
    const size_t nchunks = (n + max_chunk - 1) / max_chunk;
    // Equal chunks, a multiple of a warp (msm_t rounds its own sizes so).
    size_t chunk = (n + nchunks - 1) / nchunks;
    chunk = (chunk + WARP_SZ - 1) / WARP_SZ * WARP_SZ;

    side_stream_t side;
    optional_buffer_t<affine> bufs[2] = {{host_points ? chunk : 0, side.s}, {host_points ? chunk : 0, side.s}};
    if (host_points && (bufs[0].ptr == nullptr || bufs[1].ptr == nullptr))
        return false;
    auto copy_ahead = [&](size_t off, int slot) {
        size_t len = std::min(chunk, n - off);
        CUDA_OK(cudaMemcpyAsync(bufs[slot].ptr, host_points + off, len * sizeof(affine), cudaMemcpyHostToDevice, side.s));
    };
    if (host_points) {
        copy_ahead(0, 0);
        CUDA_OK(cudaStreamSynchronize(side.s));
    }

    out.inf();
    for (size_t off = 0, i = 0; off < n; off += chunk, i++) {
        const size_t len = std::min(chunk, n - off);
        const bool last = off + len >= n;
        if (host_points && !last)
            copy_ahead(off + len, (int)((i + 1) & 1));
        point part;
        run_range(host_points ? bufs[i & 1].ptr : nullptr, off, len, part);
        out.add(part);
        if (host_points && !last)
            CUDA_OK(cudaStreamSynchronize(side.s));
        if (!last) {
            gpu.sync();
            pause.at(gpu);
        }
    }
    return true;
}
