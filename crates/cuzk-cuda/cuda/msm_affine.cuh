// The bucket step of the wide-window MSM (msm_wide.cuh) in affine coordinates, by rounds of
// pairwise additions, in G1 and G2. The prover's dense MSMs take it from 2^24 points in G1
// and 2^25 in G2 (msm_wide.cuh, WIDE_AFFINE_MIN_LG_POINTS*): there it beat sppark's XYZZ
// accumulate on an H100 (G1 at 2^27: 555 against 794 ms of buckets, at 2^24 103 against 116;
// G2 at 92 M points: 1355 against 1736 ms for the whole MSM; BENCHMARKS.md 2026-12-06 and -07).
// At 2^22 it lost in G1 (61 against 51 ms, before the sums were coordinate arrays, below).
//
// Why affine: after the sort every point is added to one bucket per window, and at 2^27 points
// that step is ~80 % of MSM H, a PoRep partition's longest phase. sppark's accumulate keeps each
// bucket in XYZZ coordinates: 8 multiplications and 2 squarings a point. In affine coordinates
//   λ = (y2 − y1)/(x2 − x1),   x3 = λ² − x1 − x2,   y3 = λ·(x1 − x3) − y1
// costs two multiplications and a squaring once 1/(x2 − x1) is known, and Montgomery's trick
// shares one inversion among a batch of denominators for three multiplications each: 6 in all.
//
// Why rounds: a first version kept AFF_SLOTS buckets in flight per thread and lost to XYZZ
// (912 against 793 ms at 2^27 on an H100, BENCHMARKS.md 2026-12-06): the slots were arrays,
// so they lived in local memory, and every step read a random point twice. Here no thread
// holds an array. A round adds neighbouring points of every bucket in pairs (0+1, 2+3, …; an
// odd last point is carried over), writing ⌈c/2⌉ points for a bucket of c into a fresh array,
// bucket after bucket, and rounds repeat until no bucket holds more than one point, its sum.
//   - Each warp takes 32·spt consecutive output slots, lane l every 32nd from l, so
//     neighbouring lanes read neighbouring points and write neighbouring sums (coalesced),
//     and every thread has the same work whatever the bucket sizes: a bucket of a million
//     equal digits is just many slots.
//   - A thread's slots share one inversion. Its running products are kept in the output
//     slots themselves (their x) until the backward pass overwrites them with the sums.
//   - The forward pass asks for the next slot's x coordinates before this slot's product, so
//     that the reads overlap the multiplication (buckets −1 % in G1 at 2^27, −3 % in G2 at
//     2^25 on an H100, BENCHMARKS.md 2026-12-07).
//   - The first round reads the points through the sort's references (bit 31: negate);
//     later rounds read the previous round's sums. Offsets per bucket come from a scan.
//   - A round's sums are stored as two arrays, the x coordinates and then the y ones, not as
//     points: the forward pass reads only x's, and the running products (in x's place until
//     the sums) are written as whole 32-byte sectors. Stored as G1 points (96 bytes, three
//     sectors), the x's a warp wrote left one sector of each point half-written, and the x's
//     it read fetched y's bytes with them: the second round at 2^26 points moved 844 bytes of DRAM a sum, now 579, and
//     G1's bucket step at 2^27 went from 722 to 607 ms (ncu and trace, H100, BENCHMARKS.md
//     2026-12-07). A G2 coordinate fills three whole sectors, so G2 was not slower as points.
// Device memory: two arrays of ~n/2 and ~n/4 points (9.8 GB at 2^27 in G1, 13.2 GB at 92 M
// in G2), reused window after window. Without room for them the caller keeps sppark's accumulate.
//
// Exceptions to the addition formula, decided per pair: a point at infinity ((0, 0) in
// memory, as sppark's affine type has it: the sum is the other point); x2 = x1 with y2 = y1
// (a doubling: λ = 3·x1²/(2·y1)); x2 = x1 otherwise (the sum is the point at infinity). Only
// additions and doublings put a denominator into the batch.
//
// The output is sppark's accumulate's, bucket for bucket: bucket x of window y in XYZZ
// (Z = 1, or the point at infinity), and the first bucket of a launch's first window left at
// infinity, since batch addition sums that one (msm_wide.cuh).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cub/device/device_scan.cuh>

