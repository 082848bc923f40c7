"""Changing a scenario in Python (docs/scenario.md "Changing a scenario in Python"): an assignment is
validated and a bad one raises ScenarioError naming the field by its place in the scenario file."""
import copy
import pickle
from pathlib import Path

import pytest

import cclab
from cclab import ScenarioError
from cclab.scenario import Flow

DEFAULT = Path(__file__).resolve().parents[1] / "scenarios" / "default.toml"


@pytest.fixture
def sc():
    return cclab.Scenario.load(DEFAULT)


def _errors(fn):
    with pytest.raises(ScenarioError) as e:
        fn()
    return e.value.errors


def test_the_issues_examples_name_the_field(sc):
    sc2 = sc.model_copy(deep=True)
    errs = _errors(lambda: setattr(sc2.flows[0], "cc", "nosuch"))
    assert [f for f, _ in errs] == ["flows[0].cc"] and errs[0][1].startswith('unknown algorithm "nosuch"; allowed: ')
    assert _errors(lambda: setattr(sc2.topology.bottleneck, "rate", "fast")) == [
        ("topology.bottleneck.rate", 'must be a rate like "100Mbps", got "fast"')]
    # a refused value leaves the scenario as it was, and the copy's original untouched throughout
    assert sc2.flows[0].cc == "newreno" and sc2.topology.bottleneck.rate == "20Mbps"
    assert sc.flows[0].cc == "newreno"


@pytest.mark.parametrize("path, value, field, message", [
    (("flows", 1, "rtt"), "-5ms", "flows[1].rtt", 'must be > 0, got "-5ms"'),
    (("flows", 1, "rtt"), "5", "flows[1].rtt", 'needs a unit (ns, us, ms, s, min), got "5"'),
    (("flows", 1, "params"), {"zz": 1}, "flows[1].params.zz", "unknown parameter for newreno; allowed: abe, initial_ssthresh"),
    (("flows", 0, "count"), 0, "flows[0].count", "Input should be greater than or equal to 1, got 0"),
    (("duration",), "x", "duration", 'must be a time like "40ms", got "x"'),
    (("topology", "bottleneck", "queue"), "nosuch", "topology.bottleneck.queue", 'unknown queue "nosuch"; allowed: '
     'droptail, red, maxnet, codel, pie, fq_codel, fq'),
    (("topology", "bottleneck"), {"rate": "x"}, "topology.bottleneck.rate", 'must be a rate like "100Mbps", got "x"'),
    # the scenario's [transport], named once (before: flows[0].transport.mss and flows[1].transport.mss)
    (("transport", "mss"), "1500B", "transport.mss", 'must be smaller than packet_size (1500 B), got "1500B"'),
    (("flows", 0, "transport"), {"mss": "1600B"}, "flows[0].transport.mss", 'must be smaller than packet_size (1500 B), got "1600B"'),
    (("nosuch",), 1, "nosuch", "unknown key"),
])
def test_assignments_name_their_field(sc, path, value, field, message):
    obj = sc
    for p in path[:-1]:
        obj = obj[p] if isinstance(p, int) else getattr(obj, p)
    before = copy.deepcopy(sc.model_dump())
    assert _errors(lambda: setattr(obj, path[-1], value)) == [(field, message)]
    assert sc.model_dump() == before


def test_copies_are_independent_and_name_their_own_fields(sc):
    for c in (sc.model_copy(deep=True), copy.deepcopy(sc), pickle.loads(pickle.dumps(sc))):
        c.flows[0].cc = "cubic"
        assert sc.flows[0].cc == "newreno"
        assert [f for f, _ in _errors(lambda c=c: setattr(c.flows[1], "cc", "x"))] == ["flows[1].cc"]
    # a part copied out on its own belongs to no scenario: its own fields only, named from itself
    f = sc.flows[0].model_copy(deep=True)
    assert _errors(lambda: setattr(f, "rtt", "-1ms")) == [("rtt", 'must be > 0, got "-1ms"')]
    f.cc = "nosuch"  # no registry check without a scenario; run() would reject it
    # paths are found when the error happens, so they follow the list
    sc.flows.insert(0, Flow(cc="newreno", rtt="10ms"))
    assert _errors(lambda: setattr(sc.flows[2], "rtt", "zz"))[0][0] == "flows[2].rtt"


def test_a_two_step_change_is_not_stopped_half_way_and_run_checks_all(sc):
    # newreno's initial_ssthresh, then cc = "fast": the params are wrong for fast until changed too
    sc.flows[0].params = {"initial_ssthresh": 10}
    sc.flows[0].cc = "fast"
    errs = _errors(lambda: cclab.run(sc, progress=False, plots=False))
    assert [f for f, _ in errs] == ["flows[0].params.initial_ssthresh"]
    sc.flows[0].params = {}
    # a list changed in place is checked by run(), naming the new item
    sc.flows.append({"cc": "nosuch", "rtt": "10ms"})
    assert [f for f, _ in _errors(lambda: cclab.run(sc, progress=False, plots=False))] == ["flows[2].cc"]


def test_kernel_tcp_only_where_the_scenario_was_validated_for_the_real_datapath():
    sim = cclab.Scenario.load(DEFAULT)
    assert [f for f, _ in _errors(lambda: setattr(sim.flows[0], "cc", "kernel:cubic"))] == ["flows[0].cc"]
    net = cclab.Scenario.load(DEFAULT, datapath="net")
    net.flows[0].cc = "kernel:cubic"
    assert net.flows[0].cc == "kernel:cubic"
