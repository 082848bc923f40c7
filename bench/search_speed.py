#!/usr/bin/env python3
"""How fast `cclab search` evaluates candidates: 1 000 evaluations of a 30 s, 50 Mbit/s two-flow scenario (CUBIC
against NewReno, 40 ms, one-BDP drop-tail buffer); the adversary sets the bottleneck's random loss and the
second flow's RTT, the objective is the goodput ratio. Random search (its candidates do not depend on results, so
the batches are as large as the pool wants), one seed per candidate, through the same code path as `cclab search`
(cclab.search.run: the shared executor's local pool, run folders, evaluations.jsonl), without the best
candidate's figures. The target (docs/search.md): under 5 minutes on 2 cores.

With ``--executors`` it instead compares where the candidates run (docs/search.md, "Speed"): the same small search
on each executor named (``local:N``, the local pool of N processes; ``dask:N``, a ``cclab cluster local --workers
N`` started for each repetition, its start-up and one warm-up search timed apart), ``--repeats`` rounds in turn so
that a change of the machine's load falls on every executor alike. Per executor: the search's wall time; its runs'
phase (from the start to the last run; the search's tables and figure after it cost the same on every executor);
runs/s and the speed-up over the first executor in that phase; and the overhead per run: worker time in it
(workers × phase / runs) minus the simulation loop's own time (the mean ``sim.wall_s`` of the runs' summaries,
measured where they ran), i.e. what a run costs beyond simulating (its summary and tables in Python, the executor,
the driver, a worker idle while the baseline runs or at the end of a batch). On a loaded machine that wall-clock
overhead holds the waits for a CPU too, so it also counts CPU time: the search's processes' user + system seconds
per run in the runs' phase (the driver and its ended children; a cluster's processes from /proc), and that minus
the CPU of the same runs made one by one in this process (the CPU overhead: what the executor, the driver and the
workers' own Python cost per run, independent of the load); and, for Dask, the idle cluster's CPU over 3 s.

It also times the parts of one evaluation in this process (the simulation in Rust, the summary and tables in
Python, writing summary.json, writing the full run folder that `cclab run` writes) so that a slow result says
where the time goes.

    .venv/bin/python bench/search_speed.py [--evaluations 1000] [--workers 2] [--out DIR]
    .venv/bin/python bench/search_speed.py --executors local:1,local:2,dask:2 --evaluations 40 --batch 8 --repeats 5 [--duration 120s]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

SCENARIO = """name = "search-bench"
duration = "{duration}"
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
batch = {batch}
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


def _mean_ci(xs: list[float]) -> str:
    """"mean ± 95 % CI (min–max)": the CI from Student's t with n − 1 degrees of freedom."""
    from cclab.stats import ci_halfwidth

    m = statistics.fmean(xs)
    if len(xs) < 2:
        return f"{m:.2f}"
    h = ci_halfwidth(statistics.stdev(xs), len(xs))
    return f"{m:.2f} ± {h:.2f} ({min(xs):.2f}–{max(xs):.2f})"


