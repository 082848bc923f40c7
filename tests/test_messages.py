"""Messages for mistakes in scenario, sweep and search files and on the command line: the nearest valid
name for a misspelt key, algorithm, queue, parameter or experiment ("did you mean `buffer`?"), every
mistake of a file at once, algorithm and queue parameters that take the units other fields take (with
their ranges said in that unit), the spellings of a rate unit, and exit code 2 for each."""
import json
import subprocess
import sys

import pytest

import cclab
from cclab import ScenarioError
from cclab.units import parse_rate

THREE_MISTAKES = """\
name = "three"
duration = "2s"

[transport]
mss = "-5B"

[topology]
kind = "dumbbell"

[topology.bottleneck]
rate = "10Mbps"
bufer = "BDP"

[[flows]]
cc = "cubci"
rtt = "20ms"
"""


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True)


def _errors(data):
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(data)
    return dict(e.value.errors)


def test_a_file_with_three_mistakes_in_three_tables_reports_all_three(tmp_path):
    # Before: the unknown key stopped validation, so the bad mss was reported with it but the misspelt
    # algorithm (checked after the keys and types) only once those two were fixed.
    f = tmp_path / "three.toml"
    f.write_text(THREE_MISTAKES)
    r = _cli("run", str(f), "--out", str(tmp_path / "out"), "--no-plots")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("error: ")]
    assert len(lines) == 3, r.stderr
    fields = [x.split(": ", 2)[1] for x in lines]
    assert sorted(fields) == ["flows[0].cc", "topology.bottleneck.bufer", "transport.mss"]
    assert "did you mean `buffer`?" in r.stderr and "did you mean `cubic`?" in r.stderr
    assert not (tmp_path / "out").exists()


def test_bufer_suggests_buffer(base):
    base["topology"]["bottleneck"]["bufer"] = "BDP"
    assert _errors(base) == {"topology.bottleneck.bufer": "unknown key; did you mean `buffer`?"}


def test_unknown_keys_everywhere_name_their_neighbour(base):
    base["durration"] = "3s"
    base["flows"][0]["rt"] = "20ms"
    base["transport"] = {"min_rot": "200ms"}
    errs = _errors(base)
    assert errs["durration"].endswith("did you mean `duration`?")
    assert errs["flows[0].rt"].endswith("did you mean `rtt`?")
    assert errs["transport.min_rot"].endswith("did you mean `min_rto`?")
    # A key like none of the table's: no guess.
    assert _errors({**base, "zzz": 1})["zzz"] == "unknown key"


def test_an_assignment_to_an_unknown_attribute_suggests_too(base):
    sc = cclab.Scenario.from_dict(base)
    with pytest.raises(ScenarioError) as e:
        sc.flows[0].rttt = "10ms"
    assert e.value.errors == [("flows[0].rttt", "unknown key; did you mean `rtt`?")]


def test_misspelt_algorithm_queue_and_parameter_names(base):
    base["flows"][0]["cc"] = "cubci"
    base["topology"]["bottleneck"]["queue"] = "codle"
    errs = _errors(base)
    assert errs["flows[0].cc"].startswith('unknown algorithm "cubci"; did you mean `cubic`? Allowed: newreno')
    assert errs["topology.bottleneck.queue"].startswith('unknown queue "codle"; did you mean `codel`? Allowed:')
    base["flows"][0]["cc"] = "cubic"
    base["topology"]["bottleneck"]["queue"] = "codel"
    base["flows"][0]["params"] = {"bta": 0.5}
    msg = _errors(base)["flows[0].params.bta"]
    assert msg.startswith("unknown parameter for cubic; did you mean `beta`? Allowed: ") and ", c, " in msg, msg


def test_every_bad_parameter_of_a_flow_is_reported(base):
    # The core stops at the first bad parameter; each is reported in turn.
    base["flows"][0]["cc"] = "cubic"
    base["flows"][0]["params"] = {"beta": 3, "c": -1, "bogus": True}
    errs = _errors(base)
    assert set(errs) == {"flows[0].params.beta", "flows[0].params.c", "flows[0].params.bogus"}
    assert errs["flows[0].params.beta"] == "must be between 0.01 and 0.99, got 3"


