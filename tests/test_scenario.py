import json

import pytest

import cclab
from cclab.units import UnitError, parse_buffer, parse_rate, parse_size, parse_time


@pytest.mark.parametrize("s,v", [("100Mbps", 100e6), ("1.244Gbps", 1.244e9), ("64kbps", 64e3), (5e6, 5e6)])
def test_rates(s, v):
    assert parse_rate(s) == pytest.approx(v)


@pytest.mark.parametrize("s,v", [("40ms", 0.04), ("2s", 2.0), ("250us", 250e-6), (0.1, 0.1)])
def test_times(s, v):
    assert parse_time(s) == pytest.approx(v)


@pytest.mark.parametrize("s,v", [("375KB", 375000), ("1500B", 1500), ("1KiB", 1024)])
def test_sizes(s, v):
    assert parse_size(s) == v


@pytest.mark.parametrize("s,v", [(500, ("pkts", 500)), ("500p", ("pkts", 500)), ("BDP", ("bdp", 1.0)), ("2BDP", ("bdp", 2.0)), ("140KB", ("bytes", 140000))])
def test_buffers(s, v):
    assert parse_buffer(s) == v


def test_unitless_string_rejected():
    with pytest.raises(UnitError):
        parse_rate("100")


def test_dumbbell_resolution_gives_each_flow_its_rtt(base):
    base["flows"] = [{"cc": "newreno", "rtt": "40ms", "count": 2}, {"cc": "newreno", "rtt": "160ms"}]
    spec = cclab.Scenario.from_dict(base).to_spec()
    assert len(spec["flows"]) == 3
    for f, rtt in zip(spec["flows"], [0.04, 0.04, 0.16]):
        assert f["extra_delay_fwd"] + f["extra_delay_rev"] == pytest.approx(rtt)
        assert f["path"] == [0] and f["ack_path"] == [1]
    # BDP buffer uses the largest RTT crossing the link: 20 Mbit/s × 160 ms / 1500 B = 267 packets.
    assert spec["links"][0]["buffer_pkts"] == 267


def test_parking_lot_paths_and_delays():
    data = {
        "duration": "2s",
        "topology": {"kind": "parking_lot", "links": [{"rate": "100Mbps", "delay": "5ms"}, {"rate": "50Mbps", "delay": "10ms"}]},
        "flows": [{"cc": "newreno", "rtt": "60ms", "links": [0, 1]}, {"cc": "newreno", "rtt": "40ms", "links": [1]}],
    }
    spec = cclab.Scenario.from_dict(data).to_spec()
    f0, f1 = spec["flows"]
    assert f0["path"] == [0, 1] and f0["ack_path"] == [3, 2]
    assert f0["extra_delay_fwd"] == pytest.approx((0.06 - 0.03) / 2)
    assert f1["path"] == [1] and f1["ack_path"] == [3]
    assert f1["extra_delay_fwd"] == pytest.approx((0.04 - 0.02) / 2)


def test_graph_shortest_path_by_delay():
    data = {
        "duration": "2s",
        "topology": {"kind": "graph", "nodes": ["a", "b", "c"], "links": [
            {"src": "a", "dst": "b", "rate": "10Mbps", "delay": "50ms"},
            {"src": "a", "dst": "c", "rate": "10Mbps", "delay": "5ms"},
            {"src": "c", "dst": "b", "rate": "10Mbps", "delay": "5ms"},
        ]},
        "flows": [{"cc": "newreno", "src": "a", "dst": "b"}],
    }
    spec = cclab.Scenario.from_dict(data).to_spec()
    f = spec["flows"][0]
    assert f["path"] == [2, 4]          # a->c, c->b (directional ids 2k)
    assert f["ack_path"] == [5, 3]      # b->c, c->a
    assert f["rtt"] == pytest.approx(0.02)
    r = cclab.run(data, progress=False)
    # propagation 20 ms + serialisation of a 1500 B packet and a 52 B ACK on two 10 Mbit/s hops each
    want = 0.02 + 2 * 1500 * 8 / 10e6 + 2 * 52 * 8 / 10e6
    assert r.summary["flows"][0]["min_rtt"] == pytest.approx(want, rel=1e-3)


def test_toml_roundtrip_of_shipped_scenarios():
    import pathlib

    for p in sorted(pathlib.Path(__file__).resolve().parents[1].glob("scenarios/*.toml")):
        cclab.Scenario.load(p)  # every shipped scenario validates
