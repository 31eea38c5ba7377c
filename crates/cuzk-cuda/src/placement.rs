//! Where one SRS's five queries live on a device: resident (copied once, read by every proof),
//! or *staged* (kept in host memory, copied up chunk by chunk for each MSM that reads them;
//! `cuda/msm.cu`). Pure arithmetic, no CUDA: compiled and tested on every build.
//!
//! Why: an operator's H200 (139.8 GiB) runs PoRep, WindowPoSt and WinningPoSt at 32 GiB. Their
//! points and matrices alone are ~121 GiB (PoRep 44.1 + 7.4, WindowPoSt 56.6 + 10.6, MSM
//! engines ~2 GiB each), which leaves no room for one proof's working set (~20 GiB). All or
//! nothing, the circuit loaded second went to host memory whole and streamed every point on
//! every proof (PoRep beside a resident WindowPoSt: 37 s/proof instead of 17.7). Staging only
//! the queries that must go — the choice below takes the fewest bytes — keeps the rest on the
//! device: one of WindowPoSt's queries (its L, 11.3 GiB, by the estimate below; read once per
//! WindowPoSt partition) goes to host memory, and PoRep keeps everything.
//!
//! The fit is a per-phase estimate of one proof's device bytes on the witness path (the
//! larger one): a, b, c over the domain and the witness while the matrices are evaluated and
//! the quotient computed, then h (a's buffer; b and c are freed after the quotient) beside
//! the H MSM's wide-window temporaries, then each witness MSM's scalars and temporaries, and
//! for a staged query its two chunk buffers. It must hold beside what the device already has,
//! for this circuit and for every circuit already on the device (a proof of either can run
//! alone), with [`SLACK`] for CUDA's own allocations.

use cuzk_groth16::QueryLens;

/// One of a proving key's five queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    H,
    L,
    A,
    BG1,
    BG2,
}

impl Query {
    pub const ALL: [Query; 5] = [Query::H, Query::L, Query::A, Query::BG1, Query::BG2];

    fn bit(self) -> u8 {
        1 << self as u8
    }

    fn name(self) -> &'static str {
        match self {
            Query::H => "H",
            Query::L => "L",
            Query::A => "A",
            Query::BG1 => "B_G1",
            Query::BG2 => "B_G2",
        }
    }

    /// Points of this query in `q`.
    pub fn len(self, q: &QueryLens) -> usize {
        match self {
            Query::H => q.h,
            Query::L => q.l,
            Query::A => q.a,
            Query::BG1 => q.b_g1,
            Query::BG2 => q.b_g2,
        }
    }

    fn point_bytes(self) -> u64 {
        if self == Query::BG2 {
            G2_AFFINE
        } else {
            G1_AFFINE
        }
    }

    /// Bytes of this query's points.
    pub fn bytes(self, q: &QueryLens) -> u64 {
        self.len(q) as u64 * self.point_bytes()
    }
}

/// The set of staged queries of one SRS on one device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Staged(u8);

impl Staged {
    /// Everything resident.
    pub const NONE: Staged = Staged(0);

    pub fn of(queries: &[Query]) -> Staged {
        Staged(queries.iter().fold(0, |m, q| m | q.bit()))
    }

    pub fn contains(self, q: Query) -> bool {
        self.0 & q.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Host bytes the staged queries hold.
    pub fn host_bytes(self, q: &QueryLens) -> u64 {
        Query::ALL.iter().filter(|&&x| self.contains(x)).map(|x| x.bytes(q)).sum()
    }

    /// "B_G2", "H+L", or "none".
    pub fn describe(self) -> String {
        let names: Vec<&str> = Query::ALL.iter().filter(|&&x| self.contains(x)).map(|x| x.name()).collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join("+")
        }
    }
}

/// sppark's affine points on the device: two Fp (G1) or two Fp2 (G2) coordinates.
const G1_AFFINE: u64 = 96;
const G2_AFFINE: u64 = 192;
/// Fr, as scalars and witness values.
const FR: u64 = 32;
/// CUDA's own allocations beside what is counted here (context, streams, the upload slots).
pub const SLACK: u64 = 1 << 30;
/// The share of the device (1/MARGIN_DIVISOR) kept free beside [`SLACK`]; see [`margin`].
pub const MARGIN_DIVISOR: u64 = 32;

