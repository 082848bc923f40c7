#!/usr/bin/env python3
"""Mixed-RTT drop-tail dumbbell: cclab's simulator and our transport against Linux kernel TCP.

The 40/160 ms rows of docs/validation.md are not compared with ns-3 (its 160 ms flows starve) and
move with every change of loss timing; this script measures what Linux does on the same dumbbell,
through the real datapath's emulator (root): two flows at 40 ms and two at 160 ms, 100 Mbit/s, one
BDP (of the 160 ms path... as `buffer = "BDP"` resolves it) of drop-tail buffer, all starting at 0.

    sudo .venv/bin/python validation/linux_mixed_rtt.py [--duration 60] [--measure 10] [--runs 2]
        [--seeds 1-3] [--out validation/out/linux]

Per configuration it prints the per-group mean goodput (Mbit/s), the 40/160 ms ratio and Jain's index:
kernel:reno and kernel:cubic (real, `--runs` runs), our newreno and cubic over UDP through the same
emulator (real), and the simulator's newreno and cubic (`--seeds`). Kernel TCP runs with Linux's own
delayed ACKs and its defaults (PRR, RACK, HyStart for cubic), so agreement is expected in kind (which
group wins, by roughly how much), not to the percent. Results are kept as JSON in `--out`.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import cclab
from cclab import net
from compare import group_goodput  # same directory: the ns-3 cross-check's per-RTT-group mean

HERE = Path(__file__).resolve().parent


def scenario(cc: str, duration: float, measure: float, seed: int) -> dict:
    return {
        "name": f"mixed-{cc.replace(':', '-')}",
        "duration": f"{duration:g}s",
        "seed": seed,
        "measure": [f"{measure:g}s", f"{duration:g}s"],
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": "BDP", "queue": "droptail"}},
        "flows": [{"cc": cc, "count": 2, "rtt": "40ms"}, {"cc": cc, "count": 2, "rtt": "160ms"}],
    }


def groups(summary: dict) -> tuple[float, float]:
    """Mean goodput of the 40 ms and the 160 ms flows, Mbit/s."""
    g = group_goodput(summary["flows"])
    return g[0.04], g[0.16]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--measure", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--seeds", default="1-3")
    ap.add_argument("--real", default="kernel:reno,kernel:cubic,newreno,cubic")
    ap.add_argument("--sim", default="newreno,cubic")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "linux")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    jobs = [("real", cc, k + 1) for cc in a.real.split(",") if cc for k in range(a.runs)]
    jobs += [("sim", cc, s) for cc in a.sim.split(",") if cc for s in seeds]
    for kind, cc, n in jobs:
        path = a.out / f"{kind}_{cc.replace(':', '-')}_{n}_d{a.duration:g}.json"
        if path.exists():
            s = json.loads(path.read_text())
        else:
            d = scenario(cc, a.duration, a.measure, n)
            s = (net.run(d, progress=False) if kind == "real" else cclab.run(d, progress=False)).summary
            path.write_text(json.dumps(s))
        g40, g160 = groups(s)
        rows.append((kind, cc, n, g40, g160, s["jain"], s["links"][0]["utilization"],
                     sum(f["timeouts"] or 0 for f in s["flows"]) if kind == "sim" or not cc.startswith("kernel") else None))
        r = rows[-1]
        print(f"{r[0]:4} {r[1]:13} {'run' if kind == 'real' else 'seed'} {r[2]}: 40 ms {r[3]:6.2f}  160 ms {r[4]:6.2f}"
              f"  ratio {r[3] / max(r[4], 1e-9):6.2f}  Jain {r[5]:.3f}  util {r[6]:.3f}  timeouts {r[7]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
