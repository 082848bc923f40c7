#!/usr/bin/env python3
"""BBR v1: cclab's `bbr` (simulator, and our UDP transport over the real datapath) against Linux's
`tcp_bbr` (kernel:bbr) through the real datapath's emulator (root); BBR v3 (`bbr3`) in both of cclab's
drivers (Linux here has no v3).

    sudo .venv/bin/python validation/bbr_linux.py [--duration 20] [--measure 5] [--seeds 1-5]
        [--out validation/out/bbr] [--transport '{"receiver": "linux"}']

Dumbbells at 100 Mbit/s with one BDP of drop-tail buffer, flows starting within 0.5 s: one BBR flow;
two BBR flows; one BBR flow and one CUBIC flow (all at 40 ms); two BBR flows at 40 ms and two at 160 ms. For each, per seed: the kernel's
(kernel:bbr, kernel:cubic), our transport's over the same emulator (bbr beside kernel:cubic) and the
simulator's (bbr, cubic). Printed: per-flow goodput and mean RTT as the mean over seeds with its 95 %
confidence interval, link utilisation and queue. Results are kept as JSON in `--out`, so an interrupted
run resumes. docs/validation.md has the table this printed. `--transport` gives cclab's flows (simulator and
ours over the emulator) a `[transport]` table; their results are kept apart by it (the kernel's are shared).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import cclab
from cclab import net
from cclab.stats import spread

HERE = Path(__file__).resolve().parent

# Per configuration: the flows each driver runs (kernel, ours over the emulator, simulator).
CONFIGS: dict[str, tuple[list[str] | None, list[str], list[str]]] = {
    "1 bbr": (["kernel:bbr"], ["bbr"], ["bbr"]),
    "2 bbr": (["kernel:bbr"] * 2, ["bbr"] * 2, ["bbr"] * 2),
    "bbr+cubic": (["kernel:bbr", "kernel:cubic"], ["bbr", "kernel:cubic"], ["bbr", "cubic"]),
    "4 bbr 40/160": (["kernel:bbr"] * 4, ["bbr"] * 4, ["bbr"] * 4),
    # BBR v3: this kernel has only v1, so the simulator is compared with our transport over the emulator.
    "1 bbr3": (None, ["bbr3"], ["bbr3"]),
    "2 bbr3": (None, ["bbr3"] * 2, ["bbr3"] * 2),
    "bbr3+cubic": (None, ["bbr3", "kernel:cubic"], ["bbr3", "cubic"]),
}
# Flow RTTs (ms) of a configuration, 40 ms unless listed; the 40/160 ms one uses the buffer of the 160 ms
# path's BDP, as the mixed-RTT dumbbells of linux_mixed_rtt.py do.
RTTS = {"4 bbr 40/160": [40, 40, 160, 160]}
DRIVERS = ("kernel", "ours-real", "sim")


def scenario(ccs: list[str], duration: float, measure: float, seed: int, rtts: list[int] | None = None,
             transport: dict | None = None) -> dict:
    rtts = rtts or [40] * len(ccs)
    return {
        **({"transport": transport} if transport else {}),
        "name": "bbr-" + "-".join(c.replace(":", "_") for c in ccs),
        "duration": f"{duration:g}s",
        "seed": seed,
        "measure": [f"{measure:g}s", f"{duration:g}s"],
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": "BDP", "queue": "droptail"}},
        "flows": [{"cc": c, "rtt": f"{r}ms", "start": ["0s", "0.5s"]} for c, r in zip(ccs, rtts)],
    }


def ci95(xs: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t interval (cclab.stats.spread)."""
    m, _, _, h = spread(xs)
    return m, h


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--measure", type=float, default=5.0)
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--drivers", default=",".join(DRIVERS))
    ap.add_argument("--out", type=Path, default=HERE / "out" / "bbr")
    ap.add_argument("--transport", type=json.loads, default={},
                    help='a [transport] table (JSON) for the simulator and ours-real, e.g. \'{"receiver": "linux"}\'')
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    a.out.mkdir(parents=True, exist_ok=True)
    for name in a.configs.split(","):
        for driver in a.drivers.split(","):
            ccs = CONFIGS[name][DRIVERS.index(driver)]
            if ccs is None:
                continue
            per = []
            for seed in seeds:
                slug = name.replace(" ", "_").replace("+", "_").replace("/", "-")
                tr = a.transport if driver != "kernel" else {}
                # Named by the transport table. Runs without a profile were made on what is now
                # profile = "paper" (the default until docs/validation.md's "Default transport"): they keep
                # their names, and runs on today's default are named by it.
                key = dict(tr) if driver == "kernel" or "profile" in tr else {**tr, "profile": "linux"}
                if key.get("profile") == "paper":
                    key.pop("profile")
                extra = "".join(f"_{k}-{v}" for k, v in sorted(key.items()))
                path = a.out / f"{slug}_{driver}_{seed}_d{a.duration:g}{extra}.json"
                if path.exists():
                    s = json.loads(path.read_text())
                else:
                    d = scenario(ccs, a.duration, a.measure, seed, RTTS.get(name), tr)
                    r = cclab.run(d, progress=False, plots=False) if driver == "sim" else net.run(d, progress=False)
                    s = r.summary
                    path.write_text(json.dumps(s))
                per.append(s)
            cols = []
            for i, cc in enumerate(ccs):
                g = ci95([s["flows"][i]["goodput_bps"] / 1e6 for s in per])
                rtts = [s["flows"][i]["mean_rtt"] * 1e3 for s in per if s["flows"][i].get("mean_rtt")]
                r = ci95(rtts) if rtts else (math.nan, math.nan)
                cols.append(f"{cc} {g[0]:5.1f} ± {g[1]:4.1f} Mbit/s, RTT {r[0]:5.1f} ± {r[1]:4.1f} ms")
            util = ci95([s["links"][0]["utilization"] for s in per])
            q = ci95([s["links"][0]["mean_queue_pkts"] for s in per])
            drops = ci95([float(s["links"][0]["drops"]) for s in per])
            print(f"{name:10} {driver:9} | " + " | ".join(cols)
                  + f" | util {util[0]:.3f} ± {util[1]:.3f}, queue {q[0]:5.1f} ± {q[1]:4.1f} pkts,"
                    f" drops {drops[0]:.0f} ± {drops[1]:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
