#!/usr/bin/env python3
"""SQRT's default α/β, checked where no reproduction experiment judges it.

    .venv/bin/python validation/sqrt_decision.py [--seeds 10]

The paper gives IIAD α/β = 1.5 from its timeout-corrected TCP match (§III.B) and no values for SQRT; the
argument holds for every k + l = 1 member, so SQRT's default is α/β = 1.5 too (α 1, β ⅔:
docs/algorithms/binomial.md, DECISION 6). B1 judges the TCP/SQRT ratio on its own dumbbell (3 Mbit/s,
50 ms, 1 + 1 flows), so the decision must not be tuned there. This script measures the same ratio on a
dumbbell the suite does not use: 10 Mbit/s, 80 ms, two NewReno and two SQRT flows, two reverse NewReno
flows, BDP buffer, RED and drop-tail, 150 s (window 30-150 s), 1000-byte packets, for α/β = 2 (α 1, β ½,
the default until round 2) and α/β = 1.5 reached through α (0.75, β ½) or through β (α 1, β ⅔). Prints
the TCP/SQRT goodput ratio, mean ± 95 % CI over seeds.
"""
from __future__ import annotations

import argparse
import statistics

import cclab
from cclab.stats import spread


def scenario(seed: int, alpha: float, beta: float, queue: str) -> dict:
    pair = {"rtt": "80ms", "count": 2, "start": ["0s", "2s"]}
    return {"name": "sqrt-decision", "duration": "150s", "seed": seed, "measure": ["30s", "150s"],
            "packet_size": "1000B",
            "transport": {"profile": "paper", "mss": "960B", "initial_cwnd": 10, "delayed_ack": 1, "min_rto": "200ms", "sack": True},
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": "BDP", "queue": queue}},
            "flows": [{"cc": "newreno", **pair},
                      {"cc": "sqrt", "params": {"alpha": alpha, "beta": beta}, **pair},
                      {"cc": "newreno", "reverse": True, **pair}]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    a = ap.parse_args()
    for queue in ("red", "droptail"):
        for alpha, beta in [(1.0, 0.5), (0.75, 0.5), (1.0, 2 / 3)]:
            ratios = []
            for seed in range(1, a.seeds + 1):
                s = cclab.run(scenario(seed, alpha, beta, queue), progress=False, plots=False).summary
                tcp = sum(f["goodput_bps"] for f in s["flows"][:2])
                ratios.append(tcp / sum(f["goodput_bps"] for f in s["flows"][2:4]))
            m, _, n, h = spread(ratios)
            print(f"{queue:8s} alpha {alpha:.2f} beta {beta:.3f} (alpha/beta {alpha / beta:.2f}): "
                  f"TCP/SQRT {m:.3f} ± {h:.3f} over {n} seeds (median {statistics.median(ratios):.3f})", flush=True)


if __name__ == "__main__":
    main()
