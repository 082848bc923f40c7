#!/usr/bin/env python3
"""The papers' own rates over the real datapath, beside the simulator (root).

    sudo .venv/bin/python validation/real_paper_rates.py [--cases m1,m2,f2] [--seeds 1-3] [--out DIR]

Cases (the scenario files of `cclab reproduce`, at the papers' rates):

- m1: TCP MaxNet alone on a MaxNet-router link, 1 Gbit/s, 28 ms, one BDP of buffer, 10 s
  (`scenarios/maxnet_m1.toml`, already the thesis's size);
- m2: a second MaxNet flow joins at 13 s and leaves at 27 s, 40 s (`scenarios/maxnet_m2.toml`);
- f2: FAST's dynamic scenario I at the paper's 800 Mbit/s with its 2 000-packet buffer and α = 200
  (`scenarios/fast_f2.toml` is scaled to 100 Mbit/s and α = 25; this puts the paper's values back),
  three flows at 100/150/200 ms joining and leaving in 60 s phases, 300 s.

Each runs on the real datapath (our UDP transport and the MaxNet router inside the emulator) and in the
simulator, with the same seeds. Per phase of fixed composition (its second half, as the reproduction
measures it): utilisation, each active flow's goodput, Jain's index, mean queue and drops; mean over
seeds with its 95 % confidence interval. Also the real runs' emulator lateness and disturbance. Results
are kept as JSON per run in `--out` (an interrupted run resumes) and the table is written to
`--out/table.md`; docs/real-datapath.md has the table this printed.
"""
from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

import cclab
from cclab import net
from cclab.reproduce import window as w
from cclab.reproduce.phases import phases, second_half
from cclab.results import Result
from cclab.stats import spread

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


def scenario(case: str) -> dict:
    file = {"m1": "maxnet_m1.toml", "m2": "maxnet_m2.toml", "f2": "fast_f2.toml"}[case]
    d = tomllib.loads((ROOT / "scenarios" / file).read_text())
    if case == "f2":
        d["name"] = "fast-f2-dynamic-paper-rate"
        d["topology"]["bottleneck"].update(rate="800Mbps", buffer=2000)
        for f in d["flows"]:
            f["params"] = {"alpha": 200}
    return d


def measure(r: Result) -> dict:
    """Per phase (second half): utilisation, goodputs, Jain, queue, drops."""
    out = []
    for t0, t1, active in phases(r):
        a, b = second_half(t0, t1)
        out.append({"t": [t0, t1], "active": active, "util": w.utilization(r, a, b),
                    "goodput": w.goodputs(r, active, a, b), "jain": w.jain_of(r, active, a, b),
                    "queue": w.mean_queue(r, a, b), "drops": w.drops(r, a, b)})
    emu = r.summary.get("net", {}).get("emulator", {})
    return {"phases": out, "late_p99_us": emu.get("window_late_p99_ns", 0) / 1e3 if emu else None,
            "disturbed": r.summary.get("net", {}).get("disturbed"), "warnings": r.summary.get("warnings", [])}


def run_one(case: str, driver: str, seed: int, out: Path) -> dict:
    path = out / f"{case}-{driver}-{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    d = scenario(case)
    r = net.run(d, seed=seed, progress=False, plots=False) if driver == "real" else \
        cclab.run(d, seed=seed, progress=False, plots=False)
    m = measure(r)
    path.write_text(json.dumps(m))
    return m


def fmt(xs: list[float], scale: float = 1.0, nd: int = 1) -> str:
    m, _, _, h = spread([x * scale for x in xs])
    return f"{m:.{nd}f}" if len(xs) < 2 else f"{m:.{nd}f} ± {h:.{nd}f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="m1,m2,f2")
    ap.add_argument("--seeds", default="1-3", help="a-b or a,b,c (f2 uses the first only: 300 s each)")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "real_paper_rates")
    a = ap.parse_args()
    ok, why = net.check()
    if not ok:
        print(f"skipped: {why}")
        return 0
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi) + 1)) if hi else [int(s) for s in a.seeds.split(",")]
    a.out.mkdir(parents=True, exist_ok=True)
    lines = ["| case | phase (s) | flows | driver | utilisation | goodput per flow (Mbit/s) | Jain | mean queue "
             "(pkts) | drops | lateness p99 (µs) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case in a.cases.split(","):
        case_seeds = seeds[:1] if case == "f2" else seeds
        res = {drv: [run_one(case, drv, s, a.out) for s in case_seeds] for drv in ("real", "sim")}
        for k in range(len(res["sim"][0]["phases"])):
            for drv in ("real", "sim"):
                ph = [m["phases"][k] for m in res[drv] if k < len(m["phases"])]
                p = ph[0]
                gp = " / ".join(fmt([q["goodput"][i] for q in ph], 1e-6) for i in range(len(p["active"])))
                late = "" if drv == "sim" else fmt([m["late_p99_us"] for m in res[drv]], nd=0)
                if drv == "real" and any(m["disturbed"] for m in res[drv]):
                    late += " (disturbed)"
                line = (f"| {case} ({len(case_seeds)} seed{'s' if len(case_seeds) > 1 else ''}) | "
                        f"{p['t'][0]:.0f}–{p['t'][1]:.0f} | {','.join(map(str, p['active']))} | {drv} | "
                        f"{fmt([q['util'] for q in ph], nd=3)} | {gp} | {fmt([q['jain'] for q in ph], nd=3)} | "
                        f"{fmt([q['queue'] for q in ph])} | {fmt([q['drops'] for q in ph], nd=0)} | {late} |")
                lines.append(line)
                print(line, flush=True)
    (a.out / "table.md").write_text("\n".join(lines) + "\n")
    print(f"table: {a.out / 'table.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
