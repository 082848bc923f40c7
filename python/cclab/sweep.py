"""Sweeps: one scenario run over a grid of settings and seeds, in parallel, resumable.

A sweep file (TOML)::

    scenario = "scenarios/binomial_b1.toml"   # relative to the sweep file; or an inline [base] table
    seeds = 10                                # 1..10; or a list [1, 5, 9]
    [grid]                                    # every combination of these (Cartesian product)
    "flows[1].cc" = ["sqrt", "iiad"]
    "topology.bottleneck.rate" = ["3Mbps", "10Mbps"]
    "flows[*].rtt" = ["50ms", "100ms"]        # [*]: every entry of the list
    "flows[1].params.k, flows[1].params.l" = [[0.25, 0.25], [0.5, 0.5]]   # linked: set together

Each grid point × seed is one run, named by a hash of its scenario and seed. A run's results are written
into ``OUT/runs/<id>.partial/``, renamed to ``OUT/runs/<id>/`` when complete (an atomic rename), so a
run directory exists exactly when its run finished. Re-running the same sweep skips finished runs: an
interrupted sweep (Ctrl-C, a crash, a lost cluster) resumes without losing or repeating any. The table of
every finished run is ``OUT/results.csv`` (and ``results.parquet``): the grid values, the seed, and the
summary's headline numbers, one column per flow's goodput.

Runs go to a pool of local processes (``workers``, default: the CPU count) or, with
``scheduler="tcp://host:8786"``, to a Dask cluster (``pip install "dask[distributed]"``) through its
``concurrent.futures`` executor; every worker needs cclab installed. Whole runs are the unit of work:
the simulator is single-threaded and deterministic, so a run's result does not depend on where it ran.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from .scenario import Scenario, ScenarioError, tomllib  # tomllib: tomli before Python 3.11

if TYPE_CHECKING:
    import pandas as pd

_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[(?:\d+|\*)\])*)$")


@dataclass
class Point:
    """One run of a sweep."""

    id: str
    values: dict[str, Any]  # grid key -> value
    seed: int
    scenario: dict


def _set(d: Any, key: str, value: Any) -> None:
    """Sets ``value`` at dotted path ``key`` (``a.b[2].c``, ``flows[*].cc``) in ``d``; raises KeyError
    naming what is missing."""
    steps: list[Any] = []
    for part in key.split("."):
        m = _STEP.match(part)
        if not m:
            raise KeyError(f"{part!r} is not a name or name[index]")
        steps.append(m.group(1))
        steps += [("*" if i == "*" else int(i)) for i in re.findall(r"\[(\d+|\*)\]", m.group(2))]

    def walk(node: Any, rest: list[Any], done: str) -> None:
        step, rest = rest[0], rest[1:]
        if step == "*" or isinstance(step, int):
            if not isinstance(node, list):
                raise KeyError(f"{done} is not a list")
            idx = range(len(node)) if step == "*" else [step]
            for i in idx:
                if i >= len(node):
                    raise KeyError(f"{done} has {len(node)} entries, no [{i}]")
                if rest:
                    walk(node[i], rest, f"{done}[{i}]")
                else:
                    node[i] = value
            return
        if not isinstance(node, dict):
            raise KeyError(f"{done} is not a table")
        here = f"{done}.{step}" if done else step
        if rest:
            if step not in node:
                # Creating a missing table is allowed (e.g. params = {...}); a missing list is not.
                if isinstance(rest[0], str):
                    node[step] = {}
                else:
                    raise KeyError(f"{here} is not in the scenario")
            walk(node[step], rest, here)
        else:
            node[step] = value

    walk(d, steps, "")


def _run_id(scenario: dict, seed: int) -> str:
    blob = json.dumps({"scenario": scenario, "seed": seed}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _read_toml(path: Path, field: str, what: str) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except OSError as e:
        raise ScenarioError([(field, f"cannot read {what} {str(path)!r}: {e.strerror}")]) from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError([(field, f"malformed TOML in {str(path)!r}: {e}")]) from None


def load(path: Path) -> tuple[dict, list[int], dict[str, list]]:
    """(base scenario, seeds, grid) from a sweep file; ScenarioError naming the field on bad input."""
    path = Path(path)
    data = _read_toml(path, "", "sweep file")
    allowed = {"scenario", "base", "seeds", "grid"}
    extra = sorted(set(data) - allowed)
    if extra:
        raise ScenarioError([(k, f"unknown sweep key; allowed: {', '.join(sorted(allowed))}") for k in extra])
    if ("scenario" in data) == ("base" in data):
        raise ScenarioError([("scenario", "give exactly one of `scenario` (a file) or a [base] table")])
    if "scenario" in data:
        if not isinstance(data["scenario"], str):
            raise ScenarioError([("scenario", "must be a path to a scenario file")])
        base = _read_toml(path.parent / data["scenario"], "scenario", "scenario file")
    else:
        base = data["base"]
    seeds = data.get("seeds", [base.get("seed", 1)])
    if isinstance(seeds, bool) or not (
            (isinstance(seeds, int) and seeds >= 1)
            or (isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool)
                                                          and s >= 0 for s in seeds))):
        raise ScenarioError([("seeds", f"must be a count >= 1 or a non-empty list of integers >= 0, got {seeds!r}")])
    seeds = list(range(1, seeds + 1)) if isinstance(seeds, int) else list(seeds)
    if len(set(seeds)) != len(seeds):
        raise ScenarioError([("seeds", "has repeated values")])
    grid = data.get("grid", {})
    if not isinstance(grid, dict):
        raise ScenarioError([("grid", "must be a table of key = [values]")])
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise ScenarioError([(f"grid.{k}", f"must be a non-empty list of values, got {v!r}")])
    return base, seeds, grid


def expand(base: dict, seeds: list[int], grid: dict[str, list]) -> list[Point]:
    """Every grid point × seed, each validated as a scenario (ScenarioError names the grid key and value)."""
    keys = list(grid)
    for k in keys:  # linked keys ("a, b") take one list of values per setting
        paths = [x.strip() for x in k.split(",")]
        if len(paths) > 1 and not all(isinstance(v, list) and len(v) == len(paths) for v in grid[k]):
            raise ScenarioError([(f"grid.{k}", f"linked keys: every value must be a list of {len(paths)} values")])
    points = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        d = json.loads(json.dumps(base))
        values: dict[str, Any] = {}
        for k, v in zip(keys, combo):
            paths = [x.strip() for x in k.split(",")]
            for path, val in zip(paths, v if len(paths) > 1 else [v]):
                values[path] = val
                try:
                    _set(d, path, val)
                except KeyError as e:
                    raise ScenarioError([(f"grid.{k}", e.args[0])]) from None
        try:
            Scenario.from_dict(d)
        except ScenarioError as e:
            where = ", ".join(f"{k} = {v!r}" for k, v in values.items()) or "the base scenario"
            raise ScenarioError([(f"grid ({where}): {f}" if f else f"grid ({where})", m) for f, m in e.errors]) from None
        for seed in seeds:
            d2 = dict(d, seed=seed)
            points.append(Point(_run_id(d2, seed), values, seed, d2))
    return points


def _run_one(point_json: str, out: str, plots: bool) -> str:
    """Runs one point in a worker; returns its id. Everything is written into ``runs/<id>.partial/``,
    which is renamed to ``runs/<id>/`` when complete (a directory rename is atomic): a run directory
    exists exactly when the run finished."""
    import shutil

    from .runner import run

    p = json.loads(point_json)
    runs = Path(out) / "runs"
    part = runs / f"{p['id']}.partial"
    shutil.rmtree(part, ignore_errors=True)  # left by an interrupted attempt
    part.mkdir(parents=True)
    res = run(p["scenario"], None, progress=False)
    res.to_dir(part, plots=plots)
    (part / "point.json").write_text(json.dumps(p, indent=1))
    os.replace(part, runs / p["id"])
    return p["id"]


def finished(out: Path) -> set[str]:
    runs = Path(out) / "runs"
    if not runs.exists():
        return set()
    return {d.name for d in runs.iterdir() if not d.name.endswith(".partial") and (d / "point.json").exists()}


def table(out: Path) -> pd.DataFrame:
    """The results table of every finished run under ``out`` (pandas DataFrame)."""
    import pandas as pd

    rows = []
    for rid in sorted(finished(out)):
        d = Path(out) / "runs" / rid
        p = json.loads((d / "point.json").read_text())
        s = json.loads((d / "summary.json").read_text())
        row = {"run": rid, **p["values"], "seed": p["seed"]}
        link = s["links"][0]
        row.update({"goodput_mbps": sum(f["goodput_bps"] for f in s["flows"]) / 1e6, "jain": s["jain"],
                    "utilization": link["utilization"], "loss_rate": link["loss_rate"], "drops": link["drops"],
                    "mean_queue_pkts": link["mean_queue_pkts"], "p95_queue_delay_s": link["p95_queue_delay_s"],
                    "wall_s": s["sim"]["wall_s"]})
        for f in s["flows"]:
            row[f"goodput_mbps_flow{f['id']}"] = f["goodput_bps"] / 1e6
        rows.append(row)
    return pd.DataFrame(rows)


def run(sweep_file: Path, out: Path, workers: Optional[int] = None, scheduler: Optional[str] = None,
        plots: bool = False, on_done: Callable[[int, int], None] = lambda done, total: None) -> pd.DataFrame:
    """Runs every unfinished point of ``sweep_file`` into ``out``; returns the results table.

    Ctrl-C (KeyboardInterrupt) stops submitting, lets the running runs finish or be cancelled, writes the
    table of what finished, and re-raises: nothing finished is lost, nothing unfinished is kept as done."""
    base, seeds, grid = load(sweep_file)
    points = expand(base, seeds, grid)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps({"base": base, "seeds": seeds, "grid": grid}, indent=1))
    done = finished(out)
    todo = [p for p in points if p.id not in done]
    total = len(points)
    count = total - len(todo)
    on_done(count, total)
    executor: Executor
    client = None
    if scheduler:
        try:
            from dask.distributed import Client
        except ImportError:
            raise ScenarioError([("--scheduler", "needs Dask: pip install \"dask[distributed]\"")]) from None
        client = Client(scheduler)
        executor = client.get_executor()
    else:
        executor = ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    pending: set = set()
    try:
        pending = {executor.submit(_run_one, json.dumps(p.__dict__), str(out), plots) for p in todo}
        while pending:
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in ready:
                f.result()  # a failed run raises here, with its error
                count += 1
                on_done(count, total)
    except BaseException:
        for f in pending:
            f.cancel()
        raise
    finally:
        if client is None:
            executor.shutdown(wait=True, cancel_futures=True)
        else:
            client.close()
        t = table(out)
        if len(t):
            t.to_csv(out / "results.csv", index=False)
            t.to_parquet(out / "results.parquet", index=False)
    return t
