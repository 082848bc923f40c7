"""The figures of ``cclab compare`` (docs/plots.md "Comparing runs"): several runs in one figure each, a
colour per label (run or scheme), a line style per algorithm.

* ``rate`` / ``cwnd`` — goodput / congestion window against time: with one run per label and at most
  :data:`FEW` lines, one line per flow; otherwise one line per label × algorithm, the mean over the group's
  flows and the label's runs at each sample, shaded with the 95 % CI of that mean over the runs;
* ``queue`` — link 0's queue as delay (queued bytes / link rate) against time, one line per label (the mean
  over its runs, shaded as above);
* ``cdf`` — CDF of the per-sample goodput of the flows in the measurement window, per label × algorithm;
* ``throughput_delay`` — Pantheon's view: one small point per run at (link 0's 95th-percentile queueing
  delay, goodput of its forward flows); per label of several runs the mean (large, outlined) and the ellipse
  of one standard deviation of its runs; the delay axis reversed (better is up and to the right).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Protocol

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..stats import t_quantile
from . import save
from ._style import cc_colors, cc_markers, finish, get_style, legend_outside, new_figure, note, rtt_styles, shade_window, si_axis, title
from .sweep import _cov_ellipse, pantheon_axes

if TYPE_CHECKING:
    from ..results import Result


class Run(Protocol):
    """What these figures need of a run to compare (:class:`cclab.compare.Run` is one): a legend label, the
    results, and the flows that send in the reverse direction (left out of the forward figures). A protocol,
    not that class, so that the figures do not import the command that draws them."""

    label: str
    result: Result
    reverse: set[int]


# Up to this many lines (flows of all runs) every flow is drawn; beyond, the groups' means.
FEW = 8
NAMES = ("rate", "cwnd", "queue", "cdf", "throughput_delay")


def _labels(runs: Sequence[Run]) -> list[str]:
    return list(dict.fromkeys(r.label for r in runs))


def _ccs(runs: Sequence[Run]) -> list[str]:
    return list(dict.fromkeys(f["cc"] for r in runs for f in r.result.summary.get("flows") or []))


def _sample_s(runs: Sequence[Run]) -> float:
    dt = runs[0].result.spec.get("sample_interval")
    return float(dt) if isinstance(dt, (int, float)) and dt > 0 else 0.1


def _mean_band(series: list[pd.Series], dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, mean, 95 % CI half-width) of series of several runs sampled every ``dt`` s: samples are matched
    to the nearest multiple of ``dt`` (a real run's sample times are late by up to milliseconds; two samples
    of one run that fall on one multiple are averaged, so each run has one value per time)."""
    df = pd.concat([s.groupby(np.round(s.index.to_numpy(dtype=float) / dt) * dt).mean().rename(i)
                    for i, s in enumerate(series)], axis=1).sort_index()
    n = df.notna().sum(axis=1).to_numpy()
    mean = df.mean(axis=1).to_numpy(dtype=float)
    std = df.std(axis=1, ddof=1).to_numpy(dtype=float)
    tq = np.array([t_quantile(0.975, int(k) - 1) if k >= 2 else math.nan for k in n])
    return df.index.to_numpy(dtype=float), mean, tq * std / np.sqrt(np.maximum(n, 1))


def _window(runs: Sequence[Run]) -> tuple[float, float]:
    m0, m1 = runs[0].result.summary["measure"]
    return float(m0), float(m1)


def _per_group(r: Run, col: str, cc: str) -> Optional[pd.Series]:
    """The mean over the run's forward flows of ``cc`` of column ``col`` per sample time."""
    f = r.result.flows
    if f.empty or col not in f:
        return None
    g = f[(f["cc"] == cc) & ~f["flow"].isin(r.reverse)]
    if g.empty or not g[col].notna().any():
        return None
    return g.groupby("t")[col].mean()


