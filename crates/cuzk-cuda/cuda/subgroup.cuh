// Subgroup membership of resident points, on the device (included by msm.cu).
//
// A `.params` file's points must lie in the prime-order subgroups before any proof uses them;
// blst checks one in tens of µs on a CPU core, so a 47 GB porep-32g file took ~10^4 core-s.
// Here each thread (each pair of threads in G2, where sppark splits an Fp2 over two) checks
// one point already on the device with the endomorphism tests of Scott, "A note on group
// membership tests for G1, G2 and GT on BLS pairing-friendly curves" (2021):
//
//   G1: P is in G1 iff [x^2]P + sigma(P) == O, sigma(X, Y) = (beta*X, Y)  (sigma(P) == -[x^2]P);
//   G2: P is in G2 iff [|x|]P + psi(P) == O, psi(X, Y) = (c1*conj(X), c2*conj(Y))  (psi(P) == [x]P),
//
// x the curve's (negative) parameter. The sum is tested rather than an equality because
// sppark's device field has no comparison, while its point addition says plainly when two
// points are opposite (the result is at infinity). sigma(P) and psi(P) are on the curve, so
// "same x, other y" there means exactly "opposite". The constants (beta, c1, c2, the scalars) come from the
// Rust side (src/subgroup.rs), which derives them from the curve, checks them on the
// generators and evaluates the same equations on the CPU, so the kernels hold no magic numbers
// and their verdicts are tested against blst's.
//
// Each kernel writes the lowest failing index (relative to the range checked) to *first_bad
// with atomicMin; UINT64_MAX means every point passed.

#pragma once

// The in-memory layouts of sppark's affine points (what ctx->d_points holds).
struct g1_raw_t { fp_t X, Y; };
struct g2_raw_t { fp2_t::mem_t X, Y; };

// Field constants as plain limbs (Montgomery form, little-endian 32-bit words): kernel
// parameters, since the host compilation's fp_t is another class.
struct fp_words_t { uint32_t w[12]; };
struct fp2_words_t { uint32_t w[24]; };   // c0 then c1

// [k]P for a k of `bits` bits (k's top bit set), by double-and-add from the top, in sppark's
// XYZZ coordinates (the ones whose arithmetic is built for the device). Its addition doubles
// equal points and gives infinity for opposite ones, which is what the test relies on.
template<class bucket, class affine>
__device__ __forceinline__ bucket subgroup_mul(const affine& p, uint64_t k_lo, uint64_t k_hi, int bits)
{
    bucket q;
    q = p;
    for (int b = bits - 2; b >= 0; b--) {
        bucket t = q;   // a copy: add() of a point to itself doubles it
        q.add(t);
        uint64_t word = b >= 64 ? k_hi >> (b - 64) : k_lo >> b;
        if (word & 1)
            q.add(p);
    }
    return q;
}

__global__ void g1_subgroup_kernel(const g1_raw_t* pts, size_t n, fp_words_t beta_w, uint64_t k_lo, uint64_t k_hi,
                                   int bits, unsigned long long* first_bad)
{
#ifdef __CUDA_ARCH__   // the host pass's fp_t is blst's class, not the device's
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    fp_t beta;
    for (int j = 0; j < 12; j++)
        beta[j] = beta_w.w[j];
    fp_t x = pts[i].X, y = pts[i].Y;
    affine_t p(x, y);
    bucket_t q = subgroup_mul<bucket_t, affine_t>(p, k_lo, k_hi, bits);
    q.add(affine_t(x * beta, y));
    if (!q.is_inf())
        atomicMin(first_bad, (unsigned long long)i);
#endif
}

__global__ void g2_subgroup_kernel(const g2_raw_t* pts, size_t n, fp2_words_t c1_w, fp2_words_t c2_w, uint64_t k,
                                   int bits, unsigned long long* first_bad)
{
#ifdef __CUDA_ARCH__
    // Two adjacent threads per point: lane parity picks the Fp2 component each holds.
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 2;
    if (i >= n)
        return;
    const uint32_t part = threadIdx.x & 1;
    fp_t c1p, c2p;
    for (int j = 0; j < 12; j++) {
        c1p[j] = c1_w.w[12 * part + j];
        c2p[j] = c2_w.w[12 * part + j];
    }
    fp2_t c1 = (fp_mont)c1p, c2 = (fp_mont)c2p;
    fp2_t x = pts[i].X, y = pts[i].Y;
    affine_fp2_t p(x, y);
    bucket_fp2_t q = subgroup_mul<bucket_fp2_t, affine_fp2_t>(p, k, 0, bits);
    // conj() negates the imaginary part, which the odd lane holds.
    fp2_t cx = x, cy = y;
    cx.cneg(part == 1);
    cy.cneg(part == 1);
    q.add(affine_fp2_t(cx * c1, cy * c2));
    // is_inf() is decided over both lanes of the pair, so they agree.
    if (!q.is_inf() && part == 0)
        atomicMin(first_bad, (unsigned long long)i);
#endif
}

