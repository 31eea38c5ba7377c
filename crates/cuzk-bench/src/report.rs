//! Table and number formatting shared by the subcommands.

use std::time::Duration;

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};

pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic).set_header(header.to_vec());
    t
}

pub fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}
