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
from cclab.plots._style import si
from cclab.plots._view import build_view, flow_stats, goodput_spikes, link_infos

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
    # Pantheon's form where delays differ (several RTT groups): delay reversed (better = right), goodput up;
    # on one link with one RTT a strip of goodput per flow per algorithm instead
    td = figs["throughput_delay.png"].axes[0]
    if v.delays_differ:
        assert td.xaxis_inverted() and not td.yaxis_inverted()
        assert "delay" in td.get_xlabel() and "goodput" in td.get_ylabel()
    else:
        assert [t.get_text() for t in td.get_xticklabels()] == v.ccs and "goodput" in td.get_ylabel()
        assert "queueing delay" in td.get_title(loc="left")
    # queue: packets and ms
    q = figs["queue.png"].axes
    assert "packets" in q[0].get_ylabel() and "ms" in q[1].get_ylabel()
    paths = write_plots(res.flows, res.links, res.summary, tmp_path, res.spec)
    assert [p.name for p in paths] == NAMES
    for p in paths:
        assert p.stat().st_size > 10_000, p


def test_many_flows_median_and_band(runs):
    res = runs[200]
    v = build_view(res.flows, res.links, res.summary, res.spec)
    assert all(v.many.values())
    ax = build_figures(res.flows, res.links, res.summary, res.spec, names=["rate.png"])["rate.png"].axes[0]
    # no per-flow lines: one median line and one p10-p90 band per group
    assert not [c for c in ax.collections if isinstance(c, LineCollection)]
    bands = [c for c in ax.collections if (c.get_gid() or "").startswith("band:")]
    assert len(bands) == len(v.groups)
    bold = [l for l in ax.lines if (l.get_gid() or "").startswith("cc:")]
    assert len(bold) == len(v.groups) and all(l.get_linewidth() >= 2 for l in bold)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("median of" in l for l in labels)
    # the bold line of a group is the median per sample over its flows
    g = v.groups[0]
    wide = res.flows.pivot(index="t", columns="flow", values="rate_bps")[g.flows] * 1e-6
    mine = next(l for l in bold if l.get_gid() == f"cc:{g.cc}" and l.get_linestyle() == "-")
    np.testing.assert_allclose(mine.get_ydata(), wide.median(axis=1).to_numpy(), equal_nan=True)
    # the y axis is scaled to what is drawn (bands' p90, 10 % margin), not to the highest single sample
    p90 = max(float(np.nanmax(np.nanpercentile(
        res.flows.pivot(index="t", columns="flow", values="rate_bps")[gg.flows].to_numpy() * 1e-6, 90, axis=1)))
        for gg in v.groups)
    assert ax.get_ylim()[1] == pytest.approx(1.1 * p90, rel=1e-6)  # (float rounding only)
    assert ax.get_ylim()[1] < res.flows["rate_bps"].max() * 1e-6


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
    assert (st["goodput_bps"] == [f["goodput_bps"] for f in res.summary["flows"]]).all()


def test_without_spec_falls_back_to_min_rtt(runs, tmp_path):
    res = runs[20]
    figs = build_figures(res.flows, res.links, res.summary, None)
    assert set(figs) == set(NAMES)
    assert "min_rtt" in " ".join(t.get_text() for t in figs["throughput_delay.png"].texts).replace("\n", " ")


def test_run_writes_all_figures(tmp_path):
    cclab.run(_scenario(2, "red", rtts=("40ms",)), tmp_path, progress=False)
    for name in NAMES:
        assert (tmp_path / name).stat().st_size > 10_000


