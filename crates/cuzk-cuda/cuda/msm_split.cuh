// Witness MSMs split by scalar value, before sppark's Pippenger sees them.
//
// Why: the L, A and B scalars of a Groth16 proof are the witness, and in Filecoin's circuits
// almost all of it is 0 or 1 (bits of hashes, path bits, booleans). sppark breaks every scalar
// into ~15 signed windows, sorts each window and runs its bucket pipeline over all of them,
// so a mostly-0/1 vector costs a large part of a dense MSM of the same length. Here:
//   - zeros are dropped;
//   - ones are summed directly: a bitmap of them goes to sppark's batch_addition, which adds
//     the selected points in parallel with no digits and no sorting;
//   - the rest ("dense") is gathered, points and scalars, into a short contiguous vector, and
//     only that goes through sppark's Pippenger.
// Σ sᵢ·Pᵢ = Σ_{sᵢ=1} Pᵢ + Σ_{dense} sᵢ·Pᵢ, so the result is the same point; group addition is
// commutative, so the order the gather writes in does not matter.
//
// The split needs the points on the device (resident contexts) and the scalars there too. It
// is declined (the caller runs the whole vector through Pippenger instead) when too few
// scalars are 0/1 for it to pay, or when its temporary buffers do not fit.
#pragma once

#include <cstdint>
#include <vector>

// Split only when at most this fraction of the scalars is dense: the gathered copy of their
// points must stay small beside the parameters, and a mostly-dense vector gains nothing.
static const size_t SPLIT_MAX_DENSE_DIVISOR = 4;

// 1 in Montgomery form (2^256 mod r), the in-memory layout of blstrs' and sppark's Fr, as
// little-endian 32-bit words. Compared word by word here: with sppark's fr_t::is_one() and
// is_zero() in these kernels CUDA 13.0's nvcc stopped with an internal compiler error
// ("constant expressions are not supported!"). The GPU tests check the classification (how
// many scalars went to Pippenger).
struct fr_words_t {
    uint32_t w[8];
};
static const fr_words_t FR_MONT_ONE = {{0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                                        0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159}};

// What a scalar is to the split: 0, 1 or anything else.
enum scalar_class_t : uint32_t { SCALAR_ZERO, SCALAR_ONE, SCALAR_DENSE };

#ifdef __CUDA_ARCH__
__device__ __forceinline__ static uint32_t lane_id()
{   return threadIdx.x % WARP_SZ;   }

__device__ __forceinline__ static scalar_class_t classify(const scalar_t* s, const fr_words_t& one)
{
    const uint4* v = reinterpret_cast<const uint4*>(s);
    uint4 lo = v[0], hi = v[1];
    uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    uint32_t any = 0, diff = 0;
    #pragma unroll
    for (int i = 0; i < 8; i++) {
        any |= w[i];
        diff |= w[i] ^ one.w[i];
    }
    return any == 0 ? SCALAR_ZERO : diff == 0 ? SCALAR_ONE : SCALAR_DENSE;
}
#endif

// Pass 1: the bitmap of ones (one word per 32 scalars, covering `nwords` words; scalars past
// `n` count as zero) and the numbers of ones and of dense scalars in counts[0], counts[1].
__launch_bounds__(1024) __global__
static void split_classify(const scalar_t* scalars, uint32_t n, uint32_t nwords, fr_words_t one,
                           uint32_t* ones_bitmap, uint32_t* counts)
{
#ifdef __CUDA_ARCH__
    __shared__ uint32_t block_ones, block_dense;
    if (threadIdx.x == 0)
        block_ones = block_dense = 0;
    __syncthreads();

    uint32_t my_ones = 0, my_dense = 0;
    const uint32_t end = nwords * WARP_SZ;
    // Every lane of a warp runs the same number of iterations (blockDim and `end` are multiples
    // of 32), so the ballots below see the whole warp.
    for (uint32_t i = threadIdx.x + blockIdx.x * blockDim.x; i < end; i += gridDim.x * blockDim.x) {
        scalar_class_t c = i < n ? classify(&scalars[i], one) : SCALAR_ZERO;
        uint32_t ones = __ballot_sync(0xffffffff, c == SCALAR_ONE);
        uint32_t denses = __ballot_sync(0xffffffff, c == SCALAR_DENSE);
        if (lane_id() == 0) {
            ones_bitmap[i / WARP_SZ] = ones;
            my_ones += __popc(ones);
            my_dense += __popc(denses);
        }
    }
    if (lane_id() == 0) {
        atomicAdd(&block_ones, my_ones);
        atomicAdd(&block_dense, my_dense);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(&counts[0], block_ones);
        atomicAdd(&counts[1], block_dense);
    }
#endif
}

// A point moved as raw words: the gather needs no arithmetic on it.
template<size_t BYTES>
struct raw_point_t {
    static_assert(BYTES % sizeof(uint4) == 0, "points are copied in 16-byte words");
    uint4 w[BYTES / sizeof(uint4)];
};

