//! `cuzk-bench load-params FILE`: read and validate one `.params` file the way the daemon does
//! (`Srs::load`) and report what that costs: wall time, the queries' sizes, and this process's
//! resident memory before and after, with its peak (VmHWM), so the host memory a parameter
//! load needs can be measured on the machine that will run the daemon.

use std::path::PathBuf;
use std::time::Instant;

use cuzk_core::metrics::process_memory;
use cuzk_groth16::{Srs, SubgroupCheck};

use crate::report::table;

#[derive(clap::Args)]
pub struct Args {
    /// The `.params` file.
    file: PathBuf,
    /// Check every point's subgroup membership (slow: minutes at 32 GiB); by default the
    /// check is skipped, as for a file that already passed it.
    #[arg(long)]
    subgroup_check: bool,
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let file_bytes = std::fs::metadata(&args.file)?.len();
    let (rss_before, _) = process_memory();
    let check = if args.subgroup_check { SubgroupCheck::Always } else { SubgroupCheck::Skip };
    let started = Instant::now();
    // No sidecar records: this command must not write beside the file.
    let srs = Srs::load_with_records(&args.file, check, None)?;
    let secs = started.elapsed().as_secs_f64();
    let (rss_after, peak) = process_memory();
    let q = srs.query_lens();
    let mut t = table(&["", "value"]);
    t.add_row(vec![
        "file".into(),
        format!("{} ({})", args.file.file_name().unwrap_or_default().to_string_lossy(), gib(file_bytes)),
    ]);
    t.add_row(vec![
        "load".into(),
        format!("{secs:.2} s (subgroup check {})", if args.subgroup_check { "on" } else { "off" }),
    ]);
    t.add_row(vec![
        "queries h / l / a / b_g1 / b_g2".into(),
        format!("{} / {} / {} / {} / {}", q.h, q.l, q.a, q.b_g1, q.b_g2),
    ]);
    t.add_row(vec!["decoded points".into(), gib(srs.resident_bytes())]);
    t.add_row(vec!["RSS before / after".into(), format!("{} / {}", gib(rss_before), gib(rss_after))]);
    t.add_row(vec!["peak RSS (VmHWM)".into(), gib(peak)]);
    println!("{t}");
    Ok(())
}
