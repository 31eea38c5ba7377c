//! `cuzk-bench pce-bench`: what the pre-compiled constraint evaluator costs and saves, per
//! 2 KiB circuit type: extraction time, matrix sizes, cache save/load, and per-partition
//! synthesis plain vs PCE (witness and mat-vec shown separately).

use std::time::{Duration, Instant};

use anyhow::Context;
use cuzk_filecoin::fixtures::requests::request;
use cuzk_filecoin::params::blank_circuit;
use cuzk_filecoin::{prepare, ProofKind};

use crate::demo::KINDS;
use crate::report::{bytes, secs, table};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    fixtures: crate::FixtureDir,
    /// Proof kinds: porep, winning, wpost, snap.
    #[arg(long, value_delimiter = ',', default_values_t = ["winning".to_string(), "wpost".into(), "snap".into(), "porep".into()])]
    kinds: Vec<String>,
    /// Only extract these circuits (any size, e.g. porep-32g) and report matrix sizes and
    /// cache save/load times; needs no fixtures or parameters.
    #[arg(long, value_delimiter = ',')]
    extract_only: Vec<String>,
    /// Only time witness generation (what synthesis costs per partition with PCE) for the
    /// first --partitions partitions of this PoRep C1 file (e.g. a synthetic 32 GiB one from
    /// `gen-synthetic`); needs no parameters or matrices.
    #[arg(long)]
    witness_c1: Option<std::path::PathBuf>,
    /// Like --witness-c1, for a `gen-consistent` directory of any proof kind (e.g. snap-32g).
    #[arg(long, conflicts_with = "witness_c1")]
    witness_inputs: Option<std::path::PathBuf>,
    /// Registered proof number of --witness-c1 (Go abi: 8 = 32 GiB v1.1).
    #[arg(long, default_value_t = 8)]
    registered_proof: u64,
    /// Partitions of --witness-c1 / --witness-inputs to time.
    #[arg(long, default_value_t = 1)]
    partitions: usize,
    /// With --witness-c1: skip the run through storage-proofs' gadgets (the reference the
    /// native witness is checked against), e.g. to profile the native path alone.
    #[arg(long)]
    no_reference: bool,
}

/// The request of a PoRep C1 file.
fn c1_request(c1: &std::path::Path, registered_proof: u64) -> anyhow::Result<cuzk_filecoin::ProofRequest> {
    Ok(cuzk_filecoin::ProofRequest {
        kind: Some(ProofKind::PoRepSealCommit),
        registered_proof,
        sector_number: 1,
        vanilla_proof: std::fs::read(c1).with_context(|| format!("reading {}", c1.display()))?,
        ..Default::default()
    })
}

/// The request of a `gen-consistent` directory.
fn inputs_request(dir: &std::path::Path) -> anyhow::Result<cuzk_filecoin::ProofRequest> {
    cuzk_filecoin::fixtures::consistent::inputs::InputSet::load(dir)?.request(dir)
}

