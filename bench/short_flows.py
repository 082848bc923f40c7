#!/usr/bin/env python3
"""Many short flows (docs/performance.md, "Many short flows"; issue target: ≈ 1 million short flows
loading a 10 Gbit/s bottleneck to 80 % over 100 s in < 10 min and < 4 GB).

One long NewReno flow plus a `transfers` source: Poisson arrivals of Pareto-sized (mean 100 KB, shape
1.5) NewReno transfers offering 8 Gbit/s, 50 ms RTT, BDP drop-tail buffer. `cclab run --no-plots` as a
whole process; prints wall time, peak RSS, packets per second and the transfers' flow-completion times.

    .venv/bin/python bench/short_flows.py [--rate 10Gbps] [--load 0.8] [--duration 100] [--repeat 1]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CCLAB, ROOT, timed  # bench/ is not a package: its run.py, found through sys.path


def scenario(rate_bps: float, load: float, duration: float) -> str:
    return f"""name = "bench-short-flows"
duration = "{duration}s"
seed = 1
sample_interval = "1s"
measure = ["{duration / 10}s", "{duration}s"]

[topology]
kind = "dumbbell"

[topology.bottleneck]
rate = "{rate_bps / 1e6:g}Mbps"
buffer = "BDP"
queue = "droptail"

[[flows]]
cc = "newreno"
rtt = "50ms"

[[traffic]]
kind = "transfers"
rate = "{load * rate_bps / 1e6:g}Mbps"
mean_size = "100KB"
rtt = "50ms"
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=10e9, help="bottleneck, bit/s [10e9]")
    ap.add_argument("--load", type=float, default=0.8, help="offered load of the transfers [0.8]")
    ap.add_argument("--duration", type=float, default=100.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    a = ap.parse_args()
    if not CCLAB.exists():
        print("run `make build` first", file=sys.stderr)
        return 2
    runs = []
    with tempfile.TemporaryDirectory() as t:
        scen = Path(t) / "short.toml"
        scen.write_text(scenario(a.rate, a.load, a.duration))
        for _ in range(a.repeat):
            out = Path(t) / "out"
            wall, rss, _ = timed([str(CCLAB), "run", str(scen), "--out", str(out), "-q", "--no-plots"])
            s = json.loads((out / "summary.json").read_text())
            x = s["transfers"][0]
            runs.append({"wall_process_s": wall, "wall_loop_s": s["sim"]["wall_s"], "peak_rss_mb": rss / 1024,
                         "packets": s["sim"]["packets"], "events": s["sim"]["events"], "arrivals": x["arrivals"],
                         "completed": x["completed"], "peak_active": x["peak_active"],
                         "utilization": s["links"][0]["utilization"], "fct": x["fct"], "fct_by_size": x["fct_by_size"]})
    r = runs[0] | {"wall_process_s": statistics.median(x["wall_process_s"] for x in runs),
                   "peak_rss_mb": max(x["peak_rss_mb"] for x in runs)}
    print(f"{r['arrivals']:,} transfers ({r['completed']:,} completed, at most {r['peak_active']:,} at once) on "
          f"{a.rate / 1e9:g} Gbit/s for {a.duration:g} s: process {r['wall_process_s']:.1f} s, loop {r['wall_loop_s']:.1f} s, "
          f"{r['packets'] / r['wall_loop_s'] / 1e6:.2f} M pkts/s, {r['events'] / r['wall_loop_s'] / 1e6:.1f} M events/s (loop), "
          f"peak RSS {r['peak_rss_mb']:.0f} MB, utilisation {r['utilization']:.3f}")
    f = r["fct"]
    print(f"FCT over {f['count']:,} window arrivals: mean {f['mean_s'] * 1e3:.0f} ms, p50 {f['p50_s'] * 1e3:.0f} ms, "
          f"p99 {f['p99_s'] * 1e3:.0f} ms")
    for b in r["fct_by_size"]:
        if b["count"]:
            hi = f"{b['hi_bytes'] / 1e3:g} KB" if b["hi_bytes"] else "∞"
            print(f"  {b['lo_bytes'] / 1e3:g} KB - {hi}: {b['count']:,}, mean {b['mean_s'] * 1e3:.0f} ms, "
                  f"p50 {b['p50_s'] * 1e3:.0f} ms, p99 {b['p99_s'] * 1e3:.0f} ms")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "short_flows.json").write_text(json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
