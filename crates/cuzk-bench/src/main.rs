//! cuzk-bench: fixtures, demo and benchmarks (temporary bootstrap: parameter generation only).
use std::path::PathBuf;
use clap::Parser;
use rand::SeedableRng;

#[derive(Parser)]
struct Args { #[arg(long)] dir: PathBuf, #[arg(long)] circuit: Vec<String> }

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    for c in &args.circuit {
        let id = cuzk_filecoin::CircuitId::parse(c)?;
        let t = std::time::Instant::now();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x637a_6b5f_7465_7374);
        let generated = cuzk_filecoin::params::generate_test_params(&args.dir, id, &mut rng)?;
        println!("{id}: generated={generated} in {:.1}s", t.elapsed().as_secs_f64());
    }
    Ok(())
}
