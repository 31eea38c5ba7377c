// The pre-compiled constraint system on the device (issue #7): the R1CS matrices A, B, C in
// cuzk-pce's CSR form, uploaded once per device, and per partition a = A·w, b = B·w, c = C·w
// computed where the NTTs will read them, so a, b, c never exist on the host.
//
// CSR layout (cuzk-pce): row pointers (u32, or u64 past 2^32 non-zeros), one u32 column per
// non-zero with bit 31 set for "input index" and clear for "aux index", and one u32 index per
// non-zero into a small table of distinct coefficients where 0 means +1 and 1 means -1 (most
// non-zeros), so those need no multiplication. The witness on the device is [inputs | aux].
//
// Rows by length. One thread a row stalls its warp on the warp's longest row, and the circuits
// mix very different lengths: in a 2 KiB PoRep 95 % of A's rows have ≤ 2 non-zeros, but 0.1 %
// have ~930 (a third of A's non-zeros, most of them with a coefficient to multiply by), and a
// WindowPoSt's A has a quarter of its rows at 5–128 (Poseidon). So rows are split by length
// once, at upload: short ones (≤ CSR_SHORT) one thread each; medium ones (≤ CSR_MEDIUM)
// CSR_MEDIUM_LANES lanes each, long ones a warp each, whose lanes stride over the row and
// sum their parts by shuffles. The medium and long rows are listed on the device (4 bytes a
// row); the short-row kernel skips rows longer than CSR_SHORT.
#include "common.cuh"
#include <vector>

static const uint32_t INPUT_TAG = 1u << 31;
static const size_t CSR_SHORT = 4;
static const size_t CSR_MEDIUM = 64;
static const uint32_t CSR_MEDIUM_LANES = 8;

struct csr_dev {
    size_t index;
    size_t rows, nnz, ncoeffs;
    bool wide;
    void* row_ptr;
    uint32_t* cols;
    uint32_t* cidx;
    fr_t* coeffs;
    // Rows longer than CSR_SHORT: medium ones, then long ones.
    uint32_t* listed;
    size_t n_medium, n_long;
};

// One non-zero's term: the witness value times its coefficient.
__device__ __forceinline__ static void csr_term(fr_t& acc, uint32_t col, uint32_t ci, const fr_t* coeffs,
                                                const fr_t* w, uint32_t n_inputs)
{
    const fr_t x = (col & INPUT_TAG) ? w[col & ~INPUT_TAG] : w[n_inputs + (size_t)col];
    if (ci == 0)
        acc += x;
    else if (ci == 1)
        acc -= x;
    else
        acc += x * coeffs[ci];
}

// Rows of at most CSR_SHORT non-zeros, one thread each; longer rows are left to csr_spmv_listed.
template<typename ptr_t>
__global__ void csr_spmv_short(const ptr_t* row_ptr, const uint32_t* cols, const uint32_t* cidx,
                               const fr_t* coeffs, const fr_t* w, uint32_t n_inputs, size_t rows, fr_t* out)
{
    for (size_t r = threadIdx.x + (size_t)blockIdx.x * blockDim.x; r < rows;
         r += (size_t)gridDim.x * blockDim.x) {
        const size_t start = row_ptr[r], end = row_ptr[r + 1];
        if (end - start > CSR_SHORT)
            continue;
        fr_t acc;
        acc.zero();
        for (size_t k = start; k < end; k++)
            csr_term(acc, cols[k], cidx[k], coeffs, w, n_inputs);
        out[r] = acc;
    }
}

