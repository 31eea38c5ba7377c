// Copies between host and device memory for the Rust side (DeviceBuffer::write / read).
//
// Why large uploads are staged here: a copy from pageable host memory goes through the
// driver's own page-locked staging, filled by one thread. On the H200 host that ran at
// ~7.5 GB/s, so a 32 GiB WindowPoSt partition's witness (~4 GB of stored values) took 0.53 s
// of its device-exclusive region. A copy of at least STAGED_MIN_BYTES is cut into slots of
// page-locked memory instead, filled by STAGE_THREADS host threads at once, each with two
// slots: it fills one while the copy engine drains the other. The staging memory is
// allocated once per device, at the first large copy, and kept (STAGE_THREADS · 2 ·
// STAGE_SLOT_BYTES = 128 MiB of page-locked host memory per device). Where it cannot be had,
// large copies take the plain path, with one line on stderr.
//
// One staged copy runs at a time per device (the device lock serialises them anyway; the
// mutex keeps the slots consistent for any other caller). When the copy returns, every part
// of it has landed: later kernels on any stream see the data.
#include "common.cuh"
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

static const size_t STAGED_MIN_BYTES = (size_t)64 << 20;
static const size_t STAGE_SLOT_BYTES = (size_t)16 << 20;
static const int STAGE_THREADS = 4;

struct stager_t {
    const size_t index;
    std::mutex busy;
    void* slots[2 * STAGE_THREADS] = {};
    cudaEvent_t drained[2 * STAGE_THREADS] = {};
    cudaStream_t streams[STAGE_THREADS] = {};

    explicit stager_t(size_t index) : index(index)
    {
        gpu_at(index);
        try {
            for (int t = 0; t < STAGE_THREADS; t++)
                CUDA_OK(cudaStreamCreateWithFlags(&streams[t], cudaStreamNonBlocking));
            for (int i = 0; i < 2 * STAGE_THREADS; i++) {
                CUDA_OK(cudaHostAlloc(&slots[i], STAGE_SLOT_BYTES, cudaHostAllocPortable));
                CUDA_OK(cudaEventCreateWithFlags(&drained[i], cudaEventDisableTiming));
            }
        } catch (...) {
            release();
            throw;
        }
    }
    ~stager_t() { release(); }
    stager_t(const stager_t&) = delete;
    stager_t& operator=(const stager_t&) = delete;

    void release()
    {
        for (int i = 0; i < 2 * STAGE_THREADS; i++) {
            if (slots[i])
                (void)cudaFreeHost(slots[i]);
            if (drained[i])
                (void)cudaEventDestroy(drained[i]);
            slots[i] = nullptr;
            drained[i] = nullptr;
        }
        for (int t = 0; t < STAGE_THREADS; t++) {
            if (streams[t])
                (void)cudaStreamDestroy(streams[t]);
            streams[t] = nullptr;
        }
    }

    // Thread t copies slot-sized pieces t, t + STAGE_THREADS, … through its two slots. The
    // pieces start after the work already queued on the device's first stream, as a plain
    // HtoD there would.
    void copy(cudaStream_t after, uint8_t* d_dst, const uint8_t* src, size_t bytes)
    {
        {
            event_t queued(after);
            for (int t = 0; t < STAGE_THREADS; t++)
                queued.wait(streams[t]);
        }
        std::vector<std::thread> threads;
        std::vector<std::exception_ptr> errors(STAGE_THREADS);
        auto work = [&](int t) {
            try {
                select_gpu((int)index);   // the current device is per thread
                size_t k = 0;
                for (size_t off = (size_t)t * STAGE_SLOT_BYTES; off < bytes; off += STAGE_THREADS * STAGE_SLOT_BYTES, k++) {
                    const int slot = 2 * t + (int)(k & 1);
                    const size_t len = std::min(STAGE_SLOT_BYTES, bytes - off);
                    CUDA_OK(cudaEventSynchronize(drained[slot]));   // its previous piece has left
                    memcpy(slots[slot], src + off, len);
                    CUDA_OK(cudaMemcpyAsync(d_dst + off, slots[slot], len, cudaMemcpyHostToDevice, streams[t]));
                    CUDA_OK(cudaEventRecord(drained[slot], streams[t]));
                }
            } catch (...) {
                errors[t] = std::current_exception();
            }
            // Whatever happened, nothing of this copy reads a slot once the call returns.
            (void)cudaStreamSynchronize(streams[t]);
        };
        try {
            for (int t = 1; t < STAGE_THREADS; t++)
                threads.emplace_back(work, t);
        } catch (...) {
            for (auto& th : threads)
                th.join();
            throw;
        }
        work(0);
        for (auto& th : threads)
            th.join();
        for (auto& e : errors)
            if (e)
                std::rethrow_exception(e);
    }
};

// One stager per device index, made at its first large copy and kept for the process; null
// when it could not be made (no page-locked memory to be had, say), and then never tried
// again: large copies on that device take the plain path, as before staging existed.
static stager_t* stager_for(size_t index)
{
    static std::mutex made;
    static std::vector<std::unique_ptr<stager_t>> stagers;
    static std::vector<bool> failed;
    std::lock_guard<std::mutex> guard(made);
    if (stagers.size() <= index) {
        stagers.resize(index + 1);
        failed.resize(index + 1, false);
    }
    if (!stagers[index] && !failed[index]) {
        try {
            stagers[index] = std::make_unique<stager_t>(index);
        } catch (const std::exception& e) {
            failed[index] = true;
            (void)cudaGetLastError();   // a failed page-locked allocation is not sticky
            fprintf(stderr, "cuzk: device %zu: no page-locked staging for uploads (%s); large uploads copy directly\n",
                    index, e.what());
        }
    }
    return stagers[index].get();
}

CUZK_FFI RustError cuzk_copy_to_device(size_t index, void* d_dst, const void* src, size_t bytes, float* ms)
{
    return guarded([&] {
        const gpu_t& gpu = gpu_at(index);
        auto started = std::chrono::steady_clock::now();
        stager_t* st = bytes >= STAGED_MIN_BYTES ? stager_for(index) : nullptr;
        if (st != nullptr) {
            std::lock_guard<std::mutex> one_at_a_time(st->busy);
            const stream_t& first = gpu;
            st->copy(first, (uint8_t*)d_dst, (const uint8_t*)src, bytes);
        } else {
            gpu.HtoD((uint8_t*)d_dst, src, bytes);
            gpu.sync();
        }
        *ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - started).count();
    });
}

CUZK_FFI RustError cuzk_copy_to_host(size_t index, void* dst, const void* d_src, size_t bytes)
{
    return guarded([&] {
        const gpu_t& gpu = gpu_at(index);
        gpu.DtoH((uint8_t*)dst, d_src, bytes);
        gpu.sync();
    });
}
