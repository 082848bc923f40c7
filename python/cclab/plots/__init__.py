"""Paper-ready PNG figures of one run (docs/plots.md describes each):

* ``rate.png`` — goodput per flow vs time;
* ``cwnd.png`` — congestion window per flow vs time;
* ``queue.png`` — queue in packets and in ms, with the buffer limit and the queue discipline's own state
  (RED thresholds and average, MaxNet's price and load);
* ``throughput_delay.png`` — per flow and per algorithm, goodput vs 95th-percentile queueing delay
  (Pantheon's form, delay axis reversed);
* ``cdf.png`` — CDFs of per-flow goodput and of RTT samples per algorithm.

Flows are coloured by algorithm (one colour per ``cc``) and styled by RTT group; the legend sits outside
the axes with one entry per algorithm × RTT group. An algorithm with more than 8 flows is drawn as thin
translucent per-flow lines plus a bold mean per flow of each group. The measurement window is shaded.

:func:`build_figures` returns the matplotlib Figures (tests inspect them); :func:`write_plots` saves them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import pandas as pd

# The object API, not pyplot: no global figure registry (safe to import from a background thread, see
# runner.run) and nothing to close.
from matplotlib.figure import Figure

from ._view import RunView, build_view
from .distributions import cdf_figure, throughput_delay_figure
from .timeseries import cwnd_figure, queue_figure, rate_figure

FIGURES: dict[str, Callable[[RunView], Figure]] = {
    "rate.png": rate_figure,
    "cwnd.png": cwnd_figure,
    "queue.png": queue_figure,
    "throughput_delay.png": throughput_delay_figure,
    "cdf.png": cdf_figure,
}

__all__ = ["FIGURES", "build_figures", "write_plots"]


def build_figures(flows: pd.DataFrame, links: pd.DataFrame, summary: dict, spec: Optional[dict] = None,
                  names: Optional[list[str]] = None) -> dict[str, Figure]:
    """The run's figures by file name (all of :data:`FIGURES`, or ``names``), not yet saved."""
    v = build_view(flows, links, summary, spec)
    return {n: FIGURES[n](v) for n in (names or list(FIGURES))}


def write_plots(flows: pd.DataFrame, links: pd.DataFrame, summary: dict, out: Path,
                spec: Optional[dict] = None) -> list[Path]:
    """Writes every figure of :data:`FIGURES` into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    v = build_view(flows, links, summary, spec)
    paths = []
    for name, build in FIGURES.items():
        p = out / name
        # zlib level 1 instead of Pillow's 6: 10 ms instead of 60 ms for the five figures of a run, for
        # files 12 % larger (691 KB against 618 KB; measured 2026-11-26). Decoded pixels are identical.
        build(v).savefig(p, pil_kwargs={"compress_level": 1})
        paths.append(p)
    return paths
