// Multi-scalar multiplication contexts over sppark's Pippenger, in G1 and G2.
//
// A context belongs to one device and one point vector (one query of one SRS). Resident:
// the points are copied to the device once, at creation, and every proof reuses them.
// Streaming: only the host pointer is kept and sppark copies the points per call (for cards
// too small to hold the SRS; the host pages should be pinned, see cuzk_host_register).
// Scalars are Fr in Montgomery form (blstrs' in-memory layout); results are Jacobian points
// in blst's layout. The caller serialises use of one device (sppark's per-device streams are
// shared by every context on that device).
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

template<class bucket, class point, class affine>
struct msm_ctx {
    using engine_t = msm_t<bucket, point, affine, scalar_t>;
    size_t index;
    engine_t* engine;
    const affine* host_points;   // null when resident
    size_t npoints;
};

typedef msm_ctx<bucket_t, point_t, affine_t> msm_g1_ctx;
typedef msm_ctx<bucket_fp2_t, point_fp2_t, affine_fp2_t> msm_g2_ctx;

template<class ctx_t, class affine>
static RustError ctx_create(size_t index, const affine* points, size_t npoints, bool resident, ctx_t** out)
{
    *out = nullptr;
    return guarded([&] {
        if (npoints == 0)
            throw std::invalid_argument("MSM context over zero points");
        gpu_at(index);
        auto* ctx = new ctx_t{index, nullptr, resident ? nullptr : points, npoints};
        try {
            ctx->engine = new typename ctx_t::engine_t(resident ? points : nullptr, npoints,
                                                       sizeof(affine), (int)index);
        } catch (...) {
            delete ctx;
            throw;
        }
        *out = ctx;
    });
}

template<class ctx_t>
static void ctx_destroy(ctx_t* ctx)
{
    if (ctx == nullptr)
        return;
    try {
        select_gpu((int)ctx->index);
        delete ctx->engine;
    } catch (...) {
        // A device in a failed state cannot free cleanly; the process keeps running.
    }
    delete ctx;
}

// scalars: host (d_scalars == false) or device memory, n ≤ the context's point count.
template<class ctx_t, class point>
static RustError ctx_run(ctx_t* ctx, const scalar_t* scalars, size_t n, bool on_device, point* out, float* ms)
{
    return guarded([&] {
        if (n > ctx->npoints)
            throw std::invalid_argument("MSM: more scalars than points");
        const gpu_t& gpu = gpu_at(ctx->index);
        auto started = std::chrono::steady_clock::now();
        if (n == 0) {
            out->inf();
        } else {
            RustError e = on_device
                ? ctx->engine->invoke(*out, ctx->host_points, n, dev_ptr_t<scalar_t>((scalar_t*)scalars, n), true)
                : ctx->engine->invoke(*out, ctx->host_points, n, scalars, true);
            if (e.code != cudaSuccess)
                throw cuda_error{e.code, e.message ? e.message : "MSM failed"};
        }
        gpu.sync();
        *ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - started).count();
    });
}

CUZK_FFI RustError cuzk_msm_g1_create(size_t index, const affine_t* points, size_t n, bool resident, msm_g1_ctx** out)
{   return ctx_create(index, points, n, resident, out);   }
CUZK_FFI RustError cuzk_msm_g1_run(msm_g1_ctx* ctx, const scalar_t* scalars, size_t n, bool on_device, point_t* out, float* ms)
{   return ctx_run(ctx, scalars, n, on_device, out, ms);   }
CUZK_FFI void cuzk_msm_g1_destroy(msm_g1_ctx* ctx)
{   ctx_destroy(ctx);   }

CUZK_FFI RustError cuzk_msm_g2_create(size_t index, const affine_fp2_t* points, size_t n, bool resident, msm_g2_ctx** out)
{   return ctx_create(index, points, n, resident, out);   }
CUZK_FFI RustError cuzk_msm_g2_run(msm_g2_ctx* ctx, const scalar_t* scalars, size_t n, bool on_device, point_fp2_t* out, float* ms)
{   return ctx_run(ctx, scalars, n, on_device, out, ms);   }
CUZK_FFI void cuzk_msm_g2_destroy(msm_g2_ctx* ctx)
{   ctx_destroy(ctx);   }
