//! `cuzk-bench gpu-msm` (built with `--features cuda`): device MSM and NTT timings at chosen
//! sizes, each result checked against the CPU (blst) up to 2^20 points. Always takes the
//! device path (no small-size CPU fallback), so it doubles as a probe of the device kernels.
//! `--witness ONES,ZEROS` times witness-like scalars (percent of ones and zeros) from device
//! memory both ways: sppark's Pippenger and the split witness MSM, checked against each other.
//! `--device-scalars` does the same for random scalars: sppark's Pippenger against the dense
//! path (wide windows from 2^22 points, in G1 and G2), and the wide windows with each bucket
//! kernel forced: sppark's XYZZ accumulate and our affine rounds (the prover's from 2^24
//! points in G1, 2^25 in G2).

use std::time::Instant;

use anyhow::bail;
use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use cuzk_cuda::msm::{MsmG1, MsmG2, MsmPath, Scalars};
use cuzk_groth16::msm::{msm_g1, msm_g2};
use cuzk_groth16::ntt::Domain;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rayon::prelude::*;

use crate::report::table;

#[derive(clap::Args)]
pub struct Args {
    /// Numbers of points.
    #[arg(long, value_delimiter = ',', default_value = "65536,1048576")]
    sizes: Vec<usize>,
    /// G2 instead of G1.
    #[arg(long)]
    g2: bool,
    /// Timed repetitions per size.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Witness-like scalars: percent of ones and of zeros (e.g. 60,35); times the plain and
    /// the split device MSM on them.
    #[arg(long, value_delimiter = ',')]
    witness: Option<Vec<u32>>,
    /// Random scalars in device memory: times sppark's Pippenger and the dense path (wide
    /// windows) on them.
    #[arg(long, conflicts_with = "witness")]
    device_scalars: bool,
    /// Also time the quotient (3 iNTT + 2 coset NTT + 1 coset iNTT) at each size.
    #[arg(long)]
    ntt: bool,
    /// Give the memory each MSM frees back to the device at once (the daemon's
    /// `gpus.retain_temporaries = false`), so every run maps its temporaries afresh. By default
    /// it is kept for the next MSM, as the daemon's default does: the first run of each size
    /// maps its temporaries and the later ones reuse them.
    #[arg(long)]
    release_temporaries: bool,
    /// With --device-scalars or --witness: also time every path as the prover runs it inside
    /// its device lock, with a pause callback (here one that returns at once), so the wide MSM
    /// takes its windows a group at a time and sppark's Pippenger goes in chunks, with a
    /// boundary between them, as in a proof. Each path then has a plain and a paused column,
    /// from the same process, points and scalars.
    #[arg(long)]
    pausing: bool,
}

/// Distinct points, cheaply: per chunk a random start and repeated addition of a random step.
fn points<P: Group + Curve + Send + Sync>(n: usize, seed: u64) -> Vec<P::AffineRepr>
where
    P::AffineRepr: Send + Default + Copy,
{
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let step = P::random(&mut rng);
    let chunk = 4096;
    let starts: Vec<P> = (0..n.div_ceil(chunk)).map(|_| P::random(&mut rng)).collect();
    let mut out = vec![P::AffineRepr::default(); n];
    out.par_chunks_mut(chunk).zip(starts.par_iter()).for_each(|(o, s)| {
        let mut acc = *s;
        let proj: Vec<P> = (0..o.len())
            .map(|_| {
                acc += step;
                acc
            })
            .collect();
        P::batch_normalize(&proj, o);
    });
    out
}

/// Scalars with `ones`% ones, `zeros`% zeros, the rest random; made in parallel, each chunk
/// from its own seed (at 2^27 one thread took a large share of a run's set-up, on the lent GPU
/// machine's clock).
fn witness_scalars(n: usize, ones: u32, zeros: u32, seed: u64) -> Vec<Fr> {
    use rand::Rng;
    let chunk = 1 << 16;
    let mut out = vec![Fr::ZERO; n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(i, o)| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ ((i as u64) << 32));
        for x in o {
            *x = match rng.gen_range(0..100u32) {
                v if v < ones => Fr::ONE,
                v if v < ones + zeros => Fr::ZERO,
                _ => Fr::random(&mut rng),
            };
        }
    });
    out
}

