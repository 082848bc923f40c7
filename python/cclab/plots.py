"""Paper-ready PNG plots of a run: per-flow rate, congestion window, and queue vs time."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def _style(ax, ylabel: str) -> None:
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)


def write_plots(flows: pd.DataFrame, links: pd.DataFrame, summary: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    labels = {f["id"]: f"flow {f['id']} ({f['cc']}, {f['rtt'] * 1e3:g} ms)" for f in summary["flows"]}
    many = len(labels) > 12
    for col, ylabel, name, scale in (("rate_bps", "rate (Mbit/s)", "rate.png", 1e-6), ("cwnd", "cwnd (packets)", "cwnd.png", 1.0)):
        fig, ax = plt.subplots(figsize=(7, 4), dpi=150)
        for fid, g in flows.groupby("flow"):
            ax.plot(g["t"], g[col] * scale, lw=1, label=None if many else labels.get(int(fid), str(fid)))
        _style(ax, ylabel)
        if not many:
            ax.legend(fontsize=7, loc="best")
        ax.set_title(f"{summary['scenario']}: {ylabel.split(' (')[0]}")
        fig.tight_layout()
        p = out / name
        fig.savefig(p)
        plt.close(fig)
        paths.append(p)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=150)
    for lid, g in links.groupby("link"):
        if g["queue_pkts"].max() > 0 or lid == 0:
            ax.plot(g["t"], g["queue_pkts"], lw=1, label=f"link {int(lid)}")
    _style(ax, "queue (packets)")
    ax.legend(fontsize=7)
    ax.set_title(f"{summary['scenario']}: queue")
    fig.tight_layout()
    p = out / "queue.png"
    fig.savefig(p)
    plt.close(fig)
    paths.append(p)
    return paths
