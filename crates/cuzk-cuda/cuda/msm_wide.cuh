// Dense MSMs over many resident points with wider windows than sppark's msm_t picks.
//
// Why: the H MSM of a 32 GiB PoRep partition is 2^27 dense scalars, and it was 1.1 s of the
// 1.9 s a partition holds the device. msm_t caps its window at 18 bits (15 windows of 255-bit
// scalars) and processes 2^27 points in 8 batches, each ending in a bucket reduction of one
// block per window and a host round trip. Every window costs one bucket addition per point,
// so fewer windows is fewer additions: 22 bits need 12 windows, a fifth less work. msm_t's
// window is private, so this file drives sppark's public kernels itself:
//   breakdown (signed digits) → sort (per window, point indices by bucket) → accumulate (one
//   thread per bucket; from 2^24 points in G1, 2^25 in G2, our affine rounds instead, msm_affine.cuh) and
//   batch_addition (window 0's first bucket, as msm_t does)
// over all points at once, then its own bucket reduction (wide_reduce, below), which runs in
// parallel over the buckets of every window instead of one block per window.
//
// Bucket reduction. Window y's sum is S = Σ_x (x+1)·B_x over its 2^(w-1) buckets (bucket x
// holds digit x+1). Cut the buckets into chunks of k: with, per chunk c,
//   W_c = Σ_j (j+1)·B_{ck+j}   and   A_c = Σ_j B_{ck+j},
// S = Σ_c W_c + k·Σ_c c·A_c. The second sum has the same form one level up, so a level maps
// pairs (W, A) with scale 2^s to fewer pairs with scale 2^(s+lg k):
//   W' = Σ_j W_j + 2^s·Σ_j j·A_j,   A' = Σ_j A_j,   Σ_j j·A_j by a descending running sum,
// and the last level leaves one pair per window whose W is S. The first level reads the
// buckets as both W and A (W = A = B, s = 0 gives W' = Σ_j (j+1)·B_j).
//
// The top window. It holds only the scalar's last `top` bits, so it has few distinct digits,
// and sppark's sort spreads each over 2^shift buckets (shift = w − top) by the low bits of the
// point index, which keeps accumulate's threads balanced. Its bucket x holds digit
// (x >> shift) + 1. Before the reduction each group of 2^shift buckets is folded into one
// (wide_fold_top), which leaves the usual layout. A thread folds a whole group, so the window
// is chosen with shift ≤ WIDE_MAX_TOP_SHIFT.
//
// Window groups. The windows are taken a group at a time: a group's digits (computed from the
// scalars for its windows alone, wide_digits), its sort, its buckets and its reduction down to
// one sum a window, before the next group's. So the digits, sort rows, buckets and reduction
// pairs are sized by a group, not by every window: at 2^27 points in G1 a group of 4 windows
// holds 2.1 GB of digits and 1.6 GB of buckets where 12 windows at once held 6.4 and 4.8 GB.
// Why: the affine rounds' own arrays (~9.9 GB there, msm_affine.cuh) did not fit beside a
// 32 GiB PoRep's resident parameters on an 80 GB card, and MSM H fell back to sppark's slower
// accumulate (BENCHMARKS.md 2026-12-07). Room goes first to the rounds, then to sort rows
// (windows a sort launch), then to wider groups; where it is ample every window is one group.
// With a pause hook a group has at most WIDE_PAUSE_GROUP windows, and the caller may lend the
// device between groups: a stretch of ≤ ~0.3 s at 2^27 (deadline work that arrives mid-MSM
// waits for one group, not for every window). sppark's accumulate skips the first bucket of its
// first window, and our rounds leave it too: each group's first bucket goes through batch
// addition and is added at that window's place in the final sum. No group starts at the top
// window, whose first bucket holds a folded group (see above). A group costs one more read of
// the scalars (~2 ms at 2^27) and, with the rounds, one more host round trip.
//
// G1 and G2. sppark splits a G2 coordinate over two threads (bucket_t::degree 2): its kernels
// handle that themselves, and ours below give each bucket `degree` adjacent threads, which
// run the same code on their halves. G2 takes narrower windows (WIDE_MAX_WBITS_G2): its
// buckets are twice G1's size, and it launches fewer windows between pauses, since each costs
// about three times as much. The caller falls back to msm_t when this declines: too few
// points, or temporaries that do not fit (about 100 bytes per point at 22 bits in G1, 20 in G2).
//
// Digits and sort. msm_t sorts two windows per launch on a third of the SMs, because it
// overlaps that sort with the previous batch's buckets on another stream. Here nothing runs
// beside it, so the digits take every SM and the sort takes as many of a group's windows per
// launch as the device holds blocks (wide_sort: 32 blocks a window, ~4 windows on a 132-SM
// card) and the room holds temporary rows of 8 bytes a point. With the affine rounds those
// rows are the rounds' first array (idle while a group sorts; 6.5 GB at 2^27 in G1), so they
// cost no room of their own. The top window, with its fewer significant bits, may be any of a
// launch's windows.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

