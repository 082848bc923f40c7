#!/usr/bin/env python3
"""Paths that reorder, spike and vary: cclab's simulator (with the old transport and with the Linux-like
one) and our transport over the real datapath against Linux kernel TCP through the same emulator (root).

    sudo .venv/bin/python validation/reordering_linux.py [--duration 20] [--measure 5] [--seeds 1-5]
        [--real-runs 1-3] [--paths ...] [--algos reno,cubic,bbr] [--drivers sim-old,sim-linux,kernel,ours-real]
        [--out validation/out/reordering] [--table-only]

One flow at 40 ms RTT through a 50 Mbit/s bottleneck with a 200-packet drop-tail buffer and 5 ms of the
RTT on the bottleneck (the jitter and `reorder` need a link delay to act on), over these paths:

- `jitter-0.25` / `jitter-1` / `jitter-4`: ± 0.25, 1, 4 ms of uniform jitter with overtaking
  (`jitter_reorder = true`, netem's `delay 5ms Xms`): at 0.24 ms per packet, reordering up to ~2, 8, 33
  packets deep;
- `reorder-0.1%` / `reorder-1%`: that share of packets skips the link's delay (netem `reorder`);
- `cellular`: the shipped synthetic cellular trace (mean 13.9 Mbit/s) in place of the rate;
- `spike`: 50 Mbit/s from a trace with two 0.4 s outages (at 8 s and 14 s). Written before cclab had a
  delay schedule, as a stand-in for a delay spike: the packets queued when it starts wait 0.4 s and then
  arrive, longer than the ~0.24 s RTO, which provokes a spurious timeout (and, with the queue full, real
  drops of what arrives at the full buffer);
- `delayspike`: the delay spike itself (the link's `delay_schedule`): all 40 ms of the RTT on the
  bottleneck, its one-way delay 20 ms, 300 ms from 8 s, 20 ms again from 8.5 s. What leaves the queue in
  that half second arrives 300 ms later, and what follows waits behind it (packets keep their order);
  the ACKs stop for ~0.3 s, longer than the RTO, and nothing is dropped by the spike itself;
- `clean-bdp`: the clean dumbbell (CUBIC only): the same link, no impairment, one BDP of buffer, 40 ms;
- `clean-200`: the same link unimpaired with its 200-packet buffer (BBR only: Linux's BBR keeps that
  buffer full on the impaired paths, and this tells whether the impairment is why).

Drivers: `sim-old` (the simulator with the papers' transport, `profile = "paper"`, its default until this
table made Linux's the default: dupack loss detection, a per-packet receiver, no D-SACK, no undo),
`sim-linux` (loss_detection = rack, undo, dsack, receiver = linux: today's default, written out), seeds
--seeds (and the variants in VARIANTS, between the two); `kernel` (kernel:reno / kernel:cubic / kernel:bbr through the emulator) and `ours-real` (our
transport with the Linux-like settings through the emulator), --real-runs. Per path, algorithm and
driver: goodput (Mbit/s), retransmissions in the window, and spurious retransmissions in the window
estimated as retransmissions minus the bottleneck's drops (each dropped data packet needs exactly one
retransmission; every other one resent a packet that was delivered; single flow, so the link's drops are
the flow's), each the mean ± 95 % CI (cclab.stats.spread); for cclab's sender also the D-SACKs it
received and the recoveries (fast and RTO) it undid; real runs flagged `net.disturbed` are counted.
Results are kept as JSON in --out (an interrupted run resumes; --table-only prints from what is there),
each run's summary and time series in --out/runs/<its name>/.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

import cclab
from cclab import net
from cclab.stats import spread

HERE = Path(__file__).resolve().parent

ALGOS = {"reno": ("newreno", "kernel:reno"), "cubic": ("cubic", "kernel:cubic"), "bbr": ("bbr", "kernel:bbr")}
OLD: dict = {"profile": "paper"}  # the transport before Linux's became the default
LINUX = {"loss_detection": "rack", "undo": True, "dsack": True, "receiver": "linux"}
DRIVERS = ("sim-old", "sim-linux", "kernel", "ours-real")
# Simulator variants between the two, one setting at a time (--drivers sim-rack,...): which of the four
# settings carries the agreement.
VARIANTS = {
    "sim-rx": {"receiver": "linux"},
    "sim-rack": {"loss_detection": "rack", "dsack": True},
    "sim-undo": {"undo": True, "dsack": True},
    "sim-rack-undo": {"loss_detection": "rack", "undo": True, "dsack": True},
    "sim-linux-prr": {**LINUX, "prr": True},
}

BASE = {"rate": "50Mbps", "delay": "5ms", "buffer": 200, "queue": "droptail"}
PATHS: dict[str, dict] = {
    "jitter-0.25": {"jitter": "0.25ms", "jitter_reorder": True},
    "jitter-1": {"jitter": "1ms", "jitter_reorder": True},
    "jitter-4": {"jitter": "4ms", "jitter_reorder": True},
    "reorder-0.1%": {"reorder": 0.001},
    "reorder-1%": {"reorder": 0.01},
    "cellular": {"rate": None, "trace": "cellular"},
    "spike": {"rate": None, "trace": "SPIKE"},
    "delayspike": {"delay": "20ms", "delay_schedule": [["8s", "300ms"], ["8.5s", "20ms"]]},
    "clean-bdp": {"buffer": "BDP"},
    "clean-200": {},
}
ONLY: dict[str, tuple[str, ...]] = {"clean-bdp": ("cubic",), "clean-200": ("bbr",)}

SPIKE_RATE_BPS = 50e6
SPIKE_OUTAGES_S = ((8.0, 8.4), (14.0, 14.4))
SPIKE_PERIOD_S = 20.0


def spike_trace(folder: Path) -> Path:
    """Writes the delay-spike stand-in (mahimahi format: one 1500-byte delivery opportunity per line, in
    ms): 50 Mbit/s, an opportunity every 0.24 ms, none during the outages; 20 s, then it repeats."""
    path = folder / "spike-50mbps.trace"
    gap_ms = 1500 * 8 / SPIKE_RATE_BPS * 1e3
    times = np.arange(gap_ms, SPIKE_PERIOD_S * 1e3 + gap_ms / 2, gap_ms)
    keep = np.ones(len(times), dtype=bool)
    for a, b in SPIKE_OUTAGES_S:
        keep &= ~((times >= a * 1e3) & (times < b * 1e3))
    times = times[keep]
    text = "\n".join(f"{t:.3f}" for t in times) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def scenario(path: str, cc: str, transport: dict, seed: int, duration: float, measure: float, spike: Path) -> dict:
    link = {**BASE, **PATHS[path]}
    if link.get("trace") == "SPIKE":
        link["trace"] = str(spike)
    link = {k: v for k, v in link.items() if v is not None}
    return {
        "name": f"reorder-{path}-{cc.replace(':', '_')}",
        "duration": f"{duration:g}s",
        "seed": seed,
        "measure": [f"{measure:g}s", f"{duration:g}s"],
        **({"transport": transport} if transport else {}),
        "topology": {"kind": "dumbbell", "bottleneck": link},
        "flows": [{"cc": cc, "rtt": "40ms"}],
    }


def at(t: np.ndarray, v: np.ndarray, when: float) -> float:
    """The cumulative counter's value at the last sample at or before `when` (0 before the first)."""
    i = int(np.searchsorted(t, when, side="right")) - 1
    return float(v[i]) if i >= 0 else 0.0


