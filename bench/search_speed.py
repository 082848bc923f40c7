#!/usr/bin/env python3
"""How fast `cclab search` evaluates candidates: 1 000 evaluations of a 30 s, 50 Mbit/s two-flow scenario (CUBIC
against NewReno, 40 ms, one-BDP drop-tail buffer); the adversary sets the bottleneck's random loss and the
second flow's RTT, the objective is the goodput ratio. Random search (its candidates do not depend on results, so
the batches are as large as the pool wants), one seed per candidate, through the same code path as `cclab search`
(cclab.search.run: the shared executor's local pool, run folders, evaluations.jsonl), without the best
candidate's figures. The target (docs/search.md): under 5 minutes on 2 cores.

It also times the parts of one evaluation in this process (the simulation in Rust, the summary and tables in
Python, writing summary.json, writing the full run folder that `cclab run` writes) so that a slow result says
where the time goes.

    .venv/bin/python bench/search_speed.py [--evaluations 1000] [--workers 2] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

SCENARIO = """name = "search-bench"
duration = "30s"
seed = 1
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "50Mbps"
buffer = "BDP"
queue = "droptail"
[[flows]]
cc = "cubic"
rtt = "40ms"
[[flows]]
cc = "newreno"
rtt = "40ms"
"""

SEARCH = """scenario = "scenario.toml"
[[adversary]]
kind = "loss"
loss = [0.0, 0.01]
[[adversary]]
kind = "delay"
delay = ["40ms", "160ms"]
key = "flows[1].rtt"
[objective]
metric = "flows[0].goodput_bps / flows[1].goodput_bps"
goal = "maximize"
[search]
method = "random"
evaluations = {n}
batch = 64
seed = 1
"""


def parts(scenario: Path, repeat: int = 5) -> dict[str, float]:
    """Median seconds of each part of one evaluation, in this process."""
    import statistics

    from cclab.runner import run
    from cclab.scenario import Scenario

    sc = Scenario.load(scenario)
    t: dict[str, list[float]] = {"run (simulation + summary + tables)": [], "simulation loop (sim.wall_s)": [],
                                 "write summary.json": [], "write the full run folder (no plots)": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            t0 = time.perf_counter()
            res = run(sc, None, progress=False)
            t1 = time.perf_counter()
            (Path(tmp) / "summary.json").write_text(json.dumps(res.summary, indent=1, sort_keys=True, default=str))
            t2 = time.perf_counter()
            res.to_dir(Path(tmp) / f"r{i}", plots=False)
            t3 = time.perf_counter()
            t["run (simulation + summary + tables)"].append(t1 - t0)
            t["simulation loop (sim.wall_s)"].append(float(res.summary["sim"]["wall_s"]))
            t["write summary.json"].append(t2 - t1)
            t["write the full run folder (no plots)"].append(t3 - t2)
    return {k: statistics.median(v) for k, v in t.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evaluations", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="results folder (default: a temporary one, removed)")
    ap.add_argument("--target-s", type=float, default=300.0)
    a = ap.parse_args()

    from cclab import search

    tmp = Path(tempfile.mkdtemp(prefix="cclab-search-bench-"))
    try:
        (tmp / "scenario.toml").write_text(SCENARIO)
        (tmp / "search.toml").write_text(SEARCH.format(n=a.evaluations))
        out = a.out or tmp / "out"
        if out.exists():
            shutil.rmtree(out)
        print(f"one evaluation, in this process ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}):")
        for k, v in parts(tmp / "scenario.toml").items():
            print(f"  {k:40s} {v * 1e3:8.1f} ms")
        t0 = time.monotonic()
        r = search.run(tmp / "search.toml", out, workers=a.workers, figures=False)
        wall = time.monotonic() - t0
        n = sum(len(v) for v in r["evaluations"].values())
        ok = wall < a.target_s and n >= a.evaluations
        print(f"{n} evaluations (+{len(r['search'].seeds)} baseline run) on {a.workers} workers in {wall:.1f} s: "
              f"{n / wall:.2f} evaluations/s, {wall / n * a.workers * 1e3:.0f} ms of a worker each; load after "
              f"{os.getloadavg()[0]:.2f}")
        print(f"target: {a.evaluations} in < {a.target_s:.0f} s: {'MET' if ok else 'NOT MET'}")
        return 0 if ok else 1
    finally:
        if a.out is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
