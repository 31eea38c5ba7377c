// Multi-scalar multiplication contexts over sppark's Pippenger, in G1 and G2.
//
// A context belongs to one device and one point vector (one query of one SRS). Resident:
// the points are copied to the device once, at creation, into our own allocation (so that the
// split of msm_split.cuh can read them too), and every proof reuses them.
// Streaming: only the host pointer is kept and sppark copies the points per call (for cards
// too small to hold the SRS; the host pages should be pinned, see cuzk_host_register).
// A resident context may also be created without points and filled chunk by chunk
// (ctx_fill), so that a setup being generated never has the whole query on the host.
// Staged: the points live in host memory the context owns (page-locked when the driver grants
// it), filled like a resident context, and each run copies them up in chunks (staged_run) and
// sums each chunk by the fast paths (split, wide windows) as over resident points. It is for
// a device too small to hold every circuit's points at once: a query that runs rarely (a
// WindowPoSt's B in G2, 16 GiB at 32 GiB) gives its device bytes to the circuits that prove
// all day, at the price of copying them per run, mostly hidden behind the chunks' MSMs.
// Scalars are Fr in Montgomery form (blstrs' in-memory layout); results are Jacobian points
// in blst's layout. The caller serialises use of one device (sppark's per-device streams are
// shared by every context on that device).
// A run given a pause hook stops for it inside long MSMs: the wide path between its steps
// (msm_wide.cuh), sppark's Pippenger between chunks of points (msm_chunked.cuh).
#include "common.cuh"
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>
#include <type_traits>
#include "msm_split.cuh"
#include "msm_affine.cuh"
#include "msm_wide.cuh"
#include "msm_chunked.cuh"

// What a run is asked to do (the Rust side's MsmPath): sppark's Pippenger as it is; a witness
// MSM, split when it can be (msm_split.cuh); a dense MSM, with wide windows when it can be
// (msm_wide.cuh, whose buckets from 2^24 points in G1 and 2^25 in G2 are summed in affine
// coordinates, msm_affine.cuh); and, for benchmarks and tests only, the wide windows with one bucket kernel
// forced: sppark's XYZZ accumulate, or our affine rounds at any size.
enum msm_how_t : uint32_t { MSM_SPPARK = 0, MSM_WITNESS = 1, MSM_DENSE = 2, MSM_DENSE_XYZZ = 3, MSM_DENSE_AFFINE = 4 };

// The wide path's bucket kernel for a path (msm_wide.cuh).
static wide_buckets_t wide_buckets(uint32_t how)
{
    return how == MSM_DENSE_XYZZ ? WIDE_XYZZ : how == MSM_DENSE_AFFINE ? WIDE_AFFINE : WIDE_AFFINE_LARGE;
}

template<class bucket, class point, class affine>
struct msm_ctx {
    using engine_t = msm_t<bucket, point, affine, scalar_t>;
    size_t index;
    engine_t* engine;
    const affine* host_points;   // null when resident
    void* d_points;              // null when streaming
    size_t npoints;
    size_t chunk_points;         // msm_chunked.cuh: points between two pauses
    size_t stage_chunk_points = 0;   // staged: points per chunk of a run (0: STAGE_CHUNK_BYTES' worth)
    void* host_owned = nullptr;  // staged: the points, in host memory this context owns
    bool host_pinned = false;    // staged: host_owned is page-locked (cudaHostAlloc)
    uint32_t wide_group = 0;     // msm_wide.cuh: windows a group at most (0: as the room allows)
};

typedef msm_ctx<bucket_t, point_t, affine_t> msm_g1_ctx;
typedef msm_ctx<bucket_fp2_t, point_fp2_t, affine_fp2_t> msm_g2_ctx;

#include "subgroup.cuh"

