#!/usr/bin/env python3
"""The kernel datapath (`bpf:<algorithm>`: Linux TCP steered by our algorithm code through BPF
struct_ops) against Linux's own algorithms, our UDP transport and the simulator, through the real
datapath's emulator (root).

    sudo .venv/bin/python validation/bpf_agreement.py [--duration 20] [--measure 5] [--seeds 1-5]
        [--cases ...] [--out validation/out/bpf]

Dumbbell at 50 Mbit/s, 40 ms, drop-tail buffer of one BDP (two for FAST and Vegas, whose queue is
the point), flows starting within 0.5 s. Cases:

- newreno: `bpf:newreno` against `kernel:reno` (1 flow);
- cubic: `bpf:cubic` against `kernel:cubic` (1 flow);
- bbr: `bpf:bbr` against `kernel:bbr` (1 flow): our BBR v1 (built from Linux's tcp_bbr.c) and Linux's
  own, on the same TCP stack, so only the model differs; the kernel paces ours (`sk_pacing_rate`);
- fast: 2 `bpf:fast` flows with alpha = 50 packets each: the queue should be their sum, 100 packets;
- vegas: 2 `bpf:vegas` flows: a few packets of queue (alpha..beta = 2..4 per flow);
- libra, madison: 1 flow each, run to record what the kernel path changes.

Each case also runs on our UDP transport and in the simulator. Printed per case and driver: goodput,
mean RTT and queue as the mean over seeds with its 95 % confidence interval, drops, and the kernel
datapath's controller figures (ACK-to-decision delay p50/p99, fallback ACKs, dropped events, controller
CPU). Results are kept as JSON in `--out`, so an interrupted run resumes. docs/kernel-datapath.md has
the table this printed.
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

FAST_ALPHA = 50
# case: (flows per driver {driver: [cc, ...]}, params, buffer)
CASES: dict[str, tuple[dict[str, list[str]], dict, str]] = {
    "newreno": ({"linux": ["kernel:reno"], "bpf": ["bpf:newreno"], "ours": ["newreno"], "sim": ["newreno"]}, {}, "BDP"),
    "cubic": ({"linux": ["kernel:cubic"], "bpf": ["bpf:cubic"], "ours": ["cubic"], "sim": ["cubic"]}, {}, "BDP"),
    "bbr": ({"linux": ["kernel:bbr"], "bpf": ["bpf:bbr"], "ours": ["bbr"], "sim": ["bbr"]}, {}, "BDP"),
    "fast": ({"bpf": ["bpf:fast"] * 2, "ours": ["fast"] * 2, "sim": ["fast"] * 2}, {"alpha": FAST_ALPHA}, "2BDP"),
    "vegas": ({"bpf": ["bpf:vegas"] * 2, "ours": ["vegas"] * 2, "sim": ["vegas"] * 2}, {}, "2BDP"),
    "libra": ({"bpf": ["bpf:libra"], "ours": ["libra"], "sim": ["libra"]}, {}, "BDP"),
    "madison": ({"bpf": ["bpf:madison"], "ours": ["madison"], "sim": ["madison"]}, {}, "BDP"),
}
DRIVERS = ("linux", "bpf", "ours", "sim")


def scenario(case: str, ccs: list[str], params: dict, buffer: str, duration: float, measure: float,
             seed: int) -> dict:
    flows = []
    for c in ccs:
        f: dict = {"cc": c, "rtt": "40ms", "start": ["0s", "0.5s"]}
        if params and not c.startswith("kernel:"):
            f["params"] = params
        flows.append(f)
    return {
        "name": f"bpf-{case}",
        "duration": f"{duration:g}s",
        "seed": seed,
        "measure": [f"{measure:g}s", f"{duration:g}s"],
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "50Mbps", "buffer": buffer, "queue": "droptail"}},
        "flows": flows,
    }


def ci95(xs: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t interval (cclab.stats.spread)."""
    if not xs:
        return math.nan, math.nan
    m, _, _, h = spread(xs)
    return m, h


def runs(case: str, driver: str, seeds, a) -> list[dict]:
    ccs, params, buffer = CASES[case]
    out = []
    for seed in seeds:
        # Our transport's runs (sim, ours) made since its default became Linux's (docs/validation.md,
        # "Default transport") are kept apart from those made before.
        tx = "_linuxtx" if driver in ("ours", "sim") else ""
        path = a.out / f"{case}_{driver}_{seed}_d{a.duration:g}{tx}.json"
        if path.exists():
            out.append(json.loads(path.read_text()))
            continue
        d = scenario(case, ccs[driver], params, buffer, a.duration, a.measure, seed)
        r = cclab.run(d, progress=False, plots=False) if driver == "sim" else net.run(d, progress=False)
        path.write_text(json.dumps(r.summary))
        out.append(r.summary)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--measure", type=float, default=5.0)
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--drivers", default=",".join(DRIVERS))
    ap.add_argument("--out", type=Path, default=HERE / "out" / "bpf")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    a.out.mkdir(parents=True, exist_ok=True)
    for case in a.cases.split(","):
        for driver in a.drivers.split(","):
            if driver not in CASES[case][0]:
                continue
            per = runs(case, driver, seeds, a)
            good = ci95([sum(f["goodput_bps"] for f in s["flows"]) / 1e6 for s in per])
            rtt = ci95([sum(f["mean_rtt"] for f in s["flows"]) / len(s["flows"]) * 1e3 for s in per])
            q = ci95([s["links"][0]["mean_queue_pkts"] for s in per])
            drops = ci95([float(s["links"][0]["drops"]) for s in per])
            line = (f"{case:8} {driver:6} | goodput {good[0]:6.2f} ± {good[1]:5.2f} Mbit/s | RTT {rtt[0]:6.1f} ± "
                    f"{rtt[1]:4.1f} ms | queue {q[0]:6.1f} ± {q[1]:5.1f} pkts | drops {drops[0]:6.0f} ± {drops[1]:5.0f}")
            kd = [s["net"]["kernel_datapath"] for s in per if s.get("net", {}).get("kernel_datapath")]
            if kd:
                p50 = ci95([k["ack_to_decision_p50_s"] * 1e6 for k in kd])
                p99 = ci95([k["ack_to_decision_p99_s"] * 1e6 for k in kd])
                acks = sum(k["acks"] for k in kd)
                cpu = sum(k["cpu_s"] for k in kd)
                line += (f" | ACK→decision p50 {p50[0]:.0f} µs, p99 {p99[0]:.0f} µs; fallback ACKs "
                         f"{sum(k['fallback_acks'] for k in kd)}, dropped {sum(k['dropped'] for k in kd)}; "
                         f"controller {cpu / max(acks, 1) * 1e9:.0f} ns CPU per ACK")
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