def record(res, measure: float, duration: float) -> dict:
    """What the table needs from one run: goodput, retransmissions and the bottleneck's drops in the
    window, cclab's undo counters, and whether the real datapath flagged the run disturbed."""
    s = res.summary
    f = s["flows"][0]
    fr = res.flows[res.flows["flow"] == f["id"]]
    t = fr["t"].to_numpy(dtype=float)
    rx = fr["retransmits"].to_numpy(dtype=float)
    window_retx = at(t, rx, duration) - at(t, rx, measure)
    link = s["links"][0]
    netinfo = s.get("net") or {}
    return {
        "goodput_mbps": f["goodput_bps"] / 1e6,
        "utilization": link["utilization"],
        "retransmits_total": f["retransmits"],
        "window_retransmits": window_retx,
        "window_drops": link["drops"] + link.get("random_losses", 0),
        "spurious_est": window_retx - link["drops"] - link.get("random_losses", 0),
        "mean_rtt_ms": (f["mean_rtt"] or math.nan) * 1e3,
        "timeouts": f.get("timeouts"),
        "fast_recoveries": f.get("fast_recoveries"),
        "dsacks_received": f.get("dsacks_received"),
        "spurious_recoveries_undone": f.get("spurious_recoveries_undone"),
        "spurious_timeouts_undone": f.get("spurious_timeouts_undone"),
        "disturbed": bool(netinfo.get("disturbed")) if netinfo else None,
        "disturbance": (netinfo.get("disturbance") or {}).get("reasons") if netinfo else None,
        "load1": _load(),
    }