// Smallest MSM taken here, as a power of two, and the widest window. sppark's own window at
// 2^22 points is already 18 bits; below that the gain is small. 22 bits: 12 windows, and the
// buckets (12 · 2^21 · 192 bytes) still fit beside the parameters.
static const uint32_t WIDE_MIN_LG_POINTS = 22;
static const uint32_t WIDE_MAX_WBITS = 22;
// G2: 13 windows of 20 bits over a 32 GiB WindowPoSt's ~92 M B points; the buckets take
// 13 · 2^19 · 384 bytes = 2.6 GB (22 bits would save one window for 9.7 GB of buckets).
static const uint32_t WIDE_MAX_WBITS_G2 = 20;
// Buckets per thread in the first reduction level, and pairs per thread after it. 256 keeps
// ~8192 threads per window busy at 22 bits; later levels are small.
static const uint32_t WIDE_FIRST_CHUNK = 256;
static const uint32_t WIDE_NEXT_CHUNK = 64;
static const uint32_t WIDE_MAX_TOP_SHIFT = 9;
// Windows a group at most when the caller may pause (see the file comment): 12 windows at
// 2^27 points make three groups of ~0.27 s. A G2 window costs ~3× a G1 window, so G2 groups
// take WIDE_PAUSE_GROUP / degree windows.
static const uint32_t WIDE_PAUSE_GROUP = 4;

// How the buckets are summed. The prover's dense MSMs take WIDE_AFFINE_LARGE: our affine
// rounds (msm_affine.cuh) from 2^WIDE_AFFINE_MIN_LG_POINTS points in G1 and from
// 2^WIDE_AFFINE_MIN_LG_POINTS_G2 in G2, where they measured faster than sppark's XYZZ
// accumulate on an H100 (G1, whole MSM, since the rounds keep coordinate arrays: −7 % at
// 2^24, −13 % at 2^25, −20 to −22 % at 2^27; G2: −20 % at 2^25, −22 % at 92 M; BENCHMARKS.md
// 2026-12-06 and -07; below 2^24 not measured since); the other two force one kernel in both
// groups, for benchmarks and tests.
enum wide_buckets_t : uint32_t { WIDE_XYZZ, WIDE_AFFINE_LARGE, WIDE_AFFINE };
static const uint32_t WIDE_AFFINE_MIN_LG_POINTS = 24;
static const uint32_t WIDE_AFFINE_MIN_LG_POINTS_G2 = 25;

struct wide_shape_t {
    uint32_t wbits, nwins, top, shift;
};