def _cpu_self() -> float:
    """CPU seconds (user + system) of this process and of its children that have ended (the local pool's workers,
    forked per batch)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _cpu_tree(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and its live descendants, from /proc (a Dask cluster's
    scheduler, nannies and workers)."""
    stats: dict[int, tuple[int, float]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(d.name)] = (int(f[1]), (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"))
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, (ppid, _) in stats.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(stats[pid][1] for pid in tree if pid in stats)


def _cluster(workers: int) -> tuple[subprocess.Popen, str, float]:
    """``cclab cluster local --workers N`` on a free port: the process, its address, seconds until it answered."""
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "cclab.cli", "cluster", "local", "--workers", str(workers), "--port",
                          "0"], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stdout is not None
    m = re.search(r"tcp://[\d.]+:\d+", p.stdout.readline())
    if not m:
        _stop(p)
        raise SystemExit("cclab cluster local did not start")
    return p, m.group(0), time.monotonic() - t0


def _stop(p: subprocess.Popen) -> None:
    os.killpg(p.pid, signal.SIGINT)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def _one(search_file: Path, out: Path, kind: str, workers: int, candidates: int) -> dict[str, float]:
    """One search on one executor into the fresh folder ``out``: its wall time, runs and their simulation loops."""
    from cclab import search

    cluster, address, startup, warm, idle = None, None, math.nan, math.nan, math.nan
    if kind == "dask":
        cluster, address, startup = _cluster(workers)
    try:
        if address:  # the workers' first tasks import cclab: timed apart, as a cluster serves many searches
            t0 = time.monotonic()
            search.run(search_file.with_name("warmup.toml"), out.with_name(out.name + "-warmup"), workers=workers,
                       scheduler=address, figures=False)
            warm = time.monotonic() - t0
            assert cluster is not None
            c0, t0 = _cpu_tree(cluster.pid), time.monotonic()  # what the cluster costs doing nothing (heartbeats)
            time.sleep(3)
            idle = (_cpu_tree(cluster.pid) - c0) / (time.monotonic() - t0)
        load = os.getloadavg()[0]

        def cpu() -> float:
            return _cpu_self() + (_cpu_tree(cluster.pid) if cluster else 0.0)

        done: list[float] = []
        last: list[float] = []

        def on_run() -> None:  # called per candidate's run (not the baseline's): the phase ends with the last
            done.append(time.monotonic())
            if len(done) == candidates:
                last.extend((done[-1], cpu()))

        c0 = cpu()
        t0 = time.monotonic()
        search.run(search_file, out, workers=workers, scheduler=address, figures=False, on_run=on_run)
        wall = time.monotonic() - t0
    finally:
        if cluster is not None:
            _stop(cluster)
    sims = [json.loads(f.read_text())["sim"]["wall_s"] for f in (out / "runs").glob("*/summary.json")]
    # The runs' phase: from the start to the last candidate's run (reading the search file, the baseline run, the
    # candidates); after it the search writes its tables and convergence.png, the same on every executor.
    if len(sims) != candidates + 1 or not last:
        raise SystemExit(f"{kind}:{workers}: {len(sims)} runs finished, {len(done)} reported, expected {candidates} "
                         "and the baseline")
    return {"wall": wall, "runs": len(sims), "sim": statistics.fmean(sims), "load": load, "startup": startup,
            "warmup": warm, "phase": last[0] - t0, "cpu": last[1] - c0, "idle": idle}


def _compute_cpu(out: Path) -> float:
    """Mean CPU seconds of one of the search's runs in this process, without any executor: each run's scenario
    (its point.json) simulated and its summary written, as a worker does."""
    from cclab.runner import run

    cpu = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in sorted((out / "runs").glob("*/point.json")):
            sc = json.loads(f.read_text())["scenario"]
            t0 = time.process_time()
            res = run(sc, None, progress=False)
            (Path(tmp) / "summary.json").write_text(json.dumps(res.summary, indent=1, sort_keys=True, default=str))
            cpu.append(time.process_time() - t0)
    return statistics.fmean(cpu)


def compare(a: argparse.Namespace) -> int:
    """The same search on each of ``a.executors``, ``a.repeats`` rounds; prints a Markdown table."""
    execs = []
    for e in a.executors.split(","):
        m = re.fullmatch(r"(local|dask):(\d+)", e.strip())
        if not m:
            raise SystemExit(f"--executors: {e!r} is not local:N or dask:N")
        execs.append((m.group(1), int(m.group(2))))
    tmp = Path(tempfile.mkdtemp(prefix="cclab-search-exec-"))
    got: dict[tuple[str, int], list[dict[str, float]]] = {e: [] for e in execs}
    try:
        (tmp / "scenario.toml").write_text(SCENARIO.format(duration=a.duration))
        (tmp / "search.toml").write_text(SEARCH.format(n=a.evaluations, batch=a.batch))
        (tmp / "warmup.toml").write_text(SEARCH.format(n=2, batch=2).replace("seed = 1\n", "seed = 2\n"))
        print(f"{os.cpu_count()} CPUs; uptime at the start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        one = parts(tmp / "scenario.toml")
        from cclab import search  # the driver's first search imports what the others reuse: not timed

        search.run(tmp / "warmup.toml", tmp / "warmup-driver", workers=1, figures=False)
        for r in range(a.repeats):
            for kind, w in execs:
                x = _one(tmp / "search.toml", tmp / f"out-{kind}{w}-{r}", kind, w, a.evaluations)
                got[(kind, w)].append(x)
                print(f"round {r + 1} {kind}:{w}: {x['runs']} runs in {x['wall']:.2f} s, load {x['load']:.2f}"
                      + (f", cluster up in {x['startup']:.1f} s, warm-up search {x['warmup']:.1f} s"
                         if kind == "dask" else ""), flush=True)
        print(f"uptime at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        compute = _compute_cpu(tmp / f"out-{execs[0][0]}{execs[0][1]}-0")
        print(f"one run of the search, simulated and its summary written in this process: {compute * 1e3:.0f} ms of "
              "CPU (mean over its runs)")
        print("one evaluation in this process (median of 5, at the start): "
              + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in one.items()) + "\n")
        first = got[execs[0]]
        print("| executor | search wall s | runs' phase s | runs/s | speed-up (runs' phase) | overhead ms/run "
              "| sim loop ms/run | CPU ms/run | CPU overhead ms/run | CPU cores used | load (1 min) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for kind, w in execs:
            xs = got[(kind, w)]
            print(f"| {kind}:{w} | {_mean_ci([x['wall'] for x in xs])} | {_mean_ci([x['phase'] for x in xs])} "
                  f"| {_mean_ci([x['runs'] / x['phase'] for x in xs])} "
                  f"| {_mean_ci([f['phase'] / x['phase'] for f, x in zip(first, xs)])} "
                  f"| {_mean_ci([(w * x['phase'] / x['runs'] - x['sim']) * 1e3 for x in xs])} "
                  f"| {_mean_ci([x['sim'] * 1e3 for x in xs])} "
                  f"| {_mean_ci([x['cpu'] / x['runs'] * 1e3 for x in xs])} "
                  f"| {_mean_ci([(x['cpu'] / x['runs'] - compute) * 1e3 for x in xs])} "
                  f"| {_mean_ci([x['cpu'] / x['phase'] for x in xs])} "
                  f"| {min(x['load'] for x in xs):.2f}–{max(x['load'] for x in xs):.2f} |")
            if kind == "dask":
                print(f"|   (cluster start s: {_mean_ci([x['startup'] for x in xs])}; warm-up search of 3 runs s: "
                      f"{_mean_ci([x['warmup'] for x in xs])}; the idle cluster's CPU, cores: "
                      f"{_mean_ci([x['idle'] for x in xs])}) |")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evaluations", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="results folder (default: a temporary one, removed)")
    ap.add_argument("--target-s", type=float, default=300.0)
    ap.add_argument("--duration", default="30s", help="the scenario's simulated time")
    ap.add_argument("--batch", type=int, default=64, help="candidates per batch (the search's `batch`)")
    ap.add_argument("--executors", default=None,
                    help="compare executors instead: local:N (local pool), dask:N (cclab cluster local), comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="rounds over --executors")
    a = ap.parse_args()
    if a.executors:
        return compare(a)

    from cclab import search

    tmp = Path(tempfile.mkdtemp(prefix="cclab-search-bench-"))
    try:
        (tmp / "scenario.toml").write_text(SCENARIO.format(duration=a.duration))
        (tmp / "search.toml").write_text(SEARCH.format(n=a.evaluations, batch=a.batch))
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
