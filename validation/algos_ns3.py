#!/usr/bin/env python3
"""Newer algorithms against ns-3 3.37's implementations over several seeds (docs/validation.md, "Veno and
Illinois against ns-3"): the three dumbbells of compare.py (2 flows at 50 ms, 2 at 40 ms + 2 at 160 ms,
10 at 100 ms; 100 Mbit/s, BDP drop-tail buffer, matched transport), starts uniform in [0, 1] s, 60 s
measured over 10-60 s, seeds 1..N in each simulator (their random starts differ: distributions are
compared, not runs). Prints per dumbbell and RTT group the mean goodput with its 95 % CI over seeds, and
the aggregate and Jain's index over all flows. Not part of the test command (an ns-3 run takes about a minute).

    .venv/bin/python validation/algos_ns3.py [--cc veno,illinois] [--seeds 5]
"""
from __future__ import annotations

import argparse
import sys

from cclab.stats import spread

# compare.py is this script's neighbour (the script's folder is first on sys.path)
from compare import HERE, group_goodput, ns3_binary, run_cclab, run_ns3

DUMBBELLS = {"2 x 50 ms": [50, 50], "2 x 40 + 2 x 160 ms": [40, 40, 160, 160], "10 x 100 ms": [100] * 10}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", default="veno,illinois")
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    binary = ns3_binary()
    cache = HERE / "out" / "ns3-cache"
    print("| algorithm | dumbbell | group | cclab (Mbit/s) | ns-3 (Mbit/s) | difference |")
    print("| --- | --- | --- | --- | --- | --- |")
    for cc in a.cc.split(","):
        for name, rtts in DUMBBELLS.items():
            ours = [run_cclab(cc, rtts, 60.0, 10.0, s, 1.0) for s in range(1, a.seeds + 1)]
            ns = [run_ns3(binary, cc, rtts, 60.0, 10.0, s, 1.0, cache) for s in range(1, a.seeds + 1)]
            go = [group_goodput(r["flows"]) for r in ours]
            gn = [group_goodput(r["flows"]) for r in ns]
            rows = [(f"{k * 1e3:g} ms", [g[k] for g in go], [g[k] for g in gn]) for k in go[0]]
            rows.append(("aggregate", [sum(f["goodput_bps"] for f in r["flows"]) / 1e6 for r in ours],
                         [sum(f["goodput_bps"] for f in r["flows"]) / 1e6 for r in ns]))
            rows.append(("Jain's index", [r["jain"] for r in ours], [r["jain"] for r in ns]))
            for label, x, y in rows:
                (mx, _, _, hx), (my, _, _, hy) = spread(x), spread(y)
                print(f"| {cc} | {name} | {label} | {mx:.2f} ± {hx:.2f} | {my:.2f} ± {hy:.2f} | {mx / my - 1:+.1%} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