/// The bytes a placement leaves free on a device of `total` bytes: [`SLACK`] and 1/32 of the
/// device for what the estimate does not see (allocator rounding, the stream-ordered frees of
/// one phase's temporaries overlapping the next's allocations). The wide and split MSM paths
/// keep the same margin free or decline (`leaves_margin`, cuda/common.cuh, told these numbers
/// by `msm::agree_margin`).
pub fn margin(total: u64) -> u64 {
    SLACK + total / MARGIN_DIVISOR
}
/// A staged run's chunk (`STAGE_CHUNK_BYTES` in cuda/msm.cu).
pub const STAGE_CHUNK_BYTES: u64 = 7 << 29;
/// Smallest MSM that takes wide windows (`WIDE_MIN_LG_POINTS`, cuda/msm_wide.cuh).
const WIDE_MIN_POINTS: u64 = 1 << 22;

/// An upper bound on the device temporaries of one dense MSM of `n` points: the wide path's
/// (12 windows of 22 bits in G1, 13 of 20 in G2: a digit per window, a sort pair per point for
/// each of two windows sorted at once, and the bucket rows), which is more than the split's or
/// sppark's at these sizes. The wide path sorts more windows at once, and sums buckets in
/// affine rounds, only with room beyond this and the margin. Below the wide path's minimum
/// sppark's temporaries are small enough for [`SLACK`].
pub fn msm_temporaries(n: u64, g2: bool) -> u64 {
    if n < WIDE_MIN_POINTS {
        return 0;
    }
    let (windows, buckets_per_window, bucket) =
        if g2 { (13, 1u64 << 19, 2 * G2_AFFINE) } else { (12, 1u64 << 21, 2 * G1_AFFINE) };
    n * (4 * windows + 16) + windows * buckets_per_window * bucket
}

/// Device bytes of sppark's Pippenger engine that each context keeps for good (its buckets and
/// histogram, sized from the point count by msm_t's constructor).
pub fn engine_bytes(n: usize, g2: bool) -> u64 {
    if n == 0 {
        return 0;
    }
    let n = n as u64;
    let wbits: u32 =
        if n > 192 { ((64 - (n + n / 2).leading_zeros() - 1).saturating_sub(8)).clamp(10, 18) } else { 10 };
    let nwins = (254 / wbits + 1) as u64;
    let row = 1u64 << (wbits - 1);
    // msm_t's bucket type is xyzz: four coordinates.
    let bucket = if g2 { 2 * G2_AFFINE } else { 2 * G1_AFFINE };
    nwins * row * (bucket + 4)
}

/// Points of one staged chunk of query `x`, and its device bytes while it runs: two chunk
/// buffers and one chunk's MSM temporaries.
fn staged_run_bytes(x: Query, q: &QueryLens) -> u64 {
    let n = x.len(q) as u64;
    let per = x.point_bytes();
    let max_chunk = (STAGE_CHUNK_BYTES / per).max(1);
    let chunks = n.div_ceil(max_chunk).max(1);
    let chunk = n.div_ceil(chunks);
    let buffers = if chunks > 1 { 2 } else { 1 };
    buffers * chunk * per + msm_temporaries(chunk, x == Query::BG2)
}

/// One MSM's device bytes beyond its scalars: over resident points its temporaries, over
/// staged ones the chunk buffers and a chunk's temporaries.
fn msm_bytes(x: Query, q: &QueryLens, staged: Staged) -> u64 {
    if staged.contains(x) {
        staged_run_bytes(x, q)
    } else {
        msm_temporaries(x.len(q) as u64, x == Query::BG2)
    }
}

/// The peak device bytes of one proof beside resident parameters and matrices, over its
/// phases (see the module doc): parameters of lengths `q` with `inputs` public inputs.
pub fn proof_peak_bytes(q: &QueryLens, inputs: usize, staged: Staged) -> u64 {
    let n = (q.h + 1) as u64;
    let witness = (inputs + q.l) as u64 * FR;
    let abc = 3 * n * FR;
    let phases = [
        // Mat-vec and quotient.
        witness + abc,
        // H, over h alone (b and c are freed after the quotient).
        witness + n * FR + msm_bytes(Query::H, q, staged),
        witness + msm_bytes(Query::L, q, staged),
        witness + q.a as u64 * FR + msm_bytes(Query::A, q, staged),
        witness + q.b_g1 as u64 * FR + msm_bytes(Query::BG1, q, staged),
        witness + q.b_g1 as u64 * FR + msm_bytes(Query::BG2, q, staged),
    ];
    phases.into_iter().max().unwrap_or(0)
}

/// Device bytes the resident part of `q` keeps for good: its points and every context's
/// engine (staged contexts have one too). `with_b_g2` false: B in G2 runs on the CPU.
pub fn resident_bytes(q: &QueryLens, with_b_g2: bool, staged: Staged) -> u64 {
    Query::ALL
        .iter()
        .filter(|&&x| (with_b_g2 || x != Query::BG2) && x.len(q) > 0)
        .map(|&x| engine_bytes(x.len(q), x == Query::BG2) + if staged.contains(x) { 0 } else { x.bytes(q) })
        .sum()
}

