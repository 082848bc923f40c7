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
    base["topology"]["bottleneck"]["queue"] = "sfq"
    reject(base, "topology.bottleneck.queue", "unknown queue", "red")


def test_bad_red_parameter(base):
    base["topology"]["bottleneck"]["queue"] = "red"
    base["topology"]["bottleneck"]["params"] = {"max_p": 2}
    reject(base, "topology.bottleneck.params.max_p", "between 0 and 1")


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
    # named where it is written: the scenario's [transport] (once, not once per flow group) ...
    base["transport"] = {"mss": "1600B"}
    base["flows"].append({"cc": "newreno", "rtt": "40ms"})
    reject(base, "transport.mss", "smaller than packet_size")
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(base)
    assert e.value.errors == [("transport.mss", 'must be smaller than packet_size (1500 B), got "1600B"')]
    # ... or the flow's override
    base["transport"] = {}
    base["flows"][1]["transport"] = {"mss": "1600B"}
    reject(base, "flows[1].transport.mss", "smaller than packet_size")


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


# ---- more rejections: each names the exact field and shows the offending value ----


def test_boolean_is_not_a_rate(base):
    # TOML `rate = true` must not become 1 bit/s (a bool is an int in Python)
    base["topology"]["bottleneck"]["rate"] = True
    msg = reject(base, "topology.bottleneck.rate", "string with a unit", "true")
    assert msg.count("\n") == 0  # one message, not one per union member


def test_list_is_not_a_time(base):
    base["flows"][0]["rtt"] = ["40ms"]
    reject(base, "flows[0].rtt", '["40ms"]')


def test_start_range_needs_two_times(base):
    base["flows"][0]["start"] = ["1s"]
    reject(base, "flows[0].start", "[lo, hi]")


def test_start_range_reversed(base):
    base["flows"][0]["start"] = ["2s", "1s"]
    reject(base, "flows[0].start", "lo <= hi")


def test_param_value_must_be_scalar(base):
    base["flows"][0]["params"] = {"initial_ssthresh": [1, 2]}
    reject(base, "flows[0].params.initial_ssthresh", "number, a boolean or a string")


def test_stop_before_start(base):
    base["flows"][0].update(start="2s", stop="1s")
    reject(base, "flows[0].stop", "must be > start")


def test_start_after_end_of_run(base):
    base["flows"][0]["start"] = "10s"
    reject(base, "flows[0].start", "< duration (3 s)")


def test_traffic_start_after_end_of_run(base):
    base["traffic"] = [{"kind": "cbr", "rate": "1Mbps", "start": "5s"}]
    reject(base, "traffic[0].start", "< duration")


def test_loss_schedule_must_increase(base):
    base["topology"]["bottleneck"]["loss_schedule"] = [["2s", 0.1], ["1s", 0.2]]
    reject(base, "topology.bottleneck.loss_schedule", "strictly increasing")


def test_loss_schedule_probability(base):
    base["topology"]["bottleneck"]["loss_schedule"] = [["0s", 0.1], ["1s", 2.0]]
    reject(base, "topology.bottleneck.loss_schedule", "[0, 1]")


@pytest.mark.parametrize("sched, words", [
    ([["0s", "10ms"], ["8s", "300ms"], ["8s", "10ms"]], ["strictly increasing"]),
    ([["-1s", "10ms"]], ["[0] time", ">= 0"]),
    ([["0s", "-10ms"]], ["[0] delay", ">= 0"]),
    ([["0s", "10ms"], ["1s", "2min"]], ["[1] delay", "<= 60"]),
    ([["0s", "fast"]], ["[0] delay"]),
])
def test_delay_schedule_checked(base, sched, words):
    base["topology"]["bottleneck"]["delay_schedule"] = sched
    reject(base, "topology.bottleneck.delay_schedule", *words)


def test_delay_schedule_below_the_jitter(base):
    base["topology"]["bottleneck"].update(delay="10ms", jitter="5ms", delay_schedule=[["1s", "2ms"]])
    reject(base, "topology.bottleneck", "delay_schedule[0]", "below the link's jitter")