// The widest window ≤ min(max_wbits, lg n − 4) whose top window folds cheaply: at 2^27
// points 22 bits (12 windows, top 13 bits, shift 9); 21 would leave a 3-bit top window.
static wide_shape_t wide_shape(uint32_t lg_n, uint32_t bit_length, uint32_t max_wbits)
{
    uint32_t w = std::min(max_wbits, lg_n - 4);
    for (;; w--) {
        uint32_t nwins = (bit_length - 1) / w + 1;
        uint32_t top = bit_length - w * (nwins - 1);
        if (w - std::min(w, top) <= WIDE_MAX_TOP_SHIFT || w <= 16)
            return {w, nwins, top, w - std::min(w, top)};
    }
}

// Our kernels give each bucket (or pair) `degree` adjacent threads; both return together.
template<class bucket_t>
__device__ __forceinline__ static uint32_t wide_item()
{
    return (threadIdx.x + blockIdx.x * blockDim.x) / bucket_t::degree;
}

// Blocks of 256 threads for `items` buckets or pairs of bucket_t.
template<class bucket_t>
static uint32_t wide_blocks(size_t items)
{
    return (uint32_t)((items * bucket_t::degree + 255) / 256);
}

// Signed digits of windows win0 … win0 + count − 1 of every scalar into rows 0 … count − 1, in
// the form sppark's breakdown writes them (its sort and bucket kernels read them): the scalar
// out of Montgomery form, replaced by r − s where that is smaller (bit 31 then set in each
// nonzero digit: the point is negated); window y's digit Booth-encoded from bits y·w − 1 …
// (y + 1)·w − 1 (a zero below bit 0). A window reads only its own bits, so a group's digits
// need no other window's. The scalar is kept in shared memory transposed by warp (sppark's
// scalar_T) so that a window's bits are read at a computed limb without a local-memory copy.
template<class scalar_t>
__launch_bounds__(1024) __global__
static void wide_digits(vec2d_t<uint32_t> digits, const scalar_t* scalars, size_t len, uint32_t win0,
                        uint32_t count, uint32_t wbits)
{
#ifdef __CUDA_ARCH__
    extern __shared__ __align__(16) unsigned char wide_digits_smem[];
    auto* held_by_warp = reinterpret_cast<scalar_T<scalar_t>*>(wide_digits_smem);
    auto& held = held_by_warp[threadIdx.x / WARP_SZ](threadIdx.x % WARP_SZ);
    const uint32_t top_i = (scalar_t::nbits + 31) / 32 - 1;
    const uint32_t wmask = 0xffffffffu >> (31 - wbits);
    #pragma unroll 1
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < len; i += (size_t)gridDim.x * blockDim.x) {
        scalar_t sc = scalars[i];
        sc.from();
        const uint32_t negated = (uint32_t)sc.abs() << 31;
        held = sc;
        #pragma unroll 1
        for (uint32_t k = 0; k < count; k++) {
            const uint32_t win = win0 + k;
            const uint32_t bits = win == 0 ? held[0] << 1 : get_wval(held, win * wbits - 1, top_i);
            const uint32_t d = booth_encode(bits, wmask, wbits);
            digits[k][i] = d ? d ^ negated : 0;
        }
    }
#endif
}

// Per-window sort (sppark's sort_row) of windows win0 + blockIdx.y: point indices by bucket
// of `wbits` bits, all of them significant but in the top window's digits, which have
// `top_lsbits`. A cooperative launch of {≤ 32, windows} blocks; every block takes the same
// path through sort_row (it depends on wbits and the grid only), so the grid-wide syncs meet.
__launch_bounds__(SORT_BLOCKDIM) __global__
static void wide_sort(vec2d_t<uint32_t> digits, size_t len, uint32_t win0, vec2d_t<uint2> temps,
                      vec2d_t<uint32_t> hist, uint32_t wbits, uint32_t top_win, uint32_t top_lsbits)
{
    const uint32_t win = win0 + blockIdx.y;
    sort_row(digits[win], len, temps[blockIdx.y], hist[win], wbits, win == top_win ? top_lsbits : wbits);
}

