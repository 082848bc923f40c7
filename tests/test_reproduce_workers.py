"""Runs on worker processes (issue 28, section 2, items 4 and 6): cclab's exceptions cross process
boundaries intact, and a killed `cclab reproduce` leaves no worker behind and resumes to the same report."""
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import cclab
from cclab import errors, sweep as sw
from cclab.errors import ScenarioError


def _exception_classes():
    """Every exception class defined in cclab/errors.py (the module states the package's error types)."""
    return [v for v in vars(errors).values()
            if isinstance(v, type) and issubclass(v, BaseException) and v.__module__ == errors.__name__]


def _instances():
    yield ScenarioError([("flows[0].rtt", "must be a time like \"40ms\", got \"x\""), ("", "a problem with no field")])
    yield ScenarioError([])
    yield sw.RunsFailed([{"run": "abc", "values": {"k": 1}, "seed": 2, "error": "ValueError: x", "stderr": ""}],
                        None, 3, Path("/tmp/out"))


def test_every_error_class_is_listed():
    # A class added to errors.py without an instance above would go untested.
    assert {type(e) for e in _instances()} >= set(_exception_classes())


@pytest.mark.parametrize("exc", list(_instances()), ids=lambda e: type(e).__name__)
def test_exceptions_survive_pickling(exc):
    # Before: ScenarioError(message) on unpickling, which iterated the message's characters as (field,
    # message) pairs and raised ValueError: a worker's error broke the process pool (BrokenProcessPool).
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc)
    if isinstance(exc, ScenarioError):
        assert back.errors == exc.errors
    if isinstance(exc, sw.RunsFailed):
        assert back.failures == exc.failures


def _bad_run(_):
    return cclab.run({"name": "x", "duration": "nonsense"}, None, progress=False, plots=False)


def test_cclab_run_in_a_users_process_pool_raises_scenario_error():
    # Before: concurrent.futures.process.BrokenProcessPool (the worker's ScenarioError did not unpickle).
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("fork")) as ex:
        with pytest.raises(ScenarioError) as e:
            ex.submit(_bad_run, 0).result(timeout=120)
    assert any(f == "duration" for f, _ in e.value.errors), e.value.errors
