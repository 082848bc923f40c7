#!/usr/bin/env python3
"""The found shrew attack against Kuzmanovic & Knightly's model: the best candidate's burst (length and rate)
repeated at every period from 0.2 to 3 s in 10 ms steps (the burst rate cut to the 20 % mean-rate budget as the
search cuts it), the flow's goodput over its goodput without the attacker, beside the model's
rho(T) = (ceil(minRTO/T)·T − minRTO) / (ceil(minRTO/T)·T) (zero at T = minRTO/k) and the period the search found.

    .venv/bin/python searches/shrew_period_scan.py results/shrew docs/search-shrew-period.png
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))


def main(out: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from cclab import search
    from cclab.runner import run

    res = json.loads((out / "result.json").read_text())
    s = search.load(ROOT / "searches" / "shrew.toml")
    best, base = res["best"]["values"], res["baseline"]
    burst, rate = best["adversary[0].burst"], best["adversary[0].rate"]
    periods = np.round(np.arange(0.2, 3.0001, 0.01), 3)
    got = []
    for t in periods:
        x = [(t - d.lo) / (d.hi - d.lo) if d.name == "period" else
             (burst - d.lo) / (d.hi - d.lo) if d.name == "burst" else (rate - d.lo) / (d.hi - d.lo) for d in s.dims]
        scen = search.scenario_of(s, search.decode(s, x))
        got.append(run(scen, None, progress=False).summary["flows"][0]["goodput_bps"] / base)
    min_rto = 1.0
    model = [(math.ceil(min_rto / t) * t - min_rto) / (math.ceil(min_rto / t) * t) for t in periods]
    np.savetxt(png.with_suffix(".csv"), np.c_[periods, got, model], delimiter=",", header="period_s,measured,model",
               comments="", fmt="%.4f")
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.plot(periods, got, lw=1, label=f"simulated (burst {burst * 1e3:.0f} ms at up to {rate / 1e6:.1f} Mbit/s)")
    ax.plot(periods, model, lw=1, ls="--", color="grey", label="model ρ(T), minRTO = 1 s")
    ax.axvline(best["adversary[0].period"], color="red", lw=1, label=f"found: T = {best['adversary[0].period']:.3f} s")
    ax.set_xlabel("attack period T (s)")
    ax.set_ylabel("goodput / goodput without attack")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png} and {png.with_suffix('.csv')}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
