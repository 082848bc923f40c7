"""Peak memory of `cclab run` with and without `--trace-packets` (docs/performance.md, "Packet traces").

Each run is its own process (the `cclab` CLI, with plots, as a user runs it); its peak resident set size is
read from ``getrusage(RUSAGE_CHILDREN)`` after it exits (one child per measurement, so ``ru_maxrss`` is that
child's). The scenario: two NewReno flows (40 and 80 ms) on a 100 Mbit/s dumbbell with a BDP buffer, 30 s.

    .venv/bin/python bench/trace_memory.py [--duration 30s] [--repeat 1]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

SCENARIO = """
name = "trace_memory"
duration = "{duration}"
seed = 1
measure = ["5s", "{duration}"]
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "100Mbps"
buffer = "BDP"
[[flows]]
cc = "newreno"
rtt = "40ms"
[[flows]]
cc = "newreno"
rtt = "80ms"
"""


def measure(args: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of one child process running ``args``."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)\n")
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True).stdout
    kb, wall = out.split()
    return int(kb) / 1024, float(wall)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    cclab = str(Path(sys.executable).with_name("cclab"))
    with tempfile.TemporaryDirectory() as d:
        sc = Path(d) / "s.toml"
        sc.write_text(SCENARIO.format(duration=a.duration))
        rows = {}
        for name, extra in (("untraced", []), ("traced", ["--trace-packets"])):
            best = min(measure([cclab, "run", str(sc), "--out", f"{d}/{name}", "-q", *extra])
                       for _ in range(a.repeat))
            rows[name] = best
            print(f"{name:9} peak RSS {best[0]:7.1f} MB  wall {best[1]:6.2f} s", flush=True)
        tr = Path(d) / "traced" / "trace.parquet"
        t0 = time.perf_counter()
        n = len(pd.read_parquet(tr))
        print(f"trace: {n:,} records, trace.parquet {tr.stat().st_size / 1e6:.1f} MB "
              f"(read back in {time.perf_counter() - t0:.2f} s)")
        print(f"traced / untraced peak RSS: {rows['traced'][0] / rows['untraced'][0]:.2f}x")


if __name__ == "__main__":
    main()
