#!/usr/bin/env python3
"""Cross-check cclab's simulator against ns-3 3.37 on identical dumbbells (docs/experiments.md, "Cross-checks").

Runs both simulators on three dumbbells -- 2 flows at the same RTT; 4 flows at 40/160 ms; 10 flows at
100 ms -- all on 100 Mbit/s with a BDP drop-tail buffer, matched MSS (1448 B + 52 B headers), initial
window 10, delayed-ACK count 1, min RTO 200 ms, SACK on; and prints per-flow-group goodput and Jain's
index side by side. Not part of the test command (it needs ns-3 and takes minutes).

    .venv/bin/python validation/compare.py [--cc newreno,cubic,hybla:rtt0=0.05] [--duration 60] [--start-spread 1]
        [--out validation/out] [--ns3-cache validation/out/ns3-cache]

A cclab name may carry parameters for cclab's side only: `hybla:rtt0=0.05` (ns-3 runs its defaults).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import cclab

HERE = Path(__file__).resolve().parent

# cclab name -> ns-3 TypeId
NS3_NAMES = {
    "newreno": "TcpNewReno",
    "cubic": "TcpCubic",
    "vegas": "TcpVegas",
    "highspeed": "TcpHighSpeed",
    "scalable": "TcpScalable",
    "bic": "TcpBic",
    "hybla": "TcpHybla",
    "westwood": "TcpWestwood",
    "veno": "TcpVeno",
    "illinois": "TcpIllinois",
    "htcp": "TcpHtcp",
    "ledbat": "TcpLedbat",
    "yeah": "TcpYeah",
    "lp": "TcpLp",
    "bbr": "TcpBbr",
}

DUMBBELLS = {
    "2x40ms": [40, 40],
    "40/160ms": [40, 40, 160, 160],
    "10x100ms": [100] * 10,
}


def ns3_binary() -> str:
    out = subprocess.run([str(HERE / "build_ns3.sh")], check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def run_ns3(binary: str, cc: str, rtts: list[int], duration: float, measure_start: float, seed: int,
            spread: float, cache: Path | None = None) -> dict:
    """One ns-3 run; with `cache`, its JSON is kept in a file named by the arguments and reused (an ns-3
    run takes minutes, cclab's seconds, so a table can be redone after a cclab change without them)."""
    cc = split_cc(cc)[0]  # cclab parameters ("lp:ns3_slow_start=true") do not change the ns-3 run
    key = f"{NS3_NAMES[cc]}_{'-'.join(str(r) for r in rtts)}_d{duration:g}_m{measure_start:g}_s{seed}_x{spread:g}"
    if cache is not None and (cache / f"{key}.json").exists():
        return json.loads((cache / f"{key}.json").read_text())
    cmd = [
        binary,
        f"--cc={NS3_NAMES[cc]}",
        f"--rtts={','.join(str(r) for r in rtts)}",
        f"--duration={duration}",
        f"--measureStart={measure_start}",
        f"--seed={seed}",
        f"--startSpread={spread}",
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    line = out.stdout.strip().splitlines()[-1]
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / f"{key}.json").write_text(line)
    return json.loads(line)


def split_cc(spec: str) -> tuple[str, dict]:
    """'hybla:rtt0=0.05' -> ('hybla', {'rtt0': 0.05}): cclab parameters for one comparison (ns-3 runs
    with its own defaults whatever they are, e.g. to compare at ns-3's Hybla RTT0 of 50 ms)."""
    name, *kvs = spec.split(":")
    params = {}
    for kv in kvs:
        k, v = kv.split("=", 1)
        params[k] = v.lower() == "true" if v.lower() in ("true", "false") else float(v)
    return name, params


def run_cclab(cc: str, rtts: list[int], duration: float, measure_start: float, seed: int, spread: float) -> dict:
    cc, params = split_cc(cc)
    groups: dict[int, int] = {}
    for r in rtts:
        groups[r] = groups.get(r, 0) + 1
    scenario = {
        "name": f"ns3-check-{cc}",
        "duration": duration,
        "seed": seed,
        "measure": [measure_start, duration],
        "transport": {"profile": "paper", "mss": "1448B", "initial_cwnd": 10, "delayed_ack": 1, "min_rto": "200ms", "sack": True},
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": "BDP", "queue": "droptail"}},
        "flows": [{"cc": cc, "count": n, "rtt": f"{r}ms", **({"params": params} if params else {}),
                   **({"start": ["0s", f"{spread}s"]} if spread > 0 else {})}
                  for r, n in groups.items()],
    }
    return cclab.run(scenario, progress=False).summary


def group_goodput(flows: list[dict]) -> dict[float, float]:
    """Mean goodput per RTT group, Mbit/s."""
    acc: dict[float, list[float]] = {}
    for f in flows:
        acc.setdefault(round(f["rtt"], 4), []).append(f["goodput_bps"] / 1e6)
    return {k: sum(v) / len(v) for k, v in sorted(acc.items())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", default=",".join(NS3_NAMES))
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--measure-start", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--start-spread", type=float, default=0.0,
                    help="flows start uniformly in [0, S] s (both simulators; different random draws)")
    ap.add_argument("--ns3-cache", type=Path, default=None,
                    help="keep each ns-3 run's JSON in this folder and reuse it when the arguments match")
    ap.add_argument("--dumbbells", default=",".join(DUMBBELLS), help=f"subset of {','.join(DUMBBELLS)}")
    args = ap.parse_args()
    binary = ns3_binary()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'cc':16} {'dumbbell':10} {'group':>6} {'ns-3 Mb/s':>10} {'cclab Mb/s':>11} {'diff':>7} "
          f"{'Jain ns-3':>9} {'Jain cclab':>10}")
    for cc in args.cc.split(","):
        for label in args.dumbbells.split(","):
            rtts = DUMBBELLS[label]
            ns = run_ns3(binary, split_cc(cc)[0], rtts, args.duration, args.measure_start, args.seed, args.start_spread,
                         args.ns3_cache)
            cl = run_cclab(cc, rtts, args.duration, args.measure_start, args.seed, args.start_spread)
            g_ns, g_cl = group_goodput(ns["flows"]), group_goodput(cl["flows"])
            for rtt in g_ns:
                a, b = g_ns[rtt], g_cl.get(rtt, float("nan"))
                diff = (b - a) / a if a else float("nan")
                print(f"{cc:16} {label:10} {rtt * 1e3:5.0f}ms {a:10.2f} {b:11.2f} {diff:+7.1%} "
                      f"{ns['jain']:9.3f} {cl['jain']:10.3f}")
                rows.append({"cc": cc, "dumbbell": label, "rtt": rtt, "ns3_mbps": a, "cclab_mbps": b,
                             "diff": diff, "jain_ns3": ns["jain"], "jain_cclab": cl["jain"]})
    (args.out / "compare.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
