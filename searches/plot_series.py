#!/usr/bin/env python3
"""A run's time series, some flow and link columns in stacked panels over a time window: the figures of
docs/search.md that trace a search's best candidate (e.g. FAST's base_rtt per flow, Madison's sending rate against
the queue). Columns are those of the run's timeseries.parquet (docs/scenario.md, "Run output").

    .venv/bin/python searches/plot_series.py RUN_DIR OUT.png --flow rate_bps,fast.base_rtt --link queue_pkts \
        [--from 20 --to 24] [--flows 0,1] [--title TEXT]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--flow", default="", help="flow columns, comma-separated (one panel each)")
    ap.add_argument("--link", default="", help="link columns of link 0, comma-separated (one panel each)")
    ap.add_argument("--from", dest="t0", type=float, default=None)
    ap.add_argument("--to", dest="t1", type=float, default=None)
    ap.add_argument("--flows", default="", help="flow ids to draw, comma-separated [all]")
    ap.add_argument("--title", default="")
    a = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    t = pd.read_parquet(a.run / "timeseries.parquet")
    if a.t0 is not None:
        t = t[t.t >= a.t0]
    if a.t1 is not None:
        t = t[t.t <= a.t1]
    panels = [("flow", c) for c in a.flow.split(",") if c] + [("link", c) for c in a.link.split(",") if c]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 1.9 * len(panels) + 0.6), sharex=True, squeeze=False)
    for ax, (kind, col) in zip(axes[:, 0], panels):
        rows = t[t.kind == kind]
        ids = ([int(x) for x in a.flows.split(",")] if a.flows else sorted(rows.id.unique())) if kind == "flow" else [0]
        for i in ids:
            r = rows[rows.id == i]
            # bit/s in Mbit/s, seconds in ms: the units the docs quote
            scale, unit = (1e-6, " (Mbit/s)") if col.endswith("bps") else (1e3, " (ms)") if col.endswith(
                ("rtt", "_s", ".q")) else (1.0, "")
            ax.plot(r.t, r[col] * scale, lw=1, label=f"{kind} {i}" if kind == "flow" else None)
        ax.set_ylabel(col + unit, fontsize=8)
        ax.grid(alpha=0.3)
        if kind == "flow":
            ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    if a.title:
        axes[0, 0].set_title(a.title, fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
