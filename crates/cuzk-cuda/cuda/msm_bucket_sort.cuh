// Point indices by bucket for one window of a wide MSM (msm_wide.cuh): a counting sort in
// global memory.
//
// Why: sppark's sort_row sorts in two radix passes through shared-memory histograms on at most
// 32 blocks a window. In MSM H of a 32 GiB PoRep (2^27 points, 12 windows) it took ~10 ms a
// window on an H100, 120 of MSM H's 739 ms (BENCHMARKS.md 2026-12-07), far from what the
// device's memory allows. A bucket's points may come in any order (their sum does not care),
// so one counting pass suffices:
//   count   each bucket's nonzero digits, by global atomics, every SM;
//   scan    the counts into each bucket's first slot (CUB's exclusive sum);
//   scatter each index to its bucket's next slot (an atomic add on that slot), which leaves
//           each bucket's end where its first slot was;
//   copy    the scattered row back over the digits row.
// The result has sort_row's form, which sppark's accumulate and batch_addition and our affine
// rounds read: the row holds, bucket by bucket, each point's index with the digit's sign in bit
// 31, and hist[b] is where bucket b ends (the running sum of counts through b).
//
// Keys follow sort_row: bucket (digit − 1) of `wbits` bits, except in the top window, whose
// digits have `lsbits` < wbits significant bits and are spread over 2^(wbits − lsbits) buckets
// by the low bits of the point index (msm_wide.cuh folds those back).
//
// Skew: a witness too dense to split (msm_split.cuh) still has long runs of equal digits, and
// atomics on one address serialise. A warp adds once per distinct bucket among its lanes
// (__match_any_sync), so a warp of equal digits costs one atomic, not 32.
#pragma once

#include <cstdint>
#include <cub/device/device_scan.cuh>

// Bucket of a nonzero digit `val` of point i (sort_row's key, see the file comment).
__device__ __forceinline__ static uint32_t bsort_key(uint32_t val, uint32_t i, uint32_t lshift, uint32_t mask)
{
    return (((val - 1) << lshift) | (i & ((1u << lshift) - 1))) & mask;
}

// The lanes of this warp with the same bucket as this lane, the first of them, and how many
// come before this lane. Every lane of the warp calls it (zero digits with key UINT32_MAX).
struct bsort_peers_t {
    uint32_t peers, leader, rank;
};
__device__ __forceinline__ static bsort_peers_t bsort_peers(uint32_t key)
{
    const uint32_t peers = __match_any_sync(0xffffffffu, key);
    const uint32_t lane = threadIdx.x % WARP_SZ;
    return {peers, (uint32_t)__ffs(peers) - 1, (uint32_t)__popc(peers & ((1u << lane) - 1))};
}

// Every lane of a warp runs the same number of iterations (the loop runs to len rounded up to
// a warp; blocks are whole warps), so the warp-wide calls meet.
__launch_bounds__(256) __global__
static void bsort_count(const uint32_t* digits, uint32_t len, uint32_t lshift, uint32_t mask, uint32_t* counts)
{
#ifdef __CUDA_ARCH__
    const uint32_t end = (len + WARP_SZ - 1) / WARP_SZ * WARP_SZ;
    #pragma unroll 1
    for (uint32_t i = threadIdx.x + blockIdx.x * blockDim.x; i < end; i += gridDim.x * blockDim.x) {
        const uint32_t val = i < len ? digits[i] : 0;
        const uint32_t key = val ? bsort_key(val, i, lshift, mask) : UINT32_MAX;
        const bsort_peers_t p = bsort_peers(key);
        if (val && p.rank == 0)
            atomicAdd(&counts[key], (uint32_t)__popc(p.peers));
    }
#endif
}

__launch_bounds__(256) __global__
static void bsort_scatter(const uint32_t* digits, uint32_t len, uint32_t lshift, uint32_t mask, uint32_t* next,
                          uint32_t* out)
{
#ifdef __CUDA_ARCH__
    const uint32_t end = (len + WARP_SZ - 1) / WARP_SZ * WARP_SZ;
    #pragma unroll 1
    for (uint32_t i = threadIdx.x + blockIdx.x * blockDim.x; i < end; i += gridDim.x * blockDim.x) {
        const uint32_t val = i < len ? digits[i] : 0;
        const uint32_t key = val ? bsort_key(val, i, lshift, mask) : UINT32_MAX;
        const bsort_peers_t p = bsort_peers(key);
        uint32_t slot = 0;
        if (val && p.rank == 0)
            slot = atomicAdd(&next[key], (uint32_t)__popc(p.peers));
        slot = __shfl_sync(0xffffffffu, slot, p.leader);
        if (val)
            out[slot + p.rank] = (i & 0x7fffffffu) | (val & 0x80000000u);
    }
#endif
}

// The device memory one window's sort needs besides its digits and histogram rows: the counts
// (a row of buckets), CUB's scratch, and the scattered row (a row of points; `scattered` may
// live elsewhere, see msm_wide.cuh).
struct bsort_sizes_t {
    size_t counts, scratch;
    static bsort_sizes_t of(uint32_t buckets)
    {
        size_t scratch = 0;
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scratch, (const uint32_t*)nullptr, (uint32_t*)nullptr, buckets));
        return {(size_t)buckets * sizeof(uint32_t), scratch};
    }
    size_t bytes() const { return counts + scratch; }
};

// Sorts the digits row of `len` points in place into `buckets` buckets (a power of two) with
// `lsbits` significant bits a digit (see the file comment); hist gets each bucket's end.
// `work` holds bsort_sizes_t::of(buckets).bytes(), `scattered` len indices; `grid` blocks of
// 256 threads.
static void bucket_sort_row(const stream_t& s, uint32_t grid, uint32_t* digits, uint32_t len, uint32_t buckets,
                            uint32_t lsbits, uint32_t* hist, unsigned char* work, const bsort_sizes_t& sizes,
                            uint32_t* scattered)
{
    uint32_t wbits = 0;
    while ((1u << wbits) < buckets)
        wbits++;
    const uint32_t lshift = wbits - lsbits, mask = buckets - 1;
    uint32_t* counts = reinterpret_cast<uint32_t*>(work);
    size_t scratch_bytes = sizes.scratch;
    CUDA_OK(cudaMemsetAsync(counts, 0, sizes.counts, s));
    bsort_count<<<grid, 256, 0, s>>>(digits, len, lshift, mask, counts);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cub::DeviceScan::ExclusiveSum(work + sizes.counts, scratch_bytes, counts, hist, buckets, s));
    bsort_scatter<<<grid, 256, 0, s>>>(digits, len, lshift, mask, hist, scattered);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpyAsync(digits, scattered, (size_t)len * sizeof(uint32_t), cudaMemcpyDeviceToDevice, s));
}
