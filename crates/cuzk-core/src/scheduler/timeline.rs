//! A per-partition timeline of the daemon's recent work, for throughput benchmarks: when each
//! partition's synthesis ran, when it waited for and held a prover (and which device), as
//! seconds since the scheduler started, and what the prover spent on each phase (uploads,
//! device mat-vec, NTT, each MSM, in milliseconds). Kept in memory for the last `CAPACITY`
//! partitions and served as CSV at HTTP `/timeline.csv`.
//!
//! That endpoint has no authentication, and a job id is all CancelProof needs when no admin
//! token is configured, so the CSV names no job: its first column, `job_tag`, is the first 8
//! hex digits of SHA-256(a random per-process key ‖ job id). Rows of one job share a tag
//! (and two jobs' tags differ but for a 1 in 2^32 chance); the id cannot be recovered from
//! it. An unkeyed hash would not do: an id is `<kind>-<sequence>-<32 random bits>`, few enough
//! unknowns to try them all against a tag. The ids themselves are not kept here either.

use std::collections::VecDeque;
use std::fmt::Write;
use std::time::Instant;

use cuzk_backend::ProveTimings;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

const CAPACITY: usize = 20_000;

#[derive(Clone, Debug)]
pub struct TimelineEntry {
    pub job: String,
    pub kind: &'static str,
    pub partition: usize,
    pub synthesis_start: Instant,
    pub synthesis_end: Instant,
    /// The prover worker took it from the ready queue / the backend returned.
    pub prove_start: Instant,
    pub prove_end: Instant,
    pub device: Option<u32>,
    /// The span this partition held its device (GPU backends).
    pub device_span: Option<(Instant, Instant)>,
    /// The backend's per-phase times for this partition.
    pub phases: ProveTimings,
}

pub struct Timeline {
    origin: Instant,
    /// Keys the job tags (module docs); never leaves the process.
    key: [u8; 32],
    /// Each entry with its job's tag; the entry's `job` is emptied (nothing here to leak).
    entries: Mutex<VecDeque<(u32, TimelineEntry)>>,
}

impl Timeline {
    pub fn new(origin: Instant) -> Self {
        Timeline { origin, key: rand::random(), entries: Mutex::new(VecDeque::new()) }
    }

    /// The tag of `job` in the CSV (module docs).
    fn tag(&self, job: &str) -> u32 {
        let digest = Sha256::new().chain_update(self.key).chain_update(job.as_bytes()).finalize();
        u32::from_be_bytes(digest[..4].try_into().unwrap())
    }

    /// `job`'s tag as the CSV shows it, for other unauthenticated views (HTTP `/status`).
    pub fn job_tag(&self, job: &str) -> String {
        format!("{:08x}", self.tag(job))
    }

    pub fn record(&self, mut e: TimelineEntry) {
        // Hashed before the lock: every prover records here after each partition.
        let tag = self.tag(&e.job);
        e.job = String::new();
        let mut q = self.entries.lock();
        if q.len() == CAPACITY {
            q.pop_front();
        }
        q.push_back((tag, e));
    }

