// The bucket step of the wide-window MSM (msm_wide.cuh) in affine coordinates, G1 only: an
// experiment the benchmark runs beside sppark's XYZZ accumulate (MsmPath::DenseAffine); the
// prover does not use it, because it is slower so far.
//
// The idea: after the sort, every point is added to one bucket per window, and at 2^27 points
// that step is ~80 % of MSM H, a PoRep partition's longest phase. sppark's accumulate keeps each
// bucket in XYZZ coordinates: 8 multiplications and 2 squarings a point. In affine coordinates
// the same addition is
//   λ = (y2 − y1)/(x2 − x1),   x3 = λ² − x1 − x2,   y3 = λ·(x1 − x3) − y1,
// two multiplications and a squaring once 1/(x2 − x1) is known, and Montgomery's trick shares
// one inversion among a batch of denominators for three multiplications each. So each thread
// keeps AFF_SLOTS buckets in flight, takes the next point of every one of them, inverts the
// product of their denominators once (sppark's reciprocal, which pairs adjacent lanes), and
// finishes the additions from the running products.
//
// Measured (BENCHMARKS.md, 2026-12-06, H100, 2^27 random scalars): the bucket step took 912 ms
// with 16 slots and 1019 ms with 8, against 793 ms for sppark's accumulate. The inversion costs
// tens of multiplications, so a batch of 16 still pays a few a point, and the slots (3 field
// elements each) live in local memory, which at full occupancy is device memory traffic on
// every step. A win needs far larger batches per inversion without that traffic.
//
// Work. A thread owns AFF_BUCKETS_PER_THREAD consecutive buckets of one window (about 2000
// points at 2^27 points and 22-bit windows) and walks them through its slots: a slot that
// finishes a bucket writes it out and opens the thread's next one, so slots stay busy until
// the thread's last buckets, whatever the bucket sizes. Buckets of one point are written out
// at once; a bucket of more than AFF_MAX_RUN points (only scalars with many equal digits make
// one) is summed in XYZZ by its thread, as sppark's accumulate sums every bucket.
//
// Exceptions to the addition formula, each decided per slot and step: the bucket so far is
// the point at infinity (it takes the point); the point is at infinity ((0, 0) in memory, as
// sppark's affine type has it: the bucket keeps its value); x2 = x1 with y2 = y1 (a doubling:
// λ = 3·x1²/(2·y1)); x2 = x1 otherwise (the sum is the point at infinity). Only additions and
// doublings put a denominator into the batch.
//
// The output is sppark's accumulate's, bucket for bucket: bucket x of window y in XYZZ
// (Z = 1, or the point at infinity), and the first bucket of the launch's first window left
// at infinity, since batch addition sums that one (msm_wide.cuh).
#pragma once

#include <cstdint>

typedef xyzz_t<fp_t> aff_bucket_t;
typedef aff_bucket_t::affine_t aff_affine_t;

// A point as sppark's affine_t::mem_t lays it out, with its coordinates readable.
struct aff_point_t {
    fp_t x, y;
};
static_assert(sizeof(aff_point_t) == sizeof(aff_affine_t::mem_t), "affine layout");

static const uint32_t AFF_BUCKETS_PER_THREAD = 32;
static const uint32_t AFF_MAX_RUN = 1024;
static const uint32_t AFF_BLOCK = 128;
// Buckets in flight per thread (16 was faster than 8 on the H100).
static const uint32_t AFF_SLOTS = 16;

// What one slot does in one step.
enum aff_step_t : uint32_t { AFF_IDLE, AFF_ADD, AFF_DOUBLE, AFF_TAKE, AFF_KEEP, AFF_CANCEL };

