//! The Grafana dashboard `deploy/grafana/cuzk.json` against the daemon that feeds it.
//!
//! 1. The file is a Grafana dashboard model that imports into any Grafana: its one datasource
//!    is the `DS_PROMETHEUS` input, which every panel and query names (no datasource uid of
//!    the author's own Grafana), and it shows what issue #39 and docs/operating.md's
//!    monitoring section say matters.
//! 2. Every metric its PromQL queries is one the real `cuzk-daemon` exports: a CPU daemon
//!    proves one 2 KiB proof of each kind, all four submitted at once and each verified with
//!    filecoin-proofs' verifier (`grpc_e2e.rs` counts on these proofs for that), then each
//!    metric name in each query must be a series in its `/metrics`, and each kind's proof is
//!    counted as completed. A renamed metric or a typo in a panel fails here instead of
//!    leaving an empty panel on a farm's screen. The per-device families, which only a
//!    daemon with a GPU exports, are listed in [`GPU_ONLY`] and exempt here.
//! 3. With the `cuda` feature, the same on a CUDA daemon, with nothing exempt, and each
//!    per-device family has a series for every device `/status` lists. That test needs a
//!    GPU: the GPU suite runs it (scripts/gpu-test.sh; CI only compiles it).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::shared_fixture_set;
use cuzk_filecoin::ProofKind;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_proto::v1::AwaitProofRequest;
use serde_json::Value;

/// Read at compile time, so that cargo rebuilds this test whenever the dashboard changes, and
/// so that the GPU suite's prebuilt copy of this test carries the dashboard it checks.
const DASHBOARD: &str = include_str!("../../../deploy/grafana/cuzk.json");

/// Families a CPU daemon does not export, so the CPU test cannot find them in its `/metrics`:
/// the per-device gauges (label `device` = CUDA ordinal) are filled from the backend's
/// devices, of which the CPU backend has none, and the device-wait histogram is observed
/// only for partitions proved on a device. The CPU test checks that they are families
/// cuzk-core's `Metrics` really has, so a misspelling cannot hide in this list, and that a
/// CPU daemon indeed leaves them out, so nothing that could be checked there is exempted.
const GPU_ONLY: [&str; 8] = [
    "cuzk_gpu_busy_seconds",
    "cuzk_gpu_memory_total_bytes",
    "cuzk_gpu_memory_free_bytes",
    "cuzk_gpu_resident_bytes",
    "cuzk_gpu_failures",
    "cuzk_gpu_partitions_proved",
    "cuzk_gpu_active_partitions",
    "cuzk_partition_device_wait_seconds",
];

/// What the issue and the operator's guide ask the dashboard to show: proofs by outcome,
/// latency, queue depth, the memory budget, device busy time and memory, GPU failures.
const REQUIRED: [&str; 12] = [
    "cuzk_proofs_completed_total",
    "cuzk_proofs_failed_total",
    "cuzk_proofs_cancelled_total",
    "cuzk_proof_duration_seconds_bucket",
    "cuzk_queue_pending_jobs",
    "cuzk_queue_running_jobs",
    "cuzk_memory_budget_used_bytes",
    "cuzk_memory_budget_limit_bytes",
    "cuzk_gpu_busy_seconds",
    "cuzk_gpu_memory_total_bytes",
    "cuzk_gpu_memory_free_bytes",
    "cuzk_gpu_failures",
];

const DATASOURCE: &str = "${DS_PROMETHEUS}";

const KINDS: [ProofKind; 4] =
    [ProofKind::WinningPost, ProofKind::WindowPostPartition, ProofKind::SnapDealsUpdate, ProofKind::PoRepSealCommit];

fn dashboard() -> Value {
    serde_json::from_str(DASHBOARD).unwrap_or_else(|e| panic!("deploy/grafana/cuzk.json is not JSON: {e}"))
}

/// Every panel, those inside rows included (a collapsed row holds its panels itself).
fn panels(v: &Value) -> Vec<&Value> {
    let mut out = vec![];
    for p in v["panels"].as_array().into_iter().flatten() {
        out.push(p);
        out.extend(panels(p));
    }
    out
}