// Windows one wide_sort launch can take: as many grids of `grid` blocks as the device holds.
static uint32_t wide_sort_fit(const gpu_t& gpu, uint32_t grid, size_t shared)
{
    int per_sm = 0;
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, wide_sort, SORT_BLOCKDIM, shared));
    return std::max(1u, (uint32_t)per_sm * (uint32_t)gpu.sm_count() / grid);
}

// Top window: fold each group of 2^shift buckets into tmp[g] (one thread a group) ...
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(256) __global__
static void wide_fold_top(const bucket_h* row, uint32_t shift, uint32_t groups, bucket_h* tmp)
{
#ifdef __CUDA_ARCH__
    const uint32_t g = wide_item<bucket_t>();
    if (g >= groups)
        return;
    const bucket_h* p = row + ((size_t)g << shift);
    bucket_t acc = p[0];
    #pragma unroll 1
    for (uint32_t i = 1; i < (1u << shift); i++) {
        bucket_t b = p[i];
        acc.add(b);
    }
    tmp[g] = acc;
#endif
}

// ... then lay the folded groups out as ordinary buckets: row[g] = tmp[g], the rest empty.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(256) __global__
static void wide_place_top(bucket_h* row, uint32_t len, const bucket_h* tmp, uint32_t groups)
{
#ifdef __CUDA_ARCH__
    const uint32_t x = wide_item<bucket_t>();
    if (x >= len)
        return;
    if (x < groups) {
        bucket_t b = tmp[x];
        row[x] = b;
    } else {
        row[x].inf();
    }
#endif
}

// One reduction level (see the file comment): per window `m` input pairs, `k` per thread,
// m/k output pairs. `a_in == w_in` marks the first level (buckets as both W and A).
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(256) __global__
static void wide_reduce(const bucket_h* w_in, const bucket_h* a_in, uint32_t m, uint32_t k,
                        uint32_t lg_scale, uint32_t nwins, bucket_h* w_out, bucket_h* a_out)
{
#ifdef __CUDA_ARCH__
    const uint32_t per_win = m / k;
    const uint32_t tid = wide_item<bucket_t>();
    if (tid >= nwins * per_win)
        return;
    const size_t base = (size_t)(tid / per_win) * m + (size_t)(tid % per_win) * k;
    const bool first = w_in == a_in;

    bucket_t run, tot, wsum;
    run.inf();
    tot.inf();
    wsum.inf();
    #pragma unroll 1
    for (uint32_t j = k - 1; j > 0; j--) {
        bucket_t a = a_in[base + j];
        run.add(a);
        tot.add(run);           // tot = Σ_{i ≥ j} run_i = Σ_j j·A_j when the loop ends
        if (!first) {
            bucket_t w = w_in[base + j];
            wsum.add(w);
        }
    }
    bucket_t a0 = a_in[base];
    run.add(a0);
    if (first) {
        wsum = run;
    } else {
        bucket_t w0 = w_in[base];
        wsum.add(w0);
    }
    #pragma unroll 1
    for (uint32_t i = 0; i < lg_scale; i++) {
        bucket_t t = tot;       // a copy: add() of a point to itself doubles it
        tot.add(t);
    }
    wsum.add(tot);
    w_out[tid] = wsum;
    a_out[tid] = run;
#endif
}

// Where each window group starts: every `group` windows, but never at the top window (the
// last group takes it).
static std::vector<uint32_t> wide_group_starts(uint32_t nwins, uint32_t group)
{
    std::vector<uint32_t> starts{0};
    for (uint32_t g = group; g + 1 < nwins; g += group)
        starts.push_back(g);
    return starts;
}

// The window after group i of `starts` (the next group's first, or nwins after the last).
static uint32_t wide_group_end(const std::vector<uint32_t>& starts, size_t i, uint32_t nwins)
{
    return i + 1 < starts.size() ? starts[i + 1] : nwins;
}

