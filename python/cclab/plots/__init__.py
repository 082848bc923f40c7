"""The figures of one run (docs/plots.md describes each), as PNG, PDF or SVG, in a screen or paper style:

* ``rate`` — goodput per flow vs time (a trace-driven link: its capacity over time above);
* ``cwnd`` — congestion window per flow vs time;
* ``queue`` — queue in packets and in ms, with the buffer limit and the queue discipline's own state
  (RED thresholds and average, MaxNet's price and load);
* ``throughput_delay`` — where delays differ, per flow and per algorithm × RTT group, goodput vs
  95th-percentile queueing delay (Pantheon's form, delay axis reversed); else goodput per flow per algorithm;
* ``cdf`` — CDFs of per-flow goodput and of RTT samples per algorithm.

Flows are coloured by algorithm and styled by RTT group; the legend has one entry per algorithm × RTT
group. With more than 8 flows of an algorithm (16 in all) each group is drawn as its median with a
p10–p90 band. The measurement window is shaded.

:func:`build_figures` returns the matplotlib Figures (tests inspect them); :func:`write_plots` saves them.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Union

# The object API, not pyplot: no global figure registry (safe to import from a background thread, see
# runner.run) and nothing to close.
from matplotlib.figure import Figure

from ._style import FORMATS, STYLES, Style, finish, get_style
from ._table import Table
from ._view import RunView, build_view
from .distributions import cdf_figure, throughput_delay_figure
from .timeseries import cwnd_figure, queue_figure, rate_figure

if TYPE_CHECKING:
    import pandas as pd

# A run's table: a pandas DataFrame (Result.flows, Result.links) or the NumPy columns the figures' process
# reads without pandas (_table.py).
Frame = Union["pd.DataFrame", Table]

FIGURES: dict[str, Callable[[RunView], Figure]] = {
    "rate.png": rate_figure,
    "cwnd.png": cwnd_figure,
    "queue.png": queue_figure,
    "throughput_delay.png": throughput_delay_figure,
    "cdf.png": cdf_figure,
}

__all__ = ["FIGURES", "FORMATS", "STYLES", "build_figures", "check_format", "write_plots"]


def check_format(fmt: str) -> str:
    """``fmt`` if it is one of :data:`FORMATS`; ValueError naming them otherwise."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


def build_figures(flows: Frame, links: Frame, summary: dict, spec: Optional[dict] = None,
                  names: Optional[list[str]] = None, style: Union[str, Style, None] = None) -> dict[str, Figure]:
    """The run's figures by file name (all of :data:`FIGURES`, or ``names``), not yet saved. ``style``:
    "screen" (default), "paper" (one column, 3.5 in) or "paper2" (two columns, 7 in), see docs/plots.md."""
    v = build_view(flows, links, summary, spec)
    v.style = get_style(style)
    return {n: finish(FIGURES[n](v)) for n in (names or list(FIGURES))}


def save(fig: Figure, path: Union[str, Path]) -> Path:
    """Saves a figure in the format of ``path``'s suffix (png, pdf or svg)."""
    p = Path(path)
    fmt = check_format(p.suffix.lstrip(".").lower())
    # zlib level 1 instead of Pillow's 6: 10 ms instead of 60 ms for the five figures of a run, for
    # files 12 % larger (691 KB against 618 KB; measured 2026-11-26). Decoded pixels are identical.
    kw: dict = {"pil_kwargs": {"compress_level": 1}} if fmt == "png" else {}
    if fmt == "pdf":
        kw["metadata"] = {"CreationDate": None}  # the same run gives the same bytes
    if fmt == "svg":
        kw["metadata"] = {"Date": None}
    fig.savefig(p, format=fmt, **kw)
    return p


def write_plots(flows: Frame, links: Frame, summary: dict, out: Path,
                spec: Optional[dict] = None, format: str = "png", style: Union[str, Style, None] = None,
                names: Optional[list[str]] = None) -> list[Path]:
    """Writes every figure of :data:`FIGURES` (or those of ``names``, in that order) into ``out`` as
    ``<name>.<format>``; returns their paths."""
    check_format(format)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    v = build_view(flows, links, summary, spec)
    v.style = get_style(style)
    return [save(finish(FIGURES[name](v)), out / f"{Path(name).stem}.{format}") for name in (names or list(FIGURES))]