/// sppark's Pippenger against other paths on the same scalars in device memory: witness-like
/// ones (`Some((ones, zeros))`, against the split) or random ones (`None`, against the wide
/// windows; also with each bucket kernel forced: XYZZ and affine).
fn compare_paths(args: &Args, witness: Option<(u32, u32)>) -> anyhow::Result<()> {
    let paths: &[MsmPath] = match witness {
        Some(_) => &[MsmPath::Witness],
        None => &[MsmPath::Dense, MsmPath::DenseXyzz, MsmPath::DenseAffine],
    };
    // Each timed run: a path, and whether it pauses. sppark's plain run comes first: the
    // reference every other result must equal.
    let modes: &[bool] = if args.pausing { &[false, true] } else { &[false] };
    let runs: Vec<(MsmPath, bool)> = modes
        .iter()
        .flat_map(|&paused| std::iter::once(MsmPath::Sppark).chain(paths.iter().copied()).map(move |p| (p, paused)))
        .collect();
    let mut head: Vec<String> = ["group", "points", "ones %", "zeros %", "dense"].map(String::from).into();
    head.extend(runs.iter().map(|&(p, paused)| {
        let name = if p == MsmPath::Sppark { "sppark".to_string() } else { format!("{p:?}") };
        format!("{name}{} ms (mean)", if paused { " paused" } else { "" })
    }));
    head.push("equal".into());
    let mut t = table(&head.iter().map(String::as_str).collect::<Vec<_>>());
    let (ones, zeros) = witness.unwrap_or((0, 0));
    let mut bad = 0;
    for &n in &args.sizes {
        let scalars = witness_scalars(n, ones, zeros, n as u64);
        let (buf, _) = cuzk_cuda::buffer::DeviceBuffer::upload(args.device, &scalars)?;
        let dev = || Scalars::Device { buffer: &buf, offset: 0, len: n };
        // Per path (sppark's first): mean ms, and whether every run equalled sppark's first.
        macro_rules! measure {
            ($ctx:ty, $proj:ty) => {{
                let pts = points::<$proj>(n, 1);
                let m = unsafe { <$ctx>::new(args.device, &pts, true)? };
                let mut reference: Option<$proj> = None;
                let (mut ms, mut dense, mut equal) = (vec![0f32; runs.len()], n, true);
                for _ in 0..args.reps {
                    for (i, &(path, paused)) in runs.iter().enumerate() {
                        let (p, t, d) = if paused {
                            m.run_pausing(dev(), path, &mut || {})?
                        } else {
                            m.run_path_on_device(dev(), path)?
                        };
                        ms[i] += t / args.reps as f32;
                        if path != MsmPath::Sppark {
                            dense = d;
                        }
                        equal &= *reference.get_or_insert(p) == p;
                    }
                }
                (ms, dense, equal)
            }};
        }
        let (ms, dense, equal) = if args.g2 { measure!(MsmG2, G2Projective) } else { measure!(MsmG1, G1Projective) };
        bad += usize::from(!equal);
        let mut row = vec![
            if args.g2 { "G2" } else { "G1" }.to_string(),
            n.to_string(),
            ones.to_string(),
            zeros.to_string(),
            dense.to_string(),
        ];
        row.extend(ms.iter().map(|m| format!("{m:.2}")));
        row.push(if equal { "yes".into() } else { "NO".into() });
        t.add_row(row);
    }
    println!("{t}");
    if bad > 0 {
        bail!("{bad} size(s) where a path's MSM differs from sppark's");
    }
    Ok(())
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    cuzk_cuda::device::retain_temporaries(args.device, !args.release_temporaries)?;
    if let Some(w) = &args.witness {
        let [ones, zeros] = w[..] else { bail!("--witness takes two percentages, ONES,ZEROS (e.g. 60,35)") };
        if ones + zeros > 100 {
            bail!("--witness {ones},{zeros}: more than 100 %");
        }
        return compare_paths(args, Some((ones, zeros)));
    }
    if args.device_scalars {
        return compare_paths(args, None);
    }
    let mut t = table(&["group", "points", "device ms (mean)", "cpu ms", "equal"]);
    let mut bad = 0;
    for &n in &args.sizes {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
        let scalars: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let check = n <= 1 << 20;
        // The same measurement in either group: resident points, `reps` timed device runs,
        // then one CPU run as the check.
        macro_rules! measure {
            ($ctx:ty, $proj:ty, $cpu:ident) => {{
                let pts = points::<$proj>(n, 1);
                let m = unsafe { <$ctx>::new(args.device, &pts, true)? };
                let mut total = 0f32;
                let mut r = <$proj>::identity();
                for _ in 0..args.reps {
                    let (x, ms) = m.run_on_device(Scalars::Host(&scalars))?;
                    total += ms;
                    r = x;
                }
                let s = Instant::now();
                let eq = !check || $cpu(&pts, &scalars) == r;
                (total / args.reps as f32, s.elapsed().as_secs_f64() * 1e3, eq)
            }};
        }
        let (dev_ms, cpu_ms, equal) =
            if args.g2 { measure!(MsmG2, G2Projective, msm_g2) } else { measure!(MsmG1, G1Projective, msm_g1) };
        bad += usize::from(!equal);
        t.add_row(vec![
            if args.g2 { "G2" } else { "G1" }.to_string(),
            n.to_string(),
            format!("{dev_ms:.2}"),
            if check { format!("{cpu_ms:.1}") } else { "-".into() },
            if !check {
                "not checked".into()
            } else if equal {
                "yes".into()
            } else {
                "NO".into()
            },
        ]);
        if args.ntt {
            let d = Domain::for_size(n).expect("domain");
            let v: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
            let (_, q) = cuzk_cuda::ntt::quotient(args.device, &d, &v, &v, &v)?;
            println!("quotient 2^{}: upload {:.2} ms, NTTs {:.2} ms", d.log_n, q.upload_ms, q.ntt_ms);
        }
    }
    println!("{t}");
    if bad > 0 {
        bail!("{bad} device MSM result(s) differ from the CPU");
    }
    Ok(())
}
