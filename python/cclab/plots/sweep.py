"""Figures of a sweep (``cclab plot SWEEPDIR``, ``cclab sweep FILE --plot``; docs/sweep.md, "Plots"):

* :func:`metric_figure` — a metric against a grid key: per line (a value of ``hue``, and of every other
  grid key that varies: points are never pooled across grid points) the mean over seeds at each x, with the
  95 % confidence interval of that mean as error bars (Student t, n − 1 degrees of freedom). A grid key whose
  values carry units is drawn on a numeric axis (``cclab.sweep.quantity``).
* :func:`throughput_delay_figure` — Pantheon's view across seeds: each run (seed) a small point at (link 0's
  95th-percentile queueing delay, goodput of all flows), each grid point its mean (large marker) and the
  ellipse of one standard deviation of its runs (the seeds' covariance, ddof 1: the spread of single runs,
  as Pantheon draws it, not a confidence region of the mean), coloured by algorithm (or ``hue``); the delay
  axis is reversed so that better is up and to the right.

The figures take the sweep's table (``cclab.sweep.table``) and return matplotlib Figures (tests inspect
them); :func:`write_sweep_plots` saves both for a sweep folder.
"""
from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Ellipse

from .. import sweep as sw
from ..errors import show
from ..scenario import ScenarioError
from ._style import cc_colors, cc_markers, legend_outside, new_figure, note, title

# How a metric column of the table is labelled and scaled on an axis.
METRICS: dict[str, tuple[str, float]] = {
    "goodput_mbps": ("goodput, forward flows (Mbit/s)", 1.0),
    "goodput_mbps_reverse": ("goodput, reverse-direction flows (Mbit/s)", 1.0),
    "jain": ("Jain's fairness index", 1.0),
    "utilization": ("utilisation of link 0", 1.0),
    "loss_rate": ("loss rate of link 0", 1.0),
    "drops": ("drops at link 0 (packets)", 1.0),
    "mean_queue_pkts": ("mean queue of link 0 (packets)", 1.0),
    "p95_queue_delay_s": ("95th-percentile queueing delay of link 0 (ms)", 1e3),
    "wall_s": ("simulation wall time (s)", 1.0),
}
_FLOW = re.compile(r"goodput_mbps_flow(\d+)$")


def metric_label(m: str, t: Optional[pd.DataFrame] = None) -> tuple[str, float]:
    """(axis label, scale) of a table column (a derived metric of table ``t``: its label or definition)."""
    if m in METRICS:
        return METRICS[m]
    f = _FLOW.match(m)
    if f:
        return (f"goodput of flow {f.group(1)} (Mbit/s)", 1.0)
    words = (t.attrs.get("derived_labels") or {}).get(m) if t is not None else None
    return (f"{m}: {words}" if words and words != m else m, 1.0)


def key_label(key: str) -> str:
    """A grid key said in words for axes and legends: ``flows[1].params.k`` → ``k of flow 1`` (the
    scenario's ``[[flows]]`` entry 1), ``flows[*].rtt`` → ``rtt of every flow``, ``flows[0].cc`` →
    ``algorithm of flow 0``, ``topology.bottleneck.rate`` → ``bottleneck rate``; other keys as written."""
    m = re.fullmatch(r"flows\[(\d+|\*)\]\.(?:params\.|transport\.)?([\w.]+)", key)
    if m:
        who = "every flow" if m.group(1) == "*" else f"flow {m.group(1)}"
        return f"{'algorithm' if m.group(2) == 'cc' else m.group(2)} of {who}"
    m = re.fullmatch(r"topology\.(\w+)\.(\w+)", key)
    if m:
        return f"{m.group(1)} {m.group(2)}"
    return key[len("transport."):] if key.startswith("transport.") else key


def _keys_label(keys: list[str]) -> str:
    return ", ".join(key_label(k) for k in keys)