// The device side only: the host pass sees blst's host field type, not sppark's device one.
#ifdef __CUDA_ARCH__
// Point `ref` (an index, bit 31 the sign, as sppark's sort leaves them), negated when signed.
__device__ __forceinline__ static aff_point_t aff_load(const aff_point_t* points, uint32_t ref)
{
    aff_point_t p = points[ref & 0x7fffffff];
    p.y.cneg(ref >> 31);    // leaves a zero y zero, so (0, 0) stays the point at infinity
    return p;
}

__device__ __forceinline__ static bool aff_is_inf(const fp_t& x, const fp_t& y)
{
    return x.is_zero(y);
}

__device__ __forceinline__ static void aff_store(aff_bucket_t::mem_t& out, const fp_t& x, const fp_t& y, bool inf)
{
    aff_bucket_t b{x, y, inf};
    out = b;
}

// The step for a slot holding (ax, ay) (inf: the point at infinity) and point p, and the
// denominator it puts into the batch (additions and doublings only).
__device__ __forceinline__ static aff_step_t aff_classify(const fp_t& ax, const fp_t& ay, bool inf,
                                                         const aff_point_t& p, fp_t& den)
{
    if (aff_is_inf(p.x, p.y))
        return AFF_KEEP;
    if (inf)
        return AFF_TAKE;
    den = p.x - ax;
    if (!den.is_zero())
        return AFF_ADD;
    if ((p.y - ay).is_zero() && !ay.is_zero()) {
        den = ay + ay;
        return AFF_DOUBLE;
    }
    return AFF_CANCEL;
}
#endif