// The listed rows, G lanes each: lane l takes non-zeros l, l + G, …, then the G partial sums
// are added by shuffles within the group. A warp steps through its rows together, so every
// lane reaches the shuffles (a lane past the list adds zero).
template<uint32_t G, typename ptr_t>
__global__ void csr_spmv_listed(const ptr_t* row_ptr, const uint32_t* cols, const uint32_t* cidx,
                                const fr_t* coeffs, const fr_t* w, uint32_t n_inputs, const uint32_t* list,
                                size_t n, fr_t* out)
{
    static_assert(G > 1 && G <= 32 && 32 % G == 0, "lanes a row divide the warp");
    const uint32_t lane32 = threadIdx.x & 31, lane = lane32 % G;
    const size_t warp_first = ((size_t)blockIdx.x * blockDim.x + threadIdx.x - lane32) / G;
    const size_t step = (size_t)gridDim.x * blockDim.x / G;
    for (size_t first = warp_first; first < n; first += step) {
        const size_t g = first + lane32 / G;
        fr_t acc;
        acc.zero();
        uint32_t r = 0;
        if (g < n) {
            r = list[g];
            for (size_t k = row_ptr[r] + lane, end = row_ptr[r + 1]; k < end; k += G)
                csr_term(acc, cols[k], cidx[k], coeffs, w, n_inputs);
        }
        for (uint32_t off = G / 2; off > 0; off /= 2) {
            fr_t t;
            for (size_t i = 0; i < sizeof(fr_t) / sizeof(uint32_t); i++)
                t[i] = __shfl_xor_sync(0xffffffff, acc[i], off);
            acc += t;
        }
        if (g < n && lane == 0)
            out[r] = acc;
    }
}

// The rows longer than CSR_SHORT, medium ones first: returns how many are medium.
template<typename ptr_t>
static size_t list_rows(const ptr_t* row_ptr, size_t rows, std::vector<uint32_t>& list)
{
    std::vector<uint32_t> long_rows;
    for (size_t r = 0; r < rows; r++) {
        const size_t len = row_ptr[r + 1] - row_ptr[r];
        if (len > CSR_MEDIUM)
            long_rows.push_back((uint32_t)r);
        else if (len > CSR_SHORT)
            list.push_back((uint32_t)r);
    }
    const size_t medium = list.size();
    list.insert(list.end(), long_rows.begin(), long_rows.end());
    return medium;
}

__global__ void gather_kernel(fr_t* dst, const fr_t* src, const uint32_t* idx, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[idx[i]];
}

// A compact witness (cuzk_pce::CompactFrVec) expanded where the mat-vec reads it: value i
// has a 2-bit tag in word i/32 (0b00 zero, 0b01 one, high bit set: the next stored value),
// and offs[word] counts the stored values of all earlier words, so every value is found from
// its own word alone.
__global__ void expand_compact_kernel(fr_t* out, const uint64_t* tags, const uint32_t* offs,
                                      const fr_t* others, size_t len, const fr_t one)
{
    const uint64_t OTHER_MASK = 0xAAAAAAAAAAAAAAAAull;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < len;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint64_t w = tags[i / 32];
        const unsigned slot = (unsigned)(i % 32);
        const unsigned tag = (unsigned)(w >> (2 * slot)) & 3;
        if (tag & 2) {
            const uint64_t below = w & OTHER_MASK & ((1ull << (2 * slot)) - 1);
            out[i] = others[offs[i / 32] + __popcll(below)];
        } else if (tag) {
            out[i] = one;
        } else {
            out[i].zero();
        }
    }
}

static unsigned grid_for(const stream_t& s, size_t n, unsigned threads)
{
    size_t blocks = (n + threads - 1) / threads;
    size_t cap = (size_t)s.sm_count() * 16;
    return (unsigned)(blocks < cap ? (blocks ? blocks : 1) : cap);
}

// out[0..rows) ← m·w on stream s: the short rows, then the medium and the long ones (each
// kernel writes only its own rows).
template<typename ptr_t>
static void csr_spmv(const stream_t& s, const csr_dev* m, const ptr_t* row_ptr, const fr_t* w, uint32_t n_inputs,
                     fr_t* out)
{
    const unsigned threads = 256;
    csr_spmv_short<<<grid_for(s, m->rows, threads), threads, 0, s>>>(row_ptr, m->cols, m->cidx, m->coeffs, w,
                                                                     n_inputs, m->rows, out);
    CUDA_OK(cudaGetLastError());
    if (m->n_medium > 0) {
        csr_spmv_listed<CSR_MEDIUM_LANES><<<grid_for(s, m->n_medium * CSR_MEDIUM_LANES, threads), threads, 0, s>>>(
            row_ptr, m->cols, m->cidx, m->coeffs, w, n_inputs, m->listed, m->n_medium, out);
        CUDA_OK(cudaGetLastError());
    }
    if (m->n_long > 0) {
        csr_spmv_listed<32><<<grid_for(s, m->n_long * 32, threads), threads, 0, s>>>(
            row_ptr, m->cols, m->cidx, m->coeffs, w, n_inputs, m->listed + m->n_medium, m->n_long, out);
        CUDA_OK(cudaGetLastError());
    }
}