// points == nullptr (resident only): the device memory is allocated but not written; the
// caller fills it with ctx_fill before any MSM.
template<class ctx_t, class affine>
static RustError ctx_create(size_t index, const affine* points, size_t npoints, bool resident, ctx_t** out)
{
    *out = nullptr;
    return guarded([&] {
        if (npoints == 0)
            throw std::invalid_argument("MSM context over zero points");
        if (points == nullptr && !resident)
            throw std::invalid_argument("a streaming MSM context needs its host points");
        const gpu_t& gpu = gpu_at(index);
        const size_t chunk = std::is_same<affine, affine_t>::value ? CHUNK_G1_POINTS : CHUNK_G2_POINTS;
        auto* ctx = new ctx_t{index, nullptr, resident ? nullptr : points, nullptr, npoints, chunk};
        try {
            if (resident) {
                device_malloc(gpu, &ctx->d_points, npoints * sizeof(affine));
                if (points != nullptr)
                    CUDA_OK(cudaMemcpy(ctx->d_points, points, npoints * sizeof(affine), cudaMemcpyHostToDevice));
            }
            // The engine holds buckets only; resident points are handed to it per call.
            ctx->engine = new typename ctx_t::engine_t(nullptr, npoints, sizeof(affine), (int)index);
        } catch (...) {
            if (ctx->d_points)
                (void)cudaFree(ctx->d_points);
            delete ctx;
            throw;
        }
        *out = ctx;
    });
}

// A staged context of npoints, its host memory allocated but not written (ctx_fill writes
// it). *pinned: whether the driver page-locked it; if not, the memory is ordinary and each
// run's copy goes through transfer.cu's staging slots instead of one DMA.
template<class ctx_t, class affine>
static RustError ctx_create_staged(size_t index, size_t npoints, ctx_t** out, bool* pinned)
{
    *out = nullptr;
    *pinned = false;
    return guarded([&] {
        if (npoints == 0)
            throw std::invalid_argument("MSM context over zero points");
        gpu_at(index);
        const size_t bytes = npoints * sizeof(affine);
        void* host = nullptr;
        bool is_pinned = true;
        if (cudaHostAlloc(&host, bytes, cudaHostAllocPortable) != cudaSuccess) {
            (void)cudaGetLastError();   // not sticky; ordinary memory does, more slowly
            is_pinned = false;
            host = malloc(bytes);
            if (host == nullptr)
                throw std::bad_alloc();
        }
        const size_t chunk = std::is_same<affine, affine_t>::value ? CHUNK_G1_POINTS : CHUNK_G2_POINTS;
        auto* ctx = new ctx_t{index, nullptr, (const affine*)host, nullptr, npoints, chunk, 0, host, is_pinned};
        try {
            ctx->engine = new typename ctx_t::engine_t(nullptr, npoints, sizeof(affine), (int)index);
        } catch (...) {
            if (is_pinned)
                (void)cudaFreeHost(host);
            else
                free(host);
            delete ctx;
            throw;
        }
        *out = ctx;
        *pinned = is_pinned;
    });
}

// Points [offset, offset + n) of a resident or staged context, from the host.
template<class ctx_t, class affine>
static RustError ctx_fill(ctx_t* ctx, size_t offset, const affine* points, size_t n)
{
    return guarded([&] {
        if (ctx->d_points == nullptr && ctx->host_owned == nullptr)
            throw std::invalid_argument("only a resident or staged MSM context can be filled");
        if (offset > ctx->npoints || n > ctx->npoints - offset)
            throw std::invalid_argument("MSM fill beyond the context's points");
        gpu_at(ctx->index);
        if (ctx->host_owned != nullptr)
            memcpy((affine*)ctx->host_owned + offset, points, n * sizeof(affine));
        else
            CUDA_OK(cudaMemcpy((affine*)ctx->d_points + offset, points, n * sizeof(affine), cudaMemcpyHostToDevice));
    });
}

extern "C" RustError cuzk_copy_to_device(size_t index, void* d_dst, const void* src, size_t bytes, float* ms);

template<class ctx_t>
static void ctx_destroy(ctx_t* ctx)
{
    if (ctx == nullptr)
        return;
    try {
        select_gpu((int)ctx->index);
        delete ctx->engine;
        if (ctx->d_points)
            (void)cudaFree(ctx->d_points);
        if (ctx->host_owned && ctx->host_pinned)
            (void)cudaFreeHost(ctx->host_owned);
    } catch (...) {
        // A device in a failed state cannot free cleanly; the process keeps running.
    }
    if (ctx->host_owned && !ctx->host_pinned)
        free(ctx->host_owned);
    delete ctx;
}