/// Witness generation alone for a request of any size: wall time and the process's CPU time
/// per partition (CPU time counts every thread, so it shows whether a partition used more
/// than one core).
fn witness_only(req: &cuzk_filecoin::ProofRequest, count: usize, reference: bool) -> anyhow::Result<()> {
    let (job, prepare_time) = timed(|| prepare(req));
    let job = job?;
    let gadget_job = prepare(req)?;
    let compact_job = prepare(req)?;
    eprintln!("{}: {} partitions, prepared in {}", job.circuit_id, job.partitions.len(), secs(prepare_time));
    // Each partition three times: through every gadget of the circuit (storage-proofs'
    // synthesis, witness only) and natively (PoRep labels computed without the SHA-256
    // gadget, and the Merkle paths' hashes), both into plain vectors grown as values come, and checked equal; then the way
    // the engine does it — native, aux compact (2 bits per 0/1 value), sized from the first
    // run — plus the expansion the prover stage does before proving.
    let mut t = table(&["partition", "witness", "wall", "CPU (all threads)", "inputs / aux", "aux held"]);
    let partitions = job.partitions.into_iter().zip(gadget_job.partitions).zip(compact_job.partitions);
    for ((p, g), q) in partitions.take(count) {
        let reference = if reference {
            let cpu0 = process_cpu();
            let (w, wall) = timed(|| g.circuit.witness_by_gadgets());
            let cpu = process_cpu() - cpu0;
            let (inputs, aux) = w?;
            t.add_row(vec![
                g.index.to_string(),
                "gadgets, plain".into(),
                secs(wall),
                secs(cpu),
                format!("{} / {}", inputs.len(), aux.len()),
                bytes(32 * aux.len() as u64),
            ]);
            Some((inputs, aux))
        } else {
            None
        };
        let cpu0 = process_cpu();
        let (w, wall) = timed(|| p.circuit.witness());
        let cpu = process_cpu() - cpu0;
        let (inputs, aux) = w?;
        if let Some((gadget_inputs, gadget_aux)) = reference {
            anyhow::ensure!(
                inputs == gadget_inputs && aux == gadget_aux,
                "the native witness differs from the gadgets' one"
            );
        }
        let (n_in, n_aux) = (inputs.len(), aux.len());
        drop(inputs);
        t.add_row(vec![
            p.index.to_string(),
            "native, plain".into(),
            secs(wall),
            secs(cpu),
            format!("{n_in} / {n_aux}"),
            bytes(32 * n_aux as u64),
        ]);
        let cpu0 = process_cpu();
        let (w, wall) = timed(|| q.circuit.witness_compact(n_in, n_aux));
        let cpu = process_cpu() - cpu0;
        let (inputs, compact) = w?;
        anyhow::ensure!((inputs.len(), compact.len()) == (n_in, n_aux), "compact witness has other lengths");
        t.add_row(vec![
            q.index.to_string(),
            "native, compact".into(),
            secs(wall),
            secs(cpu),
            format!("{} / {}", inputs.len(), compact.len()),
            bytes(compact.heap_bytes()),
        ]);
        // Twice: the first expansion may be the first touch of fresh memory (expensive in a
        // VM); the second reuses memory the process had, as a running daemon does.
        for label in ["  expand", "  expand again"] {
            let cpu0 = process_cpu();
            let (expanded, wall) = timed(|| compact.to_vec());
            let cpu = process_cpu() - cpu0;
            anyhow::ensure!(expanded == aux, "the compact witness expands to other values than the plain one");
            drop(expanded);
            t.add_row(vec![q.index.to_string(), label.into(), secs(wall), secs(cpu), String::new(), String::new()]);
        }
        eprintln!(
            "partition {}: {} of {n_aux} aux values stored in full ({:.2} %), the rest are 0 or 1",
            q.index,
            compact.num_others(),
            100.0 * compact.num_others() as f64 / n_aux as f64
        );
    }
    println!("{t}");
    println!("({} threads available)", std::thread::available_parallelism().map_or(1, |n| n.get()));
    Ok(())
}

/// User + system CPU time of this process so far (all threads).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at ") ".
    let fields: Vec<&str> = stat.rsplit_once(") ").map_or(vec![], |(_, rest)| rest.split(' ').collect());
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of stat(5), i.e. 11 and 12 after the name.
    Duration::from_secs_f64((ticks(11) + ticks(12)) as f64 / 100.0)
}