CUZK_FFI RustError cuzk_csr_upload(size_t index, size_t rows, const void* row_ptr, bool wide,
                                   const uint32_t* cols, const uint32_t* cidx, size_t nnz,
                                   const fr_t* coeffs, size_t ncoeffs, csr_dev** out)
{
    *out = nullptr;
    csr_dev* m = nullptr;
    RustError r = guarded([&] {
        if (ncoeffs < 2)
            throw std::invalid_argument("CSR: coefficient table lacks +1/-1");
        if (!wide && nnz > 0xffffffffull)
            throw std::invalid_argument("CSR: u32 row pointers with more than 2^32 non-zeros");
        if (rows > 0xffffffffull)
            throw std::invalid_argument("CSR: more than 2^32 rows");
        const gpu_t& gpu = gpu_at(index);
        std::vector<uint32_t> list;
        const size_t medium = wide ? list_rows((const uint64_t*)row_ptr, rows, list)
                                   : list_rows((const uint32_t*)row_ptr, rows, list);
        m = new csr_dev{index, rows, nnz, ncoeffs, wide, nullptr, nullptr, nullptr, nullptr,
                        nullptr, medium, list.size() - medium};
        size_t ptr_bytes = (rows + 1) * (wide ? 8 : 4);
        device_malloc(gpu, &m->row_ptr, ptr_bytes);
        device_malloc(gpu, &m->cols, (nnz ? nnz : 1) * 4);
        device_malloc(gpu, &m->cidx, (nnz ? nnz : 1) * 4);
        device_malloc(gpu, &m->coeffs, ncoeffs * sizeof(fr_t));
        device_malloc(gpu, &m->listed, (list.empty() ? 1 : list.size()) * 4);
        gpu[0].HtoD((uint8_t*)m->row_ptr, row_ptr, ptr_bytes);
        gpu[1].HtoD(m->cols, cols, nnz);
        gpu[2].HtoD(m->cidx, cidx, nnz);
        gpu.HtoD(m->coeffs, coeffs, ncoeffs);
        gpu.HtoD(m->listed, list.data(), list.size());
        gpu.sync();
    });
    if (r.code != cudaSuccess) {
        if (m) {
            (void)cudaFree(m->row_ptr); (void)cudaFree(m->cols);
            (void)cudaFree(m->cidx); (void)cudaFree(m->coeffs);
            (void)cudaFree(m->listed);
            delete m;
        }
        return r;
    }
    *out = m;
    return r;
}

CUZK_FFI void cuzk_csr_free(csr_dev* m)
{
    if (m == nullptr)
        return;
    if (m->index < ngpus()) {
        select_gpu((int)m->index);
        (void)cudaFree(m->row_ptr); (void)cudaFree(m->cols);
        (void)cudaFree(m->cidx); (void)cudaFree(m->coeffs);
        (void)cudaFree(m->listed);
    }
    delete m;
}

// Device bytes the matrix holds, its row lists included.
CUZK_FFI size_t cuzk_csr_bytes(const csr_dev* m)
{
    return (m->rows + 1) * (m->wide ? 8 : 4) + m->nnz * 8 + m->ncoeffs * sizeof(fr_t)
           + (m->n_medium + m->n_long) * 4;
}