// The rounds are written once for both groups, over a field_t: fp_t in G1, and in G2 sppark's
// device fp2_t, whose value is split across two neighbouring lanes (one coordinate half each,
// degree 2; its products and inversions shuffle between the pair). A slot there belongs to a
// pair of lanes, which run the same code on their halves: every decision is taken from
// values both halves agree on (is_zero ballots across the pair), so a pair never diverges.

// A point as sppark's affine_t::mem_t lays it out, with its coordinates readable: in G2 each
// lane reads and writes its own half of a coordinate through field_t::mem_t.
template<class field_t>
struct rnd_mem_t {
    typename field_t::mem_t x, y;
};
// A point in registers.
template<class field_t>
struct rnd_point_t {
    field_t x, y;
};
static_assert(sizeof(rnd_mem_t<fp_t>) == sizeof(xyzz_t<fp_t>::affine_t::mem_t), "affine layout, G1");
static_assert(sizeof(rnd_mem_t<fp2_t>) == sizeof(xyzz_t<fp2_t>::affine_t::mem_t), "affine layout, G2");

// Output slots per thread (spt), i.e. denominators per inversion, chosen per round: as many
// as RND_MAX_SLOTS while the round has slots enough to keep RND_WAVES threads per SM slot of
// the device busy, fewer (down to RND_MIN_SLOTS) in the short late rounds. A thread's slots are
// a serial chain of dependent loads, so a round with too few threads waits on latency: with 32
// slots at every round a 2^22-point MSM took 58 ms of buckets against XYZZ's 31 (H100).
// sppark's reciprocal costs about 20 multiplications, so 64 slots leave it at a third of one
// a point.
static const uint32_t RND_MAX_SLOTS = 64;
static const uint32_t RND_MIN_SLOTS = 4;
static const uint32_t RND_WAVES = 2;
static const uint32_t RND_BLOCK = 128;

// Slots per thread for a round of `total` slots on a device of `sm_count` SMs (2048 resident
// threads each on sm_70 and later), `degree` lanes a slot.
static inline uint32_t rnd_slots_per_thread(size_t total, uint32_t sm_count, uint32_t degree)
{
    const size_t threads = (size_t)sm_count * 2048 * RND_WAVES / degree;
    const size_t spt = (total + threads - 1) / threads;
    return (uint32_t)std::min<size_t>(RND_MAX_SLOTS, std::max<size_t>(RND_MIN_SLOTS, spt));
}

// What a slot does with its pair (a slot without one carries its point over).
enum rnd_kind_t : uint32_t { RND_ADD, RND_DOUBLE, RND_INF, RND_FIRST, RND_SECOND };

// One round's input points: the MSM's own through the sort's references (first round), or
// the previous round's sums, x's and y's apart.
template<class field_t>
struct rnd_in_t {
    using coord_t = typename field_t::mem_t;
    const rnd_mem_t<field_t>* points;   // first round
    const uint32_t* refs;               // first round; null after it
    const coord_t* xs;                  // later rounds
    const coord_t* ys;

// The device side only: the host pass sees blst's host field types, not sppark's device ones.
#ifdef __CUDA_ARCH__
    __device__ __forceinline__ field_t x(uint32_t i) const
    {
        return refs ? field_t(points[refs[i] & 0x7fffffff].x) : field_t(xs[i]);
    }
    __device__ __forceinline__ rnd_point_t<field_t> load(uint32_t i) const
    {
        if (!refs)
            return rnd_point_t<field_t>{xs[i], ys[i]};
        const uint32_t r = refs[i];
        const rnd_mem_t<field_t>& m = points[r & 0x7fffffff];
        rnd_point_t<field_t> p{m.x, m.y};
        p.y.cneg(r >> 31);   // leaves a zero y zero, so (0, 0) stays the point at infinity
        return p;
    }
#endif
};

#ifdef __CUDA_ARCH__
template<class field_t>
__device__ __forceinline__ static bool aff_is_inf(const rnd_point_t<field_t>& p)
{
    return p.x.is_zero(p.y);
}

