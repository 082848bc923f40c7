"""Shared look: one colour and marker per algorithm, one line style per RTT group, fixed-size figures with
the legend in a right-hand margin.

Speed: every figure is drawn once. No tight_layout / constrained layout (each draws the figure an extra
time), no legend loc="best" (it tests every candidate position against every line, ~0.1 s per figure):
margins are fixed in inches and the legend sits outside the axes at a fixed anchor.
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Optional

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

DPI = 150
WIDTH = 9.0  # inches
LEGEND_IN = 2.45  # right-hand margin holding the legend and the notes, inches
LEFT_IN, BOTTOM_IN, TOP_IN = 0.7, 0.5, 0.35

# Matplotlib's tab10, reordered so the first colours are far apart; tab20's light halves follow.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f", "#aec7e8", "#ff9896", "#98df8a", "#ffbb78", "#c5b0d5", "#c49c94"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
LINESTYLES = ["-", "--", ":", "-."]
REF = "0.35"  # colour of reference lines (link rate, buffer, thresholds)


def cc_colors(ccs: Sequence[str]) -> dict[str, str]:
    return {cc: PALETTE[i % len(PALETTE)] for i, cc in enumerate(ccs)}


def cc_markers(ccs: Sequence[str]) -> dict[str, str]:
    return {cc: MARKERS[i % len(MARKERS)] for i, cc in enumerate(ccs)}


def rtt_styles(labels: Sequence[str]) -> dict[str, str]:
    return {r: LINESTYLES[i % len(LINESTYLES)] for i, r in enumerate(labels)}


class CclabFigure(Figure):
    """A Figure that remembers its grid and title, so :func:`note` can grow it with fixed margins."""

    grid: tuple[int, int, float, float] = (1, 1, 0.35, 0.75)  # nrows, ncols, gap_in, wgap_in
    title_text: Optional[Text] = None


def new_figure(height: float = 4.0, nrows: int = 1, ncols: int = 1, sharex: bool = False,
               gap_in: float = 0.35, wgap_in: float = 0.75, width: float = WIDTH) -> tuple[CclabFigure, list[Axes]]:
    """A figure of width × height inches with a grid of axes and a LEGEND_IN right margin; returns the
    axes row by row."""
    fig = CclabFigure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, sharex=sharex, squeeze=False)
    fig.grid = (nrows, ncols, gap_in, wgap_in)
    _layout(fig, height)
    return fig, [a for row in axes for a in row]


def _layout(fig: CclabFigure, height: float) -> None:
    """Margins fixed in inches, whatever the figure's height."""
    nrows, ncols, gap_in, wgap_in = fig.grid
    width = float(fig.get_size_inches()[0])
    fig.set_size_inches(width, height)
    plot_h = height - BOTTOM_IN - TOP_IN
    plot_w = width - LEFT_IN - LEGEND_IN
    fig.subplots_adjust(left=LEFT_IN / width, right=1 - LEGEND_IN / width, bottom=BOTTOM_IN / height,
                        top=1 - TOP_IN / height,
                        hspace=gap_in / ((plot_h - gap_in * (nrows - 1)) / nrows) if nrows > 1 else 0.2,
                        wspace=wgap_in / ((plot_w - wgap_in * (ncols - 1)) / ncols) if ncols > 1 else 0.2)
    if fig.title_text is not None:  # placed in figure fractions: keep it 0.08 in below the top
        fig.title_text.set_y(1 - 0.08 / height)


def shade_window(ax: Axes, window: tuple[float, float]) -> None:
    ax.axvspan(window[0], window[1], color="0.5", alpha=0.08, lw=0, zorder=0)


def time_axes(ax: Axes, ylabel: str, window: tuple[float, float], xlabel: bool = True) -> None:
    if xlabel:
        ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    shade_window(ax, window)


def legend_outside(ax: Axes, handles: list, labels: Optional[list[str]] = None, title: Optional[str] = None) -> None:
    """The legend in the right-hand margin, top-aligned with ``ax``."""
    kw = {} if labels is None else {"labels": labels}
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              fontsize=7, title=title, title_fontsize=7, frameon=False, **kw)


# Heights in inches of one legend entry (7 pt, matplotlib's default spacing) and one note line (6.2 pt ×
# 1.25), to make room for both in the right-hand margin without drawing the figure to measure them.
LEGEND_ROW_IN, NOTE_ROW_IN = 0.165, 0.108
NOTE_WIDTH = 44  # characters per note line


def note(fig: CclabFigure, lines: Sequence[str]) -> None:
    """Explanatory text at the bottom of the right-hand margin, wrapped to fit it. Call after the legend:
    when legend and notes would overlap, the figure grows taller (its margins stay the same in inches)."""
    text = "\n".join(textwrap.fill(s, NOTE_WIDTH) for s in lines if s)
    w, h = fig.get_size_inches()
    legend_rows = 0
    for ax in fig.axes:
        lg = ax.get_legend()
        if lg is not None:
            rows = sum(t.get_text().count("\n") + 1 for t in lg.get_texts())
            legend_rows = max(legend_rows, rows + (1 if lg.get_title().get_text() else 0))
    need = TOP_IN + legend_rows * LEGEND_ROW_IN + 0.25 + (text.count("\n") + 1) * NOTE_ROW_IN + 0.1 \
        if text else 0.0
    if need > h:
        h = need
        _layout(fig, h)
    if text:
        fig.text(1 - (LEGEND_IN - 0.25) / w, 0.08 / h, text, fontsize=6.2, va="bottom", ha="left",
                 color="0.2", linespacing=1.25)


def title(fig: CclabFigure, text: str) -> None:
    w, h = fig.get_size_inches()
    fig.title_text = fig.suptitle(text, fontsize=10, x=LEFT_IN / w, y=1 - 0.08 / h, ha="left", va="top")