template<class ctx_t>
static void subgroup_range_check(const ctx_t* ctx, size_t offset, size_t n)
{
    if (ctx->d_points == nullptr && ctx->host_owned == nullptr)
        throw std::invalid_argument("only resident or staged points can be checked on the device");
    if (offset > ctx->npoints || n > ctx->npoints - offset)
        throw std::invalid_argument("subgroup check beyond the context's points");
}

// Points [offset, offset + n) of a context on its device: resident ones where they are, a
// staged context's copied up for the check (a loader's chunk, ~100-200 MB) and freed with this.
template<class raw_t>
struct points_on_device_t {
    const raw_t* ptr = nullptr;
    void* tmp = nullptr;
    template<class ctx_t>
    points_on_device_t(const gpu_t& gpu, const ctx_t* ctx, size_t offset, size_t n)
    {
        if (ctx->d_points != nullptr) {
            ptr = (const raw_t*)ctx->d_points + offset;
            return;
        }
        device_malloc(gpu, &tmp, (n ? n : 1) * sizeof(raw_t));
        ptr = (const raw_t*)tmp;
        if (n > 0) {
            cudaError_t e = cudaMemcpyAsync(tmp, (const raw_t*)ctx->host_owned + offset, n * sizeof(raw_t), cudaMemcpyHostToDevice, gpu);
            if (e == cudaSuccess)
                e = cudaStreamSynchronize(gpu);
            if (e != cudaSuccess) {
                (void)cudaFree(tmp);
                tmp = nullptr;
                CUDA_OK(e);
            }
        }
    }
    ~points_on_device_t() { if (tmp) (void)cudaFree(tmp); }
    points_on_device_t(const points_on_device_t&) = delete;
    points_on_device_t& operator=(const points_on_device_t&) = delete;
};

// Launch `launch(d_first_bad)` on the device's first stream and return its verdict.
template<class F>
static size_t subgroup_run(const gpu_t& gpu, F launch)
{
    unsigned long long* d_bad = nullptr;
    device_malloc(gpu, &d_bad, sizeof(*d_bad));
    unsigned long long bad = ~0ull;
    try {
        CUDA_OK(cudaMemcpyAsync(d_bad, &bad, sizeof(bad), cudaMemcpyHostToDevice, gpu));
        launch(d_bad);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(&bad, d_bad, sizeof(bad), cudaMemcpyDeviceToHost, gpu));
        gpu.sync();
    } catch (...) {
        (void)cudaFree(d_bad);
        throw;
    }
    CUDA_OK(cudaFree(d_bad));
    return bad == ~0ull ? SIZE_MAX : (size_t)bad;
}

// *first_bad: the index (from offset) of the first point of [offset, offset + n) outside G1,
// or SIZE_MAX. beta: 6 Montgomery limbs; k: x^2 as two 64-bit halves of `bits` bits.
CUZK_FFI RustError cuzk_msm_g1_first_outside_subgroup(const msm_g1_ctx* ctx, size_t offset, size_t n, const uint64_t* beta,
                                                      uint64_t k_lo, uint64_t k_hi, uint32_t bits, size_t* first_bad)
{
    return guarded([&] {
        subgroup_range_check(ctx, offset, n);
        if (bits < 2 || bits > 128)
            throw std::invalid_argument("subgroup check: scalar of 2 to 128 bits");
        fp_words_t b;
        memcpy(b.w, beta, sizeof(b.w));
        const gpu_t& gpu = gpu_at(ctx->index);
        *first_bad = SIZE_MAX;
        if (n == 0)
            return;
        points_on_device_t<g1_raw_t> on(gpu, ctx, offset, n);
        const g1_raw_t* pts = on.ptr;
        *first_bad = subgroup_run(gpu, [&](unsigned long long* d_bad) {
            const unsigned threads = 128;
            g1_subgroup_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, gpu>>>(pts, n, b, k_lo, k_hi, (int)bits, d_bad);
        });
    });
}

// The same in G2: c1, c2 as 12 limbs each (c0 then c1), k = |x| of `bits` bits.
CUZK_FFI RustError cuzk_msm_g2_first_outside_subgroup(const msm_g2_ctx* ctx, size_t offset, size_t n, const uint64_t* c1,
                                                      const uint64_t* c2, uint64_t k, uint32_t bits, size_t* first_bad)
{
    return guarded([&] {
        subgroup_range_check(ctx, offset, n);
        if (bits < 2 || bits > 64)
            throw std::invalid_argument("subgroup check: scalar of 2 to 64 bits");
        fp2_words_t a, b;
        memcpy(a.w, c1, sizeof(a.w));
        memcpy(b.w, c2, sizeof(b.w));
        const gpu_t& gpu = gpu_at(ctx->index);
        *first_bad = SIZE_MAX;
        if (n == 0)
            return;
        points_on_device_t<g2_raw_t> on(gpu, ctx, offset, n);
        const g2_raw_t* pts = on.ptr;
        *first_bad = subgroup_run(gpu, [&](unsigned long long* d_bad) {
            const unsigned threads = 128;   // 64 points a block
            g2_subgroup_kernel<<<(unsigned)((2 * n + threads - 1) / threads), threads, 0, gpu>>>(pts, n, a, b, k, (int)bits, d_bad);
        });
    });
}