template<class field_t>
__device__ __forceinline__ static void aff_store(typename xyzz_t<field_t>::mem_t& out, const rnd_point_t<field_t>& p)
{
    xyzz_t<field_t> b{p.x, p.y, aff_is_inf(p)};
    out = b;
}

// The kind of pair (p, q) and, for additions and doublings, its denominator.
template<class field_t>
__device__ __forceinline__ static rnd_kind_t rnd_classify(const rnd_point_t<field_t>& p, const rnd_point_t<field_t>& q,
                                                         field_t& den)
{
    if (aff_is_inf(p))
        return RND_SECOND;
    if (aff_is_inf(q))
        return RND_FIRST;
    den = q.x - p.x;
    if (!den.is_zero())
        return RND_ADD;
    if ((q.y - p.y).is_zero() && !p.y.is_zero()) {
        den = p.y + p.y;
        return RND_DOUBLE;
    }
    return RND_INF;
}

// The same from the x coordinates alone where they decide it (the forward pass reads no y
// unless an x is zero or the two are equal, both rare).
template<class field_t>
__device__ __forceinline__ static bool rnd_denominator(const rnd_in_t<field_t>& in, uint32_t src, const field_t& px,
                                                       const field_t& qx, field_t& den)
{
    if (!px.is_zero() && !qx.is_zero()) {
        den = qx - px;
        if (!den.is_zero())
            return true;
    }
    const rnd_kind_t k = rnd_classify(in.load(src), in.load(src + 1), den);
    return k == RND_ADD || k == RND_DOUBLE;
}

// Bucket b of the slot o: advance from b while slot o lies past the bucket's end.
__device__ __forceinline__ static uint32_t rnd_bucket_at(const uint32_t* out_off, uint32_t b, uint32_t o)
{
    while (out_off[b + 1] <= o)
        b++;
    return b;
}
#endif

// off[0..=B]: the first round's bucket starts from the sort's end offsets; bucket 0 empty
// when `skip_first` (batch addition sums it).
__global__ static void rnd_first_offsets(const uint32_t* hist, uint32_t B, bool skip_first, uint32_t* off)
{
#ifdef __CUDA_ARCH__
    const uint32_t b = threadIdx.x + blockIdx.x * blockDim.x;
    if (b > B)
        return;
    off[b] = b == 0 ? (skip_first ? hist[0] : 0) : hist[b - 1];
#endif
}

// cnt[b] = ⌈c_b/2⌉ (cnt[B] = 0, so the exclusive scan's last entry is the total).
__global__ static void rnd_counts(const uint32_t* off, uint32_t B, uint32_t* cnt)
{
#ifdef __CUDA_ARCH__
    const uint32_t b = threadIdx.x + blockIdx.x * blockDim.x;
    uint32_t c = 0;
    if (b < B)
        c = off[b + 1] - off[b];
    if (b <= B)
        cnt[b] = (c + 1) / 2;
#endif
}

// largest[y] = the most points in one bucket of window y, for the `nwins` windows of
// `hist` (rows of B ≥ 32 end offsets, so a warp never spans two windows), bucket 0 of the
// first window not counted (batch addition sums it). largest[] is zero on entry.
__global__ static void rnd_largest(const uint32_t* hist, uint32_t nwins, uint32_t B, uint32_t* largest)
{
#ifdef __CUDA_ARCH__
    const size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    const uint32_t y = (uint32_t)(i / B), b = (uint32_t)(i % B);
    uint32_t c = 0;
    if (y < nwins) {
        const uint32_t* h = hist + (size_t)y * B;
        const uint32_t start = b > 0 ? h[b - 1] : y == 0 ? h[0] : 0;
        c = h[b] - start;
    }
    const uint32_t m = __reduce_max_sync(0xffffffff, c);
    if ((threadIdx.x & 31) == 0 && m > 0)
        atomicMax(&largest[y], m);
#endif
}

// Blocks of RND_BLOCK threads each SM should hold: in G1 four (128 registers a thread, no
// spills; unbounded, the prefetching loop took 130, which leaves room for three), in G2 what
// its 161 registers allow (bounded to four it spills).
template<class field_t>
constexpr int rnd_min_blocks()
{
    return field_t::degree == 1 ? 4 : 1;
}

