#!/usr/bin/env python3
"""Our AQMs against ns-3 3.37's on the same dumbbells: `codel` vs CoDelQueueDisc, `pie` vs PieQueueDisc, `fq_codel` vs FqCoDelQueueDisc
(docs/validation.md, sections "CoDel" and "PIE").

100 Mbit/s, 1000-packet buffer, NewReno (SACK, initial window 10, ACK every packet, min RTO 200 ms),
the RFC defaults on both sides (CoDel: target 5 ms, interval 100 ms; PIE: reference 15 ms, update
15 ms), starts uniform in [0, 2] s, 40 s measured over 10-40 s,
seeds 1-5 in each simulator (the two simulators' random starts differ: compare distributions, not runs).
Prints, per dumbbell, the mean over seeds with its 95 % CI of the mean sojourn time, the aggregate goodput
and the queue's drops in the window (10-40 s) in each simulator. Not part of the test command (ns-3 takes ~20 s a run).

    .venv/bin/python validation/aqm_ns3.py [--seeds 5] [--duration 40] [--queue codel|pie|fq_codel]
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
DUMBBELLS = {"5 x 50 ms": [50] * 5, "20 x 50 ms": [50] * 20, "2 x 40 + 2 x 160 ms": [40, 40, 160, 160]}


def ns3(binary: str, rtts: list[int], queue: str, seed: int, duration: float) -> dict:
    out = subprocess.run([binary, "--cc=TcpNewReno", "--rate=100Mbps", f"--rtts={','.join(map(str, rtts))}",
                          f"--queue={queue}", "--buffer=1000", f"--duration={duration}", "--measureStart=10",
                          "--startSpread=2", f"--seed={seed}", "--mss=1448", "--initCwnd=10", "--delAck=1",
                          "--minRto=200"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"sojourn_ms": 1e3 * r["mean_sojourn_s"], "goodput": sum(f["goodput_bps"] for f in r["flows"]) / 1e6,
            "drops": r["qdisc_window_drops"]}


def ours(rtts: list[int], queue: str, seed: int, duration: float) -> dict:
    flows = [{"cc": "newreno", "rtt": f"{r}ms", "start": ["0s", "2s"]} for r in rtts]
    sc = {"name": "codel-vs-ns3", "duration": f"{duration}s", "seed": seed, "measure": ["10s", f"{duration}s"],
          "transport": {"profile": "paper", "mss": "1448B", "initial_cwnd": 10, "delayed_ack": 1, "min_rto": "200ms", "sack": True},
          "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": 1000, "queue": queue}},
          "flows": flows}
    s = cclab.run(sc, progress=False, plots=False).summary
    return {"sojourn_ms": 1e3 * s["links"][0]["mean_queue_delay_s"], "goodput": s["total"]["goodput_bps"] / 1e6,
            "drops": s["links"][0]["drops"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--queue", default="codel")
    a = ap.parse_args()
    binary = subprocess.run([str(HERE / "build_ns3.sh")], check=True, capture_output=True,
                            text=True).stdout.strip().splitlines()[-1]
    print(f"| dumbbell ({a.queue}) | mean sojourn, cclab (ms) | ns-3 (ms) | goodput, cclab (Mbit/s) | ns-3 | "
          "queue drops, cclab | ns-3 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, rtts in DUMBBELLS.items():
        c = [ours(rtts, a.queue, s, a.duration) for s in range(1, a.seeds + 1)]
        n = [ns3(binary, rtts, a.queue, s, a.duration) for s in range(1, a.seeds + 1)]

        def cell(rows: list[dict], k: str, fmt: str = "{:.2f}") -> str:
            m, _, _, h = spread([r[k] for r in rows])
            return f"{fmt.format(m)} ± {fmt.format(h)}"

        print(f"| {name} | {cell(c, 'sojourn_ms')} | {cell(n, 'sojourn_ms')} | {cell(c, 'goodput', '{:.1f}')} "
              f"| {cell(n, 'goodput', '{:.1f}')} | {cell(c, 'drops', '{:.0f}')} | {cell(n, 'drops', '{:.0f}')} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
