// NTTs over BLS12-381 Fr (sppark's kernels) and Groth16's quotient on the device.
//
// h = (A·B − C)/Z with Z = xⁿ − 1. Let P = A·B = P_lo + xⁿ·P_hi (degree < 2n − 1). On the
// coset g·⟨ω⟩, xⁿ = gⁿ, so the coset iNTT of A·B's coset values gives R = P_lo + gⁿ·P_hi; and
// the plain iNTT of c gives C's coefficients. The textbook route takes C to the coset too and
// divides there: coset iNTT((A·B − C)/(gⁿ − 1)) = (R − C)/(gⁿ − 1). Dividing after the inverse
// transform instead saves c's coset NTT, so 6 transforms instead of 7, for any a, b, c:
//   a, b:  iNTT (bit-reversed coefficients) → coset NTT (natural-order values)
//   c:     iNTT (bit-reversed coefficients)
//   b ← a·b pointwise → coset iNTT (bit-reversed R)
//   h[i] ← (R − C)[rev(i)] · (gⁿ − 1)⁻¹ into a's buffer, natural order (h[n-1] = 0)
// Nothing is bit-reversed in place. The three inputs go up on three streams so the transforms
// of a overlap the upload of b, c. The result stays on the device: the H MSM reads it there.
#include "common.cuh"
#include <ntt/ntt.cuh>


__global__ void pointwise_product(fr_t* b, const fr_t* a, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        b[i] = a[i] * b[i];
}

// h[i] = (r[rev(i)] − c[rev(i)]) · z_inv: r and c in bit-reversed order, h natural. The reads
// are a gather, but each element is one whole 32-byte sector, so no bandwidth is wasted.
__global__ void quotient_combine(fr_t* h, const fr_t* r, const fr_t* c, const fr_t z_inv, uint32_t lg_n)
{
    const size_t n = (size_t)1 << lg_n;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t j = lg_n == 0 ? 0 : __brev((uint32_t)i) >> (32 - lg_n);
        fr_t t = r[j];
        t -= c[j];
        h[i] = t * z_inv;
    }
}

static unsigned pointwise_grid(const stream_t& s, size_t n, unsigned threads)
{
    size_t blocks = (n + threads - 1) / threads;
    size_t cap = (size_t)s.sm_count() * 8;
    return (unsigned)(blocks < cap ? blocks : cap);
}

// In-place NTT of a host vector (a test and benchmark entry; the prover uses the quotient).
CUZK_FFI RustError cuzk_ntt(size_t index, fr_t* inout, uint32_t lg_n, int order, int direction, int type)
{
    return guarded([&] {
        if (lg_n > MAX_LG_DOMAIN_SIZE)
            throw std::invalid_argument("NTT domain larger than 2^28");
        const gpu_t& gpu = gpu_at(index);
        RustError e = NTT::Base(gpu, inout, lg_n, (NTT::InputOutputOrder)order,
                                (NTT::Direction)direction, (NTT::Type)type);
        if (e.code != cudaSuccess)
            throw cuda_error{e.code, e.message ? e.message : "NTT failed"};
    });
}

// The quotient on device vectors a, b, c, each n = 2^lg_n long, a ← h (b and c are
// clobbered). The caller has ordered the three flip-flop streams after whatever produced the
// inputs.
static void quotient_on_device(const gpu_t& gpu, fr_t* d_a, fr_t* d_b, fr_t* d_c, uint32_t lg_n, const fr_t& z_inv)
{
    fr_t* v[3] = {d_a, d_b, d_c};
    const size_t n = (size_t)1 << lg_n;
    // n = 1: every transform is the identity (and g^1 − 1 is Z on the coset), so only the
    // pointwise steps are left.
    if (lg_n > 0) {
        for (int i = 0; i < 3; i++)
            NTT::Base_dev_ptr(gpu[i], v[i], lg_n, NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::standard);
        for (int i = 0; i < 2; i++)
            NTT::Base_dev_ptr(gpu[i], v[i], lg_n, NTT::InputOutputOrder::RN, NTT::Direction::forward, NTT::Type::coset);
    }
    for (int i = 0; i < 3; i++) {
        event_t done(gpu[i]);
        done.wait(gpu);
    }
    stream_t& s0 = gpu;
    const unsigned threads = 256;
    pointwise_product<<<pointwise_grid(s0, n, threads), threads, 0, s0>>>(v[1], v[0], n);
    CUDA_OK(cudaGetLastError());
    if (lg_n > 0)
        NTT::Base_dev_ptr(s0, v[1], lg_n, NTT::InputOutputOrder::NR, NTT::Direction::inverse, NTT::Type::coset);
    quotient_combine<<<pointwise_grid(s0, n, threads), threads, 0, s0>>>(v[0], v[1], v[2], z_inv, lg_n);
    CUDA_OK(cudaGetLastError());
}

