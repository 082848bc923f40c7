"""Figures over the measurement window: throughput against delay (throughput_delay.png, Pantheon's form)
and the distributions of per-flow goodput and of RTT samples (cdf.png)."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._style import LINESTYLES, REF, cc_colors, cc_markers, legend_outside, new_figure, note, rtt_markers, si, si_axis, si_prefix, title
from ._view import RunView, flow_stats, rows_of, window_rtts

# An RTT-sample CDF with more points than this is drawn through this many quantiles (indistinguishable
# at this size, and a 120 000-step line costs ~0.1 s).
CDF_POINTS = 1000


def _n(k: int, what: str) -> str:
    return f"{k} {what}{'' if k == 1 else 's'}"


def _base_rtt_note(v: RunView) -> str:
    if v.base_rtt_source == "spec":
        return ("Base RTT: propagation plus one data packet's and one ACK's serialisation on the flow's path "
                "(spec.json), what an empty network gives.")
    return ("Base RTT: the flow's min_rtt (no spec.json), which understates the delay of a flow that never "
            "saw an empty queue.")


def throughput_delay_figure(v: RunView) -> Figure:
    """Where flows can see different delays (v.delays_differ): per flow a point (goodput in the window vs
    the 95th percentile of its queueing delay) and per (algorithm, RTT group) a large hollow marker at the
    mean of its flows; the delay axis reversed so better is up and to the right. Otherwise (one shared
    link, one RTT: every flow sees the same queue) each flow's goodput per algorithm, see _goodput_strip."""
    if not v.delays_differ:
        return _goodput_strip(v)
    fig, (ax,) = new_figure(height=4.6, style=v.style)
    title(fig, f"{v.summary['scenario']}: throughput vs delay (measurement window)")
    st = flow_stats(v)
    colors, rmarks = cc_colors(v.ccs), rtt_markers(v.rtt_labels)
    handles = []
    xmax, ymax = 0.0, 0.0
    n_flows = len(st)
    f = si_prefix([float(np.max(st["goodput_bps"]))] if len(st) else [])[0]
    for g in v.groups:
        s = rows_of(st, g.flows)
        ok = s.where(~np.isnan(s["p95_qdelay_s"]))
        x, y = ok["p95_qdelay_s"] * 1e3, ok["goodput_bps"] / f
        c, m = colors[g.cc], rmarks[g.rtt]
        alpha = float(np.clip(8.0 / max(len(s), 1), 0.25, 0.85))
        pts = ax.scatter(x, y, s=16 if n_flows <= 40 else 9, marker=m, color=c, alpha=alpha, lw=0, zorder=3)
        pts.set_gid(f"cc:{g.cc}")
        if len(ok):
            # Hollow, and smaller for each later algorithm: means that coincide nest inside each other
            # instead of one covering the other (issue 29: cubic's mean hidden under newreno's).
            size = 150.0 * 0.62 ** v.ccs.index(g.cc) * (0.45 if v.style is not None and v.style.paper else 1.0)
            big = ax.scatter([float(np.mean(x))], [float(np.mean(y))], s=size, marker=m, facecolors="none",
                             edgecolors=c, linewidths=1.8, zorder=5 + 0.1 * v.ccs.index(g.cc))
            big.set_gid(f"mean:{g.cc}|{g.rtt}")
            xmax, ymax = max(xmax, float(np.max(x))), max(ymax, float(np.max(y)))
        missing = len(s) - len(ok)
        label = f"{g.cc}, {g.rtt}: {_n(len(s), 'flow')}" + (f" ({missing} w/o RTT)" if missing else "")
        handles.append(Line2D([], [], ls="", marker=m, markersize=7, markerfacecolor="none", markeredgecolor=c,
                              markeredgewidth=1.6, label=label))
    # The links' own 95th-percentile queueing delay (summary.json), a cross-check of the flows' estimate.
    on_path = {int(l["id"]): l for l in v.summary.get("links", []) if (l.get("p95_queue_delay_s") or 0) > 0}
    spec_flows = (v.spec or {}).get("flows") or []
    used = {p for fl in spec_flows for p in fl.get("path", [])} if spec_flows else set(on_path)
    refs = sorted((lid, l["p95_queue_delay_s"] * 1e3) for lid, l in on_path.items() if lid in used)[:3]
    for lid, d in refs:
        ax.axvline(d, color=REF, ls=":", lw=1.0, zorder=1)
        if len(refs) > 1:
            ax.annotate(f"link {lid}", (d, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                        textcoords="offset points", fontsize=6.5, color=REF, va="top", ha="left")
        xmax = max(xmax, d)
    if refs:
        handles.append(Line2D([], [], color=REF, ls=":", lw=1.0,
                              label=("links'" if len(refs) > 1 else f"link {refs[0][0]}:") + " p95 queueing delay"))
    # The x axis spans the delays drawn (not from 0): flows sharing one queue differ by a few ms only.
    p95 = st["p95_qdelay_s"]
    xs = [float(x) for x in (p95[~np.isnan(p95)] * 1e3)] + [d for _, d in refs]
    lo_x = min(xs, default=0.0)
    pad = max(0.1 * (xmax - lo_x), 0.1 * xmax, 0.5)
    ax.set_xlim(xmax + pad, max(lo_x - pad, -0.02 * max(xmax, 1.0)))  # reversed: low delay on the right
    ax.set_ylim(0.0, max(ymax * 1.08, 1e-3))
    ax.set_xlabel("95th-percentile queueing delay (ms)  ← worse")
    si_axis(ax, "y", "bit/s", "goodput", [f])
    ax.grid(True, alpha=0.3)
    legend_outside(ax, handles)
    m0, m1 = v.window
    note(fig, [
        "Small, filled: one flow. Large, hollow: the mean of an algorithm's flows in one RTT group (marker "
        "= RTT group, colour = algorithm). Better is up and right.",
        f"Goodput: summary.json's, the window {m0:g}–{m1:g} s.",
        "Delay: 95th percentile of srtt − base RTT over the flow's samples in the window (srtt is "
        "RFC 6298's moving average: short spikes are damped).",
        _base_rtt_note(v),
    ])
    return fig


def _goodput_strip(v: RunView) -> Figure:
    """One shared link and one RTT: every flow sees the same queue, so instead of a vertical line of
    points: each flow's goodput per algorithm (a strip, points spread sideways by rank), the algorithm's
    median as a bar, and the link's p95 queueing delay in the title of the axes."""
    fig, (ax,) = new_figure(height=4.0, style=v.style)
    title(fig, f"{v.summary['scenario']}: goodput per flow (measurement window)")
    st = flow_stats(v)
    colors, markers = cc_colors(v.ccs), cc_markers(v.ccs)
    f = si_prefix([float(np.max(st["goodput_bps"]))] if len(st) else [])[0]
    handles, ymax = [], 0.0
    for i, cc in enumerate(v.ccs):
        y = np.sort(st["goodput_bps"][st["cc"] == cc] / f)
        if not y.size:
            continue
        # Spread sideways by rank (deterministic, no random jitter): equal goodputs stay side by side.
        x = i + (np.linspace(-0.3, 0.3, y.size) if y.size > 1 else np.zeros(1))
        pts = ax.scatter(x, y, s=18 if y.size <= 40 else 8, marker=markers[cc], color=colors[cc], alpha=0.8,
                         lw=0, zorder=3)
        pts.set_gid(f"cc:{cc}")
        ax.hlines(float(np.median(y)), i - 0.38, i + 0.38, color="black", lw=1.6, zorder=4)
        ymax = max(ymax, float(y.max()))
        handles.append(Line2D([], [], ls="", marker=markers[cc], color=colors[cc], label=f"{cc}: {_n(y.size, 'flow')}"))
    handles.append(Line2D([], [], color="black", lw=1.6, label="median"))
    ax.set_xticks(range(len(v.ccs)), v.ccs)
    ax.set_xlim(-0.6, len(v.ccs) - 0.4)
    ax.set_ylim(0.0, max(ymax * 1.1, 1e-3))
    si_axis(ax, "y", "bit/s", "goodput per flow", [f])
    ax.grid(True, axis="y", alpha=0.3)
    links = [l for l in v.summary.get("links", []) if (l.get("p95_queue_delay_s") or 0) > 0]
    if links:
        l0 = max(links, key=lambda l: l["p95_queue_delay_s"])
        ax.set_title(f"every flow shares link {l0['id']}'s queue: p95 queueing delay "
                     f"{si(l0['p95_queue_delay_s'], 's')}", fontsize=8, loc="left")
    legend_outside(ax, handles)
    m0, m1 = v.window
    note(fig, [
        f"Goodput over the window {m0:g}–{m1:g} s (summary.json); points of an algorithm spread sideways "
        "by rank. One bottleneck and one RTT: every flow sees the same queueing delay, so a per-flow "
        "throughput-delay scatter would be one vertical line.",
    ])
    return fig


def _ecdf(ax: Axes, x: np.ndarray, gid: str, label: str, markers: bool, **style: object) -> None:
    x = np.sort(x[np.isfinite(x)])
    if x.size == 0:
        return
    if x.size > CDF_POINTS:
        p = np.linspace(0.0, 1.0, CDF_POINTS)
        ln, = ax.plot(np.quantile(x, p), p, label=label, **style)  # type: ignore[arg-type]
    else:
        y = np.arange(1, x.size + 1) / x.size
        ln, = ax.step(np.concatenate([[x[0]], x]), np.concatenate([[0.0], y]), where="post", label=label,
                      marker="o" if markers else None, markersize=3, markevery=slice(1, None),
                      **style)  # type: ignore[arg-type]
    ln.set_gid(gid)


def cdf_styles(ccs: list[str]) -> dict[str, dict]:
    """Per algorithm: its colour, a line style of its own, and a width that shrinks with its order, drawn
    later (on top): curves that coincide show as a thin line inside a wider one (issue 29: the cubic
    curve of the third panel lay under another)."""
    colors = cc_colors(ccs)
    return {cc: {"color": colors[cc], "ls": LINESTYLES[i % len(LINESTYLES)],
                 "lw": max(3.2 - 0.7 * i, 1.0) if len(ccs) > 1 else 1.6, "zorder": 3 + i} for i, cc in enumerate(ccs)}


def cdf_figure(v: RunView) -> Figure:
    """CDFs over the measurement window, one curve per algorithm: the flows' goodput, their RTT samples
    (srtt), and the same samples' queueing delay (srtt − base RTT)."""
    fig, (ag, ar, aq) = new_figure(height=4.0, ncols=3, width=11.5, wgap_in=0.45, style=v.style)
    title(fig, f"{v.summary['scenario']}: distributions over the measurement window")
    rtts = window_rtts(v)
    st = flow_stats(v, rtts)
    styles = cdf_styles(v.ccs)
    paper = v.style is not None and v.style.paper
    if paper:  # widths in points: at 3.5-7 in wide the screen's 3.2 pt outer curve is a bar
        for st_ in styles.values():
            st_["lw"] = round(st_["lw"] * 0.6, 2)
    f = si_prefix([float(np.max(st["goodput_bps"]))] if len(st) else [])[0]
    handles = []
    for cc in v.ccs:
        s = st.where(st["cc"] == cc)
        r = rtts.where(rtts["cc"] == cc)
        gid = f"cc:{cc}"
        _ecdf(ag, s["goodput_bps"] / f, gid, cc, markers=len(s) <= 12, **styles[cc])
        _ecdf(ar, np.asarray(r["srtt"], dtype=float) * 1e3, gid, cc, markers=False, **styles[cc])
        _ecdf(aq, np.asarray(r["qdelay"], dtype=float) * 1e3, gid, cc, markers=False, **styles[cc])
        kw = {k: styles[cc][k] for k in ("color", "ls", "lw")}
        handles.append(Line2D([], [], label=f"{cc}: {_n(len(s), 'flow')}, {_n(len(r), 'RTT sample')}", **kw))
    si_axis(ag, "x", "bit/s", "goodput" if paper else "goodput per flow", [f])
    ar.set_xlabel("RTT (ms)")
    aq.set_xlabel("queue delay (ms)" if paper else "queueing delay (ms)")  # a column is ~1 in wide
    ag.set_ylabel("fraction")
    for ax, x in ((ag, st["goodput_bps"] / f), (ar, rtts["srtt"] * 1e3), (aq, rtts["qdelay"] * 1e3)):
        ax.set_ylim(0.0, 1.02)
        hi = float(np.nanmax(x)) if len(x) and np.isfinite(x).any() else 1.0
        ax.set_xlim(0.0, max(hi * 1.05, 1e-3))
        ax.grid(True, alpha=0.3)
    for ax in (ar, aq):
        ax.tick_params(labelleft=False)
    legend_outside(aq, handles)
    m0, m1 = v.window
    sample = float(np.median(np.diff(np.unique(v.flows["t"])))) if len(v.flows) > 1 else math.nan
    note(fig, [
        f"Left: one step per flow, its goodput over the window {m0:g}–{m1:g} s (summary.json).",
        f"Middle: every flow's srtt (RFC 6298 smoothed RTT) at each {si(sample, 's')} sample in the window, "
        "pooled per algorithm. Right: the same samples' queueing delay, srtt − the flow's base RTT.",
        _base_rtt_note(v),
    ])
    return fig