    /// CSV with a header; times in seconds since the scheduler started, empty when unknown.
    pub fn csv(&self) -> String {
        // Copied out (no heap data to copy: the ids are gone) and formatted after the lock is
        // released: formatting 20,000 rows takes long enough to hold up every prover waiting
        // to record its partition.
        let rows: Vec<(u32, TimelineEntry)> = self.entries.lock().iter().cloned().collect();
        let secs = |t: Instant| format!("{:.4}", t.saturating_duration_since(self.origin).as_secs_f64());
        let mut out = String::from(
            "job_tag,kind,partition,synthesis_start,synthesis_end,prove_start,prove_end,device,device_start,device_end,\
             expand_ms,upload_ms,matvec_ms,ntt_ms,msm_h_ms,msm_l_ms,msm_a_ms,msm_b_g1_ms,msm_b_g2_ms\n",
        );
        let ms = |d: std::time::Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
        for (tag, e) in &rows {
            let (ds, de) = e.device_span.map_or((String::new(), String::new()), |(a, b)| (secs(a), secs(b)));
            let p = &e.phases;
            let _ = writeln!(
                out,
                "{tag:08x},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                e.kind,
                e.partition,
                secs(e.synthesis_start),
                secs(e.synthesis_end),
                secs(e.prove_start),
                secs(e.prove_end),
                e.device.map_or(String::new(), |d| d.to_string()),
                ds,
                de,
                ms(p.witness_expand),
                ms(p.upload),
                ms(p.matvec),
                ms(p.ntt),
                ms(p.msm_h),
                ms(p.msm_l),
                ms(p.msm_a),
                ms(p.msm_b_g1),
                ms(p.msm_b_g2)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(job: &str, partition: usize) -> TimelineEntry {
        let t = Instant::now();
        TimelineEntry {
            job: job.into(),
            kind: "porep",
            partition,
            synthesis_start: t,
            synthesis_end: t,
            prove_start: t,
            prove_end: t,
            device: None,
            device_span: None,
            phases: ProveTimings::default(),
        }
    }

    /// Issue #36 item 9c: `/timeline.csv` has no authentication, and a job id is all that
    /// CancelProof needs when no admin token is set: the CSV must not carry one. Rows of
    /// one job still share a tag, and two jobs' tags differ.
    #[test]
    fn csv_names_no_job_id() {
        let tl = Timeline::new(Instant::now());
        let ids = ["porep-1-0123abcd", "porep-2-89ef4567"];
        for (i, id) in ids.iter().enumerate() {
            tl.record(entry(id, 0));
            tl.record(entry(id, 1 + i));
        }
        let csv = tl.csv();
        for id in ids {
            assert!(!csv.contains(id), "{id} in\n{csv}");
            // Nor its random part, which is what makes an id unguessable.
            assert!(!csv.contains(id.rsplit('-').next().unwrap()), "{id} in\n{csv}");
        }
        let tags: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
        assert_eq!(tags.len(), 4);
        assert_eq!(tags[0], tags[1]);
        assert_eq!(tags[2], tags[3]);
        assert_ne!(tags[0], tags[2]);
    }

    #[test]
    fn csv_has_one_row_per_partition_and_keeps_the_newest() {
        let t0 = Instant::now();
        let tl = Timeline::new(t0);
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        for i in 0..CAPACITY + 3 {
            tl.record(TimelineEntry {
                job: format!("j{i}"),
                kind: "porep",
                partition: i % 10,
                synthesis_start: at(1.0),
                synthesis_end: at(2.0),
                prove_start: at(2.5),
                prove_end: at(3.0),
                device: (i % 2 == 0).then_some(1),
                device_span: (i % 2 == 0).then(|| (at(2.6), at(2.9))),
                phases: ProveTimings {
                    witness_expand: Duration::from_millis(2),
                    matvec: Duration::from_micros(1500),
                    msm_b_g2: Duration::from_millis(7),
                    ..Default::default()
                },
            });
        }
        let csv = tl.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), CAPACITY + 1);
        // The oldest three are gone: the first row is j3's.
        let (tag, row) = lines[1].split_once(',').unwrap();
        assert_eq!(tag, tl.job_tag("j3"));
        assert!(row.starts_with("porep,3,1.0000,2.0000,2.5000,3.0000,,,"), "{}", lines[1]);
        assert!(
            lines[2].split_once(',').unwrap().1.starts_with("porep,4,1.0000,2.0000,2.5000,3.0000,1,2.6000,2.9000"),
            "{}",
            lines[2]
        );
        // Phase columns: expand, upload, mat-vec, NTT, H, L, A, B_G1, B_G2 in milliseconds.
        assert!(lines[2].ends_with(",2.0,0.0,1.5,0.0,0.0,0.0,0.0,0.0,7.0"), "{}", lines[2]);
        assert_eq!(lines[0].split(',').count(), lines[2].split(',').count());
    }
}
