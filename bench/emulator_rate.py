#!/usr/bin/env python3
"""The real datapath's emulator at the papers' rates: what it carries and how exactly it times packets (root).

One flow per run over the namespace dumbbell (`cclab net run`): RTT 20 ms, a BDP buffer, `--duration`
seconds, window from 2 s. For each rate and algorithm (Linux's cubic and bbr through kernel TCP, our
NewReno and BBR over UDP) it reports, against the configured link:

* goodput against the payload ceiling (rate × payload / 1500: 1448 B for kernel TCP, 1440 B for ours),
  and the link's utilisation;
* the emulator's write lateness over the measure window (when a packet reached the receiving host
  against when the emulated link delivered it: the error of every packet's delay and spacing), mean
  and p99 (each run's p99 is listed);
* CPU seconds per Gbit carried (the whole `cclab-net` process: emulator, endpoints and, through the
  threads that write into the TUN devices, both hosts' network stacks);
* whether the emulator had a CPU of its own with the hosts' stacks steered off it (RPS).

`--no-layout` runs everything a second time with `CCLAB_NET_PIN=0` (no pinning, no RPS), the
before/after of docs/real-datapath.md. Needs root and the `cclab-net` binary (make build); without
them it says so and exits 0, so that `make bench` runs everywhere.

    sudo .venv/bin/python bench/emulator_rate.py [--rates 200Mbps,500Mbps,1Gbps] [--cc kernel:cubic,newreno]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import cclab.net as net  # noqa: E402
from cclab.units import parse_rate  # noqa: E402

PAYLOAD = {"kernel": 1448.0, "ours": 1440.0}


def one(rate: str, cc: str, duration: float) -> dict:
    d = {"name": "emu-bench", "duration": f"{duration}s", "seed": 1, "measure": ["2s", f"{duration}s"],
         "topology": {"kind": "dumbbell", "bottleneck": {"rate": rate, "buffer": "BDP", "queue": "droptail"}},
         "flows": [{"cc": cc, "rtt": "20ms"}]}
    t0 = os.times()
    s = net.run(d, progress=False).summary
    t1 = os.times()
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    f, link, e = s["flows"][0], s["links"][0], s["net"]["emulator"]
    r = parse_rate(rate)
    ceiling = r * PAYLOAD["kernel" if cc.startswith("kernel:") else "ours"] / 1500.0
    carried_gbit = link["utilization"] * r * duration / 1e9
    return {"goodput": f["goodput_bps"], "ceiling": ceiling, "util": link["utilization"],
            "late_mean_us": e["window_late_mean_ns"] / 1e3, "late_p99_us": e["window_late_p99_ns"] / 1e3,
            "cpu_per_gbit": cpu / carried_gbit if carried_gbit > 0 else float("nan"),
            "layout": e.get("cpu") is not None and bool(e.get("rps_cpus")),
            "disturbed": s["net"]["disturbed"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="200Mbps,500Mbps,1Gbps")
    ap.add_argument("--cc", default="kernel:cubic,kernel:bbr,newreno,bbr")
    ap.add_argument("--duration", type=float, default=6.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-layout", action="store_true", help="also run without pinning and RPS")
    a = ap.parse_args()
    ok, why = net.check()
    if not ok:
        print(f"emulator bench skipped: {why}")
        return 0
    layouts = [("on", None)] + ([("off", "0")] if a.no_layout else [])
    print(f"{'rate':>8} {'cc':>13} {'layout':>6} {'goodput Mbit/s':>15} {'of ceiling':>10} {'util':>6} "
          f"{'late mean µs':>12} {'late p99 µs':>11} {'CPU s/Gbit':>10}")
    for rate in a.rates.split(","):
        for cc in a.cc.split(","):
            for tag, pin in layouts:
                if pin is None:
                    os.environ.pop("CCLAB_NET_PIN", None)
                else:
                    os.environ["CCLAB_NET_PIN"] = pin
                runs = [one(rate, cc, a.duration) for _ in range(a.repeat)]
                time.sleep(0.5)
                med = {k: statistics.median(r[k] for r in runs) for k in
                       ("goodput", "ceiling", "util", "late_mean_us", "late_p99_us", "cpu_per_gbit")}
                p99s = "/".join(f"{r['late_p99_us']:.0f}" for r in runs)
                flag = " (disturbed)" if any(r["disturbed"] for r in runs) else ""
                print(f"{rate:>8} {cc:>13} {tag if runs[0]['layout'] or pin else 'n/a':>6} "
                      f"{med['goodput'] / 1e6:15.1f} {med['goodput'] / med['ceiling']:10.3f} {med['util']:6.3f} "
                      f"{med['late_mean_us']:12.1f} {p99s:>11} {med['cpu_per_gbit']:10.2f}{flag}", flush=True)
                if len(runs) > 1:
                    # Each run's share of the ceiling, in order: a bound like "≥ 0.95 in 8 of 8 runs" is
                    # about every run, not the median.
                    each = "/".join(f"{r['goodput'] / r['ceiling']:.3f}" for r in runs)
                    marks = "".join("d" if r["disturbed"] else "." for r in runs)
                    print(f"{'':>8} {'':>13} {'':>6} of ceiling per run: {each} (disturbed: {marks})", flush=True)
    os.environ.pop("CCLAB_NET_PIN", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