def test_cli_bad_delay_schedule_exit_2(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('duration = "2s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\nrate = "10Mbps"\n'
                 'delay_schedule = [["1s", "300ms"], ["0.5s", "10ms"]]\n[[flows]]\ncc = "newreno"\nrtt = "40ms"\n')
    r = run_cli("validate", str(p))
    assert r.returncode == 2
    assert "topology.bottleneck.delay_schedule" in r.stderr and "strictly increasing" in r.stderr
    assert "Traceback" not in r.stderr


def test_buffer_fractional_packets(base):
    base["topology"]["bottleneck"]["buffer"] = 2.5
    msg = reject(base, "topology.bottleneck.buffer", "whole number")
    assert msg.count("\n") == 0  # the dumbbell's two directions share the setting: reported once


def test_dumbbell_flow_takes_no_links(base):
    base["flows"][0]["links"] = [0, 1]
    reject(base, "flows[0].links", "dumbbell")


def test_parking_lot_link_errors_name_the_link():
    # Each topology kind has its own model, so a bad parking-lot link is not also reported as a graph
    # link missing src/dst.
    data = {
        "duration": "2s",
        "topology": {"kind": "parking_lot", "links": [{"rate": "10Mbps"}, {"rate": "-1Mbps", "delay": "5ms"}]},
        "flows": [{"cc": "newreno", "rtt": "40ms", "links": [0]}],
    }
    msg = reject(data, "topology.links[1].rate", "must be > 0")
    assert msg == 'topology.links[1].rate: must be > 0, got "-1Mbps"'


def test_parking_lot_link_listed_twice():
    data = {
        "duration": "2s",
        "topology": {"kind": "parking_lot", "links": [{"rate": "10Mbps"}, {"rate": "10Mbps"}]},
        "flows": [{"cc": "newreno", "rtt": "40ms", "links": [0, 0]}],
    }
    reject(data, "flows[0].links", "only once")


def test_graph_self_loop_and_no_route():
    data = {
        "duration": "2s",
        "topology": {"kind": "graph", "nodes": ["a", "b", "c"], "links": [
            {"src": "a", "dst": "a", "rate": "10Mbps"}, {"src": "a", "dst": "b", "rate": "10Mbps"}]},
        "flows": [{"cc": "newreno", "src": "a", "dst": "c", "rtt": "40ms"}],
    }
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(data)
    fields = [f for f, _ in e.value.errors]
    assert "topology.links[0]" in fields and "flows[0]" in fields
    assert "no route from 'a' to 'c'" in str(e.value)


def test_graph_duplicate_node_names():
    # A name listed twice is reported (it used to crash with a KeyError in the route search).
    data = {
        "duration": "2s",
        "topology": {"kind": "graph", "nodes": ["a", "b", "a"], "links": [{"src": "a", "dst": "b", "rate": "10Mbps"}]},
        "flows": [{"cc": "newreno", "src": "a", "dst": "b"}],
    }
    reject(data, "topology.nodes", "must be unique")


def test_graph_link_missing_src():
    data = {
        "duration": "2s",
        "topology": {"kind": "graph", "nodes": ["a", "b"], "links": [{"dst": "b", "rate": "10Mbps"}]},
        "flows": [{"cc": "newreno", "src": "a", "dst": "b"}],
    }
    reject(data, "topology.links[0].src", "required")


def test_sample_interval_too_fine(base):
    base["duration"] = "100s"
    base["sample_interval"] = "1us"
    reject(base, "sample_interval", "time-series rows", "coarser")


def test_every_error_listed_one_per_line(base):
    base["flows"][0]["rtt"] = "-5ms"
    base["topology"]["bottleneck"]["rate"] = "0Mbps"
    base["colour"] = "blue"
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(base)
    lines = str(e.value).splitlines()
    assert sorted(lines) == sorted([
        'colour: unknown key',
        'topology.bottleneck.rate: must be > 0, got "0Mbps"',
        'flows[0].rtt: must be > 0, got "-5ms"',
    ])


def test_model_validate_raises_scenario_error(base):
    # the pydantic entry point gives the same field-named ScenarioError (a ValueError) as from_dict
    base["flows"][0]["cc"] = "tahoe"
    with pytest.raises(ValueError) as e:
        cclab.Scenario.model_validate(base)
    assert isinstance(e.value, ScenarioError)
    assert str(e.value).startswith('flows[0].cc: unknown algorithm "tahoe"')


def test_run_seed_override_checked(base):
    with pytest.raises(ScenarioError, match="seed: must be an integer"):
        cclab.run(base, seed=-3, progress=False)


def test_cli_unknown_algorithm_lists_the_registry(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('duration = "2s"\n[topology.bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "tahoe"\nrtt = "40ms"\n')
    r = run_cli("validate", str(p))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    # the allowed names come from the Rust registry, not from a list in Python
    for name in cclab.algorithms():
        assert name in r.stderr
