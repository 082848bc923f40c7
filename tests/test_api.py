"""The typed public surface: what `import cclab` offers, and that the stub matches the compiled module."""
import ast
import inspect
from pathlib import Path

import cclab
from cclab import _native


def test_public_names():
    assert set(cclab.__all__) >= {"Scenario", "ScenarioError", "Result", "run", "metrics", "algorithms", "queues"}
    assert issubclass(cclab.ScenarioError, ValueError)
    assert (Path(cclab.__file__).parent / "py.typed").exists()


def test_stub_matches_native_module():
    # a small stubtest: every public name of the compiled module is in _native.pyi and vice versa, and
    # the functions take the parameters the stub says, in order
    stub = ast.parse((Path(cclab.__file__).parent / "_native.pyi").read_text())
    funcs = {n.name: [a.arg for a in n.args.args] for n in stub.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name for n in stub.body if isinstance(n, ast.ClassDef)}
    names = set(funcs) | classes | {n.target.id for n in stub.body if isinstance(n, ast.AnnAssign)}
    public = {n for n in dir(_native) if not n.startswith("__")} | {"__version__"}  # _panic too
    assert names == public
    for name, params in funcs.items():
        assert list(inspect.signature(getattr(_native, name)).parameters) == params, name


def test_registry_names_come_from_rust():
    assert cclab.algorithms() == list(_native.sender_names())
    assert {"newreno", "reno", "sack"} <= set(cclab.algorithms())
    assert {"droptail", "red"} <= set(cclab.queues())


def test_native_errors_carry_field_and_message():
    assert issubclass(_native.SpecError, ValueError)
    try:
        _native.validate_sender("no-such-cc", "{}")
    except _native.SpecError as e:
        assert e.field == "cc" and e.message.startswith("unknown algorithm")
        assert str(e) == f"cc: {e.message}"
    else:
        raise AssertionError("no SpecError")


def test_limits_come_from_rust():
    from cclab import scenario

    lim = _native.limits()
    assert {k: lim[k] for k in ("max_series_rows", "max_flow_count", "max_delayed_ack", "seed_limit")} == {
        "max_series_rows": 10_000_000, "max_flow_count": 100_000, "max_delayed_ack": 64, "seed_limit": 2**63}
    assert scenario.MAX_SERIES_ROWS == lim["max_series_rows"]
    # the hard bounds and the default budget (docs/scenario.md "Limits")
    assert scenario.MAX_TIME == lim["max_time_ns"] / 1e9 == 1e6
    assert (scenario.MIN_RATE, scenario.MAX_RATE) == (1e3, 1e13)
    assert (scenario.MIN_PACKET, scenario.MAX_PACKET) == (64, 65535)
    assert scenario.MAX_RTO == 60.0
    assert scenario.MAX_SCHEDULED_DELAY == lim["max_scheduled_delay_ns"] / 1e9 == 60.0
    assert (scenario.DEFAULT_MAX_MEMORY, scenario.DEFAULT_MAX_EVENTS) == (4 * 2**30, 2 * 10**9)
