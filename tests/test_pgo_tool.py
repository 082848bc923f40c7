"""tools/pgo.py, the profile-guided build of the Python module (`make build`): its training set runs on the
code as it is (a run it could not make would leave that code laid out as cold), and its switch refuses what
it does not know. The build itself runs in every `make test` (the module the other tests use is its
output); tests/test_golden_module.py checks that module's results."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from cclab import _native

TOOL = Path(__file__).parents[1] / "tools" / "pgo.py"


def _pgo():
    spec = importlib.util.spec_from_file_location("pgo", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_training_run_is_a_valid_spec_covering_every_algorithm_and_queue():
    specs = _pgo().training_specs()
    names = [n for n, _ in specs]
    assert len(names) == len(set(names))
    for cc in _native.sender_names():
        assert f"cc {cc}" in names
    for q in _native.queue_names():
        assert f"queue {q}" in names
    assert {"bench a", "bench b", "bench c", "maxnet_m1", "libra_l1", "madison_d2", "fast_f1", "binomial_b1"} <= set(names)
    for name, spec in specs:
        assert spec["duration"] <= 20.0, name  # a short set: the build waits for it
        _native.validate_spec(json.dumps(spec))  # raises SpecError naming the field if not


def test_an_unknown_switch_value_is_refused():
    r = subprocess.run([sys.executable, str(TOOL), "build"], env=dict(os.environ, CCLAB_PGO="yes"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "CCLAB_PGO='yes': allowed values are 0" in r.stderr
