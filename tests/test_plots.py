"""The per-run figures (cclab.plots, docs/plots.md) on small real simulator runs of 2, 20 and 200 flows of
2–3 algorithms: every figure is built and inspected through matplotlib's object model, then written."""
import math

import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D

import cclab
from cclab.plots import FIGURES, build_figures, write_plots
from cclab.plots._view import build_view, flow_stats, link_infos

NAMES = ["rate.png", "cwnd.png", "queue.png", "throughput_delay.png", "cdf.png"]


def _scenario(n, queue="red", algos=None, rtts=("20ms", "80ms"), **extra):
    algos = algos or (["cubic", "newreno"] if n < 20 else ["cubic", "newreno", "vegas"])
    flows = []
    for i, cc in enumerate(algos):
        k = n // len(algos) + (n % len(algos) if i == 0 else 0)
        for j, r in enumerate(rtts[:k]):
            c = k // len(rtts[:k]) + (k % len(rtts[:k]) if j == 0 else 0)
            flows.append({"cc": cc, "rtt": r, "count": c, "start": ["0s", "0.5s"]})
    rate = {2: "20Mbps", 20: "50Mbps", 200: "100Mbps"}.get(n, "20Mbps")
    d = {"name": f"plots{n}", "duration": "4s", "seed": 1, "measure": ["1s", "4s"],
         "topology": {"kind": "dumbbell", "bottleneck": {"rate": rate, "buffer": "BDP", "queue": queue}},
         "flows": flows}
    d.update(extra)
    return d


@pytest.fixture(scope="module")
def runs():
    out = {}
    for n, queue in ((2, "red"), (20, "droptail"), (200, "red")):
        out[n] = cclab.run(_scenario(n, queue), progress=False, plots=False)
    return out


def _cc_colors(ax):
    """Colour per algorithm of the artists the figures tag with gid 'cc:<name>'."""
    seen = {}
    for a in list(ax.lines) + list(ax.collections):
        gid = a.get_gid() or ""
        if not gid.startswith("cc:"):
            continue
        if isinstance(a, Line2D):
            c = to_hex(a.get_color())
        elif isinstance(a, LineCollection):
            c = to_hex(a.get_color()[0])
        else:
            fc = a.get_facecolor()
            if len(fc) == 0:
                continue
            c = to_hex(fc[0])
        seen.setdefault(gid[3:], set()).add(c)
    return seen


def _has_data(ax):
    return any(len(l.get_xdata()) for l in ax.lines) or any(
        (isinstance(c, LineCollection) and len(c.get_segments())) or
        (isinstance(c, PathCollection) and len(c.get_offsets())) for c in ax.collections)


@pytest.mark.parametrize("n", [2, 20, 200])
def test_every_figure(runs, n, tmp_path):
    res = runs[n]
    ccs = sorted({f["cc"] for f in res.summary["flows"]})
    figs = build_figures(res.flows, res.links, res.summary, res.spec)
    assert list(figs) == NAMES == list(FIGURES)
    for name, fig in figs.items():
        assert fig.axes, name
        for ax in fig.axes:
            assert _has_data(ax), f"{name}: empty axes {ax.get_xlabel()!r}"
        assert any(ax.get_legend() is not None for ax in fig.axes), name
    # one colour per algorithm, each algorithm one colour, wherever flows are drawn
    for name, axes in (("rate.png", [0]), ("cwnd.png", [0]), ("throughput_delay.png", [0]), ("cdf.png", [0, 1, 2])):
        for i in axes:
            colors = _cc_colors(figs[name].axes[i])
            assert sorted(colors) == ccs, name
            assert all(len(c) == 1 for c in colors.values()), (name, colors)
            assert len(set().union(*colors.values())) == len(ccs), name
    # the legend has one entry per algorithm × RTT group (+ the link rate), never one per flow
    v = build_view(res.flows, res.links, res.summary, res.spec)
    for name in ("rate.png", "cwnd.png"):
        labels = [t.get_text() for t in figs[name].axes[0].get_legend().get_texts()]
        assert len([l for l in labels if "ms" in l]) == len(v.groups) <= 2 * len(ccs), (name, labels)
    # Pantheon's form: delay reversed (better = right), goodput up
    td = figs["throughput_delay.png"].axes[0]
    assert td.xaxis_inverted() and not td.yaxis_inverted()
    assert "delay" in td.get_xlabel() and "goodput" in td.get_ylabel()
    # queue: packets and ms
    q = figs["queue.png"].axes
    assert "packets" in q[0].get_ylabel() and "ms" in q[1].get_ylabel()
    paths = write_plots(res.flows, res.links, res.summary, tmp_path, res.spec)
    assert [p.name for p in paths] == NAMES
    for p in paths:
        assert p.stat().st_size > 10_000, p


