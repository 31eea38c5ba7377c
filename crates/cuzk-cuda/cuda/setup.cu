// Fixed-base scalar multiplication for the generated (INSECURE) setup: out[i] = s[i]·G for
// hundreds of millions of scalars (≈ 430 M in G1, 33 M in G2 for a 32 GiB PoRep circuit),
// which take minutes on 16 CPU cores and seconds here.
//
// The method is the CPU's (cuzk-groth16 setup::fixed_base): the scalar in signed `window`-bit
// digits, one precomputed table point per window (d·2^(window·k)·G, d = 1 … 2^(window−1), built
// by the host), added up — no doublings. Each thread owns one scalar: it sums in XYZZ
// coordinates (sppark's complete mixed addition, which also handles doublings and sums at
// infinity) and converts to affine with one inversion. Scalars arrive canonical (not
// Montgomery), four little-endian u64 words each; points come and go in blst's affine layout.
#include "common.cuh"
#include <ec/xyzz_t.hpp>

// sppark keeps XYZZ's coordinates private; the conversion to affine needs them. The layout is
// four field elements in this order (ec/xyzz_t.hpp), which the static_assert below pins.
template<class field_t> struct xyzz_coords { field_t X, Y, ZZZ, ZZ; };
// A point in global memory, blst's affine layout (Fp2 coordinates whole, see below).
template<class field_t> struct affine_mem { typename field_t::mem_t X, Y; };

// How sppark's device field types work, and why the loop is shaped as it is:
// * An Fp2 element is split across a pair of lanes (even lane c0, odd lane c1) and its
//   arithmetic shuffles between them, so a G2 point takes two lanes (field_t::degree).
// * Inversion (`reciprocal`) is cooperative too (lane pairs, full-warp shuffles), so every
//   lane of a warp must reach it together: the loop runs the same number of times in every
//   lane, idle lanes compute on a clamped index and do not store, and the warp is
//   re-converged before the inversion. A point at infinity has ZZ = ZZZ = 0, whose
//   "inverse" sppark returns as 0, giving (0, 0) — blst's encoding of infinity — without a
//   branch.
template<class field_t>
__global__ void fixed_base_kernel(affine_mem<field_t>* out, const uint64_t* scalars, size_t n,
                                  const typename xyzz_t<field_t>::affine_t::mem_t* table,
                                  int window, int windows)
{
    using point_t = xyzz_t<field_t>;
    using affine_t = typename point_t::affine_t;
    static_assert(sizeof(point_t) == sizeof(xyzz_coords<field_t>), "XYZZ layout");
    const size_t lanes = field_t::degree;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t total = n * lanes;
    const int half = 1 << (window - 1);
    for (size_t base = (size_t)blockIdx.x * blockDim.x; base < total; base += stride) {
        size_t t = base + threadIdx.x;
        bool active = t < total;
        size_t i = (active ? t : total - 1) / lanes;
        const uint64_t* s = scalars + 4 * i;
        point_t acc;
        acc.inf();
        int carry = 0;
        for (int k = 0; k < windows; k++) {
            int bit = k * window;
            uint64_t bits = 0;
            if (bit < 256) {
                bits = s[bit / 64] >> (bit % 64);
                if (bit % 64 + window > 64 && bit / 64 + 1 < 4)
                    bits |= s[bit / 64 + 1] << (64 - bit % 64);
            }
            int d = (int)(bits & ((1u << window) - 1)) + carry;
            carry = d > half;
            if (carry)
                d -= 1 << window;
            if (d != 0) {
                affine_t p = table[k * half + (d < 0 ? -d : d) - 1];
                acc.add(p, d < 0);
            }
        }
        __syncwarp();
        const auto& c = reinterpret_cast<const xyzz_coords<field_t>&>(acc);
        // x = X/ZZ, y = Y/ZZZ from one inversion of ZZ·ZZZ.
        field_t zz_zzz = c.ZZ * c.ZZZ;
        field_t inv = zz_zzz.reciprocal();
        field_t x = c.X * (inv * c.ZZZ);
        field_t y = c.Y * (inv * c.ZZ);
        if (active) {
            out[i].X = x;
            out[i].Y = y;
        }
    }
}

// Chunks of this many scalars go up, are multiplied and come back while the next is queued.
static const size_t CHUNK = (size_t)1 << 22;

template<class field_t>
static RustError fixed_base(size_t index, const void* table, size_t table_len, int window,
                            const uint64_t* scalars, size_t n, void* out)
{
    return guarded([&] {
        using affine_mem_t = typename xyzz_t<field_t>::affine_t::mem_t;
        if (window < 2 || window > 16)
            throw std::invalid_argument("fixed-base window out of range");
        int windows = (256 + window - 1) / window;
        if (table_len != (size_t)windows << (window - 1))
            throw std::invalid_argument("fixed-base table has the wrong length for its window");
        if (n == 0)
            return;
        const gpu_t& gpu = gpu_at(index);
        static_assert(sizeof(affine_mem_t) == sizeof(affine_mem<field_t>), "affine layout");
        // sppark's dev_ptr_t below is a plain cudaMalloc, which a retained pool's idle memory
        // does not serve (pool.cuh): give that back first. Setups are made at load, rarely.
        if (pool_idle_bytes(gpu.cid()) > 0)
            trim_pool(gpu.cid(), false);
        dev_ptr_t<affine_mem_t> d_table{table_len};
        gpu[0].HtoD(&d_table[0], (const affine_mem_t*)table, table_len);
        gpu[0].sync();
        // Two buffers of scalars and results, alternating between streams 0 and 1.
        size_t chunk = n < CHUNK ? n : CHUNK;
        dev_ptr_t<uint64_t> d_s0{4 * chunk}, d_s1{4 * chunk};
        dev_ptr_t<affine_mem<field_t>> d_o0{chunk}, d_o1{chunk};
        auto* res = (affine_mem<field_t>*)out;
        for (size_t start = 0, c = 0; start < n; start += chunk, c++) {
            size_t len = n - start < chunk ? n - start : chunk;
            auto& s = gpu[c & 1];
            uint64_t* ds = (c & 1) ? &d_s1[0] : &d_s0[0];
            affine_mem<field_t>* dout = (c & 1) ? &d_o1[0] : &d_o0[0];
            s.HtoD(ds, scalars + 4 * start, 4 * len);
            unsigned threads = 128;   // a multiple of the warp: every warp runs whole
            size_t blocks = (len * field_t::degree + threads - 1) / threads;
            size_t cap = (size_t)s.sm_count() * 32;
            fixed_base_kernel<field_t><<<(unsigned)(blocks < cap ? blocks : cap), threads, 0, s>>>(
                dout, ds, len, &d_table[0], window, windows);
            CUDA_OK(cudaGetLastError());
            s.DtoH(res + start, dout, len);
        }
        gpu[0].sync();
        gpu[1].sync();
    });
}

CUZK_FFI RustError cuzk_fixed_base_g1(size_t index, const void* table, size_t table_len, int window,
                                      const uint64_t* scalars, size_t n, void* out)
{
    return fixed_base<fp_t>(index, table, table_len, window, scalars, n, out);
}

CUZK_FFI RustError cuzk_fixed_base_g2(size_t index, const void* table, size_t table_len, int window,
                                      const uint64_t* scalars, size_t n, void* out)
{
    return fixed_base<fp2_t>(index, table, table_len, window, scalars, n, out);
}
