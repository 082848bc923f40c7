"""Shared look: one colour and marker per algorithm, one line style per RTT group, fixed-size figures with
the legend in a right-hand margin.

Speed: every figure is drawn once. No tight_layout / constrained layout (each draws the figure an extra
time), no legend loc="best" (it tests every candidate position against every line, ~0.1 s per figure):
margins are fixed in inches and the legend sits outside the axes at a fixed anchor.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter

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


# Marker per RTT group in the throughput-delay scatter (colour is the algorithm's): shapes that differ
# in outline, so nested hollow means of one colour remain told apart.
RTT_MARKERS = ["o", "s", "^", "D"]


def rtt_markers(labels: Sequence[str]) -> dict[str, str]:
    return {r: RTT_MARKERS[i % len(RTT_MARKERS)] for i, r in enumerate(labels)}


# SI prefixes from pico to tera: a value is shown with the largest prefix that keeps it >= 1.
_PREFIX = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"),
           (1e-12, "p")]


def si(x: float, unit: str, digits: int = 3) -> str:
    """``x`` (in the base unit: bit/s, s, B) with an SI prefix and at most ``digits`` significant digits,
    trailing zeros dropped: si(1e9, "bit/s") = "1 Gbit/s", si(0.1, "s") = "100 ms", si(0.100002, "s") =
    "100 ms", si(0, "s") = "0 s". Not finite: "–"."""
    if not isinstance(x, (int, float)) or not math.isfinite(x):
        return "–"
    if x == 0:
        return f"0 {unit}"
    a = abs(x)
    for f, p in _PREFIX:
        # Rounding first: 999.9 kbit/s at 3 digits is 1 Mbit/s, not "1e+03 kbit/s".
        if float(f"{a / f:.{digits}g}") >= 1.0 or f == _PREFIX[-1][0]:
            return f"{_num(x / f, digits)} {p}{unit}"
    raise AssertionError("unreachable")  # the loop ends on the smallest prefix


def _num(x: float, digits: int) -> str:
    """A number in plain notation with at most ``digits`` significant digits (no exponent below 1e6)."""
    s = f"{x:.{digits}g}"
    if "e" in s:  # %g switched to an exponent: write it out (e.g. 1e+03 -> 1000)
        s = f"{float(s):f}".rstrip("0").rstrip(".")
    return s


def si_prefix(values: Sequence[float]) -> tuple[float, str]:
    """The one prefix an axis uses for all its ticks: the largest that keeps the largest |value| >= 1.
    Returns (factor, prefix): divide the values by factor."""
    finite = [abs(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v) and v != 0]
    if not finite:
        return 1.0, ""
    top = max(finite)
    for f, p in _PREFIX:
        if top / f >= 1.0:
            return f, p
    return _PREFIX[-1]


def si_axis(ax: Axes, which: str, unit: str, label: str, values: Sequence[float], scale: float = 1.0) -> float:
    """Sets ``ax``'s ``which`` ("x" or "y") label to "label (prefix+unit)" with the prefix suited to
    ``values`` (in the base unit), and returns the factor to multiply base-unit data by before plotting
    (``scale`` = the factor the data already carries, e.g. 1e-6 for data in Mbit/s). Tick labels are
    plain numbers (no offset, no exponent)."""
    f, p = si_prefix(values)
    (ax.set_xlabel if which == "x" else ax.set_ylabel)(f"{label} ({p}{unit})")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: _num(x, 4)))
    return 1.0 / f


@dataclass(frozen=True)
class Style:
    """How a figure is laid out. ``screen`` (the default): 9 in wide with a right-hand margin of legend and
    notes and the run's name as title. ``paper`` / ``paper2``: one column (3.5 in) or two columns (7 in)
    of a paper, no notes, no title, the legend inside the axes' top (or below them), fonts for print."""

    name: str = "screen"
    width: float = WIDTH
    font: float = 7.0  # legend and tick text, points
    label_font: float = 10.0

    @property
    def paper(self) -> bool:
        return self.name != "screen"


STYLES = {
    "screen": Style(),
    # 8 pt ticks and legend at 3.5 in: about the 8-9 pt of a two-column paper's captions.
    "paper": Style("paper", 3.5, 6.5, 8.0),
    "paper2": Style("paper2", 7.0, 7.5, 9.0),
}
FORMATS = ("png", "pdf", "svg")


def get_style(style: str | Style | None) -> Style:
    """A Style by name; ValueError naming the allowed ones otherwise."""
    if style is None:
        return STYLES["screen"]
    if isinstance(style, Style):
        return style
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    return STYLES[style]


class CclabFigure(Figure):
    """A Figure that remembers its grid, title and style, so :func:`note` and :func:`legend_outside` can
    grow it with fixed margins."""

    grid: tuple[int, int, float, float] = (1, 1, 0.35, 0.75)  # nrows, ncols, gap_in, wgap_in
    title_text: Optional[Text] = None
    style: Style = STYLES["screen"]
    top_in: float = TOP_IN  # paper styles: grows to hold the legend above the axes


def new_figure(height: float = 4.0, nrows: int = 1, ncols: int = 1, sharex: bool = False,
               gap_in: float = 0.35, wgap_in: float = 0.75, width: float = WIDTH,
               style: Optional[Style] = None) -> tuple[CclabFigure, list[Axes]]:
    """A figure of width × height inches with a grid of axes and a LEGEND_IN right margin; returns the
    axes row by row. A paper style sets the width (one or two columns) and scales the height."""
    style = style or STYLES["screen"]
    if style.paper:
        # The screen heights are for a 5.85 in wide plot area; a column keeps a similar aspect, a little
        # flatter (a paper's figures are wide and short).
        height = round(height * (0.6 if style.width < 5 else 0.75), 2)
        width = style.width
        gap_in, wgap_in = gap_in * 0.7, min(wgap_in, 0.45) * 0.8
    fig = CclabFigure(figsize=(width, height), dpi=DPI)
    fig.style = style
    fig.top_in = 0.1 if style.paper else TOP_IN
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, sharex=sharex, squeeze=False)
    fig.grid = (nrows, ncols, gap_in, wgap_in)
    _layout(fig, height)
    return fig, [a for row in axes for a in row]