// One round: slot o of bucket b (out_off[b] ≤ o < out_off[b + 1]) takes input points
// in_off[b] + 2j and the next, j = o − out_off[b], or carries the first alone when it is the
// bucket's last. A warp takes 32/degree slots a step (its lanes, or pairs of them in G2). No
// thread returns early: every lane of a warp takes part in the inversion.
template<class field_t>
__launch_bounds__(RND_BLOCK, rnd_min_blocks<field_t>()) __global__
static void rnd_pairs(rnd_in_t<field_t> in, const uint32_t* in_off, const uint32_t* out_off, uint32_t B, uint32_t spt,
                      typename field_t::mem_t* out_x, typename field_t::mem_t* out_y)
{
#ifdef __CUDA_ARCH__
    constexpr uint32_t D = field_t::degree, W = 32 / D;
    const uint32_t total = out_off[B];
    const size_t tid = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    const uint32_t lane = tid & 31;
    const size_t first = (tid - lane) / D * spt + lane / D;   // the warp's first slot + its slot lane
    const size_t left = first >= total ? 0 : (total - first + W - 1) / W;
    const uint32_t nslots = left < spt ? (uint32_t)left : spt;

    // The bucket of the first slot: the last b with out_off[b] ≤ first (it is not empty).
    uint32_t b0 = 0;
    if (nslots > 0) {
        uint32_t lo = 0, hi = B - 1;
        while (lo < hi) {
            const uint32_t mid = (lo + hi + 1) / 2;
            if (out_off[mid] <= first)
                lo = mid;
            else
                hi = mid - 1;
        }
        b0 = lo;
    }

    // Forward: the running product of the denominators, slot by slot, kept in out_x[o].
    field_t run = field_t::one();
    uint32_t b = b0;
    // The next slot's x coordinates are asked for before this slot's product, so that
    // their reads (at random in the first round) overlap the multiplication.
    uint32_t src = 0;
    bool pair = false;
    field_t px, qx;
    // Slot o's first input, whether it has a pair, and then both x's (b advances to o's bucket).
    const auto fetch = [&](uint32_t o) {
        b = rnd_bucket_at(out_off, b, o);
        src = in_off[b] + 2 * (o - out_off[b]);
        pair = src + 1 < in_off[b + 1];
        if (pair) {
            px = in.x(src);
            qx = in.x(src + 1);
        }
    };
    if (nslots > 0)
        fetch((uint32_t)first);
    #pragma unroll 1
    for (uint32_t k = 0; k < nslots; k++) {
        const uint32_t o = (uint32_t)first + W * k;
        const uint32_t src_k = src;
        const bool pair_k = pair;
        const field_t px_k = px, qx_k = qx;
        if (k + 1 < nslots)
            fetch(o + W);
        field_t den;
        if (pair_k && rnd_denominator(in, src_k, px_k, qx_k, den))
            run *= den;
        out_x[o] = run;
    }

    __syncwarp();
    field_t inv = run.reciprocal();

    // Backward: inv is 1/(product through slot o) on entry to slot o.
    #pragma unroll 1
    for (uint32_t k = nslots; k-- > 0;) {
        const uint32_t o = (uint32_t)first + W * k;
        // The forward pass left b at the last slot's bucket; walk it back.
        while (out_off[b] > o)
            b--;
        const uint32_t src = in_off[b] + 2 * (o - out_off[b]);
        const rnd_point_t<field_t> p = in.load(src);
        rnd_point_t<field_t> sum = p;
        if (src + 1 < in_off[b + 1]) {
            const rnd_point_t<field_t> q = in.load(src + 1);
            field_t den;
            const rnd_kind_t kind = rnd_classify(p, q, den);
            if (kind == RND_ADD || kind == RND_DOUBLE) {
                const field_t one_over = k ? inv * field_t(out_x[o - W]) : inv;
                inv *= den;
                field_t num;
                if (kind == RND_ADD) {
                    num = q.y - p.y;
                } else {
                    num = p.x ^ 2;
                    num = num + num + num;
                }
                const field_t lambda = num * one_over;
                // q.x in a doubling too, where it equals p.x: a choice of p.x there was compiled
                // as an indexed load from a local copy (a 192-byte stack frame in G1, ~160
                // bytes of DRAM writes a sum; BENCHMARKS.md 2026-12-07).
                sum.x = (lambda ^ 2) - p.x - q.x;
                sum.y = lambda * (p.x - sum.x) - p.y;
            } else if (kind == RND_SECOND) {
                sum = q;
            } else if (kind == RND_INF) {
                sum.x.zero();
                sum.y.zero();
            }
        }
        out_x[o] = sum.x;
        out_y[o] = sum.y;
    }
#endif
}

