#!/usr/bin/env python3
"""`cclab run` as a whole process against ns-3 as a whole process, on the same 30 s scenario, in one run
(docs/performance.md, "The whole process"; targets: ≥ 40× ns-3 with `cclab run`, `cclab run --no-plots`
on a 1 s scenario in ≤ 0.25 s, and ≥ 50× ns-3 with `cclab run` and its figures on the 30-flow example).

Scenario: bench (a) for 30 s (10 NewReno flows, 100 Mbit/s, 100 ms, BDP buffer). Timed, `--repeat`
times each, alternating so that a drift of the machine's speed hits all commands alike: `cclab run`
(summary, Parquet, the five PNG figures), `cclab run --no-plots`, ns-3 3.37 (validation/ns3/dumbbell.cc)
simulating the same 30 s, `cclab run --no-plots` on a 1 s, 2-flow, 100 Mbit/s, 40 ms dumbbell, and the
30-flow example (30 NewReno flows, 300 Mbit/s, 30 ms, BDP buffer, 30 s: `cclab run` with and without figures,
and ns-3). The 1 s run and the 30-flow example with figures are also timed through a warm server of the
benchmark's own (`cclab daemon start`; `--no-server` skips those rows).
Prints medians (min–max), peak RSS, the share of CPU time stolen during the runs, and the ratios.

    .venv/bin/python bench/whole_process.py [--repeat 5] [--no-ns3] [--no-bytecode]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CCLAB, ROOT, SCENARIOS, STEAL, ns3_command, timed, toml_for  # bench/ is not a package

DURATION = 30.0
ONE_SECOND = """name = "bench-one-second"
duration = "1s"
seed = 1
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "100Mbps"
buffer = "BDP"
[[flows]]
cc = "newreno"
count = 2
rtt = "40ms"
"""
TARGET_RATIO = 40.0
TARGET_ONE_SECOND_S = 0.25
# The 30-flow example: 30 NewReno flows at 30 ms on a 300 Mbit/s dumbbell (BDP buffer) for 30 s, `cclab run`
# with its figures against ns-3 simulating the same 30 s (target ≥ 50x).
EXAMPLE30 = {"rate": "300Mbps", "buffer": "BDP", "groups": [(30, 30)]}
TARGET_RATIO_30 = 50.0


def summary(samples: list[tuple[float, int]]) -> dict:
    walls = [w for w, _ in samples]
    return {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls),
            "peak_rss_mb": max(r for _, r in samples) / 1024, "runs": len(walls)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-ns3", action="store_true")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="compile cclab's Python modules in every run (as with PYTHONDONTWRITEBYTECODE) instead of once")
    ap.add_argument("--no-server", action="store_true", help="skip the rows run through a warm server (cclab daemon)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args()
    if not CCLAB.exists():
        print("run `make build` first", file=sys.stderr)
        return 2
    cfg = SCENARIOS["a"]
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        if not args.no_bytecode:
            # As an installed cclab runs: from byte-code compiled once (pip compiles on install), not compiled
            # again by every process. An environment with PYTHONDONTWRITEBYTECODE set (this machine's sessions)
            # would otherwise charge each run ≈ 0.1 s of compiling cclab's modules; the caches go to tmp, not
            # into the checkout, and the unmeasured first run of each command fills them.
            os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
            os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        print(f"[whole process] cclab's Python modules: {'compiled in every run' if args.no_bytecode else 'byte-code cached'}",
              flush=True)
        (tmp / "a30.toml").write_text(toml_for("a30", cfg, DURATION))
        (tmp / "one.toml").write_text(ONE_SECOND)
        commands = {
            "cclab run": [str(CCLAB), "run", str(tmp / "a30.toml"), "--out", str(tmp / "o1"), "-q"],
            "cclab run --no-plots": [str(CCLAB), "run", str(tmp / "a30.toml"), "--out", str(tmp / "o2"), "-q",
                                     "--no-plots"],
            "cclab run --no-plots, 1 s": [str(CCLAB), "run", str(tmp / "one.toml"), "--out", str(tmp / "o3"), "-q",
                                          "--no-plots"],
            "cclab run, 30 flows": [str(CCLAB), "run", str(tmp / "e30.toml"), "--out", str(tmp / "o4"), "-q"],
            "cclab run --no-plots, 30 flows": [str(CCLAB), "run", str(tmp / "e30.toml"), "--out", str(tmp / "o5"), "-q",
                                               "--no-plots"],
        }
        (tmp / "e30.toml").write_text(toml_for("e30", EXAMPLE30, DURATION))
        # Every row above runs in a process of its own, whatever server the user may have started; the
        # rows below go through a warm server (`cclab daemon start`, docs/performance.md) of this benchmark's
        # own, in a short folder of its own (a socket's path has at most 107 bytes).
        os.environ["CCLAB_DAEMON"] = "0"
        server = None
        if not args.no_server:
            rt = tempfile.mkdtemp(prefix="ccb")
            senv = ["env", f"XDG_RUNTIME_DIR={rt}", "CCLAB_DAEMON=1"]
            subprocess.run([*senv, str(CCLAB), "daemon", "start", "--idle", "3600"], check=True, capture_output=True)
            server = (rt, senv)
            commands["cclab run --no-plots, 1 s, warm server"] = [*senv, *commands["cclab run --no-plots, 1 s"]]
            commands["cclab run, 30 flows, warm server"] = [*senv, *commands["cclab run, 30 flows"]]
        if not args.no_ns3:
            commands["ns-3"] = ns3_command(cfg, DURATION)
            commands["ns-3, 30 flows"] = ns3_command(EXAMPLE30, DURATION)
        # One unmeasured run of each first: file caches, ns-3's build check.
        for cmd in commands.values():
            timed(cmd)
        samples: dict[str, list[tuple[float, int]]] = {k: [] for k in commands}
        steal: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                wall, rss, _ = timed(cmd)
                samples[name].append((wall, rss))
                steal[name].append(STEAL[-1])
        if server:
            rt, senv = server
            # The rows' peak RSS is the client's; the server's own (its resident set now) is reported apart.
            pids = list(Path(rt, "cclab").glob("daemon-*.pid"))
            server_rss = None
            if pids:
                status = Path(f"/proc/{pids[0].read_text().strip()}/status").read_text()
                server_rss = int(next(x for x in status.splitlines() if x.startswith("VmRSS")).split()[1]) / 1024
            subprocess.run([*senv, str(CCLAB), "daemon", "stop"], capture_output=True)
            shutil.rmtree(rt, ignore_errors=True)
            if server_rss is not None:
                print(f"[whole process] the warm server's resident set: {server_rss:.0f} MB (the warm rows' peak RSS "
                      "is their client's)", flush=True)
    report = {name: summary(s) for name, s in samples.items()}
    for name, r in report.items():
        # The share of CPU time the hypervisor stole during each run: how disturbed the figures are.
        r["steal_median"] = statistics.median(steal[name])
        r["steal_max"] = max(steal[name])
        print(f"[whole process] {name}: {r['median_s']:.3f} s ({r['min_s']:.3f}–{r['max_s']:.3f}), "
              f"peak RSS {r['peak_rss_mb']:.0f} MB, steal {100 * r['steal_median']:.1f} % (max "
              f"{100 * r['steal_max']:.1f} %)", flush=True)
    for name in ("cclab run --no-plots, 1 s", "cclab run --no-plots, 1 s, warm server"):
        if name in report:
            one = report[name]["median_s"]
            print(f"[whole process] 1 s scenario with --no-plots{name[len('cclab run --no-plots, 1 s'):]}: {one:.3f} s "
                  f"(target ≤ {TARGET_ONE_SECOND_S} s: {'met' if one <= TARGET_ONE_SECOND_S else 'NOT met'})")
    if "ns-3" in report:
        ns = report["ns-3"]["median_s"]
        for name in ("cclab run", "cclab run --no-plots"):
            ratio = ns / report[name]["median_s"]
            report[name]["ns3_ratio"] = ratio
            print(f"[whole process] {DURATION:g} s of 100 Mbit/s, ns-3 ÷ {name}: {ratio:.1f}x "
                  f"(target ≥ {TARGET_RATIO:g}x: {'met' if ratio >= TARGET_RATIO else 'NOT met'})")
        for name, what in (("cclab run, 30 flows", "cclab run (with figures)"),
                           ("cclab run --no-plots, 30 flows", "cclab run --no-plots"),
                           ("cclab run, 30 flows, warm server", "cclab run (with figures) through a warm server")):
            if name not in report:
                continue
            ratio = report["ns-3, 30 flows"]["median_s"] / report[name]["median_s"]
            report[name]["ns3_ratio"] = ratio
            print(f"[whole process] 30 flows, 300 Mbit/s, 30 ms, {DURATION:g} s, ns-3 ÷ {what}: {ratio:.1f}x "
                  f"(target ≥ {TARGET_RATIO_30:g}x: {'met' if ratio >= TARGET_RATIO_30 else 'NOT met'})")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "whole_process.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