def display_unit(unit: Optional[str], values: np.ndarray) -> tuple[float, str]:
    """(scale, unit text) to show grid values given in ``unit`` (SI) on an axis: Mbit/s, ms, KB, …"""
    big = float(np.nanmax(np.abs(values))) if len(values) and np.isfinite(values).any() else 0.0
    if unit == "bit/s":
        for scale, name in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
            if big >= scale:
                return 1.0 / scale, name
        return 1.0, "bit/s"
    if unit == "s":
        return (1e3, "ms") if big < 1.0 else (1.0, "s")
    if unit == "B":
        for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
            if big >= scale:
                return 1.0 / scale, name
        return 1.0, "B"
    if unit == "BDP":
        return 1.0, "× BDP"
    if unit == "pkts":
        return 1.0, "packets"
    return 1.0, ""


def varying(t: pd.DataFrame) -> list[str]:
    """The grid keys of the table that take more than one value."""
    return [k for k in sw.grid_keys(t) if sw.labels(t, k).nunique(dropna=False) > 1]


def _q(name: str) -> str:
    """A key the user gave, quoted as Python does ('x'); cut when long (a 100,000-character key was quoted whole)."""
    return repr(name) if len(name) <= 80 else show(name)


def _check(t: pd.DataFrame, x: Optional[str], y: Optional[str], hue: Optional[str]) -> None:
    keys = sw.grid_keys(t)
    for what, k in (("x", x), ("hue", hue)):
        if k is not None and k not in keys:
            raise ScenarioError([(what, f"{_q(k)} is not a grid key of this sweep; grid keys: "
                                        + (", ".join(keys) or "none (the sweep has no grid)"))])
    if y is not None and y not in metrics(t):
        raise ScenarioError([("y", f"{_q(y)} is not a metric of the sweep's table; metrics: {', '.join(metrics(t))}")])


def metrics(t: pd.DataFrame) -> list[str]:
    """The numeric columns of the table after the grid and the seed: what ``y`` may be."""
    cols = list(t.columns)
    after = cols[cols.index("seed") + 1:] if "seed" in cols else cols
    return [c for c in after if pd.api.types.is_numeric_dtype(t[c])]


def default_x(t: pd.DataFrame) -> Optional[str]:
    """The first varying grid key with numbers (units), else the first varying grid key, else None."""
    v = varying(t)
    num = [k for k in v if pd.api.types.is_numeric_dtype(t[k])]
    pick = num or v
    return pick[0] if pick else None


def default_hue(t: pd.DataFrame, x: Optional[str] = None) -> Optional[str]:
    """A varying grid key naming an algorithm (``….cc``) other than ``x``, else the first varying key other
    than ``x``, else None."""
    v = [k for k in varying(t) if k != x]
    cc = [k for k in v if k.split(".")[-1] == "cc"]
    pick = cc or v
    return pick[0] if pick else None


def _independent(t: pd.DataFrame, fixed: list[str], candidates: list[str]) -> list[str]:
    """The candidates that still vary once ``fixed`` and the candidates kept before them are known: a key
    linked to another ("k, l" set together in the grid) adds no line, marker or legend entry of its own."""
    keep: list[str] = []
    for c in candidates:
        by = [k for k in (*fixed, *keep) if k]
        lab = sw.labels(t, c).astype(str)
        if by:
            grouped = lab.groupby([sw.labels(t, k).astype(str) for k in by]).nunique()
            if int(grouped.max()) <= 1:
                continue
        elif lab.nunique() <= 1:
            continue
        keep.append(c)
    return keep


def _wrap(text: str) -> str:
    return textwrap.fill(text, 40)


