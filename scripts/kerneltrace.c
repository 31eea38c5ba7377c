// kerneltrace: which CUDA kernel does a process launch last, and which synchronization never
// returns? A CUPTI injection library (issue #38: the SupraSeal peer hangs on our H100s with no
// kernel named). The driver loads it at cuInit when CUDA_INJECTION64_PATH names it, so it sees
// every launch and synchronization of a program with a statically linked CUDA runtime, which an
// LD_PRELOAD of the runtime's or the driver's entry points does not (those are reached through
// cuGetProcAddress).
//
//   CUDA_INJECTION64_PATH=/path/libkerneltrace.so LD_LIBRARY_PATH=<dir of libcupti.so.12> PROGRAM
//
// Each line on stderr: "[kt] <ms since init> <thread> <event> <what>", where event is launch
// (the kernel's mangled name and grid), sync> / sync< (a synchronization entered / returned) or
// copy> / copy< (a blocking device-to-host copy). A hang shows as a "sync>" with no "sync<",
// after the launches it waits for. Built by scripts/build-kerneltrace.sh.
#include <cupti.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct timespec start;

static double ms_since_start(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start.tv_sec) * 1e3 + (now.tv_nsec - start.tv_nsec) / 1e6;
}

static void line(const char* event, const char* what)
{
    fprintf(stderr, "[kt] %.3f %ld %s %s\n", ms_since_start(), (long)syscall(SYS_gettid), event, what);
}

// The launch entry points' parameter structures all start with the function handle and the
// grid; only the name and the grid are printed.
static void launch(const CUpti_CallbackData* cb, unsigned gx, unsigned gy, unsigned bx)
{
    char what[512];
    snprintf(what, sizeof what, "%s grid %u,%u block %u", cb->symbolName ? cb->symbolName : "?", gx, gy, bx);
    line("launch", what);
}

static void CUPTIAPI on_driver_call(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data)
{
    (void)user;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API)
        return;
    const CUpti_CallbackData* cb = (const CUpti_CallbackData*)data;
    const int enter = cb->callbackSite == CUPTI_API_ENTER;
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        if (enter) {
            const cuLaunchKernel_params* p = (const cuLaunchKernel_params*)cb->functionParams;
            launch(cb, p->gridDimX, p->gridDimY, p->blockDimX);
        }
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        if (enter) {
            const cuLaunchCooperativeKernel_params* p = (const cuLaunchCooperativeKernel_params*)cb->functionParams;
            launch(cb, p->gridDimX, p->gridDimY, p->blockDimX);
        }
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        if (enter) {
            const cuLaunchKernelEx_params* p = (const cuLaunchKernelEx_params*)cb->functionParams;
            launch(cb, p->config->gridDimX, p->config->gridDimY, p->config->blockDimX);
        }
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz:
        line(enter ? "sync>" : "sync<", cb->functionName);
        break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
        line(enter ? "copy>" : "copy<", cb->functionName);
        break;
    default:
        break;
    }
}

// Called by the driver once, at cuInit, in the process that set CUDA_INJECTION64_PATH.
int InitializeInjection(void)
{
    clock_gettime(CLOCK_MONOTONIC, &start);
    CUpti_SubscriberHandle subscriber;
    CUptiResult r = cuptiSubscribe(&subscriber, on_driver_call, NULL);
    if (r == CUPTI_SUCCESS)
        r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    if (r != CUPTI_SUCCESS) {
        const char* msg = "?";
        cuptiGetResultString(r, &msg);
        fprintf(stderr, "[kt] CUPTI refused the subscription: %s\n", msg);
        return 0;
    }
    line("init", "tracing launches and synchronizations");
    return 1;
}
