// Shared by cuzk's CUDA translation units: sppark's BLS12-381 types, its error and GPU helpers,
// and `guarded`, which turns every C++ exception into a RustError so that nothing unwinds
// across the FFI boundary (a CUDA error, including out-of-memory, becomes an Err in Rust).
#pragma once

#include <cuda.h>
#include <chrono>
#include <new>
#include <stdexcept>
#include <ff/bls12-381-fp2.hpp>
#include <util/exception.cuh>
#include <util/rusterror.h>
#include <util/gpu_t.cuh>

#define CUZK_FFI extern "C" __attribute__((visibility("default")))

// Error codes besides sppark's (which are minus the cudaError_t).
enum : int {
    CUZK_ERR_HOST_OOM = -100001,   // std::bad_alloc on the host side of the glue
    CUZK_ERR_OTHER    = -100002,   // any other C++ exception
    CUZK_ERR_ARGUMENT = -100003,   // arguments the glue refuses (sizes, indices)
    CUZK_ERR_NO_DEVICE = -100004,  // no usable CUDA device at that index
};

template<typename F>
static RustError guarded(F&& body)
{
    try {
        body();
        return RustError{cudaSuccess};
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    } catch (const std::bad_alloc&) {
        return RustError{CUZK_ERR_HOST_OOM, "host out of memory in the CUDA glue"};
    } catch (const std::invalid_argument& e) {
        return RustError{CUZK_ERR_ARGUMENT, e.what()};
    } catch (const std::exception& e) {
        return RustError{CUZK_ERR_OTHER, e.what()};
    } catch (...) {
        return RustError{CUZK_ERR_OTHER, "unknown C++ exception in the CUDA glue"};
    }
}

// A timing event that is destroyed however the scope is left.
struct timing_event {
    cudaEvent_t e = nullptr;
    timing_event()  { CUDA_OK(cudaEventCreate(&e)); }
    ~timing_event() { if (e) (void)cudaEventDestroy(e); }
    void record(cudaStream_t s) { CUDA_OK(cudaEventRecord(e, s)); }
    float ms_since(const timing_event& start) const
    {   float ms = 0; CUDA_OK(cudaEventElapsedTime(&ms, start.e, e)); return ms;   }
};

// sppark numbers usable devices 0..ngpus() (those it supports, in CUDA order); the Rust side
// resolves CUDA ordinals to these indices once, so this only guards against a stale index.
static inline const gpu_t& gpu_at(size_t index)
{
    if (index >= ngpus())
        throw std::invalid_argument("device index out of range");
    return select_gpu((int)index);
}

#include "pool.cuh"

// A stream-ordered device buffer whose allocation may fail without throwing (ptr stays null):
// the MSM paths of msm_split.cuh and msm_wide.cuh decline, instead of failing the MSM, when
// the device has no room for their temporaries.
template<typename T>
struct optional_buffer_t {
    T* ptr = nullptr;
    cudaStream_t stream;
    optional_buffer_t(size_t n, cudaStream_t s) : stream(s)
    {
        if (n == 0)
            return;
        // A retained pool's idle memory may be in pieces too small for this buffer, and
        // beside them the device full: the pieces go back and the allocation is tried again
        // (pool.cuh). Without a current device (cid −1) the pool reports nothing idle.
        int cid = -1;
        if (cudaGetDevice(&cid) != cudaSuccess)
            cid = -1;
        if (!with_idle_pool_given_back(cid, false, [&] { return cudaMallocAsync((void**)&ptr, n * sizeof(T), s) == cudaSuccess; }))
            ptr = nullptr;
        (void)cudaGetLastError();   // out of memory is not sticky; clear it
    }
    ~optional_buffer_t() { if (ptr) (void)cudaFreeAsync(ptr, stream); }
    optional_buffer_t(const optional_buffer_t&) = delete;
    optional_buffer_t& operator=(const optional_buffer_t&) = delete;
};

// The margin the placement keeps free on a device: margin_slack bytes and 1/margin_divisor of
// the device. src/placement.rs owns the numbers and sets these (cuzk_set_margin) before any
// MSM context exists; the values here are only what they start as.
inline size_t margin_slack = size_t(1) << 30;
inline size_t margin_divisor = 32;

// Bytes of optional temporaries `gpu` has room for beside the margin: its free memory less the
// margin, or 0 when it has no more or its free memory cannot be read. One query serves a
// caller that weighs several layouts (msm_wide.cuh).
static inline size_t device_room(const gpu_t& gpu)
{
    size_t free_mem = 0, total_mem = 0;
    if (device_free_memory(gpu, &free_mem, &total_mem) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const size_t margin = margin_slack + total_mem / margin_divisor;
    return free_mem > margin ? free_mem - margin : 0;
}

// Whether `bytes` of optional temporaries leave the margin free on `gpu` that the placement
// keeps (src/placement.rs, `margin`). The wide and split MSM paths
// ask before they allocate: they used to take whatever was free, and beside another
// partition's buffers (deadline work run while a PoRep partition waits at a phase boundary)
// that filled the device to its last gigabytes. Declining costs the MSM sppark's narrower
// windows, never the proof. What the stream-ordered pool holds idle counts as free (see
// device_free_memory): the MSM's own buffers are served from it first.
static inline bool leaves_margin(const gpu_t& gpu, size_t bytes)
{
    const size_t room = device_room(gpu);
    return room > 0 && bytes <= room;
}

// A point inside one long device step (between the wide MSM's sort and bucket groups, or a
// chunked MSM's chunks) where the caller may lend the device to other work, as it does between
// phases (cuzk-cuda's device_lock.rs). When `fn` runs, every kernel the step launched has finished, and the step
// touches none of its buffers until `fn` returns. `fn` must not throw or unwind (the Rust
// side catches panics). The time spent inside it is the other work's, not the step's.
typedef void (*cuzk_pause_fn)(void*);

struct pause_hook_t {
    cuzk_pause_fn fn = nullptr;
    void* arg = nullptr;
    float paused_ms = 0;

    bool active() const { return fn != nullptr; }

    void at(cudaStream_t s)
    {
        if (fn == nullptr)
            return;
        CUDA_OK(cudaStreamSynchronize(s));
        auto started = std::chrono::steady_clock::now();
        fn(arg);
        paused_ms += std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - started).count();
    }
};