/// What a device can give one more SRS: `free` of its `total` bytes now, with `others_peak`
/// the largest proof peak of the circuits already on it (one of those can run once this one
/// is there).
#[derive(Clone, Copy, Debug)]
pub struct Room {
    pub free: u64,
    pub total: u64,
    pub others_peak: u64,
}

impl Room {
    /// What a placement may count on: the free bytes less the [`margin`], so that a device
    /// filled to the estimate still runs every MSM on its fast path.
    fn usable(&self) -> u64 {
        self.free.saturating_sub(margin(self.total))
    }
}

/// The placement of the SRS of lengths `q` (with `inputs` public inputs) on a device with
/// `room`: everything resident when that fits, else the staged set of fewest host bytes that
/// fits (host memory is the other budget, and each staged byte is copied per proof); None
/// when not even staging every query fits.
pub fn choose(q: &QueryLens, inputs: usize, with_b_g2: bool, room: Room) -> Option<Staged> {
    let fits = |s: Staged| {
        let peak = proof_peak_bytes(q, inputs, s).max(room.others_peak);
        resident_bytes(q, with_b_g2, s) + peak < room.usable()
    };
    let candidates =
        Query::ALL.iter().filter(|&&x| (with_b_g2 || x != Query::BG2) && x.len(q) > 0).copied().collect::<Vec<_>>();
    let mut best: Option<(u64, Staged)> = None;
    for mask in 0u32..(1 << candidates.len()) {
        let set: Vec<Query> =
            candidates.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, &x)| x).collect();
        let s = Staged::of(&set);
        if !fits(s) {
            continue;
        }
        let cost = s.host_bytes(q);
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, s));
        }
    }
    best.map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// The query lengths of cuzk's 32 GiB circuits (their PCE extractions: domain 2^27;
    /// PoRep 130,169,893 aux with 129,753,292 A-dense and 33,112,281 B-dense; WindowPoSt
    /// 2349 sectors 126,902,376 aux, 96,179,805 and 91,925,766, 25,840 inputs).
    fn porep_32g() -> (QueryLens, usize) {
        (
            QueryLens {
                h: (1 << 27) - 1,
                l: 130_169_893,
                a: 328 + 129_753_292,
                b_g1: 1 + 33_112_281,
                b_g2: 1 + 33_112_281,
            },
            328,
        )
    }

    fn wpost_32g() -> (QueryLens, usize) {
        (
            QueryLens {
                h: (1 << 27) - 1,
                l: 126_902_376,
                a: 25_840 + 96_179_805,
                b_g1: 1 + 91_925_766,
                b_g2: 1 + 91_925_766,
            },
            25_840,
        )
    }

    /// The H200 of the operator's host as measured: 139.8 GiB, ~0.6 GiB taken by the CUDA
    /// context; each circuit's matrices go up before its points.
    const H200: u64 = 139_800 * GIB / 1000;
    const CONTEXT: u64 = 600 * GIB / 1000;
    const POREP_MATRICES: u64 = 7_445 * GIB / 1000;
    const WPOST_MATRICES: u64 = 10_649 * GIB / 1000;

    #[test]
    fn resident_points_are_what_the_daemon_logged() {
        let (porep, _) = porep_32g();
        let (wpost, _) = wpost_32g();
        let points = |q: &QueryLens| Query::ALL.iter().map(|x| x.bytes(q)).sum::<u64>() as f64 / GIB as f64;
        // "parameters set up on device … gib=44.12…" and "… gib=56.60…" in the daemon logs of
        // benchmarks/2026-12-05-h200-operator-77d4095 (both) and 2026-12-04-h200-g2-wide-2bd5fb9 (56.60).
        assert!((points(&porep) - 44.12).abs() < 0.01, "{}", points(&porep));
        assert!((points(&wpost) - 56.60).abs() < 0.01, "{}", points(&wpost));
        // Every context keeps its engine's buckets: ~2 GiB per 32 GiB circuit.
        let engines = resident_bytes(&porep, true, Staged::NONE) as f64 / GIB as f64 - points(&porep);
        assert!((1.5..2.5).contains(&engines), "{engines}");
    }

    #[test]
    fn porep_then_wpost_on_one_h200_keep_porep_whole_and_stage_one_wpost_query() {
        let (porep, porep_in) = porep_32g();
        let (wpost, wpost_in) = wpost_32g();
        let mut used = CONTEXT + POREP_MATRICES;
        let first = choose(&porep, porep_in, true, Room { free: H200 - used, total: H200, others_peak: 0 })
            .expect("PoRep fits alone");
        assert_eq!(first, Staged::NONE, "PoRep alone is resident whole");
        used += resident_bytes(&porep, true, first) + WPOST_MATRICES;
        let porep_peak = proof_peak_bytes(&porep, porep_in, first);
        let second = choose(&wpost, wpost_in, true, Room { free: H200 - used, total: H200, others_peak: porep_peak })
            .expect("WindowPoSt fits staged");
        // One query goes to host memory, no more than B in G2's 16.4 GiB (the largest): by
        // these figures L (11.3 GiB), the cheapest that fits.
        assert_eq!(second, Staged::of(&[Query::L]), "{}", second.describe());
        assert!(second.host_bytes(&wpost) <= Query::BG2.bytes(&wpost));
        used += resident_bytes(&wpost, true, second);
        let peak = used + proof_peak_bytes(&wpost, wpost_in, second).max(porep_peak) + SLACK;
        // The target: at most 135 GiB in use at peak, all of it counted here.
        assert!(peak < 135 * GIB, "device peak {:.1} GiB", peak as f64 / GIB as f64);
        // And a third, small circuit (WinningPoSt) still finds room.
        let winning = QueryLens { h: (1 << 19) - 1, l: 370_000, a: 370_000, b_g1: 100_000, b_g2: 100_000 };
        let peaks = porep_peak.max(proof_peak_bytes(&wpost, wpost_in, second));
        assert_eq!(
            choose(&winning, 1, true, Room { free: H200 - used, total: H200, others_peak: peaks }),
            Some(Staged::NONE)
        );
    }

    #[test]
    fn the_cheapest_staging_is_chosen_and_nothing_when_even_that_does_not_fit() {
        let (porep, inputs) = porep_32g();
        let total = 80 * GIB;
        let margin = margin(total);
        let peak = proof_peak_bytes(&porep, inputs, Staged::NONE);
        let whole = resident_bytes(&porep, true, Staged::NONE) + peak + margin;
        let room = |free: u64| Room { free, total, others_peak: 0 };
        assert_eq!(choose(&porep, inputs, true, room(whole + 1)), Some(Staged::NONE));
        assert_ne!(choose(&porep, inputs, true, room(whole - 1)), Some(Staged::NONE), "one byte short");
        // 6 GiB short: some staging fits, and none that fits holds fewer host bytes.
        let free = whole - 6 * GIB;
        let s = choose(&porep, inputs, true, room(free)).expect("some staging fits");
        assert!(!s.is_empty());
        let fits = |s: Staged| resident_bytes(&porep, true, s) + proof_peak_bytes(&porep, inputs, s) + margin < free;
        assert!(fits(s));
        for mask in 0u8..32 {
            let other = Staged(mask);
            if fits(other) {
                assert!(
                    other.host_bytes(&porep) >= s.host_bytes(&porep),
                    "{} is cheaper than {}",
                    other.describe(),
                    s.describe()
                );
            }
        }
        // A device of 8 GiB holds not even the staged chunks of a 32 GiB proof.
        assert_eq!(choose(&porep, inputs, true, room(8 * GIB)), None);
        // A circuit already there whose proof needs more than the room left also says no.
        assert_eq!(choose(&porep, inputs, true, Room { free: whole + 1, total, others_peak: 200 * GIB }), None);
    }

    #[test]
    fn a_staged_query_costs_two_chunks_and_a_chunks_temporaries_not_its_length() {
        let (wpost, inputs) = wpost_32g();
        let b = Staged::of(&[Query::BG2]);
        let run = staged_run_bytes(Query::BG2, &wpost);
        // 16.4 GiB of points in 5 chunks of ~3.3 GiB: two chunks, plus one chunk's
        // temporaries, well below the whole query.
        assert!(run < 11 * GIB && run > 8 * GIB, "{:.2} GiB", run as f64 / GIB as f64);
        assert!(proof_peak_bytes(&wpost, inputs, b) <= proof_peak_bytes(&wpost, inputs, Staged::NONE) + GIB);
        assert_eq!(
            resident_bytes(&wpost, true, Staged::NONE) - resident_bytes(&wpost, true, b),
            Query::BG2.bytes(&wpost)
        );
        assert_eq!(b.describe(), "B_G2");
        assert_eq!(Staged::NONE.describe(), "none");
        // B in G2 on the CPU: its query is neither resident nor staged on the device.
        assert!(choose(&wpost, inputs, false, Room { free: 200 * GIB, total: 200 * GIB, others_peak: 0 })
            .is_some_and(|s| !s.contains(Query::BG2)));
    }
}