def test_many_flows_thin_lines_and_bold_mean(runs):
    res = runs[200]
    v = build_view(res.flows, res.links, res.summary, res.spec)
    assert all(v.many.values())
    ax = build_figures(res.flows, res.links, res.summary, res.spec, names=["rate.png"])["rate.png"].axes[0]
    thin = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(thin) == len(v.groups) and sum(len(c.get_segments()) for c in thin) == 200
    bold = [l for l in ax.lines if (l.get_gid() or "").startswith("cc:")]
    assert len(bold) == len(v.groups) and all(l.get_linewidth() >= 2 for l in bold)
    assert all(a < 0.5 for c in thin for a in [c.get_alpha()])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("mean of" in l for l in labels)
    # the bold line of a group is the mean per flow at each sample
    g = v.groups[0]
    wide = res.flows.pivot(index="t", columns="flow", values="rate_bps")[g.flows] * 1e-6
    mine = next(l for l in bold if l.get_gid() == f"cc:{g.cc}" and l.get_linestyle() == "-")
    np.testing.assert_allclose(mine.get_ydata(), wide.mean(axis=1).to_numpy())


def test_few_flows_one_line_each(runs):
    res = runs[2]
    ax = build_figures(res.flows, res.links, res.summary, res.spec, names=["cwnd.png"])["cwnd.png"].axes[0]
    assert len([l for l in ax.lines if (l.get_gid() or "").startswith("cc:")]) == 2
    assert not [c for c in ax.collections if isinstance(c, LineCollection)]


def test_red_thresholds_and_average(runs):
    res = runs[2]
    (info,) = link_infos(build_view(res.flows, res.links, res.summary, res.spec))
    buf = res.spec["links"][0]["buffer_pkts"]
    assert info.red_th == (pytest.approx(max(0.2 * buf, 1)), pytest.approx(max(0.8 * buf, 2)))  # red.rs defaults
    ax = build_figures(res.flows, res.links, res.summary, res.spec, names=["queue.png"])["queue.png"].axes[0]
    hlines = {round(float(l.get_ydata()[0]), 6) for l in ax.lines if len(set(l.get_ydata())) == 1}
    assert {round(info.red_th[0], 6), round(info.red_th[1], 6), float(buf)} <= hlines
    avg = res.links[res.links["link"] == 0]["red.avg"].to_numpy()
    assert any(len(l.get_ydata()) == len(avg) and np.allclose(l.get_ydata(), avg) for l in ax.lines)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("red.avg" in l for l in labels) and any("min_th" in l for l in labels)


def test_red_explicit_thresholds_and_byte_buffer():
    d = _scenario(2, "red", rtts=("40ms",))
    d["topology"]["bottleneck"].update(buffer="60KB", params={"min_th": 7, "max_th": 21})
    res = cclab.run(d, progress=False, plots=False)
    (info,) = link_infos(build_view(res.flows, res.links, res.summary, res.spec))
    assert info.red_th == (7, 21) and info.buffer_exact == "bytes" and info.buffer_pkts == pytest.approx(40)
    fig = build_figures(res.flows, res.links, res.summary, res.spec, names=["queue.png"])["queue.png"]
    assert "≈40 pkts" in fig.axes[0].get_legend().get_texts()[0].get_text()


@pytest.mark.parametrize("queue,params,target_ms", [("codel", {}, 5.0), ("fq_codel", {"target": 0.003}, 3.0),
                                                     ("pie", {}, 15.0)])
def test_aqm_delay_target_and_pie_sample(queue, params, target_ms):
    # The queueing-delay panel draws the delay the discipline steers to; PIE's own delay sample as well.
    d = _scenario(2, queue, rtts=("40ms",), duration="6s", measure=["1s", "6s"])
    d["topology"]["bottleneck"].update(buffer=500, params=params)
    res = cclab.run(d, progress=False, plots=False)
    fig = build_figures(res.flows, res.links, res.summary, res.spec, names=["queue.png"])["queue.png"]
    axm = fig.axes[1]
    hlines = {round(float(l.get_ydata()[0]), 6) for l in axm.lines if len(set(l.get_ydata())) == 1}
    assert target_ms in hlines
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("AQM delay target" in l for l in labels)
    if queue == "pie":
        sample = res.links[res.links["link"] == 0]["pie.qdelay"].to_numpy() * 1e3
        assert any(len(l.get_ydata()) == len(sample) and np.allclose(l.get_ydata(), sample) for l in axm.lines)
        assert any("pie.qdelay" in l for l in labels)


