//! A per-partition timeline of the daemon's recent work, for throughput benchmarks: when each
//! partition's synthesis ran, when it waited for and held a prover (and which device), as
//! seconds since the scheduler started, and what the prover spent on each phase (uploads,
//! device mat-vec, NTT, each MSM, in milliseconds). Kept in memory for the last `CAPACITY`
//! partitions and served as CSV at HTTP `/timeline.csv`.

use std::collections::VecDeque;
use std::fmt::Write;
use std::time::Instant;

use cuzk_groth16::ProveTimings;
use parking_lot::Mutex;

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
    entries: Mutex<VecDeque<TimelineEntry>>,
}

impl Timeline {
    pub fn new(origin: Instant) -> Self {
        Timeline { origin, entries: Mutex::new(VecDeque::new()) }
    }

    pub fn record(&self, e: TimelineEntry) {
        let mut q = self.entries.lock();
        if q.len() == CAPACITY {
            q.pop_front();
        }
        q.push_back(e);
    }

    /// CSV with a header; times in seconds since the scheduler started, empty when unknown.
    pub fn csv(&self) -> String {
        let secs = |t: Instant| format!("{:.4}", t.saturating_duration_since(self.origin).as_secs_f64());
        let mut out = String::from(
            "job,kind,partition,synthesis_start,synthesis_end,prove_start,prove_end,device,device_start,device_end,\
             expand_ms,upload_ms,matvec_ms,ntt_ms,msm_h_ms,msm_l_ms,msm_a_ms,msm_b_g1_ms,msm_b_g2_ms\n",
        );
        let ms = |d: std::time::Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
        for e in self.entries.lock().iter() {
            let (ds, de) = e.device_span.map_or((String::new(), String::new()), |(a, b)| (secs(a), secs(b)));
            let p = &e.phases;
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                e.job,
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
                phases: ProveTimings { witness_expand: Duration::from_millis(2), matvec: Duration::from_micros(1500), msm_b_g2: Duration::from_millis(7), ..Default::default() },
            });
        }
        let csv = tl.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), CAPACITY + 1);
        assert!(lines[1].starts_with("j3,porep,3,1.0000,2.0000,2.5000,3.0000,,,"), "{}", lines[1]);
        assert!(lines[2].starts_with("j4,porep,4,1.0000,2.0000,2.5000,3.0000,1,2.6000,2.9000"), "{}", lines[2]);
        // Phase columns: expand, upload, mat-vec, NTT, H, L, A, B_G1, B_G2 in milliseconds.
        assert!(lines[2].ends_with(",2.0,0.0,1.5,0.0,0.0,0.0,0.0,0.0,7.0"), "{}", lines[2]);
        assert_eq!(lines[0].split(',').count(), lines[2].split(',').count());
    }
}