def _layout(fig: CclabFigure, height: float) -> None:
    """Margins fixed in inches, whatever the figure's height."""
    nrows, ncols, gap_in, wgap_in = fig.grid
    paper = fig.style.paper
    left, bottom, right = (0.5, 0.4, 0.2) if paper else (LEFT_IN, BOTTOM_IN, LEGEND_IN)
    width = float(fig.get_size_inches()[0])
    fig.set_size_inches(width, height)
    plot_h = height - bottom - fig.top_in
    plot_w = width - left - right
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                        top=1 - fig.top_in / height,
                        hspace=gap_in / ((plot_h - gap_in * (nrows - 1)) / nrows) if nrows > 1 else 0.2,
                        wspace=wgap_in / ((plot_w - wgap_in * (ncols - 1)) / ncols) if ncols > 1 else 0.2)
    if fig.title_text is not None:  # placed in figure fractions: keep it 0.08 in below the top
        fig.title_text.set_y(1 - 0.08 / height)


def finish(fig: Figure) -> Figure:
    """A paper style's fonts: tick labels and legends at the style's size, axis labels a little larger
    (set after drawing, as the figures set no sizes of their own there)."""
    style = getattr(fig, "style", STYLES["screen"])
    if not style.paper:
        return fig
    for ax in fig.axes:
        ax.tick_params(labelsize=style.font, length=2.5, pad=1.5)
        ax.xaxis.label.set_fontsize(style.label_font * 0.9)
        ax.yaxis.label.set_fontsize(style.label_font * 0.9)
        lg = ax.get_legend()
        if lg is not None:
            for t in lg.get_texts():
                t.set_fontsize(style.font)
    for t in fig.texts:
        t.set_fontsize(style.font)
    return fig


def shade_window(ax: Axes, window: tuple[float, float]) -> None:
    ax.axvspan(window[0], window[1], color="0.5", alpha=0.08, lw=0, zorder=0)


def time_axes(ax: Axes, ylabel: str, window: tuple[float, float], xlabel: bool = True) -> None:
    if xlabel:
        ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    shade_window(ax, window)


def legend_outside(ax: Axes, handles: list, labels: Optional[list[str]] = None, title: Optional[str] = None) -> None:
    """The legend in the right-hand margin, top-aligned with ``ax``; in a paper style, in columns above
    the figure's top axes (the top margin grows to hold it)."""
    kw = {} if labels is None else {"labels": labels}
    fig = ax.figure
    style = getattr(fig, "style", STYLES["screen"])
    if not style.paper or not isinstance(fig, CclabFigure):
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                  fontsize=7, title=title, title_fontsize=7, frameon=False, **kw)
        return
    top_ax = max(fig.axes, key=lambda a: a.get_position().y1)
    # One legend above the top row of axes, spanning the figure's width, for all the figure's panels.
    texts = list(labels) if labels is not None else [h.get_label() for h in handles]
    for old in list(fig.legends):
        handles = list(old.legend_handles) + list(handles)
        texts = [t.get_text() for t in old.get_texts()] + texts
        old.remove()
    kw = {"labels": texts}
    # Columns while the longest entry fits one: ~5.3 characters per inch at the style's font.
    longest = max((max(len(x) for x in str(t).split("\n")) for t in texts), default=0)
    ncol = max(1, min(2 if style.width < 5 else 3, int(style.width * 5.3 * 7 / style.font) // max(longest + 6, 1)))
    rows = sum(max(len(str(t).split("\n")) for t in texts[i:i + ncol]) for i in range(0, len(texts), ncol))
    h = float(fig.get_size_inches()[1]) - fig.top_in
    fig.top_in = 0.08 + rows * style.font / 72 * 1.45
    _layout(fig, h + fig.top_in)
    left = top_ax.get_position().x0
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(left, 1 - fig.top_in / fig.get_size_inches()[1]),
               bbox_transform=fig.transFigure, ncol=ncol, fontsize=style.font, frameon=False, borderaxespad=0.1,
               handlelength=2.2, columnspacing=1.0, handletextpad=0.4, labelspacing=0.25, borderpad=0.0, **kw)


# Heights in inches of one legend entry (7 pt, matplotlib's default spacing) and one note line (6.2 pt ×
# 1.25), to make room for both in the right-hand margin without drawing the figure to measure them.
LEGEND_ROW_IN, NOTE_ROW_IN = 0.165, 0.108
NOTE_WIDTH = 44  # characters per note line


def note(fig: CclabFigure, lines: Sequence[str]) -> None:
    """Explanatory text at the bottom of the right-hand margin, wrapped to fit it. Call after the legend:
    when legend and notes would overlap, the figure grows taller (its margins stay the same in inches).
    A paper style has no notes (the caption says what the notes would)."""
    if getattr(fig, "style", STYLES["screen"]).paper:
        return
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
    if fig.style.paper:
        return
    w, h = fig.get_size_inches()
    fig.title_text = fig.suptitle(text, fontsize=10, x=LEFT_IN / w, y=1 - 0.08 / h, ha="left", va="top")
