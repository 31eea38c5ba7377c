//! The load run's report: the run's settings, a table of requests by template and class (every
//! good request in exactly one column), proof latencies, the problems seen, and the daemon's
//! state after the run.

use std::collections::BTreeMap;
use std::time::Duration;

use cuzk_proto::v1;

use super::{Args, Class, Row, Shared};
use crate::client::kv_table;
use crate::report::{bytes, secs, table};

/// One line of the request table; proof columns only for good requests.
fn row_cells(label: String, r: &Row, good: bool) -> Vec<String> {
    let dash = |v: u64| if good { v.to_string() } else { "-".to_string() };
    vec![
        label,
        r.sent.to_string(),
        codes_cell(&r.codes),
        dash(r.verified),
        dash(r.bad_proof),
        dash(r.held_at_end),
        r.lost.to_string(),
    ]
}

/// "InvalidArgument 120, ResourceExhausted 3".
fn codes_cell(codes: &BTreeMap<String, u64>) -> String {
    codes.iter().map(|(c, n)| format!("{c} {n}")).collect::<Vec<_>>().join(", ")
}

pub(super) fn report(sh: &Shared, args: &Args, finished: Duration, status: Option<&v1::GetStatusResponse>) {
    let mut o = kv_table();
    o.add_row(vec!["clients".to_string(), args.clients.to_string()]);
    o.add_row(vec!["duration / drain".to_string(), format!("{} s / {} s", args.duration, args.drain)]);
    o.add_row(vec!["mix good:bad:oversized".to_string(), format!("{}:{}:{}", args.mix[0], args.mix[1], args.mix[2])]);
    let last = *sh.last_start.lock().expect("last_start lock");
    o.add_row(vec!["last request started".to_string(), format!("{} after the start", secs(last))]);
    o.add_row(vec!["all clients done".to_string(), format!("{} after the start", secs(finished))]);
    println!("{o}");

    let mut t = table(&[
        "request",
        "sent",
        "answers (gRPC code: count)",
        "verified",
        "failed verify",
        "held at end",
        "lost / wrong",
    ]);
    let mut totals: Vec<(Class, Row)> =
        vec![(Class::Good, Row::default()), (Class::Bad, Row::default()), (Class::Oversized, Row::default())];
    for (tpl, row) in sh.templates.iter().zip(&sh.rows) {
        let r = row.lock().expect("row lock");
        t.add_row(row_cells(tpl.label.clone(), &r, tpl.class == Class::Good));
        let total = &mut totals[tpl.class as usize].1;
        total.sent += r.sent;
        for (c, n) in &r.codes {
            *total.codes.entry(c.clone()).or_default() += n;
        }
        total.verified += r.verified;
        total.bad_proof += r.bad_proof;
        total.held_at_end += r.held_at_end;
        total.lost += r.lost;
    }
    for (class, r) in &totals {
        t.add_row(row_cells(format!("all {}", class.name()), r, *class == Class::Good));
    }
    println!("{t}");
    println!(
        "(answers: to SubmitProof; Ok = accepted as a job. Expected: bad InvalidArgument, oversized OutOfRange; \
         ResourceExhausted is backpressure, never counted lost. held at end: the daemon still had the job \
         when the drain ended, then cancelled)"
    );

    let mut l = table(&["proof", "verified", "p50", "p95", "max"]);
    for (tpl, row) in sh.templates.iter().zip(&sh.rows) {
        if tpl.class != Class::Good {
            continue;
        }
        let mut v = row.lock().expect("row lock").latencies.clone();
        v.sort();
        let mut cells = vec![tpl.kind.to_string(), v.len().to_string()];
        if v.is_empty() {
            cells.extend(["-", "-", "-"].map(String::from));
        } else {
            let pct = |p: f64| secs(v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]);
            cells.extend([pct(0.50), pct(0.95), secs(v[v.len() - 1])]);
        }
        l.add_row(cells);
    }
    println!("{l}");
    println!("(latency: SubmitProof sent to proof returned, verified proofs only)");

    let problems = sh.problems.lock().expect("problems lock");
    for (what, n) in problems.iter() {
        eprintln!("{n} × {what}");
    }

    let mut d = kv_table();
    match status {
        None => {
            d.add_row(vec!["daemon after the run".to_string(), "NO ANSWER to GetStatus".to_string()]);
        }
        Some(st) => {
            d.add_row(vec!["daemon after the run".to_string(), format!("serving (uptime {} s)", st.uptime_seconds)]);
            d.add_row(vec![
                "daemon: proofs completed / failed".to_string(),
                format!("{} / {}", st.total_proofs_completed, st.total_proofs_failed),
            ]);
            let (pending, running): (u32, u32) =
                st.queues.iter().fold((0, 0), |(p, r), q| (p + q.pending, r + q.in_progress));
            d.add_row(vec!["daemon: partitions pending / in progress".to_string(), format!("{pending} / {running}")]);
            d.add_row(vec![
                "daemon: working memory".to_string(),
                format!("{} of {}", bytes(st.pinned_memory_bytes), bytes(st.pinned_memory_limit_bytes)),
            ]);
        }
    }
    println!("{d}");
}
