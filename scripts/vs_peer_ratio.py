#!/usr/bin/env python3
"""The ratio line of `bench-h200.sh vs-peer`: the peer's one proof (filecoin-proofs + SupraSeal,
bench-peer.sh's log) against cuzk's run on the same inputs and parameters (bench-throughput.sh's
log). A peer that did not finish gives no ratio, only the bound the run supports.

    vs_peer_ratio.py PEER_LOG OURS_LOG
"""
import json
import re
import sys


def find(pattern, text, cast=float):
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else None


peer_log, ours_log = open(sys.argv[1]).read(), open(sys.argv[2]).read()
exit_code = find(r"exit (\d+) after", peer_log, int)
peer_wall = find(r"exit \d+ after ([0-9.]+) s", peer_log)
peer_ok = False
for line in peer_log.splitlines():
    if line.startswith("{"):
        try:
            peer_ok = json.loads(line).get("result", "").startswith("ok")
        except ValueError:
            pass
first = find(r"first proof after ([0-9.]+) s", ours_log)
steady = find(r"steady state ([0-9.]+) s/proof", ours_log)
verified = re.search(r"proofs COMPLETED \(verified by the daemon\): (\d+) of (\d+)", ours_log)
ours = f"cuzk: first proof {first} s, steady {steady} s/proof" + (f", {verified.group(1)} of {verified.group(2)} verified" if verified else "")
if peer_ok and peer_wall and first:
    print(f"vs peer: peer one proof {peer_wall:.1f} s (verified by seal_commit_phase2); {ours}; "
          f"ratio {peer_wall / first:.2f}x (one proof)" + (f", {peer_wall / steady:.2f}x (throughput, one process per proof)" if steady else ""))
else:
    why = "OOM-killed (see the dmesg lines above)" if "Out of memory: Killed process" in peer_log else f"exit {exit_code}"
    bound = f"; the peer needs more than {peer_wall:.1f} s, so the ratio is > {peer_wall / first:.1f}x if it could finish at all" if peer_wall and first else ""
    print(f"vs peer: the peer did not finish ({why} after {peer_wall} s); {ours}: no ratio on this host{bound}")
