"""Figures against time: goodput (rate.png), congestion window (cwnd.png), queue (queue.png)."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patheffects import withStroke

from ..units import parse_time
from ._style import REF, cc_colors, legend_outside, new_figure, note, rtt_styles, si, si_axis, si_prefix, time_axes, title
from ._table import Table
from ._view import MANY, MANY_TOTAL, RunView, goodput_spikes, link_infos

# A goodput sample above CLIP × the fastest bottleneck rate is drawn as a ▲ on the top edge, so one
# burst does not squash every other line (each is counted in the figure's note; docs/plots.md).
CLIP = 1.25
# A reference line (link rate, buffer) further than this factor above the data is not drawn (it would
# flatten the data); the legend or note says so instead.
OFF_SCALE = 4.0
# MaxNet: x_max of the demand function (crates/cclab-cc/src/maxnet_wire.rs X_MAX_BPS) and the default T,
# for the router's floor p_min = −T·ln(C/x_max) (maxnet.rs, eq. 11).
MAXNET_X_MAX_BPS = 1e15
MAXNET_T = 0.05


def _group_label(v: RunView, cc: str, rtt: str, n: int) -> str:
    label = f"{cc}, {rtt}"
    if v.many[cc]:
        return f"{label}: median of {n}"
    return f"{label} (×{n})" if n > 1 else label


@dataclass
class Drawn:
    handles: list  # legend entries, one per (algorithm, RTT group)
    top: float  # upper y limit: the largest value drawn (bands' p90, medians, or every few-flow line)
    above: int  # per-flow samples above ``top`` (only with bands: those flows are not drawn one by one)
    above_max: float


def _flow_lines(ax: Axes, v: RunView, col: str, scale: float, clip_top: Optional[float] = None) -> Drawn:
    """Draws ``col`` × ``scale`` per flow, coloured by algorithm, styled by RTT group. A "many" algorithm
    (see _view.MANY) as one band per group: the median over its flows at each sample, bold, and the
    10th–90th percentiles shaded; no per-flow lines (200 translucent lines are a haze).

    The y axis is scaled to what is drawn: with bands their p90 and the medians, not one flow's slow-start
    peak; the per-flow samples above are counted in ``Drawn`` (and in the figure's note)."""
    colors, styles = cc_colors(v.ccs), rtt_styles(v.rtt_labels)
    t, flow_ids, wide = v.flows.pivot(index="t", columns="flow", values=col)
    t, wide = np.asarray(t, dtype=float), wide * scale
    column = {int(f): j for j, f in enumerate(flow_ids.tolist())}
    handles, top = [], 0.0
    banded: list[int] = []
    for k, g in enumerate(v.groups):
        cols = [f for f in g.flows if f in column]
        if not cols:
            continue
        y = wide[:, [column[f] for f in cols]]
        yc = y if clip_top is None else np.minimum(y, clip_top)
        c, ls, gid = colors[g.cc], styles[g.rtt], f"cc:{g.cc}"
        if v.many[g.cc]:
            banded += cols
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows before a flow starts
                lo, med, hi = np.nanpercentile(yc, [10, 50, 90], axis=1)
            ok = np.isfinite(hi)
            if ok.any():
                top = max(top, float(np.nanmax(hi)), float(np.nanmax(med)))
            # The band's edges in the group's line style: two overlapping bands of one colour (two RTT
            # groups of an algorithm) stay apart.
            band = ax.fill_between(t, lo, hi, where=ok, color=c, alpha=0.16, lw=0, zorder=2 + 0.01 * k)
            band.set_gid(f"band:{g.cc}|{g.rtt}")
            for edge in (lo, hi):
                e, = ax.plot(t, edge, color=c, ls=ls, lw=0.5, alpha=0.7, zorder=2.5)
                e.set_gid(f"edge:{g.cc}|{g.rtt}")
            ln, = ax.plot(t, med, color=c, ls=ls, lw=2.0, zorder=4 + 0.01 * k,
                          path_effects=[withStroke(linewidth=3.4, foreground="white")])
            ln.set_gid(gid)
        else:
            if np.isfinite(yc).any():
                top = max(top, float(np.nanmax(yc)))
            for j in range(yc.shape[1]):
                ln, = ax.plot(t, yc[:, j], color=c, ls=ls, lw=0.9, zorder=3)
                ln.set_gid(gid)
        handles.append(Line2D([], [], color=c, ls=ls, lw=2.0 if v.many[g.cc] else 1.2,
                              label=_group_label(v, g.cc, g.rtt, len(g.flows))))
    if len(t):
        ax.set_xlim(float(t[0]), float(t[-1]))
    top = top * 1.1 if top > 0 else 1.0
    drawn = Drawn(handles, top, 0, 0.0)
    if banded:
        vals = wide[:, [column[f] for f in banded]].ravel()
        vals = vals[np.isfinite(vals)]
        hi_vals = vals[vals > top]
        if hi_vals.size:
            drawn = Drawn(handles, top, int(hi_vals.size), float(hi_vals.max()))
    return drawn


def _above_note(d: Drawn, unit: str) -> str:
    if not d.above:
        return ""
    return (f"{d.above} single-flow sample{'s lie' if d.above > 1 else ' lies'} above the axes (up to "
            f"{d.above_max:.3g} {unit}); the axis spans the bands' p90 and medians.")


def _sample_s(v: RunView) -> float:
    return v.sample_s


def _many_note(v: RunView) -> str:
    if any(v.many.values()):
        return (f"Bold: median over the group's flows at each sample; shaded: 10th–90th percentile (more than "
                f"{MANY} flows per algorithm or {MANY_TOTAL} in all).")
    return ""


def _empty(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} in this run", ha="center", va="center", transform=ax.transAxes, color="0.4")


def rate_figure(v: RunView) -> Figure:
    """Goodput per flow against time; above it, for a trace-driven bottleneck, the link's capacity from
    the trace (step line) beside the rate it delivered."""
    traced = sorted({l for p in v.path_of.values() for l in p if l in v.trace_s})
    fig, axes = new_figure(height=6.2 if traced else 4.0, nrows=2 if traced else 1, sharex=True, style=v.style)
    ax = axes[-1]
    title(fig, f"{v.summary['scenario']}: goodput per flow")
    notes: list[str] = []
    if v.flows.empty:
        _empty(ax, "flows")
        time_axes(ax, "goodput (bit/s)", v.window)
        note(fig, notes)
        return fig
    sp = goodput_spikes(v)
    rates = sorted({r for r in v.bottleneck_bps.values() if math.isfinite(r)})
    # One SI prefix for the axis, chosen from the bulk of the samples and the link rates.
    r = np.asarray(v.flows["rate_bps"], dtype=float)
    r = r[np.isfinite(r)]
    q99 = float(np.quantile(r, 0.99)) if r.size else 0.0
    f, _ = si_prefix([q99] + [x for x in rates[:1] if not traced and x <= OFF_SCALE * q99])
    scale = 1.0 / f
    ref_rates = [] if traced else rates  # a trace's mean rate is no capacity line: the top panel has it
    clip_top = CLIP * rates[-1] * scale if ref_rates and sp.max_ratio > CLIP else None
    d = _flow_lines(ax, v, "rate_bps", scale, clip_top)
    handles, top = d.handles, d.top
    off = [r for r in ref_rates if r * scale > (top if d.above else OFF_SCALE * max(top, 1e-12))]
    for rr in ref_rates:
        if rr not in off:
            ax.axhline(rr * scale, color=REF, ls=(0, (4, 3)), lw=0.8, zorder=1)
            top = max(top, rr * scale * 1.05)
    if len(ref_rates) > len(off):
        many_rates = len(ref_rates) - len(off) > 1
        handles.append(Line2D([], [], color=REF, ls=(0, (4, 3)), lw=0.8,
                              label="flows' bottleneck rates" if many_rates else "bottleneck link rate"))
    if off:
        notes.append("Link rate " + ", ".join(si(x, "bit/s") for x in off) + ": off scale.")
    if clip_top is not None:
        over = sp.samples.where(sp.samples["rate_bps"] * scale > clip_top)
        over = Table({**over.cols, "cc": np.array([v.cc_of.get(int(f)) for f in over["flow"].tolist()], dtype=object)})
        colors = cc_colors(v.ccs)
        for cc, g in over.groups("cc"):
            m = ax.scatter(g["t"], np.full(len(g), clip_top), marker="^", s=14, color=colors[cc],
                           clip_on=False, zorder=5, lw=0)
            m.set_gid(f"cc:{cc}")
    ax.set_ylim(0, clip_top if clip_top is not None and not d.above else top)
    against = "the trace's capacity in that sample or the one before" if traced else "the bottleneck rate"
    if sp.count:
        clipped = f" ▲ on the top edge: above {CLIP:g}× the link rate." if clip_top is not None else ""
        notes.append(
            f"{sp.count} sample{'s' if sp.count > 1 else ''} of {sp.flows} flow{'s' if sp.flows > 1 else ''} "
            f"exceed{'' if sp.count > 1 else 's'} {against} (up to {sp.max_ratio:.2f}×): when a retransmission fills a hole, "
            f"the data held behind it is delivered in order at once. Not smoothed.{clipped}")
    notes.insert(0, f"Goodput: in-order bytes delivered per {si(_sample_s(v), 's')} sample. "
                    "Shaded: measurement window.")
    notes += [_many_note(v), _above_note(d, si(f, "bit/s").split(" ", 1)[1])]
    legend_outside(ax, handles)
    si_axis(ax, "y", "bit/s", "goodput", [f])
    time_axes(ax, ax.get_ylabel(), v.window)
    if traced:
        notes += _trace_panel(axes[0], v, traced)
    note(fig, notes)
    return fig


def _trace_panel(ax: Axes, v: RunView, traced: list[int]) -> list[str]:
    """Each trace-driven link: its capacity per sample interval from the trace (step line) and the rate
    it delivered (the links' rate_bps); returns notes with its utilisation over the window, delivered
    bits / trace capacity in the same intervals (not / the trace's mean rate)."""
    notes, handles, top = [], [], 0.0
    by_link = {int(k): g for k, g in v.links.groups("link")} if not v.links.empty else {}
    cap_all = {lid: v.capacity(lid, np.asarray(by_link[lid]["t"], dtype=float)) for lid in traced if lid in by_link}
    f, _ = si_prefix([float(np.nanmax(c)) for c in cap_all.values() if np.isfinite(c).any()])
    m0, m1 = v.window
    for k, (lid, cap) in enumerate(cap_all.items()):
        g = by_link[lid]
        t = np.asarray(g["t"], dtype=float)
        col = f"C{k % 10}" if len(cap_all) > 1 else "black"
        st = ax.step(t, cap / f, where="pre", color=col, lw=1.0, alpha=0.8, zorder=2)[0]
        st.set_gid(f"capacity:{lid}")
        sent = np.asarray(g["rate_bps"], dtype=float) if "rate_bps" in g else np.full(t.shape, np.nan)
        dl = ax.plot(t, sent / f, color=col, lw=1.4, ls=(0, (3, 1.5)) if len(cap_all) == 1 else "-", zorder=3)[0]
        dl.set_gid(f"delivered:{lid}")
        top = max(top, float(np.nanmax(cap)) / f, float(np.nanmax(sent)) / f if np.isfinite(sent).any() else 0.0)
        handles += [Line2D([], [], color=col, lw=1.0, label=f"link {lid}: capacity (trace)"),
                    Line2D([], [], color=col, lw=1.4, ls=dl.get_linestyle(), label=f"link {lid}: delivered")]
        w = (t > m0 + 1e-9) & (t <= m1 + 1e-9)
        c_sum = float(np.nansum(cap[w]))
        if c_sum > 0:
            notes.append(f"Link {lid}'s utilisation in the window: {np.nansum(sent[w]) / c_sum:.1%} of the "
                         f"trace's capacity at each sample (mean capacity {si(c_sum / max(int(w.sum()), 1), 'bit/s')}).")
    ax.set_ylim(0, top * 1.08 if top > 0 else 1.0)
    si_axis(ax, "y", "bit/s", "link rate", [f])
    time_axes(ax, ax.get_ylabel(), v.window, xlabel=False)
    legend_outside(ax, handles)
    return notes


def cwnd_figure(v: RunView) -> Figure:
    fig, (ax,) = new_figure(style=v.style)
    title(fig, f"{v.summary['scenario']}: congestion window per flow")
    notes = ["Shaded: measurement window.", _many_note(v)]
    if v.flows.empty:
        _empty(ax, "flows")
    else:
        d = _flow_lines(ax, v, "cwnd", 1.0)
        legend_outside(ax, d.handles)
        ax.set_ylim(0, d.top)
        notes.append(_above_note(d, "packets"))
    time_axes(ax, "congestion window (packets)", v.window)
    note(fig, notes)
    return fig


def queue_figure(v: RunView) -> Figure:
    """Queue in packets (with buffer, RED thresholds and average) and in ms (queue bytes × 8 / link rate,
    with the buffer in ms and MaxNet's virtual-queue price); a third panel for a MaxNet router's load."""
    infos = link_infos(v)
    maxnet = [i for i in infos if i.queue == "maxnet" and "maxnet.y_rate_bps" in v.links]
    nrows = 3 if maxnet else 2
    fig, axes = new_figure(height=2.0 + 1.9 * nrows, nrows=nrows, sharex=True, style=v.style)
    axp, axm = axes[0], axes[1]
    title(fig, f"{v.summary['scenario']}: queue")
    link_handles: list[Line2D] = []
    style: dict[str, Line2D] = {}
    notes = []
    top_p = top_m = 0.0
    refs_p: list[tuple[float, str, dict]] = []  # (y, style key, kwargs): drawn once the data's scale is known
    refs_m: list[tuple[float, str, dict]] = []
    by_link = {int(k): g for k, g in v.links.groups("link")} if not v.links.empty else {}
    for k, info in enumerate(infos):
        g = by_link[info.id]
        c = f"C{k % 10}"
        t = np.asarray(g["t"], dtype=float)
        q = np.asarray(g["queue_pkts"], dtype=float)
        qb = np.asarray(g["queue_bytes"], dtype=float) if "queue_bytes" in g else q * v.packet_size
        qms = qb * 8.0 / info.rate_bps * 1e3
        axp.plot(t, q, color=c, lw=0.9, zorder=3)
        axm.plot(t, qms, color=c, lw=0.9, zorder=3)
        top_p, top_m = max(top_p, float(np.nanmax(q))), max(top_m, float(np.nanmax(qms)))
        style.setdefault("queue", Line2D([], [], color=REF, lw=0.9, label="queue at each sample"))
        if info.buffer_pkts is not None and info.buffer_bytes is not None:
            dashed = {"color": c, "ls": (0, (5, 3)), "lw": 0.9}
            refs_p.append((info.buffer_pkts, "buffer", dashed))
            refs_m.append((info.buffer_bytes * 8.0 / info.rate_bps * 1e3, "buffer", dashed))
        if info.red_th is not None:
            for th in info.red_th:
                refs_p.append((th, "red_th", {"color": c, "ls": ":", "lw": 1.0}))
            if g.has_values("red.avg"):
                avg = np.asarray(g["red.avg"], dtype=float)
                axp.plot(t, avg, color=c, ls="-.", lw=1.3, zorder=4,
                         path_effects=[withStroke(linewidth=2.6, foreground="white")])
                top_p = max(top_p, float(np.nanmax(avg)))
                style["red_avg"] = Line2D([], [], color=REF, ls="-.", lw=1.3, label="RED average queue (red.avg)")
        if info.queue in AQM_TARGETS:
            # The delay the AQM steers to (CoDel's and FQ-CoDel's target, PIE's reference), on the ms axis.
            key, default = AQM_TARGETS[info.queue]
            refs_m.append((_num_param(info.params, key, default) * 1e3, "aqm_target",
                           {"color": c, "ls": ":", "lw": 1.0}))
        if info.queue == "pie" and g.has_values("pie.qdelay"):
            d = np.asarray(g["pie.qdelay"], dtype=float) * 1e3
            axm.plot(t, d, color=c, ls="-.", lw=1.0, zorder=4, alpha=0.9)
            top_m = max(top_m, float(np.nanmax(d)))
            style["pie_qdelay"] = Line2D([], [], color=REF, ls="-.", lw=1.0,
                                         label="PIE's delay sample (pie.qdelay)")
        if info.queue == "maxnet" and g.has_values("maxnet.price"):
            tt = _num_param(info.params, "T", MAXNET_T)
            p_min = _num_param(info.params, "p_min", -tt * math.log(info.rate_bps / MAXNET_X_MAX_BPS))
            vq = (np.asarray(g["maxnet.price"], dtype=float) - p_min) * 1e3
            axm.plot(t, vq, color=c, ls="-.", lw=1.3, zorder=4)
            top_m = max(top_m, float(np.nanmax(vq)))
            style["price"] = Line2D([], [], color=REF, ls="-.", lw=1.3,
                                    label="MaxNet price − p_min\n(virtual-queue delay)")
        link_handles.append(Line2D([], [], color=c, lw=2.5, label=info.describe()))

    for ax, refs, top in ((axp, refs_p, top_p), (axm, refs_m, top_m)):
        for y, key, kw in refs:
            if y <= OFF_SCALE * max(top, 1.0 if ax is axp else 0.5):
                ax.axhline(y, zorder=2, **kw)
                style.setdefault(key, Line2D([], [], color=REF, ls=kw["ls"], lw=kw["lw"],
                                             label={"buffer": "buffer limit", "red_th": "RED min_th, max_th",
                                                    "aqm_target": "AQM delay target\n(CoDel target, PIE reference)"}[key]))
            elif ax is axp:
                notes.append(f"{'Buffer' if key == 'buffer' else 'A RED threshold'} ({y:.0f} pkts) is off scale.")
        ax.set_ylim(bottom=0)

    if maxnet:
        ax3 = axes[2]
        for k, info in enumerate(infos):
            if info not in maxnet:
                continue
            g, c = by_link[info.id], f"C{k % 10}"
            ax3.plot(g["t"], g["maxnet.y_rate_bps"] * 1e-6, color=c, ls="-.", lw=0.8, alpha=0.8, zorder=3)
            if "rate_bps" in g:
                ax3.plot(g["t"], g["rate_bps"] * 1e-6, color=c, lw=0.9, zorder=3)
            mu = _num_param(info.params, "mu", 0.94)
            ax3.axhline(mu * info.rate_bps * 1e-6, color=c, ls=":", lw=1.0, zorder=2)
        style["y"] = Line2D([], [], color=REF, ls="-.", lw=0.8, label="MaxNet arrivals y/dt (last dt)")
        style["tx"] = Line2D([], [], color=REF, lw=0.9, label="link throughput (per sample)")
        style["mu"] = Line2D([], [], color=REF, ls=":", lw=1.0, label="MaxNet target μ·C")
        time_axes(ax3, "link load (Mbit/s)", v.window)
        ax3.set_ylim(bottom=0)
    if not infos:
        _empty(axp, "links")
    else:
        axp.set_xlim(float(np.min(v.links["t"])), float(np.max(v.links["t"])))
    time_axes(axp, "queue (packets)", v.window, xlabel=False)
    time_axes(axm, "queueing delay (ms)", v.window, xlabel=not maxnet)
    order = ["queue", "buffer", "red_th", "red_avg", "aqm_target", "pie_qdelay", "price", "tx", "y", "mu"]
    legend_outside(axp, link_handles + [style[k] for k in order if k in style])
    notes.insert(0, "Delay = queue bytes × 8 / link rate: the time to drain the queue present at the sample. "
                    "Shaded: measurement window.")
    if len(infos) < (np.unique(v.links["link"]).size if not v.links.empty else 0):
        notes.append("Links whose queue stayed empty are not drawn.")
    note(fig, notes)
    return fig


# Queue disciplines that steer the queueing delay to a target: (parameter, default in s).
AQM_TARGETS = {"codel": ("target", 0.005), "fq_codel": ("target", 0.005), "pie": ("target", 0.015)}


def _num_param(params: dict, name: str, default: float) -> float:
    x = params.get(name)
    if isinstance(x, str):  # a time with its unit ("5ms"), as algorithm parameters may be written
        try:
            return parse_time(x)
        except ValueError:
            return default
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default