def test_maxnet_panel():
    d = {"name": "mx", "duration": "3s", "seed": 1,
         "topology": {"kind": "dumbbell", "bottleneck": {"rate": "50Mbps", "buffer": "BDP", "queue": "maxnet"}},
         "flows": [{"cc": "maxnet", "rtt": "30ms"}, {"cc": "maxnet", "rtt": "30ms", "start": "1s"}]}
    res = cclab.run(d, progress=False, plots=False)
    fig = build_figures(res.flows, res.links, res.summary, res.spec, names=["queue.png"])["queue.png"]
    assert len(fig.axes) == 3
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("price" in l for l in labels) and any("μ·C" in l for l in labels)
    # price − p_min (ms), p_min = −T·ln(C/x_max): the router starts at p_min
    p_min = -0.05 * math.log(50e6 / 1e15)
    price = res.links[res.links["link"] == 0]["maxnet.price"].to_numpy()
    vq = [l for l in fig.axes[1].lines if len(l.get_ydata()) == len(price) and l.get_linestyle() == "-."]
    assert vq and np.allclose(vq[0].get_ydata(), (price - p_min) * 1e3)
    assert vq[0].get_ydata()[0] == pytest.approx(0.0, abs=1e-6)


def test_goodput_above_link_rate_is_annotated():
    # 10 ms samples and random loss: the in-order burst after a repaired loss exceeds the link rate
    d = _scenario(2, "droptail", rtts=("80ms",), sample_interval="10ms")
    d["topology"]["bottleneck"]["loss"] = 0.002
    res = cclab.run(d, progress=False, plots=False)
    link = 20e6
    over = res.flows["rate_bps"] > link
    assert over.any()
    ax = build_figures(res.flows, res.links, res.summary, res.spec, names=["rate.png"])["rate.png"].axes[0]
    texts = " ".join(t.get_text() for t in ax.figure.texts).replace("\n", " ")
    assert f"{int(over.sum())} samples" in texts and "exceed the bottleneck rate" in texts
    if res.flows["rate_bps"].max() > 1.25 * link:  # clipped at 1.25× the link rate, marked ▲ on the edge
        assert ax.get_ylim()[1] == pytest.approx(1.25 * link * 1e-6)
        marks = [c for c in ax.collections if isinstance(c, PathCollection)]
        assert sum(len(c.get_offsets()) for c in marks) == int((res.flows["rate_bps"] > 1.25 * link).sum())


def test_delay_estimate(runs):
    # Base RTT from the spec: what the simulator's min_rtt is when a flow sees an empty queue
    res = runs[2]
    v = build_view(res.flows, res.links, res.summary, res.spec)
    assert v.base_rtt_source == "spec"
    for f in res.summary["flows"]:
        assert v.base_rtt[f["id"]] == pytest.approx(f["min_rtt"], abs=2e-9)  # the simulator's clock: ns
    # With a standing drop-tail queue every flow's p95 estimate is near the link's own p95 queueing delay
    # (whereas min_rtt, taken in the queue, would miss most of it).
    res = runs[20]
    v = build_view(res.flows, res.links, res.summary, res.spec)
    st = flow_stats(v)
    link_p95 = res.summary["links"][0]["p95_queue_delay_s"]
    assert st["p95_qdelay_s"].mean() == pytest.approx(link_p95, rel=0.2)
    assert (st["goodput_bps"].to_numpy() == [f["goodput_bps"] for f in res.summary["flows"]]).all()


def test_without_spec_falls_back_to_min_rtt(runs, tmp_path):
    res = runs[20]
    figs = build_figures(res.flows, res.links, res.summary, None)
    assert set(figs) == set(NAMES)
    assert "min_rtt" in " ".join(t.get_text() for t in figs["throughput_delay.png"].texts).replace("\n", " ")


def test_run_writes_all_figures(tmp_path):
    cclab.run(_scenario(2, "red", rtts=("40ms",)), tmp_path, progress=False)
    for name in NAMES:
        assert (tmp_path / name).stat().st_size > 10_000