def test_twenty_flows_every_group_visible(runs):
    # 20 flows: cubic, newreno, vegas in two RTT groups (issue 29: at 20 flows cubic's mean was hidden
    # under newreno's square, and a CDF curve lay under another).
    res = runs[20]
    v = build_view(res.flows, res.links, res.summary, res.spec)
    assert len(v.ccs) == 3 and len(v.rtt_labels) == 2 and len(v.groups) == 6
    figs = build_figures(res.flows, res.links, res.summary, res.spec)
    keys = {(g.cc, g.rtt) for g in v.groups}
    # rate and cwnd: one median line per group, each (colour, line style) pair its own, one legend entry each
    for name in ("rate.png", "cwnd.png"):
        ax = figs[name].axes[0]
        meds = [l for l in ax.lines if (l.get_gid() or "").startswith("cc:")]
        assert len({(to_hex(l.get_color()), l.get_linestyle()) for l in meds}) == len(v.groups) == len(meds)
        bands = {c.get_gid()[5:] for c in ax.collections if (c.get_gid() or "").startswith("band:")}
        assert bands == {f"{cc}|{r}" for cc, r in keys}
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert all(any(l.startswith(f"{cc}, {r}") for l in labels) for cc, r in keys), labels
    # throughput-delay: a mean marker per group; markers that overlap on screen are hollow and differ in
    # size (they nest) or shape, so none covers another
    fig = figs["throughput_delay.png"]
    ax = fig.axes[0]
    means = [c for c in ax.collections if (c.get_gid() or "").startswith("mean:")]
    assert {c.get_gid()[5:] for c in means} == {f"{cc}|{r}" for cc, r in keys}
    fig.canvas.draw()
    px = fig.dpi / 72.0
    boxes = []
    for c in means:
        assert len(c.get_facecolor()) == 0 or c.get_facecolor()[0][3] == 0, "mean markers are hollow"
        (x, y), = ax.transData.transform(c.get_offsets())
        r = math.sqrt(c.get_sizes()[0]) / 2 * px
        boxes.append((x - r, y - r, x + r, y + r, c))
    overlapping = 0
    for i, (a0, b0, a1, b1, c) in enumerate(boxes):
        for (d0, e0, d1, e1, o) in boxes[i + 1:]:
            if a0 < d1 and d0 < a1 and b0 < e1 and e0 < b1:
                overlapping += 1
                same_shape = c.get_paths()[0].vertices.shape == o.get_paths()[0].vertices.shape and \
                    np.allclose(c.get_paths()[0].vertices, o.get_paths()[0].vertices)
                # 0.62² in area: the inner ring's edge (1.8 pt) sits ≥ 3 px inside the outer one's
                assert not same_shape or abs(c.get_sizes()[0] / o.get_sizes()[0] - 1) > 0.3, (c.get_gid(), o.get_gid())
                assert to_hex(c.get_edgecolor()[0]) != to_hex(o.get_edgecolor()[0]) or not same_shape
    # on one drop-tail link the groups' means sit close together: the check above was exercised
    assert overlapping >= 1
    # cdf: every algorithm in every panel, with its own line style and width, thinner ones on top
    for ax in figs["cdf.png"].axes:
        curves = {l.get_gid()[3:]: l for l in ax.lines if (l.get_gid() or "").startswith("cc:")}
        assert sorted(curves) == sorted(v.ccs)
        assert len({(l.get_linestyle(), l.get_linewidth()) for l in curves.values()}) == 3
        order = [curves[cc] for cc in v.ccs]
        assert all(a.get_linewidth() > b.get_linewidth() and a.get_zorder() < b.get_zorder()
                   for a, b in zip(order, order[1:]))


def test_si_labels():
    assert si(1e9, "bit/s") == "1 Gbit/s"
    assert si(1e3 * 1e6, "bit/s") == "1 Gbit/s"  # not "1e+03 Mbit/s"
    assert si(0.100002, "s") == "100 ms"  # not "0.100002 s"
    assert si(0.1, "s") == "100 ms"
    assert si(999.9e3, "bit/s") == "1 Mbit/s"  # rounds up into the next prefix
    assert si(1500, "B") == "1.5 kB"
    assert si(2.5e-6, "s") == "2.5 µs"
    assert si(12e6, "bit/s") == "12 Mbit/s"
    assert si(0, "s") == "0 s"
    assert si(-0.02, "s") == "-20 ms"
    assert si(float("nan"), "s") == "–"
    assert si(1e15, "bit/s") == "1000 Tbit/s"


def test_gigabit_axis_reads_gbit(tmp_path):
    d = _scenario(2, "droptail", rtts=("20ms",), duration="1s", measure=["0.2s", "1s"])
    d["topology"]["bottleneck"]["rate"] = "1Gbps"
    res = cclab.run(d, progress=False, plots=False)
    ax = res.plot("rate").axes[0]
    assert ax.get_ylabel() == "goodput (Gbit/s)"
    assert ax.get_ylim()[1] == pytest.approx(1.0, rel=0.3)  # the link rate line, 1 Gbit/s, in range
    labels = [t.get_text() for t in ax.get_legend().get_texts()] + [t.get_text() for t in ax.figure.texts]
    assert not any("e+" in l for l in labels)