def _lines_figure(runs: Sequence[Run], col: str, what: str, unit: str, style: Optional[str]) -> Optional[Figure]:
    """``col`` against time, per flow or per label × algorithm (see the module); None when no run has it."""
    if not any(col in r.result.flows and r.result.flows[col].notna().any() for r in runs):
        return None
    labels, ccs = _labels(runs), _ccs(runs)
    colors, styles = cc_colors(labels), rtt_styles(ccs)
    fig, (ax,) = new_figure(height=4.2, style=get_style(style))
    title(fig, f"{what} over time")
    handles = []
    allv = np.concatenate([r.result.flows[col].to_numpy(dtype=float) for r in runs if col in r.result.flows])
    allv = allv[np.isfinite(allv)]
    if unit:  # one SI prefix for the axis, from the bulk of the samples
        scale = si_axis(ax, "y", unit, what, [float(np.quantile(allv, 0.99))] if allv.size else [])
    else:
        scale = 1.0
        ax.set_ylabel(what)
    n_lines = sum(r.result.flows["flow"].nunique() - len(r.reverse) for r in runs if not r.result.flows.empty)
    per_flow = len(labels) == len(runs) and n_lines <= FEW
    for r in runs if per_flow else []:
        f = r.result.flows[~r.result.flows["flow"].isin(r.reverse)]
        for fid, g in f.groupby("flow"):
            cc = str(g["cc"].iloc[0])
            ln, = ax.plot(g["t"], g[col].to_numpy(dtype=float) * scale, color=colors[r.label], ls=styles[cc], lw=1.0)
            ln.set_gid(f"flow:{r.label}|{fid}")
            handles.append(Line2D([], [], color=colors[r.label], ls=styles[cc], lw=1.2, label=f"{r.label}: {cc}, flow {fid}"))
    for lab in labels if not per_flow else []:
        mine = [r for r in runs if r.label == lab]
        for cc in ccs:
            series = [s for r in mine if (s := _per_group(r, col, cc)) is not None]
            if not series:
                continue
            t, mean, ci = _mean_band(series, _sample_s(runs))
            mean, ci = mean * scale, ci * scale
            ln, = ax.plot(t, mean, color=colors[lab], ls=styles[cc], lw=1.3)
            ln.set_gid(f"group:{lab}|{cc}")
            if len(series) > 1:
                band = ax.fill_between(t, mean - ci, mean + ci, where=np.isfinite(ci), color=colors[lab], alpha=0.1, lw=0)
                band.set_gid(f"band:{lab}|{cc}")
            nflows = max(sum(1 for f in r.result.summary["flows"] if f["cc"] == cc and int(f["id"]) not in r.reverse)
                         for r in mine)
            many = [f"{nflows} flows" if nflows > 1 else "", f"{len(series)} runs" if len(series) > 1 else ""]
            handles.append(Line2D([], [], color=colors[lab], ls=styles[cc], lw=1.4,
                                  label=f"{lab}: {cc}" + (f"\n  mean of {' × '.join(x for x in many if x)}"
                                                          if any(many) else "")))
    ax.set_ylim(0, None)
    ax.set_xlabel("time (s)")
    ax.grid(True, alpha=0.3)
    shade_window(ax, _window(runs))
    legend_outside(ax, handles)
    note(fig, ["Colour: run (label); line style: algorithm. Shaded: measurement window"
               + ("." if per_flow else "; band: 95 % CI of the mean over the label's runs (Student t)."),
               "Reverse-direction flows are not drawn."])
    return fig


def queue_figure(runs: Sequence[Run], style: Optional[str]) -> Optional[Figure]:
    """Link 0's queueing delay against time, one line per label."""
    labels = _labels(runs)
    colors = cc_colors(labels)
    fig, (ax,) = new_figure(height=3.6, style=get_style(style))
    title(fig, "queueing delay at link 0 over time")
    handles = []
    for lab in labels:
        series = []
        for r in (r for r in runs if r.label == lab):
            lk = r.result.links
            links = r.result.spec.get("links") or [{}]
            rate = links[0].get("rate_bps")
            if lk.empty or not rate or "queue_bytes" not in lk:
                continue
            g = lk[lk["link"] == 0]
            series.append(pd.Series(g["queue_bytes"].to_numpy(dtype=float) * 8.0 / float(rate) * 1e3,
                                    index=g["t"].to_numpy(dtype=float)))
        if not series:
            continue
        t, mean, ci = _mean_band(series, _sample_s(runs))
        ln, = ax.plot(t, mean, color=colors[lab], lw=1.1)
        ln.set_gid(f"queue:{lab}")
        if len(series) > 1:
            ax.fill_between(t, mean - ci, mean + ci, where=np.isfinite(ci), color=colors[lab], alpha=0.15, lw=0)
        handles.append(Line2D([], [], color=colors[lab], lw=1.4,
                              label=lab + (f" (mean of {len(series)} runs)" if len(series) > 1 else "")))
    if not handles:
        return None
    ax.set_ylim(0, None)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queueing delay (ms)")
    ax.grid(True, alpha=0.3)
    shade_window(ax, _window(runs))
    legend_outside(ax, handles)
    note(fig, ["Queued bytes at link 0 divided by its rate. Shaded: measurement window; band: 95 % CI of the "
               "mean over the label's runs."])
    return fig


