//! `cuzk-bench compare`: cuzk's CPU prover vs filecoin-proofs' own prover on the same 2 KiB
//! inputs, in one process, alternating runs. Both get a warm-up run first, so parameters are
//! resident for both (filecoin-proofs keeps them in its in-memory cache after first use).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use cuzk_filecoin::fixtures::reference;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::Manifest;
use cuzk_filecoin::ProofKind;

use crate::demo::{fixture_engine, KINDS};
use crate::report::{secs, table};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    fixtures: crate::FixtureDir,
    /// Timed runs of each prover per proof kind (after one warm-up run each).
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Proof kinds to compare: porep, winning, wpost, snap.
    #[arg(long, value_delimiter = ',', default_values_t = ["winning".to_string(), "wpost".into(), "snap".into(), "porep".into()])]
    kinds: Vec<String>,
}

fn reference_prove(dir: &Path, m: &Manifest, kind: ProofKind) -> anyhow::Result<Vec<u8>> {
    match kind {
        ProofKind::PoRepSealCommit => reference::reference_porep(dir, m),
        ProofKind::WinningPost => reference::reference_winning(dir, m),
        ProofKind::WindowPostPartition => reference::reference_window(dir, m),
        ProofKind::SnapDealsUpdate => reference::reference_snap(dir, m),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let dir = &args.fixtures.dir;
    let manifest = crate::fixtures::run(dir)?;
    let engine = fixture_engine(dir)?;
    let kinds: Vec<ProofKind> = args
        .kinds
        .iter()
        .map(|k| KINDS.into_iter().find(|x| x.name() == k).with_context(|| format!("unknown proof kind {k:?}")))
        .collect::<Result<_, _>>()?;
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let mut t = table(&["proof", "cuzk (median)", "filecoin-proofs (median)", "speed-up", "runs"]);
    for kind in kinds {
        let req = request(dir, &manifest, kind)?;
        eprintln!("{kind}: warm-up …");
        engine.prove(&req)?;
        reference_prove(dir, &manifest, kind)?;
        let (mut ours, mut theirs) = (vec![], vec![]);
        for run in 0..args.runs {
            eprintln!("{kind}: run {}/{} …", run + 1, args.runs);
            let s = Instant::now();
            let out = engine.prove(&req)?;
            ours.push(s.elapsed());
            if !verify_with_filecoin_proofs(dir, &manifest, kind, &out.proof)? {
                bail!("cuzk's {kind} proof failed filecoin-proofs' verification");
            }
            let s = Instant::now();
            reference_prove(dir, &manifest, kind)?;
            theirs.push(s.elapsed());
        }
        let (o, r) = (median(ours), median(theirs));
        t.add_row(vec![
            kind.to_string(),
            secs(o),
            secs(r),
            format!("{:.2}x", r.as_secs_f64() / o.as_secs_f64()),
            args.runs.to_string(),
        ]);
    }
    println!("{t}");
    println!("(both on this machine's CPU; {} threads)", std::thread::available_parallelism().map_or(1, |n| n.get()));
    Ok(())
}
