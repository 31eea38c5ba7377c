//! `cuzk-bench gpu-msm` (built with `--features cuda`): device MSM and NTT timings at chosen
//! sizes, each result checked against the CPU (blst) up to 2^20 points. Always takes the
//! device path (no small-size CPU fallback), so it doubles as a probe of the device kernels.

use std::time::Instant;

use anyhow::bail;
use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use cuzk_cuda::msm::{MsmG1, MsmG2, Scalars};
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
    /// Also time the quotient (3 iNTT + 3 coset NTT + 1 coset iNTT) at each size.
    #[arg(long)]
    ntt: bool,
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

pub fn run(args: &Args) -> anyhow::Result<()> {
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
            if !check { "not checked".into() } else if equal { "yes".into() } else { "NO".into() },
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