def cdf_figure(runs: Sequence[Run], style: Optional[str]) -> Figure:
    """CDF of the forward flows' per-sample goodput in the measurement window, per label × algorithm."""
    labels, ccs = _labels(runs), _ccs(runs)
    colors, styles = cc_colors(labels), rtt_styles(ccs)
    fig, (ax,) = new_figure(height=3.8, style=get_style(style))
    title(fig, "throughput CDF (per-sample goodput of each flow, measurement window)")
    m0, m1 = _window(runs)
    handles, top = [], 0.0
    for lab in labels:
        for cc in ccs:
            x = []
            for r in (r for r in runs if r.label == lab):
                f = r.result.flows
                if f.empty:
                    continue
                w = f[(f["cc"] == cc) & ~f["flow"].isin(r.reverse) & (f["t"] >= m0 - 1e-9) & (f["t"] <= m1 + 1e-9)]
                x.append(w["rate_bps"].to_numpy(dtype=float))
            xs = np.sort(np.concatenate(x)) if x else np.array([])
            xs = xs[np.isfinite(xs)]
            if not xs.size:
                continue
            top = max(top, float(xs[-1]))
            ln, = ax.step(xs / 1e6, np.arange(1, xs.size + 1) / xs.size, where="post", color=colors[lab], ls=styles[cc], lw=1.3)
            ln.set_gid(f"cdf:{lab}|{cc}")
            handles.append(Line2D([], [], color=colors[lab], ls=styles[cc], lw=1.4, label=f"{lab}: {cc}"))
    ax.set_xlabel("goodput per sample (Mbit/s)")
    ax.set_ylabel("fraction of samples")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    legend_outside(ax, handles)
    note(fig, ["Each flow's goodput per sample interval in the measurement window, pooled over the label's "
               "flows of that algorithm and its runs."])
    return fig


def throughput_delay_figure(runs: Sequence[Run], style: Optional[str]) -> Figure:
    """Goodput of the forward flows against link 0's p95 queueing delay: a point per run, per label of
    several runs its mean and 1-σ ellipse; delay axis reversed."""
    labels = _labels(runs)
    colors, markers = cc_colors(labels), cc_markers(labels)
    fig, (ax,) = new_figure(height=4.4, style=get_style(style))
    title(fig, "throughput vs delay (one point per run; 1-σ ellipse per label)")
    handles = []
    for lab in labels:
        pts = []
        for r in (r for r in runs if r.label == lab):
            s = r.result.summary
            d = (s.get("links") or [{}])[0].get("p95_queue_delay_s")
            g = sum(float(f.get("goodput_bps") or 0.0) for f in s.get("flows") or [] if int(f["id"]) not in r.reverse)
            if d is not None:
                pts.append((float(d) * 1e3, g / 1e6))
        if not pts:
            continue
        x, y = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
        c, m = colors[lab], markers[lab]
        sc = ax.scatter(x, y, s=16 if len(pts) > 1 else 60, marker=m, color=c, alpha=0.6 if len(pts) > 1 else 1.0,
                        lw=0 if len(pts) > 1 else 1.0, edgecolors="black" if len(pts) == 1 else "none", zorder=3)
        sc.set_gid(f"runs:{lab}")
        if len(pts) > 1:
            big = ax.scatter([x.mean()], [y.mean()], s=90, marker=m, color=c, edgecolors="black", linewidths=1.0, zorder=5)
            big.set_gid(f"mean:{lab}")
            for kw, gid in (({"facecolor": c, "alpha": 0.18}, "ellipse"), ({"facecolor": "none"}, "ellipse-edge")):
                e = _cov_ellipse(x, y, edgecolor=c, lw=1.2, zorder=2 if gid == "ellipse" else 4, **kw)
                if e is not None:
                    e.set_gid(f"{gid}:{lab}")
                    ax.add_patch(e)
        handles.append(Line2D([], [], ls="", marker=m, markersize=8, markerfacecolor=c, markeredgecolor="black",
                              label=lab + (f" ({len(pts)} runs)" if len(pts) > 1 else "")))
    pantheon_axes(ax, 0.1)
    legend_outside(ax, handles)
    note(fig, ["Small: one run (its measurement window, summary.json). Large, outlined: the mean of a label's "
               "runs; ellipse: one standard deviation of those runs (covariance, ddof 1), as Pantheon draws it: "
               "the spread of single runs, not a confidence region of the mean. Better is up and to the right."])
    return fig


def write_figures(runs: Sequence[Run], out: Path, fmt: str = "png", style: Optional[str] = None) -> list[Path]:
    """Writes the comparison's figures into ``out`` as ``<name>.<fmt>``; a figure no run has data for
    (cwnd of runs without a window) is skipped. Returns the paths written."""
    figs = {
        "rate": _lines_figure(runs, "rate_bps", "goodput", "bit/s", style),
        "cwnd": _lines_figure(runs, "cwnd", "congestion window (packets)", "", style),
        "queue": queue_figure(runs, style),
        "cdf": cdf_figure(runs, style),
        "throughput_delay": throughput_delay_figure(runs, style),
    }
    paths = []
    for name, fig in figs.items():
        p = out / f"{name}.{fmt}"
        if fig is None:
            p.unlink(missing_ok=True)  # a figure of an earlier comparison in this folder is not this one's
            continue
        paths.append(save(finish(fig), p))
    return paths