/// Extraction alone, for circuits of any size.
fn extract_only(ids: &[String]) -> anyhow::Result<()> {
    let tmp = std::env::temp_dir().join(format!("cuzk-pce-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let mut t = table(&["circuit", "constraints", "nnz A / B / C", "resident", "extract", "cache save / load", "file"]);
    for id in ids {
        let circuit = cuzk_filecoin::CircuitId::parse(id)?;
        eprintln!("{circuit}: extracting …");
        let (pc, extract) = timed(|| blank_circuit(circuit)?.extract().map_err(anyhow::Error::from));
        let pc = pc?;
        let st = pc.stats();
        eprintln!("{circuit}: {st}");
        let path = tmp.join(format!("{circuit}.pce"));
        let (saved, save) = timed(|| cuzk_pce::cache::save(&pc, &path, "bench"));
        saved?;
        drop(pc);
        let (loaded, load) = timed(|| cuzk_pce::cache::load(&path, "bench"));
        drop(loaded?);
        let file = std::fs::metadata(&path)?.len();
        std::fs::remove_file(&path)?;
        t.add_row(vec![
            circuit.to_string(),
            st.num_constraints.to_string(),
            format!("{} / {} / {}", st.nnz[0], st.nnz[1], st.nnz[2]),
            bytes(st.bytes_resident as u64),
            secs(extract),
            format!("{} / {}", secs(save), secs(load)),
            bytes(file),
        ]);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("{t}");
    Ok(())
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let s = Instant::now();
    let r = f();
    (r, s.elapsed())
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    if !args.extract_only.is_empty() {
        return extract_only(&args.extract_only);
    }
    if let Some(c1) = &args.witness_c1 {
        return witness_only(&c1_request(c1, args.registered_proof)?, args.partitions, !args.no_reference);
    }
    if let Some(dir) = &args.witness_inputs {
        return witness_only(&inputs_request(dir)?, args.partitions, !args.no_reference);
    }
    let dir = &args.fixtures.dir;
    let manifest = crate::fixtures::run(dir)?;
    let tmp = std::env::temp_dir().join(format!("cuzk-pce-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let mut sizes = table(&[
        "circuit",
        "constraints",
        "nnz A / B / C",
        "resident",
        "A-aux dense",
        "B-input / B-aux dense",
        "extract",
        "cache save / load",
    ]);
    let mut speed = table(&["circuit", "plain synthesis", "PCE witness", "PCE mat-vec", "PCE total", "speed-up"]);
    for name in &args.kinds {
        let kind: ProofKind =
            KINDS.into_iter().find(|k| k.name() == name).with_context(|| format!("unknown kind {name:?}"))?;
        let req = request(dir, &manifest, kind)?;
        let (plain_job, pce_job) = (prepare(&req)?, prepare(&req)?);
        let circuit = plain_job.circuit_id;
        eprintln!("{circuit}: extracting …");
        let (pc, extract) = timed(|| blank_circuit(circuit)?.extract().map_err(anyhow::Error::from));
        let pc = pc?;
        let st = pc.stats();
        let path = tmp.join(format!("{circuit}.pce"));
        let (saved, save) = timed(|| cuzk_pce::cache::save(&pc, &path, "bench"));
        saved?;
        let (loaded, load) = timed(|| cuzk_pce::cache::load(&path, "bench"));
        drop(loaded?);
        sizes.add_row(vec![
            circuit.to_string(),
            st.num_constraints.to_string(),
            format!("{} / {} / {}", st.nnz[0], st.nnz[1], st.nnz[2]),
            bytes(st.bytes_resident as u64),
            format!("{} of {}", pc.a_aux_density.count_ones(), st.num_aux),
            format!("{} / {}", pc.b_input_density.count_ones(), pc.b_aux_density.count_ones()),
            secs(extract),
            format!("{} / {}", secs(save), secs(load)),
        ]);

        eprintln!("{circuit}: synthesis plain vs PCE …");
        let (mut plain_t, mut wit_t, mut mv_t) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for (p, q) in plain_job.partitions.into_iter().zip(pce_job.partitions) {
            let (plain, t) = timed(|| p.circuit.synthesize());
            plain_t += t;
            let (witness, t) = timed(|| q.circuit.witness());
            let (inputs, aux) = witness?;
            wit_t += t;
            let (via_pce, t) = timed(|| cuzk_pce::evaluate(&pc, inputs, aux));
            mv_t += t;
            anyhow::ensure!(plain? == via_pce?, "{circuit}: PCE result differs from plain synthesis");
        }
        speed.add_row(vec![
            circuit.to_string(),
            secs(plain_t),
            secs(wit_t),
            secs(mv_t),
            secs(wit_t + mv_t),
            format!("{:.2}x", plain_t.as_secs_f64() / (wit_t + mv_t).as_secs_f64()),
        ]);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("{sizes}\n{speed}");
    println!(
        "(times summed over each proof's partitions; {} threads)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    Ok(())
}