// The last round's points into the bucket row (degree lanes a bucket): bucket b holds
// out_off[b + 1] − out_off[b] ≤ 1 points.
template<class field_t>
__global__ static void rnd_finish(rnd_in_t<field_t> in, const uint32_t* off, uint32_t B,
                                  typename xyzz_t<field_t>::mem_t* row)
{
#ifdef __CUDA_ARCH__
    const uint32_t b = (threadIdx.x + blockIdx.x * blockDim.x) / field_t::degree;
    if (b >= B)
        return;
    if (off[b + 1] == off[b])
        row[b].inf();
    else
        aff_store(row[b], in.load(off[b]));
#endif
}

// The most windows one call of affine_rounds takes (a 255-bit scalar in windows of ≥ 16 bits).
static const uint32_t RND_MAX_WINDOWS = 32;

// Device memory for the rounds of one window at a time: the point arrays, two offset arrays,
// the windows' largest buckets and the scan's scratch. Allocation may fail: `ok()` false, and
// the caller keeps sppark's accumulate.
template<class field_t>
struct rnd_buffers_t {
    using coord_t = typename field_t::mem_t;
    uint32_t B;
    size_t cap[2];
    optional_buffer_t<coord_t> pts0, pts1;   // each: cap x's, then cap y's
    optional_buffer_t<uint32_t> offs, largest;
    size_t scan_bytes = 0;
    optional_buffer_t<uint8_t> scan;

    static size_t capacity(size_t n, uint32_t B, int i)
    {
        size_t c = (n + B) / 2 + 1;
        return i == 0 ? c : (c + B) / 2 + 1;
    }
    static size_t scan_scratch(uint32_t B)
    {
        size_t bytes = 0;
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const uint32_t*)nullptr, (uint32_t*)nullptr, B + 1));
        return bytes;
    }
    // The first array's bytes: idle between one window's rounds and the next's, so the wide
    // path's sort rows may use it (msm_wide.cuh).
    static size_t first_bytes(size_t n, uint32_t B)
    {
        return capacity(n, B, 0) * 2 * sizeof(coord_t);
    }
    // Every byte the rounds ask for: the caller checks the margin with it first.
    static size_t bytes(size_t n, uint32_t B)
    {
        return (capacity(n, B, 0) + capacity(n, B, 1)) * 2 * sizeof(coord_t)
               + (3 * (size_t)(B + 1) + RND_MAX_WINDOWS) * sizeof(uint32_t) + scan_scratch(B);
    }

    rnd_buffers_t(size_t n, uint32_t B_, cudaStream_t s)
        : B(B_), cap{capacity(n, B_, 0), capacity(n, B_, 1)}, pts0(2 * cap[0], s), pts1(2 * cap[1], s),
          offs(3 * (size_t)(B_ + 1), s), largest(RND_MAX_WINDOWS, s), scan_bytes(scan_scratch(B_)), scan(scan_bytes, s)
    {}
    bool ok() const { return pts0.ptr && pts1.ptr && offs.ptr && largest.ptr && scan.ptr; }
    uint32_t* off(int i) const { return offs.ptr + (size_t)i * (B + 1); }
    uint32_t* counts() const { return off(2); }
    // Round r's sums: x's and y's.
    coord_t* xs(uint32_t r) const { return (r & 1) ? pts1.ptr : pts0.ptr; }
    coord_t* ys(uint32_t r) const { return xs(r) + cap[r & 1]; }
};

