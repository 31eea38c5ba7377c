//! `cuzk-bench gpu` (built with `--features cuda`): the GPU end-to-end check and benchmark on
//! the 2 KiB fixture set.
//!
//! 1. For each proof type, partition 0's a, b, c from the device mat-vec (PCE matrices and
//!    witness on the device) are compared bit for bit with plain CPU synthesis.
//! 2. Every proof type is proved on the CUDA backend — host a/b/c path, then the GPU-resident
//!    PCE path — and each proof is checked with filecoin-proofs' own verify function.
//! 3. A per-partition table: device, wait for the device, uploads, mat-vec, NTT, each MSM.
//!
//! Exits non-zero if any comparison or verification fails.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use cuzk_backend::ProveTimings;
use cuzk_core::config::B2Placement;
use cuzk_core::{Config, Engine};
use cuzk_cuda::buffer::DeviceBuffer;
use cuzk_cuda::pce::DevicePce;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::{prepare, ProofKind};
use cuzk_groth16::ntt::Domain;

use crate::demo::KINDS;
use crate::report::table;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    fixtures: crate::FixtureDir,
    /// Proofs per type and configuration (the first includes moving parameters to the device).
    #[arg(long, default_value_t = 2)]
    runs: usize,
    /// Proof types (winning, window, snap, porep); default all four.
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    /// CUDA ordinals to use (default: all).
    #[arg(long, value_delimiter = ',')]
    devices: Vec<u32>,
}

fn kinds(names: &[String]) -> anyhow::Result<Vec<ProofKind>> {
    if names.is_empty() {
        return Ok(KINDS.to_vec());
    }
    names
        .iter()
        .map(|n| match n.as_str() {
            "winning" => Ok(ProofKind::WinningPost),
            "window" => Ok(ProofKind::WindowPostPartition),
            "snap" => Ok(ProofKind::SnapDealsUpdate),
            "porep" => Ok(ProofKind::PoRepSealCommit),
            other => bail!("unknown proof type {other:?} (winning, window, snap, porep)"),
        })
        .collect()
}

fn engine(dir: &Path, devices: &[u32], device_matvec: bool, b_g2: B2Placement) -> anyhow::Result<Engine> {
    let mut config = Config::default();
    config.srs.param_dir = dir.join("params");
    config.gpus.backend = "cuda".into();
    config.gpus.devices = devices.to_vec();
    config.gpus.device_matvec = device_matvec;
    config.gpus.b_g2 = b_g2;
    Ok(Engine::new(config)?)
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let dir = &args.fixtures.dir;
    let kinds = kinds(&args.kinds)?;
    // Parameters only for the circuits under test (the PoRep and SnapDeals ones take minutes).
    let circuits: Vec<&str> = kinds
        .iter()
        .map(|k| match k {
            ProofKind::WinningPost => "winning-2k",
            ProofKind::WindowPostPartition => "wpost-2k",
            ProofKind::SnapDealsUpdate => "snap-2k",
            _ => "porep-2k",
        })
        .collect();
    let manifest = crate::fixtures::run_subset(dir, &circuits)?;
    let mut failures = 0usize;

    // 1. Device mat-vec against plain synthesis on the real circuits.
    let cpu = {
        let mut c = Config::default();
        c.srs.param_dir = dir.join("params");
        c.gpus.backend = "cpu".into();
        Engine::new(c)?
    };
    let pce = cpu.pce.as_ref().context("PCE is disabled in the default config")?;
    let device = cuzk_cuda::device::select(&args.devices)?.remove(0);
    for &kind in &kinds {
        let req = request(dir, &manifest, kind)?;
        let plain = {
            let p = prepare(&req)?.partitions.remove(0);
            p.circuit.synthesize()?
        };
        let prepared = prepare(&req)?;
        let (pc, _) = pce.get(prepared.circuit_id)?;
        let partition = prepared.partitions.into_iter().next().context("no partition")?;
        let (inputs, aux) = partition.circuit.witness()?;
        let dpce = DevicePce::upload(device.index, &pc)?;
        let w: Vec<_> = inputs.iter().chain(aux.iter()).copied().collect();
        let (wbuf, _) = DeviceBuffer::upload(device.index, &w)?;
        let domain = Domain::for_size(pc.num_constraints).context("domain")?;
        let (abc, kernel_ms) = dpce.eval(&domain, &wbuf)?;
        let got = abc.to_vec()?;
        let m = plain.a.len();
        let same = m == pc.num_constraints
            && got[..m] == plain.a[..]
            && got[domain.n..domain.n + m] == plain.b[..]
            && got[2 * domain.n..2 * domain.n + m] == plain.c[..]
            && pc.a_aux_density == plain.a_aux_density
            && pc.b_input_density == plain.b_input_density
            && pc.b_aux_density == plain.b_aux_density;
        println!(
            "device mat-vec vs plain synthesis, {kind}: {} constraints, {} non-zeros, {kernel_ms:.2} ms on device {}: {}",
            m,
            pc.stats().nnz.iter().sum::<usize>(),
            device.ordinal,
            if same { "identical" } else { "DIFFERENT" }
        );
        failures += usize::from(!same);
    }

    // 2. and 3. Proofs on every path, verified by filecoin-proofs.
    let mut t = table(&[
        "proof",
        "path",
        "run",
        "part",
        "dev",
        "wait",
        "upload",
        "matvec",
        "ntt",
        "msm h",
        "msm l",
        "msm a",
        "msm b1",
        "msm b2",
        "prove ms",
        "filecoin-proofs",
    ]);
    let configs = [
        ("host a/b/c", false, B2Placement::Gpu),
        ("device mat-vec", true, B2Placement::Gpu),
        ("mat-vec, B2 on CPU", true, B2Placement::Cpu),
    ];
    for (label, device_matvec, b_g2) in configs {
        let engine = engine(dir, &args.devices, device_matvec, b_g2)?;
        for &kind in &kinds {
            let req = request(dir, &manifest, kind)?;
            for run in 1..=args.runs {
                let out = engine.prove(&req).with_context(|| format!("proving {kind} ({label})"))?;
                let valid = verify_with_filecoin_proofs(dir, &manifest, kind, &out.proof)?;
                failures += usize::from(!valid);
                for (i, pt) in out.partition_timings.iter().enumerate() {
                    t.add_row(row(kind, label, run, i, pt, valid));
                }
            }
        }
        for d in engine.backend().devices() {
            println!(
                "[{label}] device {} ({}): {} partitions, busy {:.2} s, {} failures, {:.1} MiB resident",
                d.ordinal,
                d.name,
                d.partitions_proved,
                d.busy.as_secs_f64(),
                d.failures,
                d.resident_bytes as f64 / (1 << 20) as f64
            );
        }
    }
    println!("{t}");
    if failures > 0 {
        bail!("{failures} GPU check(s) failed");
    }
    println!("GPU end-to-end: all comparisons identical, all proofs valid under filecoin-proofs");
    Ok(())
}

fn row(kind: ProofKind, label: &str, run: usize, part: usize, t: &ProveTimings, valid: bool) -> Vec<String> {
    vec![
        kind.to_string(),
        label.into(),
        run.to_string(),
        part.to_string(),
        t.device.map_or("cpu".into(), |d| d.to_string()),
        ms(t.device_wait),
        ms(t.upload),
        ms(t.matvec),
        ms(t.ntt),
        ms(t.msm_h),
        ms(t.msm_l),
        ms(t.msm_a),
        ms(t.msm_b_g1),
        ms(t.msm_b_g2),
        ms(t.total),
        if valid { "valid".into() } else { "INVALID".into() },
    ]
}