def _load() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return math.nan


def ci(xs: list[float]) -> str:
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return "–"
    m, _, _, h = spread(xs)
    if len(xs) == 1:
        return f"{m:.3g}"
    return f"{m:.2f} ± {h:.2f}" if abs(m) < 100 else f"{m:.0f} ± {h:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--measure", type=float, default=5.0)
    ap.add_argument("--seeds", default="1-5", help="the simulator's seeds")
    ap.add_argument("--real-runs", default="1-3", help="the real datapath's runs (their seeds)")
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--algos", default=",".join(ALGOS))
    ap.add_argument("--drivers", default=",".join(DRIVERS))
    ap.add_argument("--out", type=Path, default=HERE / "out" / "reordering")
    ap.add_argument("--table-only", action="store_true", help="print the table from the results kept, run nothing")
    a = ap.parse_args()

    def seeds(text: str) -> range:
        lo, _, hi = text.partition("-")
        return range(int(lo), int(hi or lo) + 1)

    a.out.mkdir(parents=True, exist_ok=True)
    spike = spike_trace(a.out)
    means: dict[tuple[str, str, str], tuple[float, float]] = {}  # (path, algo, driver) -> goodput, spurious
    print("| path | algorithm | driver | n | goodput (Mbit/s) | retransmissions | spurious (retx − drops) | D-SACKs | undone (fast/RTO) | disturbed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in a.paths.split(","):
        for algo in a.algos.split(","):
            if path in ONLY and algo not in ONLY[path]:
                continue
            sim_cc, kernel_cc = ALGOS[algo]
            for driver in a.drivers.split(","):
                real = driver in ("kernel", "ours-real")
                cc = kernel_cc if driver == "kernel" else sim_cc
                tr = {"sim-old": OLD, "sim-linux": LINUX, "kernel": {}, "ours-real": LINUX, **VARIANTS}[driver]
                rows = []
                for seed in seeds(a.real_runs if real else a.seeds):
                    slug = path.replace("%", "pct")
                    file = a.out / f"{slug}_{algo}_{driver}_s{seed}_d{a.duration:g}_m{a.measure:g}.json"
                    if file.exists():
                        rows.append(json.loads(file.read_text()))
                        continue
                    if a.table_only:
                        continue
                    d = scenario(path, cc, tr, seed, a.duration, a.measure, spike)
                    res = net.run(d, progress=False, plots=False) if real else cclab.run(d, progress=False, plots=False)
                    r = record(res, a.measure, a.duration)
                    # The run's time series beside it, for looking into a miss (cwnd, RTT, retransmissions).
                    res.to_dir(a.out / "runs" / file.stem, plots=False)
                    file.write_text(json.dumps(r))
                    rows.append(r)
                if not rows:
                    continue
                means[path, algo, driver] = (
                    float(np.mean([r["goodput_mbps"] for r in rows])),
                    float(np.mean([r["spurious_est"] for r in rows])),
                )
                own = driver != "kernel"
                und = (f"{ci([r['spurious_recoveries_undone'] for r in rows])} / {ci([r['spurious_timeouts_undone'] for r in rows])}") if own else "–"
                dist = f"{sum(bool(r['disturbed']) for r in rows)}/{len(rows)}" if real else "–"
                print(
                    f"| {path} | {algo} | {driver} | {len(rows)} | {ci([r['goodput_mbps'] for r in rows])} | "
                    f"{ci([r['window_retransmits'] for r in rows])} | {ci([r['spurious_est'] for r in rows])} | "
                    f"{ci([r['dsacks_received'] for r in rows]) if own else '–'} | {und} | {dist} |",
                    flush=True,
                )
    agreement(means, [d for d in a.drivers.split(",") if d != "kernel"])
    return 0


def spurious_ratio(x: float, linux: float) -> float:
    """x against Linux's spurious retransmissions per window, each floored at 1: "within 2x" of 0.3 and of 0
    both mean at most 2 (a count of a few in 15 s is noise, and no ratio of zeros exists)."""
    return max(x, 1.0) / max(linux, 1.0)


def agreement(means: dict[tuple[str, str, str], tuple[float, float]], drivers: list[str]) -> None:
    """Per path and algorithm, each driver's goodput difference to Linux's (target: within 15 %) and its
    spurious retransmissions as a multiple of Linux's (target: within 2x either way); then per driver the
    mean absolute goodput difference and the misses."""
    cases = sorted({(p, al) for p, al, d in means if d == "kernel"}, key=lambda c: (list(PATHS).index(c[0]), list(ALGOS).index(c[1])))
    drivers = [d for d in drivers if any((p, al, d) in means for p, al in cases)]
    if not cases or not drivers:
        return
    print()
    print("| path | algorithm | " + " | ".join(f"{d}: goodput vs Linux / spurious ×" for d in drivers) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in drivers) + " |")
    diffs: dict[str, list[float]] = {d: [] for d in drivers}
    miss_g: dict[str, list[str]] = {d: [] for d in drivers}
    miss_s: dict[str, list[str]] = {d: [] for d in drivers}
    for p, al in cases:
        kg, ks = means[p, al, "kernel"]
        cells = []
        for d in drivers:
            if (p, al, d) not in means:
                cells.append("–")
                continue
            g, sp = means[p, al, d]
            dg = (g - kg) / kg * 100
            ratio = spurious_ratio(sp, ks)
            diffs[d].append(abs(dg))
            if abs(dg) > 15:
                miss_g[d].append(f"{p}/{al}")
            if not 0.5 <= ratio <= 2:
                miss_s[d].append(f"{p}/{al}")
            mark = ("**" if abs(dg) > 15 else "", "**" if not 0.5 <= ratio <= 2 else "")
            cells.append(f"{mark[0]}{dg:+.1f} %{mark[0]} / {mark[1]}{ratio:.2g}×{mark[1]}")
        print(f"| {p} | {al} | " + " | ".join(cells) + " |")
    print()
    for d in drivers:
        n = len(diffs[d])
        print(
            f"{d}: {n} cases, mean |goodput difference| {np.mean(diffs[d]):.1f} %, max {max(diffs[d]):.1f} %; "
            f"goodput misses (> 15 %) {len(miss_g[d])}: {', '.join(miss_g[d]) or 'none'}; "
            f"spurious misses (outside 2×) {len(miss_s[d])}: {', '.join(miss_s[d]) or 'none'}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