// The bucket sums of `nwins` windows (row after row of 2^(wbits − 1) buckets), window by
// window, the first window's first bucket left at infinity. One host round trip for all of
// them: each window's largest bucket decides how many rounds it takes. With `trace`, the
// first window's rounds are timed one by one (stderr).
template<class field_t>
static void affine_rounds(const stream_t& s, uint32_t sm_count, typename xyzz_t<field_t>::mem_t* buckets,
                          uint32_t nwins, uint32_t wbits, size_t n, const void* points_, vec2d_t<uint32_t> digits,
                          vec2d_t<uint32_t> hist, rnd_buffers_t<field_t>& buf, bool trace)
{
    constexpr uint32_t D = field_t::degree;
    if (nwins > RND_MAX_WINDOWS)
        throw std::invalid_argument("affine bucket sums: too many windows in one call");
    const auto* points = reinterpret_cast<const rnd_mem_t<field_t>*>(points_);
    const uint32_t B = 1u << (wbits - 1);
    const uint32_t off_blocks = (B + 1 + 255) / 256;

    CUDA_OK(cudaMemsetAsync(buf.largest.ptr, 0, nwins * sizeof(uint32_t), s));
    rnd_largest<<<(uint32_t)(((size_t)nwins * B + 255) / 256), 256, 0, s>>>(&hist[0][0], nwins, B, buf.largest.ptr);
    CUDA_OK(cudaGetLastError());
    uint32_t largest[RND_MAX_WINDOWS];
    s.DtoH(largest, buf.largest.ptr, nwins);
    s.sync();

    for (uint32_t y = 0; y < nwins; y++) {
        // ⌈lg largest⌉ rounds leave every bucket with one point (largest < 2^31: n is).
        uint32_t rounds = 0;
        while ((1u << rounds) < largest[y])
            rounds++;
        const bool timed = trace && y == 0;
        std::vector<timing_event> marks(timed ? rounds + 2 : 0);   // before each round, finish, end
        std::vector<uint32_t> spts;
        rnd_first_offsets<<<off_blocks, 256, 0, s>>>(&hist[y][0], B, y == 0, buf.off(0));
        CUDA_OK(cudaGetLastError());
        rnd_in_t<field_t> in{points, &digits[y][0], nullptr, nullptr};
        int cur = 0;            // offsets of the round's input: buf.off(cur)
        size_t bound = n;       // points in the round's input, at most
        for (uint32_t r = 0; r < rounds; r++) {
            if (timed)
                marks[r].record(s);
            rnd_counts<<<off_blocks, 256, 0, s>>>(buf.off(cur), B, buf.counts());
            CUDA_OK(cudaGetLastError());
            size_t scratch = buf.scan_bytes;
            CUDA_OK(cub::DeviceScan::ExclusiveSum(buf.scan.ptr, scratch, buf.counts(), buf.off(cur ^ 1), B + 1, s));
            bound = (bound + B) / 2;
            const uint32_t spt = rnd_slots_per_thread(bound, sm_count, D);
            if (timed)
                spts.push_back(spt);
            const size_t warps = (bound + 32 / D * spt - 1) / (32 / D * spt);
            const size_t blocks = (warps * 32 + RND_BLOCK - 1) / RND_BLOCK;
            rnd_pairs<field_t><<<(uint32_t)blocks, RND_BLOCK, 0, s>>>(in, buf.off(cur), buf.off(cur ^ 1), B, spt,
                                                                        buf.xs(r), buf.ys(r));
            CUDA_OK(cudaGetLastError());
            in = rnd_in_t<field_t>{nullptr, nullptr, buf.xs(r), buf.ys(r)};
            cur ^= 1;
        }
        if (timed)
            marks[rounds].record(s);
        rnd_finish<field_t><<<(uint32_t)(((size_t)B * D + 255) / 256), 256, 0, s>>>(in, buf.off(cur), B,
                                                                                 buckets + (size_t)y * B);
        CUDA_OK(cudaGetLastError());
        if (timed) {
            marks[rounds + 1].record(s);
            s.sync();
            fprintf(stderr, "cuzk affine buckets G%u n=%zu w=%u: window 0, largest bucket %u, %u rounds (ms):", D, n,
                    wbits, largest[0], rounds);
            for (uint32_t k = 0; k < rounds; k++)
                fprintf(stderr, " %.2f (%u/thread)", marks[k + 1].ms_since(marks[k]), spts[k]);
            fprintf(stderr, "; finish %.2f\n", marks[rounds + 1].ms_since(marks[rounds]));
        }
    }
}
