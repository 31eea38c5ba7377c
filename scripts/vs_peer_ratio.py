#!/usr/bin/env python3
"""The ratio line of `bench-h200.sh vs-peer`: the peer (filecoin-proofs + SupraSeal,
bench-peer.sh's log) against cuzk's run on the same inputs and parameters (bench-throughput.sh's
log).

The ratio compares one proof with parameters already loaded on both sides: the peer's run 2
(its process proves twice; run 1 read the parameters from disk) against cuzk's first proof on a
preloaded daemon. The peer's run 1, load included, is reported beside it. A log of one run only
(older logs, or RUNS=1) gives the load-included ratio and says so. A peer that did not finish,
or whose proof failed, gives no ratio, only the bound the run supports.

    vs_peer_ratio.py PEER_LOG OURS_LOG
"""
import json
import re
import sys


def find(pattern, text, cast=float):
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else None


def peer_reports(log):
    """The peer's JSON lines, by run number (a log of the one-run peer has no "run": 1)."""
    runs = {}
    for line in log.splitlines():
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "result" in r:
                runs[r.get("run", 1)] = r
    return runs


def ok(r):
    return r is not None and r.get("result", "").startswith("ok")


def verifier(r):
    return r["result"].split("verified by ", 1)[-1]


peer_log, ours_log = open(sys.argv[1]).read(), open(sys.argv[2]).read()
exit_code = find(r"exit (\d+) after", peer_log, int)
process_wall = find(r"exit \d+ after ([0-9.]+) s", peer_log)
runs = peer_reports(peer_log)
first_run, second_run = runs.get(1), runs.get(2)
first = find(r"first proof after ([0-9.]+) s", ours_log)
steady = find(r"steady state ([0-9.]+) s/proof", ours_log)
verified = re.search(r"proofs COMPLETED \(verified by the daemon\): (\d+) of (\d+)", ours_log)
ours = f"cuzk: first proof {first} s (preloaded daemon), steady {steady} s/proof" + (
    f", {verified.group(1)} of {verified.group(2)} verified" if verified else "")
throughput = lambda t: f", {t / steady:.2f}x against cuzk's steady state" if steady else ""

if ok(second_run) and first:
    loaded, cold = second_run["wall_s"], first_run["wall_s"] if ok(first_run) else None
    beside = f"its run 1, parameter load included, {cold:.1f} s ({cold / first:.2f}x)" if cold else \
        f"its run 1 did not succeed ({(first_run or {}).get('error') or 'no report'})"
    print(f"vs peer: peer {loaded:.1f} s for one proof with parameters loaded (run 2, verified by "
          f"{verifier(second_run)}); {beside}; {ours}; ratio {loaded / first:.2f}x (one proof, parameters "
          f"loaded on both sides){throughput(loaded)}")
elif ok(first_run) and first:
    cold = first_run.get("wall_s") or process_wall
    why = "a one-run log" if second_run is None and first_run.get("runs", 1) == 1 else \
        f"run 2 did not succeed: {(second_run or {}).get('error') or f'no report, exit {exit_code}'}"
    print(f"vs peer: peer one proof {cold:.1f} s, parameter load included ({why}; verified by "
          f"{verifier(first_run)}); {ours}; ratio {cold / first:.2f}x (one proof, the peer's parameter load "
          f"included, so above the loaded ratio){throughput(cold)}")
else:
    failed = next((r for r in runs.values() if not ok(r)), None)
    if failed is not None:
        why = f"run {failed.get('run', 1)} failed: {(failed.get('error') or '')[:300]}"
    elif "Out of memory: Killed process" in peer_log:
        why = "OOM-killed (see the dmesg lines above)"
    elif exit_code == 124:
        # Stopped at its deadline: a hung prover and a slow one look the same from here, so
        # the deadline is no bound worth printing.
        why = "stopped at its deadline, exit 124, with no proof"
    else:
        why = f"exit {exit_code}"
    oom = "Out of memory: Killed process" in peer_log
    bound = f"; it ran {process_wall:.1f} s before the kill, so on a host where it fits the ratio would be " \
        f"> {process_wall / first:.1f}x" if oom and process_wall and first and failed is None else ""
    print(f"vs peer: no verified proof from the peer ({why}; the process ran {process_wall} s); {ours}: "
          f"no ratio on this host{bound}")