@pytest.mark.parametrize("params, field, message", [
    # A time parameter: its range in seconds, said in the unit a reader would pick.
    ({"target": "20s"}, "target", "must be between 1 µs and 10 s, got 20 s"),
    ({"target": 0}, "target", "must be between 1 µs and 10 s, got 0 s"),
    ({"target": "5 parsecs"}, "target", 'unknown unit "parsecs"; allowed: ns, us, ms, s, min'),
    ({"target": "5"}, "target", 'needs a unit (ns, us, ms, s, min), got "5"'),
    ({"target": True}, "target", 'must be a time like "10ms" or a number of seconds, got true'),
])
def test_queue_time_parameters_take_units_and_say_ranges_in_them(base, params, field, message):
    base["topology"]["bottleneck"].update(queue="codel", params=params)
    assert _errors(base) == {f"topology.bottleneck.params.{field}": message}


def test_parameters_with_units_run_as_their_numbers(base):
    # "5ms" and 0.005 are the same CoDel target; "10 mbps" the same Madison capacity as 10: identical runs.
    def run(target, capacity):
        d = json.loads(json.dumps(base))
        d["duration"] = "1s"
        d["topology"]["bottleneck"].update(queue="codel", params={"target": target, "interval": "100ms"})
        d["flows"] = [{"cc": "madison", "rtt": "20ms", "params": {"capacity_mbps": capacity, "T": "200ms"}}]
        return cclab.run(cclab.Scenario.from_dict(d)).summary
    a, b = run("5ms", "10 mbps"), run(0.005, 10)
    assert a["flows"] == b["flows"] and a["links"] == b["links"]
    # Every spelling of a time or rate parameter's unit in the simulator's reader is the scenario's.
    d = json.loads(json.dumps(base))
    d["flows"] = [{"cc": "madison", "rtt": "20ms", "params": {"capacity_mbps": "10Mbit/s"}}]
    cclab.Scenario.from_dict(d)  # accepted


def test_a_unit_on_a_parameter_without_one_is_refused(base):
    base["flows"][0]["cc"] = "cubic"
    base["flows"][0]["params"] = {"beta": "0.5s"}
    assert _errors(base) == {"flows[0].params.beta": 'must be a finite number, got "0.5s"'}


@pytest.mark.parametrize("text", ["100Mbps", "100mbps", "100Mbit/s", "100Mb/s", "100 mbit/s", "0.1Gbps", "1e5kbps",
                                  "100000 kb/s"])
def test_rate_spellings_are_one_unit(text, base):
    assert parse_rate(text) == pytest.approx(100e6, rel=1e-12)  # exact but for float rounding of 0.1 G
    base["topology"]["bottleneck"]["rate"] = text
    d = cclab.Scenario.from_dict(base).to_spec()
    assert d["links"][0]["rate_bps"] == pytest.approx(100e6, rel=1e-12)


def test_bytes_per_second_is_no_rate_and_says_why(base):
    base["topology"]["bottleneck"]["rate"] = "100MBps"
    msg = _errors(base)["topology.bottleneck.rate"]
    assert 'unknown unit "MBps"' in msg and "uppercase B is bytes" in msg


def test_sweep_and_search_files_suggest_keys(tmp_path):
    sweep = tmp_path / "s.toml"
    sweep.write_text('scenario = "x.toml"\nseedz = 3\n')
    r = _cli("sweep", str(sweep), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "seedz: unknown sweep key; did you mean `seeds`?" in r.stderr, r.stderr
    from cclab.search import space

    with pytest.raises(ScenarioError) as e:
        space._only("search", {"budgett": 3}, {"budget", "method"})
    assert e.value.errors == [("search.budgett", "unknown key; did you mean `budget`?")]


def test_cli_experiment_id_suggests():
    r = _cli("reproduce", "Mm1", "--quick")
    assert r.returncode == 2 and "unknown mm1; did you mean `M1`?" in r.stderr, r.stderr


def test_a_sweep_file_with_three_mistakes_reports_all_three(tmp_path):
    # Before: the unknown key stopped the file's check; the repeated seed and the empty grid list each
    # needed another run to be found.
    sweep = tmp_path / "s.toml"
    sweep.write_text('seedz = 3\nseeds = [1, 1]\n[base]\nname = "x"\nduration = "1s"\n'
                     '[base.topology]\nkind = "dumbbell"\n[base.topology.bottleneck]\nrate = "10Mbps"\n'
                     '[[base.flows]]\ncc = "cubic"\nrtt = "20ms"\n[grid]\n"flows[0].cc" = []\n')
    r = _cli("sweep", str(sweep), "--out", str(tmp_path / "o"))
    lines = [x for x in r.stderr.splitlines() if x.startswith("error: ")]
    assert r.returncode == 2 and lines == [
        "error: seedz: unknown sweep key; did you mean `seeds`?",
        "error: seeds: has repeated values",
        "error: grid.flows[0].cc: must be a non-empty list of values, got []"], r.stderr
