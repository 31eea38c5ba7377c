// LD_PRELOAD diagnostic: print every CUDA kernel launch (name, grid, block) and every
// synchronisation a process makes through the driver API, flushed at once, so the last lines
// before a hang name the kernels that never finished. Static cudart finds the driver through
// dlsym(libcuda, "cuGetProcAddress*"), so dlsym itself is wrapped.
//
// Made for the peer's hang (BENCHMARKS.md, 2026-12-06: SupraSeal's prover never returns on our
// H100s): `gcc -O1 -shared -fPIC -o launchtrace.so launchtrace.c -ldl`, then
// `LD_PRELOAD=$PWD/launchtrace.so cuzk-peer-c2 …` and read the "[trace" lines of its stderr.
// Checked on the dev box only (it loads, and passes dlsym through); it has not yet run on a
// GPU: every device start asked for after it was written was refused.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>

typedef int CUresult;
typedef void *CUfunction, *CUstream, *CUevent;
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
typedef CUresult (*coop_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void **);
typedef struct { unsigned gx, gy, gz, bx, by, bz, shmem; CUstream s; void *attrs; unsigned nattrs; } cfg_t;
typedef CUresult (*launch_ex_t)(const cfg_t *, CUfunction, void **, void **);
typedef CUresult (*sync1_t)(void *);
typedef CUresult (*sync0_t)(void);
typedef CUresult (*name_t)(const char **, CUfunction);
typedef CUresult (*gpa_t)(const char *, void **, int, uint64_t, void *);
typedef void *(*dlsym_t)(void *, const char *);

static launch_t r_launch; static coop_t r_coop; static launch_ex_t r_ex;
static sync1_t r_ssync, r_esync; static sync0_t r_csync;
static name_t r_name; static gpa_t r_gpa, r_gpa2; static dlsym_t r_dlsym;
static unsigned long seq;

static const char *fname(CUfunction f) {
    const char *n = "?";
    if (r_name && r_name(&n, f) != 0) n = "?";
    return n;
}
static CUresult w_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned sh, CUstream s, void **p, void **e) {
    fprintf(stderr, "[trace %lu] launch %s grid %u,%u,%u block %u,%u,%u\n", ++seq, fname(f), gx, gy, gz, bx, by, bz);
    return r_launch(f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}
static CUresult w_coop(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned sh, CUstream s, void **p) {
    fprintf(stderr, "[trace %lu] coop launch %s grid %u,%u,%u block %u,%u,%u\n", ++seq, fname(f), gx, gy, gz, bx, by, bz);
    return r_coop(f, gx, gy, gz, bx, by, bz, sh, s, p);
}
static CUresult w_ex(const cfg_t *c, CUfunction f, void **p, void **e) {
    fprintf(stderr, "[trace %lu] launchEx %s grid %u,%u,%u block %u,%u,%u attrs %u\n", ++seq, fname(f), c->gx, c->gy, c->gz,
            c->bx, c->by, c->bz, c->nattrs);
    return r_ex(c, f, p, e);
}
static CUresult w_ssync(void *s) { fprintf(stderr, "[trace %lu] stream sync\n", ++seq); CUresult r = r_ssync(s); fprintf(stderr, "[trace] stream sync done %d\n", r); return r; }
static CUresult w_esync(void *e) { fprintf(stderr, "[trace %lu] event sync\n", ++seq); CUresult r = r_esync(e); fprintf(stderr, "[trace] event sync done %d\n", r); return r; }
static CUresult w_csync(void) { fprintf(stderr, "[trace %lu] ctx sync\n", ++seq); CUresult r = r_csync(); fprintf(stderr, "[trace] ctx sync done %d\n", r); return r; }

static void *wrap(const char *sym, void *real) {
    if (!real) return real;
    if (!strcmp(sym, "cuLaunchKernel") || !strcmp(sym, "cuLaunchKernel_ptsz")) { r_launch = real; return (void *)w_launch; }
    if (!strcmp(sym, "cuLaunchCooperativeKernel") || !strcmp(sym, "cuLaunchCooperativeKernel_ptsz")) { r_coop = real; return (void *)w_coop; }
    if (!strcmp(sym, "cuLaunchKernelEx") || !strcmp(sym, "cuLaunchKernelEx_ptsz")) { r_ex = real; return (void *)w_ex; }
    if (!strcmp(sym, "cuStreamSynchronize") || !strcmp(sym, "cuStreamSynchronize_ptsz")) { r_ssync = real; return (void *)w_ssync; }
    if (!strcmp(sym, "cuEventSynchronize")) { r_esync = real; return (void *)w_esync; }
    if (!strcmp(sym, "cuCtxSynchronize")) { r_csync = real; return (void *)w_csync; }
    if (!strcmp(sym, "cuFuncGetName")) r_name = real;
    return real;
}
// cuGetProcAddress (before CUDA 12.0) takes no status argument; the extra one passed on is ignored.
static CUresult w_gpa(const char *sym, void **pfn, int ver, uint64_t flags, void *status) {
    CUresult r = r_gpa(sym, pfn, ver, flags, status);
    if (r == 0 && pfn) *pfn = wrap(sym, *pfn);
    if (!r_name) { void *n = 0; if (r_gpa("cuFuncGetName", &n, 12030, 0, 0) == 0) r_name = n; }
    return r;
}
static CUresult w_gpa2(const char *sym, void **pfn, int ver, uint64_t flags, void *status) {
    CUresult r = r_gpa2(sym, pfn, ver, flags, status);
    if (r == 0 && pfn) *pfn = wrap(sym, *pfn);
    if (!r_name) { void *n = 0; if (r_gpa2("cuFuncGetName", &n, 12030, 0, 0) == 0) r_name = n; }
    return r;
}
void *dlsym(void *h, const char *sym) {
    if (!r_dlsym) {
        r_dlsym = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!r_dlsym) r_dlsym = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    }
    void *p = r_dlsym(h, sym);
    if (!p || !sym) return p;
    if (!strcmp(sym, "cuGetProcAddress_v2")) { r_gpa2 = p; return (void *)w_gpa2; }
    if (!strcmp(sym, "cuGetProcAddress")) { r_gpa = p; return (void *)w_gpa; }
    return wrap(sym, p);
}
