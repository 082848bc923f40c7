"""CoDel (RFC 8289) in the simulator: the standing queue held near the 5 ms target where drop-tail lets it
grow to the buffer, ECN marks in place of drops, and bad parameters rejected by name. The control law
itself is unit-tested in Rust (crates/cclab-cc/src/aqm/codel.rs), the emulator's dequeue drops in
crates/cclab-net/src/emulator/core.rs."""

import pytest

import cclab
from cclab.scenario import ScenarioError


def scenario(queue, n, seed=1, ecn=False):
    bottleneck = {"rate": "100Mbps", "buffer": 1000, "queue": queue}
    if ecn:
        bottleneck["params"] = {"ecn": True}
    return {"name": f"codel-{queue}-{n}", "duration": "40s", "seed": seed, "measure": ["10s", "40s"],
            "transport": {"ecn": ecn}, "topology": {"kind": "dumbbell", "bottleneck": bottleneck},
            "flows": [{"cc": "newreno", "count": n, "rtt": "50ms", "start": ["0s", "2s"]}]}


def link(sc):
    return cclab.run(sc, progress=False, plots=False).summary["links"][0]


@pytest.mark.parametrize("n", [5, 20])
def test_codel_holds_the_standing_queue_near_its_target(n):
    # 100 Mbit/s, 50 ms, a 1000-packet (120 ms) buffer. Measured (seeds 1-3): mean sojourn 3.3 ms with 5
    # flows and 7.3 ms with 20 (p95 6.3 and 11 ms), utilisation 0.995 and 1.000; drop-tail 81 and 87 ms.
    # The mean includes the moments the queue is empty, so it sits below the 5 ms target with few flows and
    # above it with many (each drop then removes a smaller share of the load): 1.5-10 ms is "near the
    # target"; drop-tail is an order of magnitude above it.
    for seed in (1, 2, 3):
        c = link(scenario("codel", n, seed))
        d = link(scenario("droptail", n, seed))
        assert 1.5e-3 < c["mean_queue_delay_s"] < 10e-3, (seed, c["mean_queue_delay_s"])
        assert c["p95_queue_delay_s"] < 15e-3, c["p95_queue_delay_s"]
        assert d["mean_queue_delay_s"] > 5 * c["mean_queue_delay_s"], (d["mean_queue_delay_s"], c["mean_queue_delay_s"])
        assert c["utilization"] > 0.95 and c["drops"] > 0


def test_codel_marks_ecn_capable_packets_instead_of_dropping():
    # Same 5-flow dumbbell with ECN end to end: the control law marks (53 marks measured), nothing is
    # dropped (the 1000-packet buffer never fills), and the queue stays near the target as with drops.
    c = link(scenario("codel", 5, ecn=True))
    assert c["drops"] == 0 and c["marks"] > 10, (c["drops"], c["marks"])
    assert c["mean_queue_delay_s"] < 10e-3 and c["utilization"] > 0.95


def test_codel_state_is_in_the_time_series():
    r = cclab.run(scenario("codel", 5), progress=False, plots=False)
    assert r.links["codel.count"].max() >= 1 and set(r.links["codel.dropping"].dropna().unique()) <= {0.0, 1.0}


@pytest.mark.parametrize("params,field", [({"interval": 0.001}, "interval"), ({"target": -1}, "target"),
                                          ({"taget": 0.005}, "taget")])
def test_bad_codel_parameters_name_the_field(params, field, cli_refuses):
    sc = scenario("codel", 1)
    sc["topology"]["bottleneck"]["params"] = params
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(sc)
    assert field in str(e.value), str(e.value)
    # The CLI: one message naming the field, exit 2, nothing written.
    key, value = next(iter(params.items()))
    cli_refuses(f'rate = "10Mbps"\nqueue = "codel"\nparams = {{ {key} = {value} }}\n', field)


def test_the_time_series_has_the_sojourn_and_drops_by_cause():
    # `sojourn_s` is the mean sojourn of the packets that left in each interval: weighted by departures
    # over the window it is the summary's mean queueing delay (the same packets). CoDel's own drops are
    # a cumulative state column; the link's `drops` are at least those (plus tail drops).
    sc = scenario("codel", 5)
    r = cclab.run(sc, progress=False, plots=False)
    lk = r.links[r.links["link"] == 0].reset_index(drop=True)
    w = lk[(lk["t"] > 10) & (lk["t"] <= 40)]
    n = lk["departures"].diff()[w.index]
    mean = float((w["sojourn_s"] * n).sum() / n.sum())
    assert mean == pytest.approx(r.summary["links"][0]["mean_queue_delay_s"], rel=0.01)
    assert (lk["codel.law_drops"].diff().dropna() >= 0).all()
    assert lk["drops"].iloc[-1] >= lk["codel.law_drops"].iloc[-1] > 0
