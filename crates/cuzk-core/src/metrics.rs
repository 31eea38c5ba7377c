//! Prometheus metrics. Counters are bumped where the event happens (job finished, partition
//! proved), gauges are refreshed from the scheduler's real state when scraped — so a scrape
//! never reports a number the scheduler does not hold.

use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

pub struct Metrics {
    registry: Registry,
    pub completed: IntCounterVec,
    pub failed: IntCounterVec,
    pub cancelled: IntCounterVec,
    /// Proofs made with synthetic parameters: verification skipped, returned flagged
    /// (the jobs end FAILED with an "UNVERIFIED" message; they are in `failed` too).
    pub unverified_synthetic: IntCounterVec,
    pub proof_seconds: HistogramVec,
    pub synthesis_seconds: HistogramVec,
    pub prove_seconds: HistogramVec,
    /// Per partition: from the job's submit to the partition's synthesis start (workers busy,
    /// memory full), and how long its prover waited for a device.
    pub queue_wait_seconds: HistogramVec,
    pub device_wait_seconds: HistogramVec,
    /// Per job: a submit's own work before its partitions are queued (the input digest, the
    /// decoding of C1 output or vanilla proofs, the checks). Part of `proof_seconds` too: a
    /// 2349-sector WindowPoSt request is large.
    pub submit_seconds: HistogramVec,
    pub queue_pending: IntGaugeVec,
    pub queue_running: IntGaugeVec,
    pub partitions_in_flight: IntGauge,
    /// Partitions synthesized, by path: "pce" (pre-compiled) or "plain".
    pub synthesized: IntCounterVec,
    pub srs_resident_bytes: IntGauge,
    pub memory_used_bytes: IntGauge,
    pub memory_limit_bytes: IntGauge,
    pub process_rss_bytes: IntGauge,
    pub process_peak_rss_bytes: IntGauge,
    /// Per device (label `device` = CUDA ordinal), read from the backend when scraped.
    pub gpu_memory_total_bytes: IntGaugeVec,
    pub gpu_memory_free_bytes: IntGaugeVec,
    pub gpu_resident_bytes: IntGaugeVec,
    pub gpu_partitions_proved: IntGaugeVec,
    pub gpu_failures: IntGaugeVec,
    pub gpu_busy_seconds: GaugeVec,
    pub gpu_active_partitions: IntGaugeVec,
}

fn device_gauge(r: &Registry, name: &str, help: &str) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), &["device"]).expect("valid metric");
    r.register(Box::new(g.clone())).expect("unique metric");
    g
}

fn counter(r: &Registry, name: &str, help: &str) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), &["kind"]).expect("valid metric");
    r.register(Box::new(c.clone())).expect("unique metric");
    c
}

fn histogram(r: &Registry, name: &str, help: &str, buckets: Vec<f64>) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), &["kind"]).expect("valid metric");
    r.register(Box::new(h.clone())).expect("unique metric");
    h
}

fn gauge_vec(r: &Registry, name: &str, help: &str) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), &["kind"]).expect("valid metric");
    r.register(Box::new(g.clone())).expect("unique metric");
    g
}

fn gauge(r: &Registry, name: &str, help: &str) -> IntGauge {
    let g = IntGauge::new(name, help).expect("valid metric");
    r.register(Box::new(g.clone())).expect("unique metric");
    g
}