/// The PromQL in a Grafana query variable. Grafana wraps it in functions of its own, which
/// are not PromQL: `label_values(expr, label)` and `query_result(expr)` hold an expression;
/// `label_values(label)` holds none. Any other form is refused, not silently unchecked.
fn variable_promql(q: &str) -> Option<&str> {
    let q = q.trim();
    if let Some(inner) = q.strip_prefix("query_result(").and_then(|r| r.strip_suffix(')')) {
        return Some(inner);
    }
    let inner = q.strip_prefix("label_values(").and_then(|r| r.strip_suffix(')'));
    let inner = inner.unwrap_or_else(|| panic!("a variable query this test cannot read: {q:?}"));
    inner.rsplit_once(',').map(|(expr, _label)| expr)
}

/// Every PromQL query, named by where it is: the panels' targets, and the query variables
/// (whose queries Grafana runs too, to fill the variable's choices).
fn queries(d: &Value) -> Vec<(String, String)> {
    let mut out = vec![];
    for p in panels(d) {
        let title = p["title"].as_str().unwrap_or("?");
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap_or_else(|| panic!("panel {title:?}: a target without expr: {t}"));
            out.push((format!("panel {title:?}"), expr.to_string()));
        }
    }
    for var in d["templating"]["list"].as_array().into_iter().flatten() {
        if var["type"] == "query" {
            let name = var["name"].as_str().unwrap_or("?");
            // Newer Grafana stores {"query": …}, older a plain string.
            let q = var["query"]["query"].as_str().or(var["query"].as_str());
            let q = q.unwrap_or_else(|| panic!("variable {name:?} has no query: {var}"));
            if let Some(expr) = variable_promql(q) {
                out.push((format!("variable {name:?}"), expr.to_string()));
            }
        }
    }
    out
}

/// Identifiers that are PromQL, never a metric (compared in lower case): the aggregation
/// operators (which may be followed by `by (…)` instead of their parenthesis), the binary
/// keywords and modifiers, and the float literals `Inf` and `NaN`.
const NOT_METRICS: [&str; 28] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "atan2",
    "inf",
    "nan",
];

/// Modifiers whose parenthesis that follows holds label names, not an expression.
const LABEL_LISTS: [&str; 6] = ["by", "without", "on", "ignoring", "group_left", "group_right"];

/// The index just past the bracket that closes the one at `open` (`{`, `[` or `(`), skipping
/// quoted strings, which may hold any bracket.
fn past_closing(chars: &[char], open: usize) -> usize {
    let close = match chars[open] {
        '{' => '}',
        '[' => ']',
        _ => ')',
    };
    let mut i = open + 1;
    while i < chars.len() && chars[i] != close {
        i = if matches!(chars[i], '"' | '\'' | '`') { past_string(chars, i) } else { i + 1 };
    }
    i + 1
}

