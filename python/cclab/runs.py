"""What ``cclab sweep`` and ``cclab search`` both make: simulation runs named by their scenario, as tasks of the
shared executor (cclab.executor, which ``cclab reproduce`` uses too), and the key paths both use to edit a
scenario (``flows[0].cc``, ``flows[*].rtt``).

A run is a :class:`Point`: its scenario (seed included), the values that made it (grid values, an adversary's
parameters), and its id, a hash of scenario, seed and cclab version (:func:`run_id`), so that the same run asked
twice is made once and a run of another cclab version is never taken for this one's. :func:`task` makes a point a
task whose folder is ``OUT/runs/<id>/``. ``light=True`` writes only ``summary.json`` (and ``point.json``), not the
time series: a search scores thousands of candidates by a number of their summary, and the per-run cost of
writing ``timeseries.parquet`` and ``spec.json`` was a third of a short run's (bench/search_speed.py);
``cclab run`` on the scenario remakes everything.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from . import executor, provenance
from .errors import short_field
from .scenario import ScenarioError, parse_toml, read_text

# One step of a key path: a name and its indices ("flows[0]", "flows[*]", "measure").
STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[(?:\d+|\*)\])*)$")


@dataclass
class Point:
    """One run: its id, the values that made it (key -> value), its seed and its whole scenario."""

    id: str
    values: dict[str, Any]
    seed: int
    scenario: dict


def set_key(d: Any, key: str, value: Any) -> None:
    """Sets ``value`` at dotted path ``key`` (``a.b[2].c``, ``flows[*].cc``) in ``d``; raises KeyError
    naming what is missing (a long name cut, as in every message: errors.short_field)."""
    steps: list[Any] = []
    for part in key.split("."):
        m = STEP.match(part)
        if not m:
            raise KeyError(f"{short_field(repr(part))} is not a name or name[index]")
        steps.append(m.group(1))
        steps += [("*" if i == "*" else int(i)) for i in re.findall(r"\[(\d+|\*)\]", m.group(2))]

    def walk(node: Any, rest: list[Any], done: str) -> None:
        step, rest = rest[0], rest[1:]
        if step == "*" or isinstance(step, int):
            if not isinstance(node, list):
                raise KeyError(f"{short_field(done)} is not a list")
            idx = range(len(node)) if step == "*" else [step]
            for i in idx:
                if i >= len(node):
                    raise KeyError(f"{short_field(done)} has {len(node)} entries, no [{i}]")
                if rest:
                    walk(node[i], rest, f"{done}[{i}]")
                else:
                    node[i] = value
            return
        if not isinstance(node, dict):
            raise KeyError(f"{short_field(done)} is not a table")
        here = f"{done}.{step}" if done else step
        if rest:
            if step not in node:
                # Creating a missing table is allowed (e.g. params = {...}); a missing list is not.
                if isinstance(rest[0], str):
                    node[step] = {}
                else:
                    raise KeyError(f"{short_field(here)} is not in the scenario")
            walk(node[step], rest, here)
        else:
            node[step] = value

    walk(d, steps, "")


def run_id(scenario: dict, seed: int, version: Optional[str] = None) -> str:
    """The run's id: a hash of its scenario, seed and the cclab version that runs it (``version``: None for
    this cclab's; "" for none, the ids of sweeps written before versions were part of them)."""
    v = provenance.version() if version is None else version
    key: dict[str, Any] = {"scenario": scenario, "seed": seed}
    if v:
        key["cclab"] = v
    blob = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def point(scenario: dict, seed: int, values: Optional[dict[str, Any]] = None) -> Point:
    """The run of ``scenario`` with ``seed`` (set into a copy of it)."""
    d = dict(scenario, seed=seed)
    return Point(run_id(d, seed), dict(values or {}), seed, d)


def read_toml(path: Path, field: str, what: str) -> dict:
    """A TOML file as a dict, read as scenario files are (UTF-8, bounded size, bounded nesting); a
    ScenarioError naming ``field`` and the file otherwise."""
    try:
        return parse_toml(read_text(path, what), str(path))
    except ScenarioError as e:
        raise ScenarioError([(f"{field} ({f})" if field else f, m) for f, m in e.errors]) from None


def write_point(p: dict, plots: bool, part: Path, light: bool = False) -> None:
    """Writes run ``p`` (a Point as a dict) into folder ``part``: its results (only summary.json if ``light``)
    and its point.json."""
    from .runner import run

    res = run(p["scenario"], None, progress=False)
    if light:
        # As Result.to_dir writes it: NaN and infinities (not JSON) as null, keys sorted.
        (part / "summary.json").write_text(json.dumps(_finite(res.summary), indent=1, sort_keys=True) + "\n")
    else:
        res.to_dir(part, plots=plots)
    (part / "point.json").write_text(json.dumps(p, indent=1))


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def task(p: Point, out: Path, plots: bool = False, light: bool = False) -> executor.Task:
    """Point ``p`` as a task of the shared executor: its folder is ``OUT/runs/<id>/`` (finished when it exists)."""
    return executor.Task(out / "runs" / p.id,
                         functools.partial(write_point, json.loads(json.dumps(p.__dict__)), plots, light=light), key=p)
