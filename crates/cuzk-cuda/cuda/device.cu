// Device discovery and host-memory pinning. Devices are always addressed by index; nothing
// here reads or writes CUDA_VISIBLE_DEVICES (the runtime reads it once, at start).
#include "common.cuh"
#include <algorithm>
#include <cstring>

struct cuzk_device_props_t {
    int cuda_id;
    int major, minor;
    int sm_count;
    size_t total_mem;
    size_t free_mem;
    char name[256];
    char pci_bus_id[32];
};

// The CUDA version of the runtime linked in and the one the installed driver supports (0 when
// there is no driver). Neither call initialises CUDA, so this works where every other call
// would fail with "driver version is insufficient": src/driver.rs decides from the two.
CUZK_FFI RustError cuzk_cuda_versions(int* runtime, int* driver)
{
    return guarded([&] {
        CUDA_OK(cudaRuntimeGetVersion(runtime));
        CUDA_OK(cudaDriverGetVersion(driver));
    });
}

CUZK_FFI RustError cuzk_device_count(size_t* n)
{
    return guarded([&] { *n = ngpus(); });
}

CUZK_FFI RustError cuzk_device_props(size_t index, cuzk_device_props_t* out)
{
    return guarded([&] {
        const gpu_t& gpu = gpu_at(index);
        const cudaDeviceProp& p = gpu.props();
        memset(out, 0, sizeof(*out));
        out->cuda_id = gpu.cid();
        out->major = p.major;
        out->minor = p.minor;
        out->sm_count = p.multiProcessorCount;
        memcpy(out->name, p.name, std::min(sizeof(out->name) - 1, strnlen(p.name, sizeof(p.name))));
        CUDA_OK(cudaDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), gpu.cid()));
        CUDA_OK(device_free_memory(gpu, &out->free_mem, &out->total_mem));
    });
}

// The placement's margin (src/placement.rs), which the MSM paths keep free (common.cuh).
CUZK_FFI void cuzk_set_margin(size_t slack, size_t divisor)
{
    margin_slack = slack;
    margin_divisor = divisor > 0 ? divisor : 1;
}

// Free device memory counts what the stream-ordered pool holds idle (pool.cuh).
CUZK_FFI RustError cuzk_device_mem(size_t index, size_t* free_mem, size_t* total_mem)
{
    return guarded([&] { CUDA_OK(device_free_memory(gpu_at(index), free_mem, total_mem)); });
}

// Whether the device's stream-ordered pool keeps freed memory for the next MSM (pool.cuh,
// set_pool_retention); off gives back what it holds now.
CUZK_FFI RustError cuzk_retain_temporaries(size_t index, bool retain)
{
    return guarded([&] { set_pool_retention(gpu_at(index), retain); });
}

// Bytes the device's pool holds that no allocation uses (kept for the next MSM).
CUZK_FFI RustError cuzk_retained_bytes(size_t index, size_t* bytes)
{
    return guarded([&] { *bytes = pool_idle_bytes(gpu_at(index).cid()); });
}

// Page-lock host memory the devices will read many times (parameters streamed per proof), so
// copies run at full PCIe speed without a staging copy. Portable: every device may use it.
CUZK_FFI RustError cuzk_host_register(void* ptr, size_t bytes)
{
    return guarded([&] { CUDA_OK(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable)); });
}

CUZK_FFI RustError cuzk_host_unregister(void* ptr)
{
    return guarded([&] { CUDA_OK(cudaHostUnregister(ptr)); });
}

// Free a device buffer handed to Rust by cuzk_device_alloc or the quotient (both pool_malloc).
CUZK_FFI void cuzk_device_free(size_t index, void* d_ptr)
{
    if (d_ptr == nullptr || index >= ngpus())
        return;
    pool_free(select_gpu((int)index), d_ptr);
}
