#!/usr/bin/env python3
"""DCTCP against ns-3 3.37's TcpDctcp with step ECN marking (docs/validation.md, "DCTCP against ns-3").

100 Mbit/s, 10 ms RTT (BDP 83 packets), 500-packet buffer, marking at K = 20 packets (cclab: drop-tail
`mark_threshold`; ns-3: RED with MinTh = MaxTh = K on the instantaneous queue, ECN on), transport matched
as in compare.py with ECN on, starts uniform in [0, 0.1] s, 10 s measured over 2-10 s, seeds 1..N in
each simulator. Prints per flow count the mean over seeds (± 95 % CI half-width) of the mean queueing
delay, the aggregate goodput and Jain's index. Not part of the test command.

    .venv/bin/python validation/dctcp_ns3.py [--seeds 5] [--flows 2,10]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import cclab
from cclab.stats import spread

HERE = Path(__file__).resolve().parent
K, BUFFER, RTT_MS = 20, 500, 10


def ns3(binary: str, n: int, seed: int) -> dict:
    out = subprocess.run([binary, "--cc=TcpDctcp", "--rate=100Mbps", f"--rtts={','.join([str(RTT_MS)] * n)}",
                          f"--buffer={BUFFER}", f"--markK={K}", "--duration=10", "--measureStart=2",
                          "--startSpread=0.1", f"--seed={seed}", "--mss=1448", "--initCwnd=10", "--delAck=1",
                          "--minRto=200"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"delay_ms": 1e3 * r["mean_sojourn_s"], "goodput": sum(f["goodput_bps"] for f in r["flows"]) / 1e6,
            "jain": r["jain"]}


def ours(n: int, seed: int) -> dict:
    sc = {"name": "dctcp-vs-ns3", "duration": "10s", "seed": seed, "measure": ["2s", "10s"],
          "transport": {"profile": "paper", "mss": "1448B", "initial_cwnd": 10, "delayed_ack": 1, "min_rto": "200ms", "sack": True,
                        "ecn": True},
          "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": BUFFER, "queue": "droptail",
                                                          "params": {"mark_threshold": K}}},
          "flows": [{"cc": "dctcp", "rtt": f"{RTT_MS}ms", "count": n, "start": ["0s", "0.1s"]}]}
    s = cclab.run(sc, progress=False, plots=False).summary
    return {"delay_ms": 1e3 * s["links"][0]["mean_queue_delay_s"], "goodput": s["total"]["goodput_bps"] / 1e6,
            "jain": s["jain"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--flows", default="2,10")
    a = ap.parse_args()
    binary = subprocess.run([str(HERE / "build_ns3.sh")], check=True, capture_output=True,
                            text=True).stdout.strip().splitlines()[-1]
    print("| flows | mean queueing delay, cclab (ms) | ns-3 (ms) | goodput, cclab (Mbit/s) | ns-3 | Jain, cclab | ns-3 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in map(int, a.flows.split(",")):
        c = [ours(n, s) for s in range(1, a.seeds + 1)]
        x = [ns3(binary, n, s) for s in range(1, a.seeds + 1)]
        cells = []
        for k, fmt in (("delay_ms", "{:.2f}"), ("goodput", "{:.1f}"), ("jain", "{:.3f}")):
            for rows in (c, x):
                m, _, _, h = spread([r[k] for r in rows])
                cells.append(f"{fmt.format(m)} ± {fmt.format(h)}")
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