// The plain Pippenger over points and scalars [off, off + n). d_chunk: that range's points,
// already copied to the device (msm_chunked.cuh's prefetch for host points), else null.
template<class ctx_t, class point, class affine>
static void ctx_pippenger(ctx_t* ctx, const scalar_t* scalars, size_t off, size_t n, bool on_device,
                          const affine* d_chunk, point* out)
{
    const scalar_t* s = scalars + off;
    const affine* d_pts = d_chunk ? d_chunk : ctx->d_points ? (const affine*)ctx->d_points + off : nullptr;
    auto invoke = [&]() -> RustError {
        if (d_pts != nullptr) {
            dev_ptr_t<affine> pts((affine*)d_pts, n);
            return on_device ? ctx->engine->invoke(*out, pts, n, dev_ptr_t<scalar_t>((scalar_t*)s, n), true)
                             : ctx->engine->invoke(*out, pts, n, s, true);
        }
        return on_device ? ctx->engine->invoke(*out, ctx->host_points + off, n, dev_ptr_t<scalar_t>((scalar_t*)s, n), true)
                         : ctx->engine->invoke(*out, ctx->host_points + off, n, s, true);
    };
    // sppark's temporaries come from the stream-ordered pool; where a retained pool's idle
    // pieces could not serve them beside a full device, the pool gives them back (pool.cuh).
    RustError e;
    with_idle_pool_given_back(select_gpu((int)ctx->index).cid(), true, [&] {
        e = invoke();
        return e.code != -(int)cudaErrorMemoryAllocation;   // sppark stores minus the cudaError_t
    });
    if (e.code != cudaSuccess)
        throw cuda_error{e.code, e.message ? e.message : "MSM failed"};
}

// A staged run's chunk: at most this many bytes of points. Two chunks are on the device at
// once (one summed, the next being copied), so a staged query's device share is two chunks
// plus one chunk's wide-window temporaries, whatever its length: at 32 GiB WindowPoSt's B in
// G2 (92 M points, 16.4 GiB) is 5 chunks of ~3.3 GiB, each still wide enough for 20-bit
// windows (msm_wide.cuh), for ~11 GiB in all instead of 16.4 + 8.6.
static const size_t STAGE_CHUNK_BYTES = (size_t)7 << 29;   // 3.5 GiB

