#!/usr/bin/env python3
"""Mixed-RTT drop-tail dumbbells: cclab's simulator against Linux kernel TCP (through the real
datapath's emulator, root).

    sudo .venv/bin/python validation/linux_mixed_rtt.py [--duration 60] [--measure 10] [--seeds 1-5]
        [--spread 1] [--dumbbells 100M-40/160,50M-20/100] [--jitter 0.05] [--linux-recovery]
        [--delayed-ack 2] [--receiver linux] [--out validation/out/linux]

Two dumbbells, each with two flows at a short and two at a long RTT and one BDP (of the long path) of
drop-tail buffer: 100 Mbit/s with 40/160 ms, 50 Mbit/s with 20/100 ms. Flows start uniformly in
[0, --spread] s. One run per seed for every driver: kernel:reno and kernel:cubic (real), the simulator's
newreno and cubic, the simulator again with per-packet jitter at the bottleneck (--jitter, ms; order
kept), the remedy ns-2 used for phase effects, and with --linux-recovery a third time with Linux's
recovery rules on as well (PRR, spurious-RTO undo, and HyStart++ for CUBIC as Linux runs HyStart), and
with --delayed-ack N (default 2) a fourth time with the receiver ACKing every N packets, as Linux does.
With --receiver linux, the jittered variants (as is, and with Linux's recovery) run once more with Linux's
receiver (`[transport] receiver = "linux"`: quick ACKs, then one per two packets, 40 ms timer).
These variants add Linux's rules one at a time to the papers' transport (`[transport] profile = "paper"`:
an ACK per packet, dupack loss detection, no undo, no D-SACK), the simulator's default until 2026-11-29;
the jittered simulator runs once more with cclab's default transport (the "linux" profile: RACK-TLP,
undo, D-SACK, Linux's receiver; docs/validation.md, "Default transport").
Prints per dumbbell the per-RTT-group mean goodput with its 95 % CI over seeds, Jain's index, and each
seed's long-RTT group (these shares are a lottery per run, so distributions are compared, not runs).
Results are kept as JSON in `--out`: an interrupted run resumes.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import cclab
from cclab import net
from cclab.stats import spread
from compare import group_goodput  # same directory: the ns-3 cross-check's per-RTT-group mean

HERE = Path(__file__).resolve().parent


# name -> (bottleneck rate, short RTT ms, long RTT ms); two flows of each RTT, drop-tail buffer "BDP"
# (of the longest path).
DUMBBELLS = {"100M-40/160": ("100Mbps", 40, 160), "50M-20/100": ("50Mbps", 20, 100)}


def scenario(cc: str, duration: float, measure: float, seed: int, dumbbell: str = "100M-40/160",
             spread: float = 0.0, jitter_ms: float = 0.0, linux: bool = False, delayed_ack: int = 1,
             receiver: str = "per_packet") -> dict:
    rate, short, long_ = DUMBBELLS[dumbbell]
    bottleneck = {"rate": rate, "buffer": "BDP", "queue": "droptail"}
    if jitter_ms > 0:
        # Per-packet processing noise (ns-2's remedy for phase effects): order kept, mean delay 1 ms.
        bottleneck.update({"delay": "1ms", "jitter": f"{jitter_ms:g}ms"})
    start = {"start": ["0s", f"{spread:g}s"]} if spread > 0 else {}
    return {
        "name": f"mixed-{cc.replace(':', '-')}",
        "duration": f"{duration:g}s",
        "seed": seed,
        "measure": [f"{measure:g}s", f"{duration:g}s"],
        "topology": {"kind": "dumbbell", "bottleneck": bottleneck},
        # rx "default": cclab's default transport as is. Otherwise the papers' transport, plus Linux's
        # recovery (PRR, spurious-RTO undo) and, for CUBIC, its slow-start exit (HyStart; ours is HyStart++).
        "transport": {} if receiver == "default" else {
            "profile": "paper", **({"prr": True, "rto_undo": True, "hystart": cc == "cubic"} if linux else {}),
            **({"delayed_ack": delayed_ack} if delayed_ack > 1 else {}),
            **({"receiver": receiver} if receiver != "per_packet" else {})},
        "flows": [{"cc": cc, "count": 2, "rtt": f"{short}ms", **start},
                  {"cc": cc, "count": 2, "rtt": f"{long_}ms", **start}],
    }


def groups(summary: dict) -> tuple[float, float]:
    """Mean goodput of the short-RTT and the long-RTT flows, Mbit/s."""
    g = group_goodput(summary["flows"])
    short, long_ = sorted(g)
    return g[short], g[long_]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--measure", type=float, default=10.0)
    ap.add_argument("--seeds", default="1-5", help="one run per seed, real and simulated alike")
    ap.add_argument("--spread", type=float, default=1.0, help="flows start uniformly in [0, spread] s")
    ap.add_argument("--dumbbells", default=",".join(DUMBBELLS))
    ap.add_argument("--real", default="kernel:reno,kernel:cubic")
    ap.add_argument("--sim", default="newreno,cubic")
    ap.add_argument("--jitter", type=float, default=0.05,
                    help="the simulator's second variant: per-packet jitter at the bottleneck, ms (0: none)")
    ap.add_argument("--linux-recovery", action="store_true",
                    help="a third simulator variant: the jittered one with Linux's recovery rules "
                         "([transport] prr and rto_undo; hystart for cubic)")
    ap.add_argument("--delayed-ack", type=int, default=2,
                    help="a fourth simulator variant: the Linux-recovery one with the receiver ACKing every "
                         "N packets, as Linux's delayed ACKs do (1: no fourth variant)")
    ap.add_argument("--receiver", default="per_packet", choices=["per_packet", "linux"],
                    help="linux: the jittered variants once more with Linux's receiver")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "linux")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    a.out.mkdir(parents=True, exist_ok=True)
    sims = [cc for cc in a.sim.split(",") if cc]
    variants = [("real", cc, 0.0, False, 1, "per_packet") for cc in a.real.split(",") if cc]
    variants += [("sim", cc, 0.0, False, 1, "per_packet") for cc in sims]
    if a.jitter > 0:
        variants += [("sim", cc, a.jitter, False, 1, "per_packet") for cc in sims]
        variants += [("sim", cc, a.jitter, False, 1, "default") for cc in sims]
        if a.receiver != "per_packet":
            variants += [("sim", cc, a.jitter, False, 1, a.receiver) for cc in sims]
    if a.linux_recovery:
        variants += [("sim", cc, a.jitter, True, 1, "per_packet") for cc in sims]
        if a.delayed_ack > 1:
            variants += [("sim", cc, a.jitter, True, a.delayed_ack, "per_packet") for cc in sims]
        if a.receiver != "per_packet":
            variants += [("sim", cc, a.jitter, True, 1, a.receiver) for cc in sims]
    print("| dumbbell | driver | algorithm | short-RTT group (Mbit/s) | long-RTT group (Mbit/s) | Jain | per-seed long group |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for db in a.dumbbells.split(","):
        for kind, cc, jit, linux, dack, rx in variants:
            shorts, longs, jains = [], [], []
            for seed in seeds:
                # Since 2026-11-26 the simulator's CUBIC runs HyStart++ by default: runs from before are
                # kept under their old names.
                hs = "_hs" if kind == "sim" and cc == "cubic" and not linux else ""
                tag = (f"{db.replace('/', '-')}_{kind}_{cc.replace(':', '-')}_j{jit:g}{'_linux2' if linux else ''}"
                       f"{f'_dack{dack}' if dack > 1 else ''}{f'_rx{rx}' if rx != 'per_packet' else ''}{hs}"
                       f"_s{seed}_x{a.spread:g}_d{a.duration:g}")
                path = a.out / f"{tag}.json"
                if path.exists():
                    s = json.loads(path.read_text())
                else:
                    d = scenario(cc, a.duration, a.measure, seed, db, a.spread, jit, linux, dack, rx)
                    r = net.run(d, progress=False) if kind == "real" else cclab.run(d, progress=False, plots=False)
                    s = r.summary
                    path.write_text(json.dumps(s))
                g_short, g_long = groups(s)
                shorts.append(g_short)
                longs.append(g_long)
                jains.append(s["jain"])
            (ms, _, _, hs), (ml, _, _, hl), (mj, _, _, hj) = spread(shorts), spread(longs), spread(jains)
            label = kind if jit == 0 else (f"sim, jitter {jit:g} ms" + (", Linux recovery" if linux else "")
                                           + (f", delayed ACK {dack}" if dack > 1 else "")
                                           + (", default transport" if rx == "default" else
                                              f", {rx} receiver" if rx != "per_packet" else ""))
            print(f"| {db} | {label} | {cc} | {ms:.2f} ± {hs:.2f} | {ml:.2f} ± {hl:.2f} | {mj:.3f} ± {hj:.3f} | "
                  f"{', '.join(f'{x:.1f}' for x in longs)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
