"""The driver's memory and throughput of a sweep on a local Dask cluster (docs/sweep.md, "Driver memory and
throughput"): N runs of a tiny scenario (1 flow, 0.2 s simulated) through ``cclab cluster local --workers 2``
(a LocalCluster, processes=True), the sweep's driver in this process. Prints the driver's peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``) before and after, the wall time and runs/s, and the runs' total bytes.

    python bench/cluster_sweep.py 1000 [--runtime 0.2s] [--workers 2]

Each run's files pass through the driver (the workers share no filesystem with it); at most a window of runs
(4 per worker thread) is in flight, so the peak should not grow with N but with a run's size."""
from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWEEP = """seeds = {n}
[base]
name = "tiny"
duration = "{dur}"
seed = 1
[base.topology]
kind = "dumbbell"
[base.topology.bottleneck]
rate = "10Mbps"
buffer = "BDP"
[[base.flows]]
cc = "newreno"
rtt = "40ms"
"""


# Loaded by the cluster's workers with --cached-sim: cclab.runner.run simulates once per worker process.
CACHED = """
import cclab.runner as _r
_orig, _memo = _r.run, []

def run(scenario, *a, **k):
    if not _memo:
        _memo.append(_orig(scenario, *a, **k))
    return _memo[0]

_r.run = run
"""


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", type=int)
    ap.add_argument("--runtime", default="0.2s", help="simulated time of each run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--local", action="store_true", help="the local process pool instead of Dask")
    ap.add_argument("--cached-sim", action="store_true",
                    help="each worker simulates once and hands that result to every later run (the run's files are "
                         "still written, packed, sent and written by the driver): the driver's costs at many runs")
    a = ap.parse_args()

    from cclab import sweep as sw

    base = peak_mb()
    cluster = None
    with tempfile.TemporaryDirectory(prefix="cclab-bench-") as tmp:
        f = Path(tmp) / "s.toml"
        f.write_text(SWEEP.format(n=a.runs, dur=a.runtime))
        address = None
        env = dict(os.environ)
        if a.cached_sim:
            (Path(tmp) / "hook").mkdir()
            (Path(tmp) / "hook" / "sitecustomize.py").write_text(CACHED)
            env["PYTHONPATH"] = os.pathsep.join([str(Path(tmp) / "hook"), env.get("PYTHONPATH", "")])
        if not a.local:
            cluster = subprocess.Popen([sys.executable, "-m", "cclab.cli", "cluster", "local", "--workers",
                                        str(a.workers), "--port", "0"], stdout=subprocess.PIPE, text=True,
                                       start_new_session=True, env=env)
            assert cluster.stdout is not None
            m = re.search(r"tcp://[\d.]+:\d+", cluster.stdout.readline())
            assert m, "cclab cluster local did not start"
            address = m.group(0)
        try:
            stamps: list[float] = []
            t0 = time.perf_counter()
            t = sw.run(f, Path(tmp) / "out", workers=a.workers, scheduler=address,
                       on_done=lambda done, total: stamps.append(time.perf_counter()))
            wall = time.perf_counter() - t0
            ran = time.perf_counter()
            size = sum(p.stat().st_size for p in (Path(tmp) / "out" / "runs").rglob("*") if p.is_file())
        finally:
            if cluster is not None:
                os.killpg(cluster.pid, signal.SIGINT)
                cluster.wait(timeout=60)
    runs_s = len(stamps) - 1
    last = stamps[-1] - t0
    print(f"{'local pool' if a.local else 'Dask LocalCluster'} x{a.workers}: {a.runs} runs of {a.runtime}"
          f"{' (simulated once per worker)' if a.cached_sim else ''}, "
          f"{len(t)} in the table; runs done in {last:.1f} s ({runs_s / last:.1f} runs/s), whole sweep "
          f"{wall:.1f} s (table {ran - t0 - last:.1f} s); run files {size / 1e6:.1f} MB "
          f"({size / max(1, a.runs) / 1e3:.0f} kB/run); driver peak RSS {peak_mb():.0f} MB "
          f"(after imports {base:.0f} MB)")


if __name__ == "__main__":
    main()