// Σ over a staged context's first n points with device scalars: the points go up chunk by
// chunk, the next copied on a side stream while this one is summed by the split (witness
// scalars), the wide windows, or sppark's Pippenger over the chunk, as for resident points.
// The caller's pause runs between chunks (and inside the wide path). Returns false, having
// run nothing, when the two chunk buffers do not fit on the device.
template<class bucket, class ctx_t, class point, class affine>
static bool staged_run(const gpu_t& gpu, ctx_t* ctx, const scalar_t* scalars, size_t n, uint32_t how,
                       pause_hook_t& pause, point& out, size_t& dense)
{
    const size_t max_chunk = std::max<size_t>(ctx->stage_chunk_points ? ctx->stage_chunk_points : STAGE_CHUNK_BYTES / sizeof(affine), WARP_SZ);
    const size_t nchunks = (n + max_chunk - 1) / max_chunk;
    size_t chunk = (n + nchunks - 1) / nchunks;
    chunk = (chunk + WARP_SZ - 1) / WARP_SZ * WARP_SZ;

    side_stream_t side;
    optional_buffer_t<affine> bufs[2] = {{chunk, side.s}, {nchunks > 1 ? chunk : 0, side.s}};
    if (bufs[0].ptr == nullptr || (nchunks > 1 && bufs[1].ptr == nullptr))
        return false;
    const affine* host = (const affine*)ctx->host_owned;
    auto copy = [&](size_t off, int slot) {
        const size_t bytes = std::min(chunk, n - off) * sizeof(affine);
        if (ctx->host_pinned) {
            CUDA_OK(cudaMemcpyAsync(bufs[slot].ptr, host + off, bytes, cudaMemcpyHostToDevice, side.s));
        } else {
            // Ordinary memory: transfer.cu's page-locked slots (synchronous, so no overlap).
            CUDA_OK(cudaStreamSynchronize(side.s));
            float ms = 0;
            RustError e = cuzk_copy_to_device(ctx->index, bufs[slot].ptr, host + off, bytes, &ms);
            if (e.code != cudaSuccess)
                throw cuda_error{e.code, e.message ? e.message : "staging the points failed"};
        }
    };
    copy(0, 0);
    CUDA_OK(cudaStreamSynchronize(side.s));

    out.inf();
    dense = 0;
    for (size_t off = 0, i = 0; off < n; off += chunk, i++) {
        const size_t len = std::min(chunk, n - off);
        const bool last = off + len >= n;
        if (!last)
            copy(off + len, (int)((i + 1) & 1));
        const affine* pts = bufs[i & 1].ptr;
        point part;
        size_t part_dense = len;
        bool done = false;
        if (how == MSM_WITNESS)
            done = split_msm<bucket, point, affine>(gpu, (int)ctx->index, pts, scalars + off, len, part, part_dense);
        if (!done)
            done = wide_msm<bucket, point, affine>(gpu, pts, scalars + off, len, part, pause, wide_buckets(how),
                                                  ctx->wide_group);
        if (!done)
            ctx_pippenger<ctx_t, point, affine>(ctx, scalars, off, len, true, pts, &part);
        out.add(part);
        dense += part_dense;
        gpu.sync();
        if (!last) {
            CUDA_OK(cudaStreamSynchronize(side.s));
            pause.at(gpu);
        }
    }
    return true;
}

// scalars: host (on_device == false) or device memory, n ≤ the context's point count.
// how: msm_how_t. The split and the wide windows need device scalars and resident points, and
// either may decline: a declined split tries the wide windows, and sppark's Pippenger runs
// when neither did. dense: how many scalars went through a Pippenger (n unless split).
// pause_fn (may be null): called inside a long MSM, between the wide path's steps or between
// chunks of sppark's (common.cuh, pause_hook_t); *ms leaves out the time spent in it.
template<class bucket, class ctx_t, class point, class affine>
static RustError ctx_run(ctx_t* ctx, const scalar_t* scalars, size_t n, bool on_device, uint32_t how,
                         cuzk_pause_fn pause_fn, void* pause_arg, point* out, float* ms, size_t* dense)
{
    return guarded([&] {
        if (n > ctx->npoints)
            throw std::invalid_argument("MSM: more scalars than points");
        if (how > MSM_DENSE_AFFINE)
            throw std::invalid_argument("MSM: unknown path");
        const gpu_t& gpu = gpu_at(ctx->index);
        auto started = std::chrono::steady_clock::now();
        pause_hook_t pause{pause_fn, pause_arg};
        *dense = n;
        if (n == 0) {
            out->inf();
        } else {
            const bool on_chip = on_device && ctx->d_points != nullptr;
            bool done = false;
            // A staged context's points go up in chunks (device scalars only: with host
            // scalars neither fast path runs, and sppark streams the host points itself).
            // Without room for two chunks the run streams from the host memory below.
            if (ctx->host_owned != nullptr && on_device && how != MSM_SPPARK)
                done = staged_run<bucket, ctx_t, point, affine>(gpu, ctx, scalars, n, how, pause, *out, *dense);
            if (on_chip && how == MSM_WITNESS)
                done = split_msm<bucket, point, affine>(gpu, (int)ctx->index, ctx->d_points, scalars, n, *out, *dense);
            // A witness too dense to split is a dense MSM like any other.
            if (on_chip && !done && how != MSM_SPPARK)
                done = wide_msm<bucket, point, affine>(gpu, ctx->d_points, scalars, n, *out, pause, wide_buckets(how),
                                                  ctx->wide_group);
            // A long one pauses between chunks of points (msm_chunked.cuh).
            if (!done)
                done = chunked_msm<point, affine>(gpu, ctx->host_points, n, ctx->chunk_points, pause, *out,
                    [&](const affine* d_chunk, size_t off, size_t len, point& part) {
                        ctx_pippenger<ctx_t, point, affine>(ctx, scalars, off, len, on_device, d_chunk, &part);
                    });
            if (!done)
                ctx_pippenger<ctx_t, point, affine>(ctx, scalars, 0, n, on_device, nullptr, out);
        }
        gpu.sync();
        *ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - started).count() - pause.paused_ms;
    });
}

