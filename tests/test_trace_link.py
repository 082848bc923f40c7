"""Trace-driven links (mahimahi delivery-opportunity traces) in the simulator: the link delivers exactly
the trace's capacity, a constant trace behaves like a rate link, TCP follows a step in capacity, relative
paths resolve from the scenario file, and bad traces are refused naming the file and line. The link
model's arithmetic (opportunity sharing and spanning, idle skipping, capacity over a window) is
unit-tested in Rust (crates/cclab-cc/src/trace_link.rs)."""

import pytest

import cclab
from cclab import traces
from cclab.scenario import ScenarioError


def scenario(trace, flows=("cubic",), cbr=None, duration=60, measure=(10, 60), **link):
    b = {"trace": trace, "buffer": 1000, "delay": "10ms", **link}
    d = {"name": "trace", "duration": f"{duration}s", "seed": 1, "measure": [f"{measure[0]}s", f"{measure[1]}s"],
         "topology": {"kind": "dumbbell", "bottleneck": b},
         "flows": [{"cc": c, "rtt": "50ms"} for c in flows], "traffic": []}
    if cbr:
        d["traffic"].append({"kind": "cbr", "rate": cbr})
    return d


@pytest.mark.parametrize("trace", traces.builtin())
def test_a_saturated_trace_link_delivers_the_traces_capacity(trace):
    # A 60 Mbit/s UDP sender keeps the queue full above every shipped trace's peak (50 Mbit/s): every
    # opportunity carries a packet, so the link's departures equal the trace's capacity over the window,
    # exactly (measured: utilisation 1.00000 for all four). 1 % is the bound. `utilization` is
    # measured against the window's capacity (Python's count of the opportunities below), and `rate_bps`
    # is the trace's mean.
    s = cclab.run(scenario(trace, cbr="60Mbps"), progress=False, plots=False).summary
    lk = s["links"][0]
    tr = traces.load(trace)
    assert abs(lk["utilization"] - 1) < 0.01, lk["utilization"]
    assert lk["rate_bps"] == pytest.approx(tr.mean_rate_bps)
    # one whole period of the trace holds its mean rate (the reference counts opportunities in [t0, t1))
    assert tr.capacity_bps(1e-6, tr.period_ms / 1e3 + 1e-6) == pytest.approx(tr.mean_rate_bps, rel=1e-9)


def test_tcp_fills_a_cellular_trace_and_the_window_capacity_is_the_reference():
    # Four CUBIC/NewReno flows over the cellular trace (1-50 Mbit/s, mean 13.9) with a 1000-packet buffer:
    # utilisation 1.000 against the trace's capacity in the window (12.68 Mbit/s over 10-60 s), and a
    # standing queue of 0.27 s (the deep buffer on a slow link: bufferbloat, as on real cellular links).
    # Which algorithm holds that buffer is decided in the first seconds. With CUBIC's default HyStart++
    # the trace's bursty delivery ends CUBIC's slow start early, the NewReno flows fill the buffer, and the
    # CUBIC flows live on RTOs (0.24 Mbit/s each, 24 RTOs). With `hystart = false` it is the other way
    # round: CUBIC fills it (queue 0.68 s) and NewReno gets 0.1 Mbit/s. Bound 0.2 s.
    s = cclab.run(scenario("cellular", flows=("cubic", "cubic", "newreno", "newreno")), progress=False,
                  plots=False).summary
    lk = s["links"][0]
    assert lk["utilization"] > 0.99 and lk["mean_queue_delay_s"] > 0.2
    assert abs(s["total"]["goodput_bps"] / traces.load("cellular").capacity_bps(10, 60) - 1) < 0.08


def test_a_constant_trace_is_a_rate_link():
    # One opportunity per ms is 12 Mbit/s: the same NewReno flows over it and over a 12 Mbit/s link get the
    # same goodput within 1 % (measured 0.3 %); the trace delivers on ms ticks, the rate link every
    # 1 ms from each start, so the two differ only in phase.
    flows = ("newreno", "newreno")
    t = cclab.run(scenario("constant-12mbps", flows=flows), progress=False, plots=False).summary
    d = scenario("constant-12mbps", flows=flows)
    d["topology"]["bottleneck"].pop("trace")
    d["topology"]["bottleneck"]["rate"] = "12Mbps"
    r = cclab.run(d, progress=False, plots=False).summary
    assert abs(t["total"]["goodput_bps"] / r["total"]["goodput_bps"] - 1) < 0.01
    assert abs(t["links"][0]["mean_queue_delay_s"] / r["links"][0]["mean_queue_delay_s"] - 1) < 0.05