// Pass 2: the dense scalars and their points, packed from index 0 of the outputs; `cursor`
// (zero on entry) ends at their number.
template<class raw_t>
__launch_bounds__(1024) __global__
static void split_gather(const scalar_t* scalars, uint32_t n, fr_words_t one, const raw_t* points,
                         scalar_t* dense_scalars, raw_t* dense_points, uint32_t* cursor)
{
#ifdef __CUDA_ARCH__
    const uint32_t end = (n + WARP_SZ - 1) / WARP_SZ * WARP_SZ;
    for (uint32_t i = threadIdx.x + blockIdx.x * blockDim.x; i < end; i += gridDim.x * blockDim.x) {
        bool dense = i < n && classify(&scalars[i], one) == SCALAR_DENSE;
        uint32_t mask = __ballot_sync(0xffffffff, dense);
        uint32_t base = 0;
        if (lane_id() == 0 && mask != 0)
            base = atomicAdd(cursor, __popc(mask));
        base = __shfl_sync(0xffffffff, base, 0);
        if (dense) {
            uint32_t at = base + __popc(mask & ((1u << lane_id()) - 1));
            dense_scalars[at] = scalars[i];
            dense_points[at] = points[i];
        }
    }
#endif
}

// Σ scalars[i]·points[i] over i < n with both vectors on the device, by the split above, and
// in `dense` how many scalars went through Pippenger. Returns false, having computed nothing,
// when the split is declined; the caller then runs the plain MSM. Throws cuda_error on any
// other CUDA failure.
template<class bucket_t, class point_t, class affine_t>
static bool split_msm(const gpu_t& gpu, int device, const void* d_points, const scalar_t* d_scalars,
                      size_t n, point_t& out, size_t& dense)
{
    using engine_t = msm_t<bucket_t, point_t, affine_t, scalar_t>;
    using bucket_h = typename bucket_t::mem_t;
    using affine_h = typename affine_t::mem_t;
    // By the stored size (mem_t): in device code a G2 coordinate is split across two threads,
    // so sizeof(affine_t) there is half the size in memory.
    using raw_t = raw_point_t<sizeof(affine_h)>;

    if (n == 0 || n >= (size_t(1) << 31))
        return false;   // sppark's digits index points with 31 bits
    const uint32_t len = (uint32_t)n;
    // batch_addition reads whole 32-word slices of the bitmap (1024 scalars each).
    const uint32_t nwords = (len + 1023) / 1024 * 32;
    const stream_t& s = gpu[2];
    const uint32_t grid = gpu.sm_count() * 2;

    optional_buffer_t<uint32_t> d_bitmap{nwords, s};
    optional_buffer_t<uint32_t> d_counts{2, s};
    if (!d_bitmap.ptr || !d_counts.ptr)
        return false;
    CUDA_OK(cudaMemsetAsync(d_counts.ptr, 0, 2 * sizeof(uint32_t), s));
    split_classify<<<grid, 1024, 0, s>>>(d_scalars, len, nwords, FR_MONT_ONE, d_bitmap.ptr, d_counts.ptr);
    CUDA_OK(cudaGetLastError());
    uint32_t counts[2];
    s.DtoH(counts, d_counts.ptr, 2);
    s.sync();
    const size_t m = counts[1];
    if (m * SPLIT_MAX_DENSE_DIVISOR > n)
        return false;

    // Every temporary first, so that too little room, or a failed allocation, declines before
    // anything is computed.
    const size_t nsums = (size_t)gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    if (!leaves_margin(gpu, m * (sizeof(scalar_t) + sizeof(raw_t)) + (counts[0] > 0 ? nsums * sizeof(bucket_h) : 0)))
        return false;
    optional_buffer_t<scalar_t> d_dense_scalars{m, s};
    optional_buffer_t<raw_t> d_dense_points{m, s};
    optional_buffer_t<bucket_h> d_sums{counts[0] > 0 ? nsums : 0, s};
    if ((m > 0 && (!d_dense_scalars.ptr || !d_dense_points.ptr)) || (counts[0] > 0 && !d_sums.ptr))
        return false;

    out.inf();

    // Dense part: gathered, then sppark's Pippenger over it alone.
    if (m > 0) {
        CUDA_OK(cudaMemsetAsync(&d_counts.ptr[1], 0, sizeof(uint32_t), s));
        split_gather<raw_t><<<grid, 1024, 0, s>>>(d_scalars, len, FR_MONT_ONE, (const raw_t*)d_points,
                                                 d_dense_scalars.ptr, d_dense_points.ptr, &d_counts.ptr[1]);
        CUDA_OK(cudaGetLastError());
        s.sync();
        // Nothing is summed yet, so running out of device memory here still declines.
        try {
            engine_t dense_engine{nullptr, m, sizeof(affine_t), device};
            RustError e = dense_engine.invoke(out, dev_ptr_t<affine_t>((affine_t*)d_dense_points.ptr, m), m,
                                              dev_ptr_t<scalar_t>(d_dense_scalars.ptr, m), true);
            if (e.code != cudaSuccess)
                throw cuda_error{e.code, e.message ? e.message : "MSM over the dense scalars failed"};
        } catch (const cuda_error& e) {
            if (e.code() != -(int)cudaErrorMemoryAllocation)   // sppark stores minus the cudaError_t
                throw;
            (void)cudaGetLastError();
            return false;
        }
    }

    // Ones: sppark's bitmap batch addition, one partial sum per warp, added up here.
    if (counts[0] > 0) {
        void (*add_selected)(bucket_h*, const affine_h*, uint32_t, const uint32_t*, bool, uint32_t) =
            batch_addition<bucket_t, affine_h>;
        s.launch_coop(add_selected, {gpu.sm_count(), BATCH_ADD_BLOCK_SIZE},
                      d_sums.ptr, (const affine_h*)d_points, len, (const uint32_t*)d_bitmap.ptr, false, 0u);
        std::vector<bucket_t> sums(nsums);
        s.DtoH(sums.data(), d_sums.ptr, nsums);
        s.sync();
        point_t ones = sum_up(sums);
        out.add(ones);
    }
    dense = m;
    return true;
}