// How a wide MSM uses the device's room (see "Window groups" in the file comment).
struct wide_plan_t {
    std::vector<uint32_t> starts;   // each group's first window
    uint32_t span = 0;              // windows of the longest group: what a group's arrays hold
    uint32_t sort_wins = 0;         // windows a sort launch, at most
    bool rounds = false;            // the affine rounds' arrays have room too
};

// The first layout that `fits(span, groups, sort_wins, rounds)`: with the rounds before
// without them (where `affine` asks for them), then the most windows a sort launch (≤
// sort_fit), then the widest groups (≤ most). span 0 when none fits.
template<class fits_t>
static wide_plan_t wide_choose_plan(uint32_t nwins, uint32_t most, uint32_t sort_fit, bool affine, fits_t fits)
{
    for (int with_rounds = affine ? 1 : 0; with_rounds >= 0; with_rounds--)
        for (uint32_t sw = std::min(sort_fit, most); sw >= 1; sw--)
            for (uint32_t group = most; group >= sw; group--) {
                std::vector<uint32_t> starts = wide_group_starts(nwins, group);
                uint32_t span = 0;
                for (size_t i = 0; i < starts.size(); i++)
                    span = std::max(span, wide_group_end(starts, i, nwins) - starts[i]);
                if (fits(span, starts.size(), sw, with_rounds == 1))
                    return wide_plan_t{std::move(starts), span, sw, with_rounds == 1};
            }
    return wide_plan_t{};
}

// Reduction levels (wide_reduce) over the `wins` bucket rows of `row` buckets at `buckets`,
// through `pairs` (two generations of `pair_cap` (W, A) pairs); returns where the windows'
// sums are, one a window.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
static const bucket_h* wide_reduce_windows(const stream_t& s, const bucket_h* buckets, uint32_t wins, uint32_t row,
                                           bucket_h* pairs, size_t pair_cap)
{
    const bucket_h* w_in = buckets;
    const bucket_h* a_in = buckets;
    uint32_t m = row, lg_scale = 0, gen = 0;
    while (m > 1) {
        const uint32_t k = (w_in == a_in) ? std::min(WIDE_FIRST_CHUNK, m) : std::min(WIDE_NEXT_CHUNK, m);
        const uint32_t outs = wins * (m / k);
        bucket_h* w_out = pairs + (size_t)(2 * gen) * pair_cap;
        bucket_h* a_out = w_out + pair_cap;
        wide_reduce<bucket_t><<<wide_blocks<bucket_t>(outs), 256, 0, s>>>(w_in, a_in, m, k, lg_scale, wins, w_out, a_out);
        CUDA_OK(cudaGetLastError());
        uint32_t lg_k = 0;
        while ((1u << lg_k) < k)
            lg_k++;
        lg_scale += lg_k;
        m /= k;
        w_in = w_out;
        a_in = a_out;
        gen ^= 1;
    }
    return w_in;
}