def test_tcp_follows_a_step_in_capacity():
    # 6 Mbit/s for 10 s, then 24 Mbit/s, one CUBIC flow, a 300-packet buffer. The link stays busy in both
    # halves (utilisation against each window's capacity, 2-10 s and 12-20 s: measured 1.000 and 1.000),
    # and goodput follows: 6.0 and 23.2 Mbit/s measured. Goodput is in-order delivery at the receiver, so
    # a hole repaired inside a window releases data that crossed the link before it (one 4-10 s window
    # gave 6.95 Mbit/s): 15 % allows for that.
    d = scenario("step-6-24mbps", flows=("cubic",), duration=20, measure=(2, 10), buffer=300)
    low = cclab.run(d, progress=False, plots=False).summary
    d["measure"] = ["12s", "20s"]
    high = cclab.run(d, progress=False, plots=False).summary
    for s, cap in ((low, 6e6), (high, 24e6)):
        assert s["links"][0]["utilization"] > 0.97, s["links"][0]
        assert abs(s["total"]["goodput_bps"] / cap - 1) < 0.15, (s["total"]["goodput_bps"], cap)


def test_relative_trace_paths_are_the_scenario_files_neighbours(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.trace").write_text("".join(f"{k}\n" for k in range(1, 11)))  # 12 Mbit/s
    (tmp_path / "sub" / "s.toml").write_text(
        'name = "rel"\nduration = "5s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\n'
        'trace = "link.trace"\n[[flows]]\ncc = "cubic"\nrtt = "50ms"\n')
    monkeypatch.chdir(tmp_path)
    sc = cclab.Scenario.load(tmp_path / "sub" / "s.toml")
    assert sc.topology.bottleneck.trace == str(tmp_path / "sub" / "link.trace")
    assert sc.to_spec()["links"][0]["rate_bps"] == pytest.approx(12e6)


BAD = [
    ("missing.trace", None, "cannot read trace file"),
    ("empty.trace", "\n\n", "empty"),
    ("text.trace", "1\n2\nthree\n", "text.trace:3: not a time in ms"),
    ("down.trace", "1\n5\n4\n", "down.trace:3: times must not decrease"),
    ("neg.trace", "-1\n2\n", "neg.trace:1: times must be in"),
    ("zero.trace", "0\n0\n", "zero.trace:2: the last time is the trace's period"),
]


@pytest.mark.parametrize("name,text,message", BAD)
def test_bad_traces_are_refused_naming_the_file_and_line(name, text, message, tmp_path, cli_refuses):
    if text is not None:
        (tmp_path / name).write_text(text)
    d = scenario(str(tmp_path / name))
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(d)
    assert "topology.bottleneck.trace" in str(e.value) and message in str(e.value), str(e.value)
    # The CLI: one message naming the field and the file, exit 2, nothing written.
    assert len(cli_refuses(f'trace = "{name}"\n', message).strip().splitlines()) == 1


@pytest.mark.parametrize("link,message", [({"trace": "cellular", "rate": "10Mbps"}, "not both"),
                                          ({"buffer": 10}, "give the link a rate or a trace")])
def test_a_link_has_a_rate_or_a_trace(link, message):
    d = scenario("cellular")
    d["topology"]["bottleneck"] = link
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(d)
    assert "topology.bottleneck" in str(e.value) and message in str(e.value), str(e.value)


def test_per_interval_utilisation_follows_the_trace():
    # The links table's utilisation is against the trace's capacity in each sample interval: a saturated
    # step trace gives 1.0 in every interval on both sides of the step (against the mean rate it would
    # read 0.4 then 1.6).
    r = cclab.run(scenario("step-6-24mbps", cbr="60Mbps", duration=20, measure=(2, 20)), progress=False,
                  plots=False)
    lk = r.links[(r.links["link"] == 0) & (r.links["t"] > 1)]
    assert lk["utilization"].between(0.97, 1.03).all(), lk["utilization"].describe()
    assert lk[lk["t"] < 9.5]["rate_bps"].mean() == pytest.approx(6e6, rel=0.02)
    assert lk[lk["t"] > 10.5]["rate_bps"].mean() == pytest.approx(24e6, rel=0.02)