impl Default for Metrics {
    fn default() -> Self {
        let r = Registry::new();
        let secs = vec![0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0];
        Metrics {
            completed: counter(&r, "cuzk_proofs_completed_total", "Proofs completed and verified, by kind"),
            failed: counter(&r, "cuzk_proofs_failed_total", "Proofs failed, by kind"),
            cancelled: counter(&r, "cuzk_proofs_cancelled_total", "Proofs cancelled, by kind"),
            unverified_synthetic: counter(
                &r,
                "cuzk_unverified_synthetic_proofs_total",
                "Proofs made with synthetic parameters (srs.synthetic): verification skipped, returned as FAILED/UNVERIFIED",
            ),
            proof_seconds: histogram(&r, "cuzk_proof_duration_seconds", "Submit-to-result time of completed proofs", secs.clone()),
            synthesis_seconds: histogram(&r, "cuzk_partition_synthesis_seconds", "Synthesis time per partition", secs.clone()),
            prove_seconds: histogram(&r, "cuzk_partition_prove_seconds", "Prover backend time per partition", secs.clone()),
            queue_wait_seconds: histogram(
                &r,
                "cuzk_partition_queue_wait_seconds",
                "Per partition: job submit to the start of its synthesis (waiting for a worker, its parameters and memory)",
                secs.clone(),
            ),
            device_wait_seconds: histogram(&r, "cuzk_partition_device_wait_seconds", "Per partition: time its prover waited for a device", secs),
            submit_seconds: histogram(
                &r,
                "cuzk_submit_decode_seconds",
                "Per job: the submit's digest, decoding and checks of its inputs, before its partitions are queued",
                vec![0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0],
            ),
            queue_pending: gauge_vec(&r, "cuzk_queue_pending_jobs", "Jobs waiting for their first partition to start"),
            queue_running: gauge_vec(&r, "cuzk_queue_running_jobs", "Jobs with partitions in progress"),
            partitions_in_flight: gauge(&r, "cuzk_partitions_in_flight", "Partitions synthesized or being proved now"),
            synthesized: {
                let c = IntCounterVec::new(
                    Opts::new("cuzk_partitions_synthesized_total", "Partitions synthesized, by path (pce or plain)"),
                    &["path"],
                )
                .expect("valid metric");
                r.register(Box::new(c.clone())).expect("unique metric");
                c
            },
            srs_resident_bytes: gauge(&r, "cuzk_srs_resident_bytes", "Bytes of Groth16 parameters resident in memory"),
            memory_used_bytes: gauge(&r, "cuzk_memory_budget_used_bytes", "Working-set bytes reserved by partitions"),
            memory_limit_bytes: gauge(&r, "cuzk_memory_budget_limit_bytes", "Working-set memory budget"),
            process_rss_bytes: gauge(&r, "cuzk_process_resident_bytes", "Resident memory of the daemon process now"),
            process_peak_rss_bytes: gauge(&r, "cuzk_process_peak_resident_bytes", "Peak resident memory of the daemon process since start"),
            gpu_memory_total_bytes: device_gauge(&r, "cuzk_gpu_memory_total_bytes", "Device memory, by CUDA ordinal"),
            gpu_memory_free_bytes: device_gauge(&r, "cuzk_gpu_memory_free_bytes", "Free device memory now"),
            gpu_resident_bytes: device_gauge(&r, "cuzk_gpu_resident_bytes", "Parameters and PCE matrices kept on the device"),
            gpu_partitions_proved: device_gauge(&r, "cuzk_gpu_partitions_proved", "Partitions proved on the device since start"),
            gpu_failures: device_gauge(&r, "cuzk_gpu_failures", "Partition attempts that failed on the device since start"),
            gpu_busy_seconds: {
                let g = GaugeVec::new(Opts::new("cuzk_gpu_busy_seconds", "Time the device was held by a partition since start"), &["device"])
                    .expect("valid metric");
                r.register(Box::new(g.clone())).expect("unique metric");
                g
            },
            gpu_active_partitions: device_gauge(&r, "cuzk_gpu_active_partitions", "Partitions on the device or waiting for it"),
            registry: r,
        }
    }
}

impl Metrics {
    /// Metrics with every per-kind series present from the start (at zero), so dashboards
    /// and alerts see `0`, not a missing series, before the first proof of a kind.
    pub fn new(kinds: &[&str]) -> Self {
        let m = Metrics::default();
        for kind in kinds {
            for c in [&m.completed, &m.failed, &m.cancelled, &m.unverified_synthetic] {
                c.with_label_values(&[kind]);
            }
            m.queue_pending.with_label_values(&[kind]);
            m.queue_running.with_label_values(&[kind]);
        }
        for path in ["pce", "plain"] {
            m.synthesized.with_label_values(&[path]);
        }
        m
    }

    /// Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut buf).expect("encoding metrics to memory");
        String::from_utf8(buf).expect("prometheus text is UTF-8")
    }
}

/// (resident, peak resident) bytes of this process, from /proc/self/status (VmRSS, VmHWM);
/// (0, 0) where that file does not exist.
pub fn process_memory() -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string("/proc/self/status") else { return (0, 0) };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn process_memory_is_read_from_proc() {
        let (rss, peak) = super::process_memory();
        assert!(rss > 1 << 20, "resident memory {rss}");
        assert!(peak >= rss, "peak {peak} below current {rss}");
    }
}
