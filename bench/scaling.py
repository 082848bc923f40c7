"""Cost of a simulation vs its size (docs/performance.md, "Cost vs size"): NewReno dumbbells at
10/100/1000 flows and 100 Mbit/s, 1 Gbit/s and 10 Gbit/s, 100 ms RTT, 500-packet drop-tail buffer,
100 s simulated, through the engine-only benchmark binary (``cclab-bench custom``; whole process, no
Python). Prints a Markdown table of wall time, peak memory, packets and nanoseconds per bottleneck
packet, and writes bench/out/scaling.json.

    python bench/scaling.py [--duration 100] [--flows 10,100,1000] [--rates 100e6,1e9,10e9]

Cost linear in packets shows as a constant ns/packet down the table.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_binary() -> Path:
    subprocess.run(["cargo", "build", "-q", "--profile", "dist", "-p", "cclab-sim", "--bin", "cclab-bench"],
                   cwd=ROOT, check=True)
    return ROOT / "target" / "dist" / "cclab-bench"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=100.0)
    ap.add_argument("--flows", default="10,100,1000")
    ap.add_argument("--rates", default="100e6,1e9,10e9")
    ap.add_argument("--rtt", type=float, default=0.1)
    ap.add_argument("--buffer", default="500")
    a = ap.parse_args()
    exe = bench_binary()
    rows = []
    for rate in [float(r) for r in a.rates.split(",")]:
        for n in [int(f) for f in a.flows.split(",")]:
            out = subprocess.run([str(exe), "custom", "--flows", str(n), "--rate", str(rate), "--rtt", str(a.rtt),
                                  "--buffer", a.buffer, "--duration", str(a.duration)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout)
            rows.append(r)
            print(f"{n} flows, {rate / 1e6:g} Mbit/s: {r['wall_process_s']:.2f} s, {r['peak_rss_mb']:.0f} MB",
                  file=sys.stderr)
    (ROOT / "bench" / "out").mkdir(exist_ok=True)
    (ROOT / "bench" / "out" / "scaling.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("| flows | bottleneck | packets | events | wall (process) | ns / packet | peak RSS | utilisation |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        ns_per_pkt = r["wall_process_s"] / max(r["packets"], 1) * 1e9
        print(f"| {r['flows']} | {r['rate_bps'] / 1e6:g} Mbit/s | {r['packets'] / 1e6:.2f} M | {r['events'] / 1e6:.1f} M "
              f"| {r['wall_process_s']:.2f} s | {ns_per_pkt:.0f} | {r['peak_rss_mb']:.0f} MB | {r['utilization']:.3f} |")


if __name__ == "__main__":
    main()