def _span(n: Any) -> str:
    """"3" or "2–3": the range of a list of counts."""
    vals = [int(v) for v in n]
    if not vals:
        return "0"
    lo, hi = min(vals), max(vals)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def _groups(t: pd.DataFrame, keys: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per combination of ``keys``' values, in numeric/grid order; the label joins the values
    as written ("cubic, 40ms")."""
    if not keys:
        return [("all runs", t)]
    num = [k for k in keys if pd.api.types.is_numeric_dtype(t[k])]
    order = t.sort_values(num, kind="stable") if num else t  # numbers in order, names in grid order
    lab = pd.Series([", ".join(vals) for vals in zip(*(sw.labels(order, k).astype(str) for k in keys))],
                    index=order.index)
    return [(name, order.loc[lab == name]) for name in dict.fromkeys(lab)]


def metric_figure(t: pd.DataFrame, x: str, y: str = "goodput_mbps", hue: Optional[str] = None,
                  name: str = "") -> Figure:
    """``y``'s mean over seeds against grid key ``x``, with 95 % CI error bars, one line per value of
    ``hue`` (and of every other varying grid key)."""
    _check(t, x, y, hue)
    line_keys = _independent(t, [x], ([hue] if hue else []) + [k for k in varying(t) if k not in (x, hue)])
    lines = _groups(t, line_keys)
    colors, markers = cc_colors([lab for lab, _ in lines]), cc_markers([lab for lab, _ in lines])
    ylabel, yscale = metric_label(y, t)
    numeric = pd.api.types.is_numeric_dtype(t[x])
    unit = sw.grid_unit(t, x)
    xscale, xunit = display_unit(unit, t[x].to_numpy(dtype=float)) if numeric else (1.0, "")
    cats = list(dict.fromkeys(sw.labels(t, x).astype(str))) if not numeric else []

    fig, (ax,) = new_figure(height=4.4)
    title(fig, f"{name + ': ' if name else ''}{ylabel.split(' (')[0]} vs {key_label(x)} (mean ± 95 % CI over seeds)")
    handles = []
    n_seen: list[int] = []
    for lab, rows in lines:
        s = sw.summarize(rows, [y], by=[x])
        if numeric:
            xs = s[x].to_numpy(dtype=float) * xscale
        else:
            xs = np.array([cats.index(str(v)) for v in sw.labels(s, x)], dtype=float)
        mean, ci = s[f"{y}_mean"].to_numpy() * yscale, s[f"{y}_ci95"].to_numpy() * yscale
        n_seen += [int(v) for v in s["n"]]
        cont = ax.errorbar(xs, mean, yerr=ci, color=colors[lab], marker=markers[lab], markersize=5, lw=1.4,
                           capsize=3.5, elinewidth=1.1, label=lab)
        cont.lines[0].set_gid(f"line:{lab}")
        handles.append(cont)
    ax.set_xlabel(f"{key_label(x)} ({xunit})" if xunit else key_label(x))
    ax.set_ylabel(ylabel)
    if not numeric:
        ax.set_xticks(range(len(cats)), cats)
        ax.set_xlim(-0.5, len(cats) - 0.5)
    ax.grid(True, alpha=0.3)
    legend_outside(ax, handles, title=_wrap(_keys_label(line_keys)) if line_keys else None)
    note(fig, [
        f"Marker: the mean over seeds at one grid point ({_span(n_seen)} runs each). Bar: "
        "the 95 % confidence interval of that mean, ± t(0.975, n − 1) · std / √n (Student t; none with one "
        "seed). Numbers in summary.csv.",
        (f"One line per value of {_keys_label(line_keys)}: grid points are never pooled." if line_keys else ""),
        (f"x: the grid values ({', '.join(cats if not numeric else [])}) in grid order." if not numeric else
         (f"x: the grid values converted from their units to {xunit}." if unit else "")),
    ])
    return fig


def _cov_ellipse(x: np.ndarray, y: np.ndarray, **kw: Any) -> Optional[Ellipse]:
    """The one-standard-deviation ellipse of the points (x, y): centred on their mean, axes along the
    eigenvectors of their covariance (ddof 1), half-axes the square roots of its eigenvalues. None with
    fewer than two points."""
    if len(x) < 2:
        return None
    cov = np.cov(np.vstack([x, y]), ddof=1)
    vals, vecs = np.linalg.eigh(cov)
    vals = np.clip(vals, 0.0, None)
    big = vecs[:, 1]
    angle = math.degrees(math.atan2(big[1], big[0]))
    return Ellipse((float(np.mean(x)), float(np.mean(y))), width=2.0 * math.sqrt(vals[1]),
                   height=2.0 * math.sqrt(vals[0]), angle=angle, **kw)


def pantheon_axes(ax: Any, margin: float) -> None:
    """The Pantheon throughput-delay axes once the points are drawn (sweeps and `cclab compare`): limits
    at least 10 % of the largest value wide (equal runs do not blow up rounding noise), the delay axis
    reversed (low delay on the right: better is up and to the right), labels and grid."""
    ax.autoscale_view()
    ax.margins(margin)
    for get, set_ in ((ax.get_xlim, ax.set_xlim), (ax.get_ylim, ax.set_ylim)):
        lo, hi = get()
        need = 0.1 * max(abs(lo), abs(hi), 1e-9) - (hi - lo)
        if need > 0:
            set_(lo - need / 2, hi + need / 2)
    ax.invert_xaxis()
    ax.set_xlabel("95th-percentile queueing delay of link 0 (ms)  ← worse")
    ax.set_ylabel("goodput, forward flows (Mbit/s)")
    ax.grid(True, alpha=0.3)


def throughput_delay_figure(t: pd.DataFrame, hue: Optional[str] = None, name: str = "") -> Figure:
    """Goodput against link 0's 95th-percentile queueing delay: each run a point, each grid point its mean
    and its one-standard-deviation ellipse over seeds, coloured by ``hue`` (default: the grid's algorithm
    key); delay axis reversed."""
    _check(t, None, None, hue)
    hue = hue or default_hue(t)
    others = _independent(t, [hue] if hue else [], [k for k in varying(t) if k != hue])
    colour_groups = [lab for lab, _ in _groups(t, [hue] if hue else [])]
    marker_groups = [lab for lab, _ in _groups(t, others)] if others else []
    colors, markers = cc_colors(colour_groups), cc_markers(marker_groups or ["all"])

    fig, (ax,) = new_figure(height=4.6)
    title(fig, f"{name + ': ' if name else ''}throughput vs delay across seeds (1-σ ellipses)")
    ok = t[np.isfinite(t["p95_queue_delay_s"].to_numpy(dtype=float)) & np.isfinite(t["goodput_mbps"].to_numpy(dtype=float))]
    for clab, crows in _groups(ok, [hue] if hue else []):
        for mlab, rows in (_groups(crows, others) if others else [("all", crows)]):
            x = rows["p95_queue_delay_s"].to_numpy(dtype=float) * 1e3
            y = rows["goodput_mbps"].to_numpy(dtype=float)
            c, m = colors[clab], markers[mlab]
            pts = ax.scatter(x, y, s=14, marker=m, color=c, alpha=0.55, lw=0, zorder=3)
            pts.set_gid(f"runs:{clab}|{mlab}")
            big = ax.scatter([np.mean(x)], [np.mean(y)], s=90, marker=m, color=c, edgecolors="black",
                             linewidths=1.0, zorder=5)
            big.set_gid(f"mean:{clab}|{mlab}")
            e = _cov_ellipse(x, y, facecolor=c, edgecolor=c, alpha=0.18, lw=1.2, zorder=2)
            if e is not None:
                e.set_gid(f"ellipse:{clab}|{mlab}")
                ax.add_patch(e)
                edge = _cov_ellipse(x, y, facecolor="none", edgecolor=c, lw=1.2, zorder=4)
                assert edge is not None
                edge.set_gid(f"ellipse-edge:{clab}|{mlab}")
                ax.add_patch(edge)
    pantheon_axes(ax, 0.08)
    handles: list[Any] = [Line2D([], [], ls="", marker="o", markersize=8, markerfacecolor=colors[lab],
                                 markeredgecolor="black", label=lab) for lab in colour_groups]
    if marker_groups:
        handles.append(Line2D([], [], ls="", label=_wrap(_keys_label(others) + ":")))
        handles += [Line2D([], [], ls="", marker=markers[lab], markersize=7, color="0.4", label=lab)
                    for lab in marker_groups]
    legend_outside(ax, handles, title=_wrap(key_label(hue)) if hue else None)
    v = varying(t)
    n = t.groupby(v).size() if v else pd.Series([len(t)])
    note(fig, [
        "Small: one run (seed): its forward flows' goodput over the measurement window and link 0's 95th-percentile "
        "queueing delay (summary.json). Large, outlined: the mean over seeds of one grid point.",
        "Ellipse: one standard deviation of that grid point's runs (their covariance, ddof 1), as Pantheon "
        "draws it: the spread of single runs, not a confidence region of the mean "
        f"({_span(n)} runs per point; no ellipse below 2).",
        "Colour: " + (key_label(hue) if hue else "one group") + (f"; marker: {_keys_label(others)}." if others else ".")
        + " Better is up and to the right.",
    ])
    return fig


def _slug(s: str) -> str:
    """A file-name part from a key: flows[1].params.k -> flows1.params.k, flows[*].cc -> flows_all.cc."""
    s = s.replace("[*]", "_all").replace("[", "").replace("]", "")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")


def write_sweep_plots(out: Path, x: Optional[str] = None, y: str = "goodput_mbps", hue: Optional[str] = None,
                      file: Optional[Path] = None) -> list[Path]:
    """Writes the sweep in ``out``'s figures: ``y`` vs ``x`` (default: the first varying grid key, numeric
    ones first; skipped when no grid key varies and ``x`` is not given) into ``file`` (default
    ``out/<y>_vs_<x>.png``), and the throughput–delay view into ``out/throughput_delay.png`` (with ``file``:
    ``<file stem>_throughput_delay.png`` beside it). Returns the paths written. ScenarioError (naming x, y or
    hue) on a key or metric the sweep does not have."""
    out = Path(out)
    t = sw.table(out)
    if t.empty:
        raise ScenarioError([("", f"{out} has no finished runs of a sweep to plot")])
    _check(t, x, y, hue)
    meta = sw.read_sweep_json(out)  # checked by sw.table already
    name = str(meta["base"].get("name", "")) if meta else ""
    x = x or default_x(t)
    if file is not None:
        _check_file(Path(file))
    paths = []
    if x is not None:
        p = Path(file) if file else out / f"{_slug(y)}_vs_{_slug(x)}.png"
        _save(metric_figure(t, x, y, hue if hue is not None else default_hue(t, x), name), p)
        paths.append(p)
    td = Path(file).with_name(Path(file).stem + "_throughput_delay.png") if file else out / "throughput_delay.png"
    _save(throughput_delay_figure(t, hue, name), td)
    paths.append(td)
    return paths


def _check_file(p: Path) -> None:
    """The figure file ``file`` names (and the throughput–delay one beside it) can be written, in a format
    matplotlib writes (from the suffix; none: PNG); a ScenarioError naming ``file`` otherwise."""
    from ..files import check_output_file

    fmt = p.suffix[1:].lower()
    allowed = Figure().canvas.get_supported_filetypes()
    if fmt and fmt not in allowed:
        raise ScenarioError([("file", f"{str(p)!r}: .{fmt} is not a figure format; allowed: "
                                      + ", ".join(f".{k}" for k in sorted(allowed)))])
    check_output_file(p, "file")
    check_output_file(p.with_name(p.stem + "_throughput_delay.png"), "file")


def _save(fig: Figure, p: Path) -> None:
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p)
    except OSError as e:
        raise ScenarioError([("file", f"cannot write {str(p)!r}: {e.strerror or e}")]) from None