// d_a (2^lg_n, device) ← A·w and d_bc (2·2^lg_n) ← [B·w | C·w], each zero-padded from rows
// to 2^lg_n: two buffers, so that b and c can be freed once the quotient is in a's place.
// d_w = [inputs | aux] on the device. All three matrices must have the same row count.
CUZK_FFI RustError cuzk_pce_eval(size_t index, const csr_dev* const mats[3], const fr_t* d_w,
                                 uint32_t n_inputs, uint32_t lg_n, fr_t* d_a, fr_t* d_bc, float* ms)
{
    return guarded([&] {
        const gpu_t& gpu = gpu_at(index);
        const size_t n = (size_t)1 << lg_n;
        for (int i = 0; i < 3; i++)
            if (mats[i]->rows > n || mats[i]->rows != mats[0]->rows || mats[i]->index != index)
                throw std::invalid_argument("PCE eval: matrix shape or device mismatch");
        timing_event t0, t1;
        t0.record(gpu);
        for (int i = 0; i < 3; i++) {
            event_t go(gpu);
            go.wait(gpu[i]);
            const csr_dev* m = mats[i];
            stream_t& s = gpu[i];
            fr_t* out = i == 0 ? d_a : d_bc + (i - 1) * n;
            if (m->wide)
                csr_spmv(s, m, (const uint64_t*)m->row_ptr, d_w, n_inputs, out);
            else
                csr_spmv(s, m, (const uint32_t*)m->row_ptr, d_w, n_inputs, out);
            if (n > m->rows)
                s.bzero(out + m->rows, n - m->rows);
            event_t done(s);
            done.wait(gpu);
        }
        t1.record(gpu);
        gpu.sync();
        ms[0] = t1.ms_since(t0);
    });
}

// Device memory for the Rust side (witness, a/b/c, index lists), from the device's pool
// (pool.cuh, pool_malloc); free with cuzk_device_free.
CUZK_FFI RustError cuzk_device_alloc(size_t index, size_t bytes, void** d_out)
{
    *d_out = nullptr;
    return guarded([&] {
        pool_malloc(gpu_at(index), d_out, bytes ? bytes : 1);
    });
}

// d_dst[i] = d_src[d_idx[i]] for i < n: the dense scalars of a density-filtered MSM.
CUZK_FFI RustError cuzk_gather(size_t index, fr_t* d_dst, const fr_t* d_src, const uint32_t* d_idx, size_t n)
{
    return guarded([&] {
        const gpu_t& gpu = gpu_at(index);
        if (n == 0)
            return;
        stream_t& s = gpu;
        gather_kernel<<<grid_for(s, n, 256), 256, 0, s>>>(d_dst, d_src, d_idx, n);
        CUDA_OK(cudaGetLastError());
        gpu.sync();
    });
}

// d_out[0..len) ← the compact vector (d_tags: ceil(len/32) words, d_offs: one per word,
// d_others: every stored value, n_others of them). `one` is 1 in the host's Montgomery form.
// The caller has checked that the offsets and the stored values agree (word_offsets), so no
// index leaves d_others; the last offset is checked again here against n_others.
CUZK_FFI RustError cuzk_expand_compact(size_t index, fr_t* d_out, const uint64_t* d_tags, const uint32_t* d_offs,
                                       const fr_t* d_others, size_t n_others, size_t len, const fr_t* one, float* ms)
{
    return guarded([&] {
        const gpu_t& gpu = gpu_at(index);
        if (len == 0) {
            ms[0] = 0;
            return;
        }
        uint32_t last_off = 0;
        gpu.DtoH(&last_off, d_offs + (len - 1) / 32, 1);
        gpu.sync();
        if (last_off > n_others)
            throw std::invalid_argument("compact witness: offsets beyond the stored values");
        stream_t& s = gpu;
        timing_event t0, t1;
        t0.record(s);
        expand_compact_kernel<<<grid_for(s, len, 256), 256, 0, s>>>(d_out, d_tags, d_offs, d_others, len, *one);
        CUDA_OK(cudaGetLastError());
        t1.record(s);
        gpu.sync();
        ms[0] = t1.ms_since(t0);
    });
}