def test_paper_style_and_formats(runs, tmp_path):
    res = runs[20]
    for style, width in (("paper", 3.5), ("paper2", 7.0)):
        fig = res.plot("rate", style=style, save=tmp_path / f"rate_{style}.pdf")
        assert fig.get_size_inches()[0] == pytest.approx(width)
        assert not fig.texts  # no notes margin, no run-name title
        assert fig.legends and fig.axes[0].get_legend() is None  # legend above the axes, not in a margin
        # the legend lies within the figure
        fig.canvas.draw()
        bb = fig.legends[0].get_window_extent()
        assert bb.x1 <= fig.bbox.x1 + 1 and bb.y1 <= fig.bbox.y1 + 1
        assert (tmp_path / f"rate_{style}.pdf").read_bytes()[:5] == b"%PDF-"
    fig = res.plot("cdf", save=tmp_path / "cdf.svg")
    assert fig.texts and b"<svg" in (tmp_path / "cdf.svg").read_bytes()[:400]
    with pytest.raises(ValueError, match="style must be one of screen, paper, paper2"):
        res.plot("rate", style="poster")
    with pytest.raises(ValueError, match="format must be one of png, pdf, svg"):
        res.plot("rate", save=tmp_path / "rate.jpg")
    paths = write_plots(res.flows, res.links, res.summary, tmp_path / "w", res.spec, format="svg", style="paper")
    assert [p.name for p in paths] == [n.replace(".png", ".svg") for n in NAMES]


def test_cli_format_and_style(tmp_path):
    from click.testing import CliRunner

    from cclab.cli import cli

    sc = tmp_path / "s.toml"
    sc.write_text('''name = "p"
duration = "2s"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
[[flows]]
cc = "cubic"
rtt = "20ms"
''')
    out = tmp_path / "o"
    r = CliRunner().invoke(cli, ["run", str(sc), "--out", str(out), "-q", "--format", "pdf", "--style", "paper"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.glob("*.pdf")) == sorted(n.replace(".png", ".pdf") for n in NAMES)
    assert not list(out.glob("*.png"))
    r = CliRunner().invoke(cli, ["plot", str(out), "--format", "svg", "--style", "paper2"])
    assert r.exit_code == 0, r.output
    assert len(list(out.glob("*.svg"))) == 5
    r = CliRunner().invoke(cli, ["run", str(sc), "--out", str(out), "--format", "jpg"])
    assert r.exit_code == 2 and "jpg" in r.output


def test_trace_link_capacity_over_time():
    # step-6-24mbps: 6 Mbit/s for 10 s, then 24 Mbit/s (mean 15). Judged against the mean, the samples
    # after 10 s at ~24 Mbit/s would "exceed the bottleneck rate"; against the trace they do not.
    d = {"name": "tr", "duration": "14s", "seed": 1, "measure": ["2s", "14s"],
         "topology": {"kind": "dumbbell", "bottleneck": {"trace": "step-6-24mbps", "buffer": 100}},
         "flows": [{"cc": "cubic", "rtt": "20ms"}]}
    res = cclab.run(d, progress=False, plots=False)
    fig = res.plot("rate")
    top, _ = fig.axes
    cap = next(l for l in top.lines if l.get_gid() == "capacity:0")
    t, y = np.asarray(cap.get_xdata()), np.asarray(cap.get_ydata())
    # per 100 ms sample: 6 or 24 Mbit/s exactly (whole opportunities of 1500 B at 1 or 2 per ms)
    assert np.allclose(y[(t > 1) & (t < 9.9)], 6.0) and np.allclose(y[(t > 10.2) & (t < 13.9)], 24.0)
    assert any(l.get_gid() == "delivered:0" for l in top.lines)
    v = build_view(res.flows, res.links, res.summary, res.spec)
    late = res.flows[(res.flows["t"] > 11) & (res.flows["rate_bps"] > 15e6)]
    assert len(late) > 10  # the flow does fill the 24 Mbit/s phase: the old mean-rate check would flag these
    sp = goodput_spikes(v)
    assert sp.count < len(late) / 5
    texts = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    links = res.links[res.links["link"] == 0]
    w = (links["t"] > 2 + 1e-9) & (links["t"] <= 14 + 1e-9)
    util = links.loc[w, "rate_bps"].sum() / np.nansum(v.capacity(0, links.loc[w, "t"].to_numpy()))
    assert f"utilisation in the window: {util:.1%}" in texts
    assert 0.8 < util <= 1.0  # a single cubic flow with a 100-packet buffer keeps the link busy
