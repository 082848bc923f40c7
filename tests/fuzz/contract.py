"""The error contract (docs/scenario.md "Rejections"), checked on one case at a time: used by
tests/test_fuzz_contract.py (a few thousand cases, fast) and by the longer campaign (``make
fuzz-scenarios``, tests/fuzz/campaign.py). Each check returns None when the contract held, else a finding
(one line saying what broke it).

The contract: bad input is refused with a ScenarioError (a ValueError) whose every (field, message) pair
names a field (or the file) and says what is allowed, with no internals (serde's "at line 1 column N",
Python reprs, "run spec spec"); the CLI exits 0 or 2 without a traceback; a run either succeeds or is
refused the same way. Never another exception, a Rust panic or a hang.
"""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any, Optional

import cclab
from cclab import ScenarioError

# Text that must never reach a user: serde's positions in the JSON the front door wrote, Python reprs,
# Rust panics, tracebacks.
INTERNALS = re.compile(r"line \d+ column \d+|run spec spec|Traceback|panicked at|object at 0x|<class '|"
                       r"PanicException|RecursionError|OverflowError|UnicodeDecodeError|MemoryError")
# The longest message we accept: one line per problem, values shown cut to a readable length.
MAX_MESSAGE = 2000


def check_error(e: ScenarioError) -> Optional[str]:
    """A ScenarioError as the contract wants it, or what is wrong with it."""
    if not e.errors:
        return "ScenarioError without errors"
    for field, msg in e.errors:
        if not field or not field.strip():
            return f"no field named: {msg[:200]!r}"
        if not msg or not msg.strip():
            return f"{field}: empty message"
        if INTERNALS.search(f"{field}: {msg}"):
            return f"internals in the message: {field}: {msg[:300]!r}"
        if len(msg) > MAX_MESSAGE or len(field) > 200:
            return f"message of {len(msg)} characters (field {len(field)}): {field[:100]}: {msg[:200]!r}"
    return None


def check_validation(case: Any, datapath: str = "sim") -> tuple[Optional[str], Optional[cclab.Scenario]]:
    """(finding or None, the scenario if accepted) for one scenario dict, validated for ``datapath``
    ("net": also against what the real datapath runs, as ``cclab net run --loopback`` checks it)."""
    try:
        sc = cclab.Scenario.from_dict(case, datapath=datapath)
        if datapath == "net":
            from cclab import net

            net.validate(sc, loopback=True)
    except ScenarioError as e:
        return check_error(e), None
    except Exception as e:  # the contract's "never": anything else is a finding
        return f"{type(e).__name__}: {str(e)[:300]}", None
    return None, sc


def shortened(case: dict, duration: float = 1.5, max_flows: int = 200) -> Optional[dict]:
    """``case`` cut to ``duration`` seconds, without a measurement window, starts or stops, or None when it
    has more than ``max_flows`` flows (too slow for the fast test)."""
    d = copy.deepcopy(case)
    try:
        flows = sum(int(f.get("count", 1)) for f in d["flows"])
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    if flows > max_flows:
        return None
    d["duration"] = f"{duration}s"
    d.pop("measure", None)
    d["sample_interval"] = "100ms"
    # A tight event budget: a run the estimate let through that goes far beyond it (an algorithm that
    # sends above its path's rate) is stopped by the simulator itself, as a ScenarioError.
    d["limits"] = {"max_events": 5e6}
    # Starts and stops belong to the full-length run: every flow and source runs the whole short one.
    for key in ("flows", "traffic"):
        for x in d.get(key) or []:
            if isinstance(x, dict):
                x.pop("start", None)
                x.pop("stop", None)
    return d


def check_run(case: dict) -> Optional[str]:
    """A short run of an accepted case: a result, or a ScenarioError as the contract wants it."""
    try:
        res = cclab.run(case, progress=False)
    except ScenarioError as e:
        return check_error(e)
    except Exception as e:
        return f"run: {type(e).__name__}: {str(e)[:300]}"
    except BaseException as e:  # PanicException derives from BaseException
        if isinstance(e, KeyboardInterrupt):
            raise
        return f"run: {type(e).__name__} (BaseException): {str(e)[:300]}"
    s = res.summary
    if not s["flows"] or any(not math.isfinite(f["goodput_bps"]) for f in s["flows"]):
        return f"run: a summary without finite goodputs: {json.dumps(s['flows'])[:300]}"
    return None


def check_cli_validate(runner: Any, path: Path) -> Optional[str]:
    """``cclab validate PATH`` in-process (click's CliRunner): exit 0 or 2, no traceback, no internals."""
    from cclab.cli import cli

    r = runner.invoke(cli, ["validate", str(path)])
    text = r.output + (r.stderr if r.stderr_bytes is not None else "")
    if r.exit_code not in (0, 2):
        exc = f"{type(r.exception).__name__}: {r.exception}" if r.exception else ""
        return f"cclab validate exit {r.exit_code}: {exc[:300]} {text[-300:]!r}"
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        return f"cclab validate raised {type(r.exception).__name__}: {str(r.exception)[:300]}"
    if INTERNALS.search(text):
        return f"cclab validate printed internals: {text[:300]!r}"
    if r.exit_code == 2 and "error: " not in text.lower():
        return f"cclab validate exit 2 without an error line: {text[:300]!r}"
    return None


def toml_of(case: Any) -> Optional[str]:
    """A scenario dict as TOML text, for the file readers (None if TOML cannot say it)."""
    lines: list[str] = []

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            if isinstance(v, float) and not math.isfinite(v):
                return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()) + "}"
        raise TypeError(type(v))

    if not isinstance(case, dict):
        return None
    try:
        for k, v in case.items():
            lines.append(f"{json.dumps(str(k))} = {value(v)}")
    except (TypeError, RecursionError, ValueError):
        return None
    return "\n".join(lines) + "\n"
