"""Libra's `penalty_rtt` (docs/algorithms/libra.md DECISION 1) from a scenario: a bad value is one error
naming the field (exit 2 on the command line); "sample" is the default (an explicit "sample" runs
identically); "srtt" reaches the sender (its penalty P differs)."""
import copy
import subprocess
import sys

import numpy as np
import pytest

import cclab
from cclab import ScenarioError

TWO = {
    "name": "libra-penalty-rtt",
    "duration": "6s",
    "seed": 1,
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": "BDP", "queue": "droptail"}},
    "flows": [{"cc": "libra", "rtt": "20ms", "params": {"capacity_mbps": 10}},
              {"cc": "libra", "rtt": "80ms", "params": {"capacity_mbps": 10}}],
}


def _with(mode):
    d = copy.deepcopy(TWO)
    if mode is not None:
        for f in d["flows"]:
            f["params"]["penalty_rtt"] = mode
    return d


def test_a_bad_penalty_rtt_is_one_error_naming_it(tmp_path):
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(_with("mean"))
    assert dict(e.value.errors) == {
        "flows[0].params.penalty_rtt": 'must be one of ["sample", "srtt"], got "mean"',
        "flows[1].params.penalty_rtt": 'must be one of ["sample", "srtt"], got "mean"'}
    toml = tmp_path / "bad.toml"
    toml.write_text('name = "bad"\nduration = "1s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\n'
                    'rate = "10Mbps"\nbuffer = "BDP"\n[[flows]]\ncc = "libra"\nrtt = "20ms"\n'
                    'params = { penalty_rtt = 3 }\n')
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(toml), "--out", str(out), "--no-plots"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and not out.exists(), r.stderr
    assert r.stderr.strip().splitlines() == ['error: flows[0].params.penalty_rtt: must be one of ["sample", "srtt"], '
                                             'got 3'], r.stderr


def test_sample_is_the_default_and_srtt_changes_the_penalty():
    runs = {m: cclab.run(_with(m), progress=False) for m in (None, "sample", "srtt")}
    assert runs[None].summary["flows"] == runs["sample"].summary["flows"]
    p = {m: runs[m].flows["libra.P"].to_numpy() for m in ("sample", "srtt")}
    assert not np.array_equal(p["sample"], p["srtt"])