// Σ scalars[i]·points[i], i < n, both on the device, scalars in Montgomery form. Returns false,
// having computed nothing, when declined; throws cuda_error on any other CUDA failure. `pause`
// is called between window groups when active (see the file comment). `how`: the buckets are
// summed in affine coordinates (msm_affine.cuh) where it says so and their arrays fit;
// otherwise by sppark's accumulate. `max_group` (0: none) caps a group's windows (tests).
template<class bucket_t, class point_t, class affine_t>
static bool wide_msm(const gpu_t& gpu, const void* d_points_v, const scalar_t* d_scalars, size_t n,
                     point_t& out, pause_hook_t& pause, wide_buckets_t how, uint32_t max_group)
{
    using bucket_h = typename bucket_t::mem_t;
    using affine_h = typename affine_t::mem_t;
    // Host clock for the trace: the temporaries' allocation is host work (the stream-ordered
    // pool maps pages as it grows), outside the device phases the events time.
    const auto entered = std::chrono::steady_clock::now();
    const auto host_ms = [&] { return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - entered).count(); };

    if (n < (size_t(1) << WIDE_MIN_LG_POINTS) || n >= (size_t(1) << 31))
        return false;
    uint32_t lg_n = 0;
    while ((size_t(2) << lg_n) <= n)
        lg_n++;
    const uint32_t degree = bucket_t::degree;
    const wide_shape_t shape = wide_shape(lg_n, scalar_t::bit_length(), degree == 1 ? WIDE_MAX_WBITS : WIDE_MAX_WBITS_G2);
    const uint32_t wbits = shape.wbits, nwins = shape.nwins, top = shape.top;
    const uint32_t row = 1u << (wbits - 1);
    const uint32_t top_groups = row >> shape.shift;
    const uint32_t len = (uint32_t)n;
    const size_t stride = (n + WARP_SZ - 1) / WARP_SZ * WARP_SZ;
    const size_t nsums = (size_t)gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    const stream_t& s = gpu[2];

    // The sort's grid follows msm_t's: a third of the SMs rounded down to a power of two (at
    // most 32, sort_row's limit), a launch of that per window.
    uint32_t grid = gpu.sm_count() / 3;
    while (grid & (grid - 1))
        grid &= grid - 1;
    grid = std::max(1u, std::min(grid, 32u));
    const size_t sort_shared = sizeof(uint32_t) << DIGIT_BITS;

    using rnd_field_t = std::conditional_t<degree == 1, fp_t, fp2_t>;
    static_assert(std::is_same<bucket_t, xyzz_t<rnd_field_t>>::value, "the rounds sum XYZZ buckets over fp_t or fp2_t");
    const uint32_t min_lg = degree == 1 ? WIDE_AFFINE_MIN_LG_POINTS : WIDE_AFFINE_MIN_LG_POINTS_G2;
    const bool affine = how == WIDE_AFFINE || (how == WIDE_AFFINE_LARGE && lg_n >= min_lg);
    const size_t rounds_bytes = affine ? rnd_buffers_t<rnd_field_t>::bytes(n, row) : 0;
    const size_t sort_row_bytes = stride * sizeof(uint2);
    // With the rounds, the sort rows go in their first array while a group sorts (see "Digits
    // and sort" in the file comment), where they fit.
    const size_t rounds_first_bytes = affine ? rnd_buffers_t<rnd_field_t>::first_bytes(n, row) : 0;

    // The layout, from one reading of the room: the rounds first, then as many windows a sort
    // launch as the device takes, then the widest groups. A group's arrays: digits and
    // histogram rows, its buckets and reduction pairs; besides, the sort rows, every group's
    // batch-addition sums, every window's sum and the top window's folded groups.
    const size_t room = device_room(gpu);
    uint32_t most = pause.active() ? std::max(1u, WIDE_PAUSE_GROUP / degree) : nwins;
    if (max_group > 0)
        most = std::min(most, max_group);
    most = std::min(most, nwins);
    const auto sort_in_rounds_array = [&](uint32_t sort_wins) { return sort_wins * sort_row_bytes <= rounds_first_bytes; };
    const auto fits = [&](uint32_t span, size_t ngroups, uint32_t sort_wins, bool with_rounds) {
        const size_t per_window = stride * sizeof(uint32_t) + row * sizeof(uint32_t)
                                  + ((size_t)row + 4 * (row / WIDE_FIRST_CHUNK)) * sizeof(bucket_h);
        const bool sort_rows_own = !(with_rounds && sort_in_rounds_array(sort_wins));
        return span * per_window + (with_rounds ? rounds_bytes : 0) + (sort_rows_own ? sort_wins * sort_row_bytes : 0)
                   + (ngroups * nsums + nwins + (shape.shift > 0 ? top_groups : 0)) * sizeof(bucket_h)
               <= room;
    };
    const wide_plan_t plan = wide_choose_plan(nwins, most, wide_sort_fit(gpu, grid, sort_shared), affine, fits);
    if (plan.span == 0)
        return false;
    const uint32_t span = plan.span;
    const size_t ngroups = plan.starts.size();
    const size_t pair_cap = (size_t)span * (row / WIDE_FIRST_CHUNK);

    // Every temporary first: a failed allocation declines before anything is computed. The
    // rounds' arrays are optional (sppark's accumulate without them); the sort rows go in
    // their first array where they fit, else in their own.
    optional_buffer_t<uint32_t> digits{span * stride, s};
    optional_buffer_t<uint32_t> hist{(size_t)span * row, s};
    // A group's buckets, then each group's batch-addition sums, then every window's sum.
    optional_buffer_t<bucket_h> buckets{(size_t)span * row + ngroups * nsums + nwins, s};
    optional_buffer_t<bucket_h> pairs{4 * pair_cap, s};   // two (W, A) generations
    optional_buffer_t<bucket_h> folded{shape.shift > 0 ? top_groups : 0, s};
    if (!digits.ptr || !hist.ptr || !buckets.ptr || !pairs.ptr || (shape.shift > 0 && !folded.ptr))
        return false;
    std::unique_ptr<rnd_buffers_t<rnd_field_t>> rounds;
    if (plan.rounds) {
        rounds.reset(new rnd_buffers_t<rnd_field_t>(n, row, s));
        if (!rounds->ok())
            rounds.reset();
    }
    const bool sort_in_rounds = rounds && sort_in_rounds_array(plan.sort_wins);
    optional_buffer_t<uint2> own_temps{sort_in_rounds ? 0 : plan.sort_wins * stride, s};
    uint2* temps = sort_in_rounds ? reinterpret_cast<uint2*>(rounds->xs(0)) : own_temps.ptr;
    if (temps == nullptr)
        return false;
    bucket_h* sums = buckets.ptr + (size_t)span * row;
    bucket_h* window_sums_d = sums + ngroups * nsums;

    const bool trace = getenv("CUZK_MSM_TRACE") != nullptr;
    const float alloc_ms = host_ms();
    // Trace: per group, events before the digits, sort, buckets, reduction and after it; the
    // phases summed over the groups.
    std::vector<timing_event> ev(trace ? 5 : 0);
    const auto mark = [&](int k) { if (trace) ev[k].record(s); };
    float phase_ms[4] = {0, 0, 0, 0};
    timing_event t_copy0, t_copy1;

    vec2d_t<uint32_t> d_digits{digits.ptr, (uint32_t)stride};   // n < 2^31
    vec2d_t<uint2> d_temps{temps, (uint32_t)stride};
    vec2d_t<uint32_t> d_hist{hist.ptr, row};
    affine_h* d_points = (affine_h*)d_points_v;   // sppark's accumulate takes them non-const
    const size_t digits_shared = sizeof(scalar_t) * 1024;
    int digits_per_sm = 0;
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&digits_per_sm, wide_digits<scalar_t>, 1024, digits_shared));
    const uint32_t digits_grid = (uint32_t)std::max(1, digits_per_sm) * (uint32_t)gpu.sm_count();
    void (*add_listed)(bucket_h*, const affine_h*, size_t, const uint32_t*, const uint32_t&) =
        batch_addition<bucket_t, affine_h>;

    for (size_t i = 0; i < ngroups; i++) {
        const uint32_t g = plan.starts[i];
        const uint32_t wins = wide_group_end(plan.starts, i, nwins) - g;
        const bool has_top = g + wins == nwins;
        mark(0);
        wide_digits<scalar_t><<<digits_grid, 1024, digits_shared, s>>>(d_digits, d_scalars, (size_t)len, g, wins, wbits);
        CUDA_OK(cudaGetLastError());
        mark(1);
        // The top window's digits have top − 1 bits (see the file comment).
        const uint32_t launches = (wins + plan.sort_wins - 1) / plan.sort_wins;
        const uint32_t per_launch = (wins + launches - 1) / launches;
        for (uint32_t w = 0; w < wins; w += per_launch)
            s.launch_coop(wide_sort, {{grid, std::min(per_launch, wins - w)}, SORT_BLOCKDIM, sort_shared}, d_digits,
                          (size_t)len, w, d_temps, d_hist, wbits - 1, has_top ? wins - 1 : UINT32_MAX, top - 1);
        mark(2);

        // Buckets: one thread each (or the affine rounds); the group's first bucket by batch
        // addition (accumulate skips it), into the group's own `sums` row.
        add_listed<<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, s>>>(sums + i * nsums, d_points, (size_t)len,
                                                                   &d_digits[0][0], d_hist[0][0]);
        CUDA_OK(cudaGetLastError());
        if (rounds)
            affine_rounds<rnd_field_t>(s, gpu.sm_count(), buckets.ptr, wins, wbits, n, d_points, d_digits, d_hist,
                                       *rounds, trace && i == 0);
        else
            s.launch_coop(accumulate<bucket_t, affine_h>, {gpu.sm_count(), 0}, buckets.ptr, wins, wbits, d_points,
                          d_digits, d_hist, 0u);
        if (has_top && shape.shift > 0) {
            bucket_h* top_row = buckets.ptr + (size_t)(wins - 1) * row;
            wide_fold_top<bucket_t><<<wide_blocks<bucket_t>(top_groups), 256, 0, s>>>(top_row, shape.shift, top_groups, folded.ptr);
            CUDA_OK(cudaGetLastError());
            wide_place_top<bucket_t><<<wide_blocks<bucket_t>(row), 256, 0, s>>>(top_row, row, folded.ptr, top_groups);
            CUDA_OK(cudaGetLastError());
        }
        mark(3);

        const bucket_h* group_sums = wide_reduce_windows<bucket_t>(s, buckets.ptr, wins, row, pairs.ptr, pair_cap);
        CUDA_OK(cudaMemcpyAsync(window_sums_d + g, group_sums, wins * sizeof(bucket_h), cudaMemcpyDeviceToDevice, s));
        mark(4);
        if (trace) {
            s.sync();
            for (int k = 0; k < 4; k++)
                phase_ms[k] += ev[k + 1].ms_since(ev[k]);
        }
        if (i + 1 < ngroups)
            pause.at(s);
    }

    std::vector<bucket_t> window_sums(nwins), partial(ngroups * nsums);
    t_copy0.record(s);
    s.DtoH(window_sums.data(), window_sums_d, nwins);
    s.DtoH(partial.data(), sums, ngroups * nsums);
    t_copy1.record(s);
    s.sync();

    // Σ_y 2^(w·y)·S_y by Horner from the top window; at each group's first window, also the
    // first bucket that batch addition summed (digit 1, so weight 2^(w·y) too).
    out.inf();
    size_t group = ngroups;
    for (uint32_t y = nwins; y-- > 0;) {
        for (uint32_t i = 0; i < wbits; i++)
            out.dbl();
        point_t p = window_sums[y];
        out.add(p);
        if (group > 0 && plan.starts[group - 1] == y) {
            group--;
            point_t first_bucket = sum_up(&partial[group * nsums], nsums);
            out.add(first_bucket);
        }
    }
    if (trace)
        fprintf(stderr, "cuzk wide MSM G%u n=%zu w=%u windows=%u in %zu groups of <= %u (room %.1f GB): temporaries %.2f ms (host), digits %.2f ms, sort %.2f ms (<= %u windows a launch), buckets %.2f ms (%s, top window folded), reduce %.2f ms, copy %.2f ms; %.2f ms on the host clock from entry to here\n",
                degree, n, wbits, nwins, ngroups, span, room / 1e9, alloc_ms, phase_ms[0], phase_ms[1], plan.sort_wins,
                phase_ms[2], rounds ? "affine rounds" : "sppark accumulate", phase_ms[3], t_copy1.ms_since(t_copy0), host_ms());
    return true;
}
