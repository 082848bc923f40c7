"""Figures over the measurement window: throughput against delay (throughput_delay.png, Pantheon's form)
and the distributions of per-flow goodput and of RTT samples (cdf.png)."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._style import REF, cc_colors, cc_markers, legend_outside, new_figure, note, title
from ._view import RunView, flow_stats, window_rtts

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
    """Per flow a point (goodput in the window vs the 95th percentile of its queueing delay), per algorithm
    a large marker at the mean of its flows; the delay axis is reversed so better is up and to the right."""
    fig, (ax,) = new_figure(height=4.6)
    title(fig, f"{v.summary['scenario']}: throughput vs delay (measurement window)")
    st = flow_stats(v)
    colors, markers = cc_colors(v.ccs), cc_markers(v.ccs)
    handles = []
    xmax, ymax = 0.0, 0.0
    n_flows = len(st)
    for cc in v.ccs:
        s = st[st["cc"] == cc]
        ok = s[s["p95_qdelay_s"].notna()]
        x, y = ok["p95_qdelay_s"].to_numpy() * 1e3, ok["goodput_bps"].to_numpy() * 1e-6
        alpha = float(np.clip(8.0 / max(len(s), 1), 0.25, 0.85))
        pts = ax.scatter(x, y, s=16 if n_flows <= 40 else 9, marker=markers[cc], color=colors[cc], alpha=alpha,
                         lw=0, zorder=3)
        pts.set_gid(f"cc:{cc}")
        if len(ok):
            mx, my = float(np.mean(x)), float(np.mean(y))
            big = ax.scatter([mx], [my], s=110, marker=markers[cc], color=colors[cc], edgecolors="black",
                             linewidths=1.0, zorder=5)
            big.set_gid(f"cc:{cc}")
            xmax, ymax = max(xmax, float(np.max(x))), max(ymax, float(np.max(y)))
        missing = len(s) - len(ok)
        label = f"{cc}: {_n(len(s), 'flow')}" + (f" ({missing} without RTT)" if missing else "")
        handles.append(Line2D([], [], ls="", marker=markers[cc], markersize=8, markerfacecolor=colors[cc],
                              markeredgecolor="black", label=label))
    # The links' own 95th-percentile queueing delay (summary.json), a cross-check of the flows' estimate.
    on_path = {int(l["id"]): l for l in v.summary.get("links", []) if (l.get("p95_queue_delay_s") or 0) > 0}
    spec_flows = (v.spec or {}).get("flows") or []
    used = {p for f in spec_flows for p in f.get("path", [])} if spec_flows else set(on_path)
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
    hi = max(xmax * 1.08, 1.0)
    ax.set_xlim(hi, -0.02 * hi)  # reversed: low delay on the right (a little room for points at 0)
    ax.set_ylim(0.0, max(ymax * 1.08, 1e-3))
    ax.set_xlabel("95th-percentile queueing delay (ms)  ← worse")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.grid(True, alpha=0.3)
    legend_outside(ax, handles)
    m0, m1 = v.window
    note(fig, [
        "Small: one flow. Large, outlined: the algorithm's mean over its flows. Better is up and right.",
        f"Goodput: summary.json's, the window {m0:g}–{m1:g} s.",
        "Delay: 95th percentile of srtt − base RTT over the flow's samples in the window (srtt is "
        "RFC 6298's moving average: short spikes are damped).",
        _base_rtt_note(v),
    ])
    return fig


def _ecdf(ax: Axes, x: np.ndarray, color: str, gid: str, label: str, markers: bool) -> None:
    x = np.sort(x[np.isfinite(x)])
    if x.size == 0:
        return
    if x.size > CDF_POINTS:
        p = np.linspace(0.0, 1.0, CDF_POINTS)
        ln, = ax.plot(np.quantile(x, p), p, color=color, lw=1.6, label=label)
    else:
        y = np.arange(1, x.size + 1) / x.size
        ln, = ax.step(np.concatenate([[x[0]], x]), np.concatenate([[0.0], y]), where="post", color=color,
                      lw=1.6, label=label, marker="o" if markers else None, markersize=3, markevery=slice(1, None))
    ln.set_gid(gid)


def cdf_figure(v: RunView) -> Figure:
    """CDFs over the measurement window, one curve per algorithm: the flows' goodput, their RTT samples
    (srtt), and the same samples' queueing delay (srtt − base RTT)."""
    fig, (ag, ar, aq) = new_figure(height=4.0, ncols=3, width=11.5, wgap_in=0.45)
    title(fig, f"{v.summary['scenario']}: distributions over the measurement window")
    rtts = window_rtts(v)
    st = flow_stats(v, rtts)
    colors = cc_colors(v.ccs)
    handles = []
    for cc in v.ccs:
        s = st[st["cc"] == cc]
        r = rtts[rtts["cc"] == cc]
        gid = f"cc:{cc}"
        _ecdf(ag, s["goodput_bps"].to_numpy() * 1e-6, colors[cc], gid, cc, markers=len(s) <= 12)
        _ecdf(ar, r["srtt"].to_numpy(dtype=float) * 1e3, colors[cc], gid, cc, markers=False)
        _ecdf(aq, r["qdelay"].to_numpy(dtype=float) * 1e3, colors[cc], gid, cc, markers=False)
        handles.append(Line2D([], [], color=colors[cc], lw=1.6,
                              label=f"{cc}: {_n(len(s), 'flow')}, {_n(len(r), 'RTT sample')}"))
    ag.set_xlabel("goodput per flow (Mbit/s)")
    ar.set_xlabel("RTT (ms)")
    aq.set_xlabel("queueing delay (ms)")
    ag.set_ylabel("fraction")
    for ax, x in ((ag, st["goodput_bps"] * 1e-6), (ar, rtts["srtt"] * 1e3), (aq, rtts["qdelay"] * 1e3)):
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
        f"Middle: every flow's srtt (RFC 6298 smoothed RTT) at each {sample:g} s sample in the window, "
        "pooled per algorithm. Right: the same samples' queueing delay, srtt − the flow's base RTT.",
        _base_rtt_note(v),
    ])
    return fig