/// The index just past the string whose quote is at `open` (a backslash escapes the next
/// character; backquoted strings have no escapes, and nothing here needs to tell).
fn past_string(chars: &[char], open: usize) -> usize {
    let mut i = open + 1;
    while i < chars.len() && chars[i] != chars[open] {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// The metric names in a PromQL expression: the identifiers left once quoted strings, label
/// matchers `{…}`, ranges `[…]`, Grafana variables `$x`, numbers and durations, function
/// names (an identifier followed by `(`), keywords and the label lists of `by (…)`,
/// `on (…)` and their kind are set aside. A small reader, not a parser: it assumes the
/// expression is valid PromQL (Prometheus checks that; this test checks the names).
fn metric_names(expr: &str) -> Vec<String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let chars: Vec<char> = expr.chars().collect();
    let next_non_space = |mut i: usize| {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let mut names = vec![];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '"' | '\'' | '`') {
            i = past_string(&chars, i);
        } else if matches!(c, '{' | '[') {
            i = past_closing(&chars, i);
        } else if c == '$' || c.is_ascii_digit() || c == '.' {
            // A variable, or a number or duration (`0.95`, `1e3`, `5m`): one token.
            i += 1;
            while i < chars.len() && (is_ident(chars[i]) || chars[i] == '.') {
                i += 1;
            }
        } else if is_ident(c) {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let after = next_non_space(i);
            let call = after < chars.len() && chars[after] == '(';
            if LABEL_LISTS.contains(&word.as_str()) {
                if call {
                    i = past_closing(&chars, after);
                }
            } else if !call && !NOT_METRICS.contains(&word.to_ascii_lowercase().as_str()) {
                names.push(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The families a histogram's series belong to: `x_bucket`, `x_sum`, `x_count` → `x`.
fn family(name: &str) -> &str {
    ["_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name)
}

/// What the dashboard queries: metric name → the places that query it.
fn queried(d: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (place, expr) in queries(d) {
        for name in metric_names(&expr) {
            out.entry(name).or_default().push(place.clone());
        }
    }
    out
}

#[test]
fn metric_names_are_read_from_promql() {
    let expr = r#"histogram_quantile(0.95, sum by (le, kind) (rate(cuzk_proof_duration_seconds_bucket{instance=~"cuzk_x|$instance", le!="}"}[$__rate_interval])))
        / on(instance) group_left(device) up_total + ignoring (kind) cuzk_a:b offset 5m > bool 1e3 or sum without(path) (x) and Inf"#;
    assert_eq!(metric_names(expr), ["cuzk_proof_duration_seconds_bucket", "up_total", "cuzk_a:b", "x"]);
    assert_eq!(metric_names("sum(cuzk_a) / sum (cuzk_b)"), ["cuzk_a", "cuzk_b"]);
    let q = r#"label_values(cuzk_proofs_completed_total{job="a,b"}, instance)"#;
    assert_eq!(variable_promql(q), Some(r#"cuzk_proofs_completed_total{job="a,b"}"#));
    assert_eq!(variable_promql("label_values(instance)"), None);
    assert_eq!(variable_promql(" query_result(sum by (kind) (cuzk_x))"), Some("sum by (kind) (cuzk_x)"));
    assert_eq!(family("cuzk_proof_duration_seconds_bucket"), "cuzk_proof_duration_seconds");
    assert_eq!(family("cuzk_proofs_completed_total"), "cuzk_proofs_completed_total");
}

#[test]
fn dashboard_is_an_importable_grafana_model_over_the_guides_metrics() {
    let d = dashboard();
    // The datasource is chosen at import: one Prometheus input.
    let inputs = d["__inputs"].as_array().expect("__inputs");
    assert!(
        inputs
            .iter()
            .any(|i| i["name"] == "DS_PROMETHEUS" && i["type"] == "datasource" && i["pluginId"] == "prometheus"),
        "no DS_PROMETHEUS datasource input: {inputs:?}"
    );
    assert!(d["uid"].as_str().is_some_and(|u| !u.is_empty()) && d["title"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(d["schemaVersion"].as_u64().is_some_and(|v| v >= 30), "schemaVersion {}", d["schemaVersion"]);
    // An exported model has no database id: with one, an import would overwrite that dashboard.
    assert!(d["id"].is_null(), "id {}", d["id"]);

    let mut ids = BTreeSet::new();
    let all = panels(&d);
    assert!(all.len() >= 10, "only {} panels", all.len());
    for p in &all {
        let title = p["title"].as_str().unwrap_or("?");
        let id = p["id"].as_u64().unwrap_or_else(|| panic!("panel {title:?} has no id"));
        assert!(ids.insert(id), "panel id {id} used twice");
        let (x, w) = (p["gridPos"]["x"].as_u64(), p["gridPos"]["w"].as_u64());
        assert!(
            matches!((x, w), (Some(x), Some(w)) if w > 0 && x + w <= 24),
            "panel {title:?}: gridPos {}",
            p["gridPos"]
        );
        if p["type"] == "row" {
            continue;
        }
        // A uid of the author's Grafana would leave the panel without data after import.
        assert_eq!(p["datasource"]["uid"], DATASOURCE, "panel {title:?}");
        let targets = p["targets"].as_array().filter(|t| !t.is_empty());
        let targets = targets.unwrap_or_else(|| panic!("panel {title:?} queries nothing"));
        let mut refs = BTreeSet::new();
        for t in targets {
            assert_eq!(t["datasource"]["uid"], DATASOURCE, "panel {title:?}: {t}");
            assert!(refs.insert(t["refId"].as_str().expect("refId")), "panel {title:?}: refId used twice");
        }
    }
    for var in d["templating"]["list"].as_array().into_iter().flatten() {
        if var["type"] == "query" {
            assert_eq!(var["datasource"]["uid"], DATASOURCE, "variable {}", var["name"]);
        }
    }

    let q = queried(&d);
    let missing: Vec<_> = REQUIRED.iter().filter(|m| !q.contains_key(**m)).collect();
    assert!(missing.is_empty(), "the dashboard does not show {missing:?}");
    // A histogram's buckets are cumulative counters: only a quantile over their rate means
    // anything on a graph.
    for (place, expr) in queries(&d) {
        if metric_names(&expr).iter().any(|n| n.ends_with("_bucket")) {
            assert!(expr.contains("histogram_quantile(") && expr.contains("rate("), "{place}: {expr}");
        }
    }
}

/// A daemon on the 2 KiB fixture set with `gpus_toml` as its `[gpus]` section proves one
/// proof of each kind, all submitted at once (which fills every per-kind histogram: they
/// export nothing before their first observation), and filecoin-proofs' verifier accepts each:
/// these are the proofs of all four kinds through SubmitProof and AwaitProof that `grpc_e2e.rs`
/// leaves to this test. Returns its `/metrics` body and its `/status` document.
async fn metrics_after_one_proof_of_each_kind(gpus_toml: &str) -> (String, Value) {
    let (dir, manifest) = shared_fixture_set().expect("fixture set");
    let mut r = common::start(&dir.join("params"), "", &format!("[gpus]\n{gpus_toml}\n")).await;
    let mut jobs = vec![];
    for kind in KINDS {
        let req = common::submit_request(request(&dir, &manifest, kind).unwrap(), &format!("grafana-{kind}"), 0);
        jobs.push((kind, r.client.submit_proof(req).await.expect("submit").into_inner().job_id));
    }
    for (kind, job_id) in jobs {
        let res =
            r.client.await_proof(AwaitProofRequest { job_id, timeout_ms: 600_000 }).await.expect("await").into_inner();
        assert_eq!(res.status(), Status::Completed, "{kind}: {}", res.error_message);
        assert_eq!(res.proof.len(), 192, "{kind}");
        assert!(
            verify_with_filecoin_proofs(&dir, &manifest, kind, &res.proof).unwrap(),
            "{kind} proof rejected by filecoin-proofs"
        );
    }
    let body = |path: &str| {
        let response = common::http_get(r.http_port, path);
        assert!(response.starts_with("HTTP/1.1 200"), "{path}: {response}");
        response.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_string())
    };
    let (metrics, status) = (body("/metrics"), body("/status"));
    r.stop(Duration::from_secs(60));
    (metrics, serde_json::from_str(&status).expect("/status is JSON"))
}

/// Series names in Prometheus text, as a query names them (a histogram's `_bucket`, `_sum`,
/// `_count`).
fn series_names(metrics: &str) -> BTreeSet<&str> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap_or(""))
        .collect()
}

/// The queried metrics missing from `series`, with where the dashboard queries them, except
/// those `exempt` says may be missing.
fn absent(q: &BTreeMap<String, Vec<String>>, series: &BTreeSet<&str>, exempt: impl Fn(&str) -> bool) -> Vec<String> {
    q.iter()
        .filter(|(name, _)| !series.contains(name.as_str()) && !exempt(name))
        .map(|(name, places)| format!("{name} (queried in {})", places.join(", ")))
        .collect()
}

/// Every per-kind histogram the dashboard plots per kind has each kind's series: a panel
/// that showed three kinds of four would pass a name check.
fn assert_every_kind(metrics: &str, families: &[&str]) {
    for f in families {
        for kind in KINDS {
            let line = format!("{f}_count{{kind=\"{}\"}} ", kind.name());
            assert!(metrics.lines().any(|l| l.starts_with(&line)), "no {line:?} in /metrics:\n{metrics}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_dashboard_queries_is_exported_by_a_cpu_daemon() {
    let q = queried(&dashboard());
    assert!(q.keys().any(|n| n.starts_with("cuzk_")), "no cuzk_ metric in any query: {q:?}");

    // The exemption list names real families: with one device and one device-proved
    // partition recorded, cuzk-core's metrics export each of them.
    let m = cuzk_core::metrics::Metrics::default();
    for g in [
        &m.gpu_memory_total_bytes,
        &m.gpu_memory_free_bytes,
        &m.gpu_resident_bytes,
        &m.gpu_partitions_proved,
        &m.gpu_failures,
        &m.gpu_active_partitions,
    ] {
        g.with_label_values(&["0"]);
    }
    m.gpu_busy_seconds.with_label_values(&["0"]);
    m.device_wait_seconds.with_label_values(&["porep"]).observe(1.0);
    let gpu_text = m.render();
    for f in GPU_ONLY {
        assert!(
            gpu_text.contains(&format!("# TYPE {f} ")),
            "{f} is not a family of cuzk_core::metrics::Metrics:\n{gpu_text}"
        );
    }

    let (metrics, _) = metrics_after_one_proof_of_each_kind("backend = \"cpu\"").await;
    let series = series_names(&metrics);
    for f in GPU_ONLY {
        assert!(
            !series.iter().any(|s| family(s) == f),
            "a CPU daemon exports {f}: check it here, not in GPU_ONLY\n{metrics}"
        );
    }
    // Exempt: a GPU-only family by its name, or a series of a GPU-only histogram (not any
    // name with a histogram's suffix: `cuzk_gpu_failures_count` is no series).
    let gpu_only = |name: &str| {
        GPU_ONLY.contains(&name)
            || (GPU_ONLY.contains(&family(name)) && gpu_text.contains(&format!("# TYPE {} histogram", family(name))))
    };
    let missing = absent(&q, &series, gpu_only);
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics the daemon does not export:\n  {}\n/metrics:\n{metrics}",
        missing.join("\n  ")
    );
    assert_every_kind(
        &metrics,
        &["cuzk_proof_duration_seconds", "cuzk_partition_synthesis_seconds", "cuzk_partition_prove_seconds"],
    );
    // Each kind's one completed proof is counted under its kind (the other tests that read
    // this counter prove only the PoSt kinds).
    for kind in KINDS {
        let line = format!("cuzk_proofs_completed_total{{kind=\"{}\"}} 1", kind.name());
        assert!(metrics.lines().any(|l| l == line), "no {line:?} in /metrics:\n{metrics}");
    }
}

/// The GPU suite's half: on a CUDA daemon nothing is exempt, and each per-device family has
/// a series for every device of `/status` (the dashboard's legends name `{{device}}`).
/// Fails, not skips, without a device (as the GPU unit tests do).
#[cfg(feature = "cuda")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_dashboard_queries_is_exported_by_a_cuda_daemon() {
    let q = queried(&dashboard());
    let (metrics, status) = metrics_after_one_proof_of_each_kind("backend = \"cuda\"").await;
    let series = series_names(&metrics);
    let missing = absent(&q, &series, |_| false);
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics a CUDA daemon does not export:\n  {}\n/metrics:\n{metrics}",
        missing.join("\n  ")
    );

    let devices = status["devices"].as_array().expect("/status devices");
    let devices: Vec<u64> = devices.iter().map(|d| d["ordinal"].as_u64().expect("ordinal")).collect();
    assert!(!devices.is_empty(), "a CUDA daemon with no device: {status}");
    let value = |series: &str| {
        let v = metrics.lines().find_map(|l| l.strip_prefix(series))?;
        Some(v.trim().parse::<f64>().unwrap_or_else(|e| panic!("{series}{v}: {e}")))
    };
    let mut proved = 0.0;
    for f in GPU_ONLY.iter().filter(|f| f.starts_with("cuzk_gpu_")) {
        for d in &devices {
            let series = format!("{f}{{device=\"{d}\"}} ");
            let v = value(&series).unwrap_or_else(|| panic!("no {series:?} in /metrics:\n{metrics}"));
            if *f == "cuzk_gpu_partitions_proved" {
                proved += v;
            }
        }
    }
    // Every partition of the four proofs ran on a device: the CUDA backend has no CPU fallback.
    assert!(proved >= KINDS.len() as f64, "{proved} partitions proved on the devices");
    assert_every_kind(&metrics, &["cuzk_partition_device_wait_seconds"]);
}
