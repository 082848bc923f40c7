"""Paper-ready PNG plots of a run: per-flow goodput, congestion window, and queue vs time.

Every plot has labelled axes with units, a legend naming each flow's algorithm and RTT (up to 12 flows;
more are drawn without one), and the summary's measurement window shaded, so the numbers in
summary.json can be read off the figure they came from.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

# The object API, not pyplot: no global figure registry (safe to import from a background thread, see
# runner.run) and nothing to close.
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

MAX_LEGEND = 12


def _style(ax: Axes, ylabel: str, summary: dict) -> None:
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    m0, m1 = summary["measure"]
    ax.axvspan(m0, m1, color="0.5", alpha=0.08, lw=0, label="measurement window")


def _figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=(7, 4), dpi=150)
    FigureCanvasAgg(fig)
    # Fixed margins that fit the labels at this size: tight_layout would draw every figure twice.
    fig.subplots_adjust(left=0.10, right=0.97, bottom=0.12, top=0.92)
    return fig, fig.add_subplot()


def _save(fig: Figure, ax: Axes, out: Path, name: str, title: str, legend: bool) -> Path:
    if legend:
        # A fixed corner: loc="best" tests every candidate position against every line (~0.1 s/figure).
        ax.legend(fontsize=7, loc="upper right", framealpha=0.9)
    ax.set_title(title, fontsize=10)
    p = out / name
    fig.savefig(p)
    return p


def write_plots(flows: pd.DataFrame, links: pd.DataFrame, summary: dict, out: Path,
                spec: Optional[dict] = None) -> list[Path]:
    """Writes rate.png (goodput per flow), cwnd.png and queue.png into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    labels = {f["id"]: f"flow {f['id']}: {f['cc']}, {f['rtt'] * 1e3:g} ms" for f in summary["flows"]}
    legend = len(labels) <= MAX_LEGEND
    name = summary["scenario"]
    for col, ylabel, fname, scale, what in (
        ("rate_bps", "goodput (Mbit/s)", "rate.png", 1e-6, "goodput per flow"),
        ("cwnd", "congestion window (packets)", "cwnd.png", 1.0, "congestion window per flow"),
    ):
        fig, ax = _figure()
        for fid, g in flows.groupby("flow"):
            ax.plot(g["t"], g[col] * scale, lw=0.9, label=labels.get(int(fid), f"flow {fid}") if legend else None)
        _style(ax, ylabel, summary)
        paths.append(_save(fig, ax, out, fname, f"{name}: {what}", legend))

    fig, ax = _figure()
    shown = 0
    for lid, g in links.groupby("link"):
        if g["queue_pkts"].max() > 0 or lid == 0:
            line, = ax.plot(g["t"], g["queue_pkts"], lw=0.9, label=f"link {int(lid)}" if shown < MAX_LEGEND else None)
            shown += 1
            buf = (spec or {}).get("links", [{}] * (int(lid) + 1))[int(lid)].get("buffer_pkts")
            if buf:
                ax.axhline(buf, color=line.get_color(), ls="--", lw=0.8, alpha=0.7,
                           label=f"link {int(lid)} buffer ({buf} packets)" if shown <= MAX_LEGEND else None)
    _style(ax, "queue (packets)", summary)
    paths.append(_save(fig, ax, out, "queue.png", f"{name}: queue length", True))
    return paths