// a, b, c: host vectors of m ≤ 2^lg_n evaluations (zero-padded here). On success *d_h owns a
// device buffer whose first n elements are h's coefficients (free with cuzk_device_free);
// if h_host is not null, h[0..n-1) is also copied there. ms[0] = upload ms, ms[1] = NTT ms.
CUZK_FFI RustError cuzk_quotient(size_t index, const fr_t* a, const fr_t* b, const fr_t* c, size_t m,
                                 uint32_t lg_n, const fr_t* z_inv, fr_t** d_h, fr_t* h_host, float* ms)
{
    *d_h = nullptr;
    fr_t* d_abc = nullptr;
    RustError r = guarded([&] {
        if (lg_n > MAX_LG_DOMAIN_SIZE || m > ((size_t)1 << lg_n))
            throw std::invalid_argument("quotient: bad domain size");
        const gpu_t& gpu = gpu_at(index);
        const size_t n = (size_t)1 << lg_n;
        pool_malloc(gpu, &d_abc, 3 * n * sizeof(fr_t));
        const fr_t* host[3] = {a, b, c};
        timing_event t0, t1, t2;
        t0.record(gpu);
        event_t started(gpu);
        for (int i = 0; i < 3; i++) {
            started.wait(gpu[i]);
            gpu[i].HtoD(d_abc + i * n, host[i], m);
            if (n > m)
                gpu[i].bzero(d_abc + i * n + m, n - m);
        }
        for (int i = 0; i < 3; i++) {
            event_t up(gpu[i]);
            up.wait(gpu);
        }
        t1.record(gpu);
        // Uploads are done before the transforms start, so the timings separate cleanly;
        // the transforms still run on three streams.
        for (int i = 0; i < 3; i++) {
            event_t go(gpu);
            go.wait(gpu[i]);
        }
        quotient_on_device(gpu, d_abc, d_abc + n, d_abc + 2 * n, lg_n, *z_inv);
        t2.record(gpu);
        if (h_host != nullptr && n > 1)
            gpu.DtoH(h_host, d_abc, n - 1);
        gpu.sync();
        ms[0] = t1.ms_since(t0);
        ms[1] = t2.ms_since(t1);
    });
    if (r.code != cudaSuccess) {
        if (d_abc != nullptr)
            pool_free(select_gpu((int)index), d_abc);
        return r;
    }
    *d_h = d_abc;
    return r;
}

// The same on a, b, c already on the device (computed there by the PCE mat-vec): d_a is a,
// d_bc is [b | c], 2·2^lg_n long; h replaces a. ms[0] = NTT ms.
CUZK_FFI RustError cuzk_quotient_device(size_t index, fr_t* d_a, fr_t* d_bc, uint32_t lg_n, const fr_t* z_inv, float* ms)
{
    return guarded([&] {
        if (lg_n > MAX_LG_DOMAIN_SIZE)
            throw std::invalid_argument("quotient: bad domain size");
        const gpu_t& gpu = gpu_at(index);
        timing_event t0, t1;
        t0.record(gpu);
        for (int i = 0; i < 3; i++) {
            event_t go(gpu);
            go.wait(gpu[i]);
        }
        const size_t n = (size_t)1 << lg_n;
        quotient_on_device(gpu, d_a, d_bc, d_bc + n, lg_n, *z_inv);
        t1.record(gpu);
        gpu.sync();
        ms[0] = t1.ms_since(t0);
    });
}