CUZK_FFI RustError cuzk_msm_g1_create(size_t index, const affine_t* points, size_t n, bool resident, msm_g1_ctx** out)
{   return ctx_create(index, points, n, resident, out);   }
CUZK_FFI RustError cuzk_msm_g1_run(msm_g1_ctx* ctx, const scalar_t* scalars, size_t n, bool on_device, uint32_t how,
                                   cuzk_pause_fn pause_fn, void* pause_arg, point_t* out, float* ms, size_t* dense)
{   return ctx_run<bucket_t, msm_g1_ctx, point_t, affine_t>(ctx, scalars, n, on_device, how, pause_fn, pause_arg, out, ms, dense);   }
CUZK_FFI RustError cuzk_msm_g1_create_staged(size_t index, size_t n, msm_g1_ctx** out, bool* pinned)
{   return ctx_create_staged<msm_g1_ctx, affine_t>(index, n, out, pinned);   }
CUZK_FFI RustError cuzk_msm_g1_fill(msm_g1_ctx* ctx, size_t offset, const affine_t* points, size_t n)
{   return ctx_fill(ctx, offset, points, n);   }
CUZK_FFI void cuzk_msm_g1_set_chunk(msm_g1_ctx* ctx, size_t points)
{   ctx->chunk_points = points;   }
CUZK_FFI void cuzk_msm_g1_set_stage_chunk(msm_g1_ctx* ctx, size_t points)
{   ctx->stage_chunk_points = points;   }
CUZK_FFI void cuzk_msm_g1_set_wide_group(msm_g1_ctx* ctx, uint32_t windows)
{   ctx->wide_group = windows;   }
CUZK_FFI void cuzk_msm_g1_destroy(msm_g1_ctx* ctx)
{   ctx_destroy(ctx);   }

CUZK_FFI RustError cuzk_msm_g2_create(size_t index, const affine_fp2_t* points, size_t n, bool resident, msm_g2_ctx** out)
{   return ctx_create(index, points, n, resident, out);   }
CUZK_FFI RustError cuzk_msm_g2_run(msm_g2_ctx* ctx, const scalar_t* scalars, size_t n, bool on_device, uint32_t how,
                                   cuzk_pause_fn pause_fn, void* pause_arg, point_fp2_t* out, float* ms, size_t* dense)
{   return ctx_run<bucket_fp2_t, msm_g2_ctx, point_fp2_t, affine_fp2_t>(ctx, scalars, n, on_device, how, pause_fn, pause_arg, out, ms, dense);   }
CUZK_FFI RustError cuzk_msm_g2_create_staged(size_t index, size_t n, msm_g2_ctx** out, bool* pinned)
{   return ctx_create_staged<msm_g2_ctx, affine_fp2_t>(index, n, out, pinned);   }
CUZK_FFI RustError cuzk_msm_g2_fill(msm_g2_ctx* ctx, size_t offset, const affine_fp2_t* points, size_t n)
{   return ctx_fill(ctx, offset, points, n);   }
CUZK_FFI void cuzk_msm_g2_set_chunk(msm_g2_ctx* ctx, size_t points)
{   ctx->chunk_points = points;   }
CUZK_FFI void cuzk_msm_g2_set_stage_chunk(msm_g2_ctx* ctx, size_t points)
{   ctx->stage_chunk_points = points;   }
CUZK_FFI void cuzk_msm_g2_set_wide_group(msm_g2_ctx* ctx, uint32_t windows)
{   ctx->wide_group = windows;   }
CUZK_FFI void cuzk_msm_g2_destroy(msm_g2_ctx* ctx)
{   ctx_destroy(ctx);   }
