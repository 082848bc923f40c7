"""Every rejection of docs/scenario.md: one message naming the field and what is allowed; the CLI
exits with code 2 and prints no traceback."""
import subprocess
import sys

import pytest

import cclab
from cclab import ScenarioError


def reject(data, field, *words):
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(data)
    msg = str(e.value)
    assert any(f == field for f, _ in e.value.errors), msg
    for w in words:
        assert w in msg, msg
    return msg


def test_unknown_top_level_key(base):
    base["durations"] = "3s"
    reject(base, "durations", "unknown key")


def test_unknown_algorithm(base):
    base["flows"][0]["cc"] = "tahoe"
    reject(base, "flows[0].cc", "unknown algorithm", "newreno")


def test_unknown_algorithm_parameter(base):
    base["flows"][0]["params"] = {"alpah": 1}
    reject(base, "flows[0].params.alpah", "unknown parameter")


def test_negative_rtt_names_the_value(base):
    base["flows"].append({"cc": "newreno", "rtt": "-5ms"})
    msg = reject(base, "flows[1].rtt", "must be > 0", '"-5ms"')
    assert msg == 'flows[1].rtt: must be > 0, got "-5ms"'


def test_zero_rate(base):
    base["topology"]["bottleneck"]["rate"] = 0
    reject(base, "topology.bottleneck.rate", "must be > 0")


def test_negative_rate(base):
    base["topology"]["bottleneck"]["rate"] = "-10Mbps"
    reject(base, "topology.bottleneck.rate", "must be > 0")


def test_missing_unit_where_ambiguous(base):
    base["topology"]["bottleneck"]["rate"] = "100"
    reject(base, "topology.bottleneck.rate", "needs a unit")


def test_unknown_unit(base):
    base["flows"][0]["rtt"] = "40 parsecs"
    reject(base, "flows[0].rtt")


def test_buffer_zero(base):
    base["topology"]["bottleneck"]["buffer"] = 0
    reject(base, "topology.bottleneck.buffer", "must be > 0")


def test_buffer_garbage(base):
    base["topology"]["bottleneck"]["buffer"] = "lots"
    reject(base, "topology.bottleneck.buffer", "BDP")


def test_unknown_queue(base):
    base["topology"]["bottleneck"]["queue"] = "codel"
    reject(base, "topology.bottleneck.queue", "unknown queue", "red")


def test_bad_red_parameter(base):
    base["topology"]["bottleneck"]["queue"] = "red"
    base["topology"]["bottleneck"]["params"] = {"max_p": 2}
    reject(base, "topology.bottleneck.params.max_p", "[0, 1]")


def test_unknown_topology_kind(base):
    base["topology"]["kind"] = "star"
    reject(base, "topology.kind", "dumbbell")


def test_flow_crossing_missing_link():
    data = {
        "duration": "2s",
        "topology": {"kind": "parking_lot", "links": [{"rate": "10Mbps", "delay": "5ms"}, {"rate": "10Mbps", "delay": "5ms"}]},
        "flows": [{"cc": "newreno", "rtt": "40ms", "links": [0, 3]}],
    }
    reject(data, "flows[0].links[1]", "does not exist")


def test_rtt_shorter_than_path():
    data = {
        "duration": "2s",
        "topology": {"kind": "parking_lot", "links": [{"rate": "10Mbps", "delay": "30ms"}]},
        "flows": [{"cc": "newreno", "rtt": "40ms", "links": [0]}],
    }
    reject(data, "flows[0].rtt", "round-trip delay of its links")


def test_measure_outside_duration(base):
    base["measure"] = ["1s", "10s"]
    reject(base, "measure", "<= duration")


def test_measure_reversed(base):
    base["measure"] = ["2s", "1s"]
    reject(base, "measure", "start < end")


def test_loss_out_of_range(base):
    base["topology"]["bottleneck"]["loss"] = 1.5
    reject(base, "topology.bottleneck.loss")


def test_no_flows(base):
    base["flows"] = []
    reject(base, "flows")


def test_missing_duration(base):
    del base["duration"]
    reject(base, "duration", "required")


def test_graph_unknown_node():
    data = {
        "duration": "2s",
        "topology": {"kind": "graph", "nodes": ["a", "b"], "links": [{"src": "a", "dst": "b", "rate": "10Mbps", "delay": "5ms"}]},
        "flows": [{"cc": "newreno", "src": "a", "dst": "z"}],
    }
    reject(data, "flows[0].dst", "unknown node")


def test_transport_mss_too_big(base):
    base["transport"] = {"mss": "1600B"}
    reject(base, "flows[0].transport.mss", "smaller than packet_size")


def test_count_zero(base):
    base["flows"][0]["count"] = 0
    reject(base, "flows[0].count")


def test_traffic_bad_kind(base):
    base["traffic"] = [{"kind": "tcp", "rate": "1Mbps"}]
    reject(base, "traffic[0].kind")


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_malformed_toml(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("duration = \n[topology")
    r = run_cli("run", str(p), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "malformed TOML" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_bad_field_exit_2(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('duration = "2s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\nrate = "10Mbps"\n'
                 '[[flows]]\ncc = "newreno"\nrtt = "40ms"\n[[flows]]\ncc = "newreno"\nrtt = "-5ms"\n')
    r = run_cli("run", str(p), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert 'flows[1].rtt: must be > 0, got "-5ms"' in r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("validate", str(p))
    assert r.returncode == 2


def test_cli_missing_file(tmp_path):
    r = run_cli("run", str(tmp_path / "nope.toml"))
    assert r.returncode == 2
    assert "cannot read" in r.stderr
