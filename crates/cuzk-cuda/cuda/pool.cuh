// The device's stream-ordered pool, from which every cudaMallocAsync draws (ours and sppark's).
// CUDA's default gives a pool's freed memory back to the device at each synchronization, so
// every MSM mapped its temporaries afresh and unmapped them at its end: ~25 GB at 2^27 points
// in the wide path, tens of milliseconds each way (BENCHMARKS.md). Retained
// (cuzk_retain_temporaries), the pool keeps what was freed for the next MSM. That memory is
// still this process's room: it counts as free (device_free_memory), and an allocation that
// finds the device full gives it back and tries again (trim_pool). Another process on the
// same device does not see it as free: hence the setting (gpus.retain_temporaries, on by
// default). Off, the pool holds nothing idle past a synchronization and every helper below is
// the plain call.
//
// Measured (BENCHMARKS.md 2026-12-07, H100): a lone 2^27 MSM 769 → 719 ms retained. In a 32 GiB
// PoRep stream that paid only once a partition's own buffers (a, b, c: 12.9 GB; the witness)
// came from the pool too (pool_malloc below): while they were plain cudaMallocs, each partition
// took the pool's memory back and H mapped its temporaries again (1.69 s of device a
// partition, against 1.66 s released); from the pool, 1.62-1.63 s kept against 1.70 s.
//
// Included by common.cuh, whose optional_buffer_t and leaves_margin use it.
#pragma once

#include <cuda_runtime.h>
#include <util/exception.cuh>
#include <util/gpu_t.cuh>

// Bytes the pool of CUDA device `cid` holds that no allocation uses.
static inline size_t pool_idle_bytes(int cid)
{
    cudaMemPool_t pool;
    cuuint64_t reserved = 0, used = 0;
    if (cudaDeviceGetDefaultMemPool(&pool, cid) != cudaSuccess
        || cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess
        || cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return reserved > used ? (size_t)(reserved - used) : 0;
}

// Free device memory as this process can use it: the device's, and what the pool holds idle.
static inline cudaError_t device_free_memory(const gpu_t& gpu, size_t* free_mem, size_t* total_mem)
{
    gpu.select();
    cudaError_t e = cudaMemGetInfo(free_mem, total_mem);
    if (e == cudaSuccess)
        *free_mem += pool_idle_bytes(gpu.cid());
    return e;
}

// Give the idle memory of the pool of CUDA device `cid` (the current device) back to the
// device. Memory freed on a stream that has not yet reached the free stays in the pool unless
// `wait`: then the device is synchronized first (every stream; only after an allocation
// failed, so rarely).
static inline void trim_pool(int cid, bool wait)
{
    if (wait)
        (void)cudaDeviceSynchronize();
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, cid) != cudaSuccess || cudaMemPoolTrimTo(pool, 0) != cudaSuccess)
        (void)cudaGetLastError();
}

// Whether the pool's release threshold keeps freed memory (cuzk_retain_temporaries).
static inline void set_pool_retention(const gpu_t& gpu, bool retain)
{
    gpu.select();
    cudaMemPool_t pool;
    CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, gpu.cid()));
    cuuint64_t threshold = retain ? ~(cuuint64_t)0 : 0;
    CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    if (!retain)
        trim_pool(gpu.cid(), false);
}

// Runs `done` (an allocation, or work that allocates; true when it succeeded or failed for a
// reason other than memory) and, while it ran out of memory and the pool of CUDA device `cid`
// holds idle memory, has the pool give that back and runs it again: at once, then, if
// `may_wait`, after a device synchronization (see trim_pool). Every allocation the pool's idle
// memory does not serve goes through here. Returns the last run's `done`.
template<class F>
static inline bool with_idle_pool_given_back(int cid, bool may_wait, F done)
{
    if (done())
        return true;
    for (int wait = 0; wait < (may_wait ? 2 : 1) && pool_idle_bytes(cid) > 0; wait++) {
        (void)cudaGetLastError();   // out of memory is not sticky
        trim_pool(cid, wait == 1);
        if (done())
            return true;
    }
    return false;
}

// cudaMalloc, which the pool's idle memory does not serve, so it takes that back when the
// device is full. Throws cuda_error as CUDA_OK does.
template<typename T>
static inline void device_malloc(const gpu_t& gpu, T** ptr, size_t bytes)
{
    gpu.select();
    cudaError_t e = cudaSuccess;
    with_idle_pool_given_back(gpu.cid(), true, [&] {
        e = cudaMalloc((void**)ptr, bytes);
        return e != cudaErrorMemoryAllocation;
    });
    CUDA_OK(e);
}

// Device memory handed to the Rust side (witnesses, a/b/c, the quotient's buffers), drawn from
// the same stream-ordered pool as the MSMs' temporaries: with the pool kept, one mapping then
// serves every phase of a partition, where plain cudaMalloc'd buffers had to take the pool's
// memory back each partition (BENCHMARKS.md 2026-12-07). Allocated on the device's first
// stream and synchronized there, so that every stream may use it at once; freed by pool_free.
template<typename T>
static inline void pool_malloc(const gpu_t& gpu, T** ptr, size_t bytes)
{
    gpu.select();
    const stream_t& zero = gpu;
    cudaError_t e = cudaSuccess;
    with_idle_pool_given_back(gpu.cid(), true, [&] {
        e = cudaMallocAsync((void**)ptr, bytes, zero);
        return e != cudaErrorMemoryAllocation;
    });
    CUDA_OK(e);
    CUDA_OK(cudaStreamSynchronize(zero));
}

// Frees pool_malloc's memory as cudaFree would: after all of the device's work (no stream may
// still read it), back into the pool, which keeps it only if retained.
static inline void pool_free(const gpu_t& gpu, void* ptr)
{
    gpu.select();
    (void)cudaDeviceSynchronize();
    const stream_t& zero = gpu;
    (void)cudaFreeAsync(ptr, zero);
    (void)cudaStreamSynchronize(zero);
}