// buckets: nwins rows of 2^(wbits − 1); points: the MSM's affine points; digits and hist:
// sppark's sort output for these windows (per window, point references sorted by bucket, and
// each bucket's end offset). One thread per AFF_BUCKETS_PER_THREAD buckets; no thread returns
// early, since every lane of a warp takes part in each inversion.
__launch_bounds__(AFF_BLOCK) __global__
static void affine_accumulate(aff_bucket_t::mem_t* buckets, uint32_t nwins, uint32_t wbits,
                              const aff_affine_t::mem_t* points_, vec2d_t<uint32_t> digits,
                              vec2d_t<uint32_t> hist)
{
#ifdef __CUDA_ARCH__
    const aff_point_t* points = reinterpret_cast<const aff_point_t*>(points_);
    const uint32_t row = 1u << (wbits - 1);
    const uint32_t per_win = row / AFF_BUCKETS_PER_THREAD;
    const uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    const uint32_t y = tid / per_win;
    uint32_t next = (tid % per_win) * AFF_BUCKETS_PER_THREAD;
    const uint32_t last = y < nwins ? next + AFF_BUCKETS_PER_THREAD : next;
    const uint32_t* h = y < nwins ? &hist[y][0] : nullptr;
    const uint32_t* refs = y < nwins ? &digits[y][0] : nullptr;
    aff_bucket_t::mem_t* out = buckets + (size_t)(y < nwins ? y : 0) * row;

    fp_t ax[AFF_SLOTS], ay[AFF_SLOTS], prod[AFF_SLOTS];
    uint32_t cur[AFF_SLOTS], end[AFF_SLOTS], bucket[AFF_SLOTS];
    bool inf[AFF_SLOTS];
    aff_step_t step[AFF_SLOTS];
    #pragma unroll 1
    for (uint32_t s = 0; s < AFF_SLOTS; s++)
        cur[s] = end[s] = 0;

    #pragma unroll 1
    for (;;) {
        // Every idle slot opens the thread's next bucket of two or more points (up to
        // AFF_MAX_RUN); the others are written out on the way.
        bool busy = false;
        #pragma unroll 1
        for (uint32_t s = 0; s < AFF_SLOTS; s++) {
            #pragma unroll 1
            while (cur[s] == end[s] && next < last) {
                const uint32_t x = next++;
                const uint32_t from = x ? h[x - 1] : 0, to = h[x];
                if (from == to || (x == 0 && y == 0)) {
                    out[x].inf();
                } else if (to - from == 1) {
                    const aff_point_t p = aff_load(points, refs[from]);
                    aff_store(out[x], p.x, p.y, aff_is_inf(p.x, p.y));
                } else if (to - from > AFF_MAX_RUN) {
                    aff_bucket_t acc;
                    acc.inf();
                    #pragma unroll 1
                    for (uint32_t i = from; i < to; i++) {
                        const uint32_t r = refs[i];
                        aff_affine_t p = points_[r & 0x7fffffff];
                        acc.add(p, r >> 31);
                    }
                    out[x] = acc;
                } else {
                    const aff_point_t p = aff_load(points, refs[from]);
                    ax[s] = p.x;
                    ay[s] = p.y;
                    inf[s] = aff_is_inf(p.x, p.y);
                    bucket[s] = x;
                    cur[s] = from + 1;
                    end[s] = to;
                }
            }
            busy |= cur[s] < end[s];
        }
        if (!__any_sync(0xffffffff, busy))
            break;

        // Each busy slot's next point; prod[s] is the product of the denominators of slots
        // 0..s (1 where none).
        fp_t run = fp_t::one();
        #pragma unroll 1
        for (uint32_t s = 0; s < AFF_SLOTS; s++) {
            step[s] = AFF_IDLE;
            if (cur[s] < end[s]) {
                fp_t den;
                step[s] = aff_classify(ax[s], ay[s], inf[s], aff_load(points, refs[cur[s]]), den);
                if (step[s] == AFF_ADD || step[s] == AFF_DOUBLE)
                    run *= den;
            }
            prod[s] = run;
        }

        // One inversion for the warp's lane pairs (sppark's reciprocal shuffles between them).
        __syncwarp();
        fp_t inv = run.reciprocal();

        // Backwards through the slots: inv is 1/prod[s] on entry to slot s.
        #pragma unroll 1
        for (uint32_t s = AFF_SLOTS; s-- > 0;) {
            if (step[s] == AFF_IDLE)
                continue;
            const aff_point_t p = aff_load(points, refs[cur[s]]);
            if (step[s] == AFF_ADD || step[s] == AFF_DOUBLE) {
                const fp_t one_over = s ? inv * prod[s - 1] : inv;
                fp_t num, den, other;
                if (step[s] == AFF_ADD) {
                    den = p.x - ax[s];
                    num = p.y - ay[s];
                    other = p.x;
                } else {
                    den = ay[s] + ay[s];
                    num = ax[s] * ax[s];
                    num = num + num + num;
                    other = ax[s];
                }
                inv *= den;
                const fp_t lambda = num * one_over;
                const fp_t x3 = lambda * lambda - ax[s] - other;
                ay[s] = lambda * (ax[s] - x3) - ay[s];
                ax[s] = x3;
            } else if (step[s] == AFF_TAKE) {
                ax[s] = p.x;
                ay[s] = p.y;
                inf[s] = false;
            } else if (step[s] == AFF_CANCEL) {
                inf[s] = true;
            }
            if (++cur[s] == end[s])
                aff_store(out[bucket[s]], ax[s], ay[s], inf[s]);
        }
    }
#endif
}

// Launches affine_accumulate on `s`.
static void affine_accumulate_launch(cudaStream_t s, aff_bucket_t::mem_t* buckets, uint32_t nwins, uint32_t wbits,
                                     const aff_affine_t::mem_t* points, vec2d_t<uint32_t> digits,
                                     vec2d_t<uint32_t> hist)
{
    const size_t threads = (size_t)nwins * ((1u << (wbits - 1)) / AFF_BUCKETS_PER_THREAD);
    const uint32_t blocks = (uint32_t)((threads + AFF_BLOCK - 1) / AFF_BLOCK);
    affine_accumulate<<<blocks, AFF_BLOCK, 0, s>>>(buckets, nwins, wbits, points, digits, hist);
    CUDA_OK(cudaGetLastError());
}
