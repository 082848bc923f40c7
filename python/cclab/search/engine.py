"""Evaluating candidates and running the methods (``cclab search``).

Each (candidate, seed) is a run of the sweep's kind (cclab.runs), named by a hash of its scenario and seed and
made through the shared executor (cclab.executor) in ``OUT/runs/<id>/``: a rerun of the same search asks the same
candidates (the methods are seeded) and finds their runs finished, so it resumes after Ctrl-C or SIGKILL without
repeating any. Candidates are evaluated a generation (CMA-ES's population) at a time, in parallel. A candidate's
run writes its summary only (``light``): the search needs one number of it, and the best candidates are remade
in full by the outputs (cclab.search.outputs).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Optional

from .. import executor, runs
from ..scenario import Scenario, ScenarioError
from .space import UNMEASURED, RunFailed, Search, _err, decode, metric_of, scenario_of


def ci95(xs: list[float]) -> float:
    """Student-t 95 % half-width of the mean of ``xs`` (0 for one value: no spread measured)."""
    from ..stats import ci_halfwidth

    n = len(xs)
    if n < 2:
        return 0.0
    m = sum(xs) / n
    return float(ci_halfwidth(math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)), n))


def run_all(tasks: list[executor.Task], workers: int, scheduler: Optional[str],
            on_run: Callable[[], None] = lambda: None) -> dict[str, str]:
    """Runs ``tasks`` (duplicates made once) on the local pool or a Dask cluster; the failed runs' messages."""
    errors: dict[str, str] = {}
    seen: set[str] = set()
    unique = [t for t in tasks if not (t.key.id in seen or seen.add(t.key.id))]  # type: ignore[func-returns-value]

    def settle(t: executor.Task, status: str, message: str = "", stderr: str = "") -> None:
        if status == "failed":
            errors[t.key.id] = message
        on_run()

    if scheduler:
        executor.run_dask(unique, scheduler, settle)
    else:
        executor.run_local(unique, workers, settle)
    return errors


def _intact(final: Path) -> bool:
    """A candidate's run is finished when its folder holds a summary.json that reads back: one damaged since
    (truncated, edited, replaced by a FIFO) is redone, not kept failing the search on every rerun."""
    from ..results import load_summary

    if not final.is_dir():
        return False
    try:
        load_summary(final / "summary.json")
    except ScenarioError:
        return False
    return True


def _task(p: runs.Point, out: Path) -> executor.Task:
    """Point ``p``'s run (its summary only) as a task of the shared executor, a damaged one redone."""
    return dataclasses.replace(runs.task(p, out, light=True), finished=_intact)


def _value(out: Path, p: runs.Point, metric: str, errors: dict[str, str], what: str) -> Optional[float]:
    from ..results import load_summary

    f = out / "runs" / p.id / "summary.json"
    if p.id in errors or not f.exists():
        raise RunFailed(f"run {p.id} of {what} failed: {errors.get(p.id, 'no summary.json')}")
    try:
        return metric_of(load_summary(f), metric)
    except KeyError as e:
        raise _err("objective.metric", f"{e.args[0]} (in {f})") from None


def _evaluate(s: Search, xs: list[list[float]], out: Path, workers: int, on_run: Callable[[], None],
              scheduler: Optional[str] = None) -> list[dict]:
    """Evaluates candidates ``xs`` (unit-cube points), each over ``s.seeds``, their runs in parallel through the
    executor (finished runs are skipped: a resumed search repeats none); one record per candidate. A candidate
    the scenario rules refuse (e.g. jitter above the link's delay) is not run: it scores unmeasured, the reason
    kept in its record."""
    cands = []
    tasks = []
    for x in xs:
        vals = decode(s, x)
        scen = scenario_of(s, vals, out / "traces")
        try:
            Scenario.from_dict(scen)
            invalid = None
        except ScenarioError as e:
            invalid = str(e).replace("\n", "; ")
        pts = [] if invalid else [runs.point(scen, seed, vals) for seed in s.seeds]
        cands.append((x, vals, pts, invalid))
        tasks += [_task(p, out) for p in pts]
    errors = run_all(tasks, workers, scheduler, on_run)
    recs = []
    for x, vals, pts, invalid in cands:
        per = [_value(out, p, s.metric, errors, f"candidate {vals}") for p in pts]
        got = [v for v in per if v is not None]
        mean = sum(got) / len(got) if got and len(got) == len(per) else None
        rec: dict[str, Any] = {"x": [float(u) for u in x], "values": vals, "seeds": [p.seed for p in pts],
                               "runs": [p.id for p in pts], "per_seed": per, "objective": mean,
                               "ci95": ci95(got) if mean is not None else None}
        if invalid:
            rec["invalid"] = invalid
        recs.append(rec)
    return recs


def loss(s: Search, r: dict) -> float:
    """What the methods minimise: the objective, negated for ``maximize``; unmeasured scores worst."""
    if r["objective"] is None:
        return UNMEASURED
    return r["objective"] if s.goal == "minimize" else -r["objective"]


def _write_jsonl(path: Path, recs: list[dict]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in recs))
    os.replace(tmp, path)


def run_method(s: Search, method: str, out: Path, workers: int, on_run: Callable[[], None],
               scheduler: Optional[str] = None) -> list[dict]:
    """Every evaluation of ``method``, in order; ``OUT/<method>/evaluations.jsonl`` rewritten after each batch."""
    import numpy as np

    folder = out / method
    folder.mkdir(parents=True, exist_ok=True)
    recs: list[dict] = []
    n = len(s.dims)
    if method == "cmaes":
        import cma  # type: ignore[import-untyped]

        opts: dict[str, Any] = {"bounds": [0, 1], "seed": s.seed, "verbose": -9}
        if s.batch:
            opts["popsize"] = s.batch
        es = cma.CMAEvolutionStrategy([0.5] * n, 0.3, opts)
        gen = 0
        while len(recs) < s.evaluations:  # whole generations: CMA-ES updates from a full population
            xs = [list(map(float, x)) for x in es.ask()]
            batch = _evaluate(s, xs, out, workers, on_run, scheduler)
            es.tell([np.array(x) for x in xs], [loss(s, r) for r in batch])
            for r in batch:
                recs.append({"method": method, "n": len(recs), "generation": gen, **r})
            gen += 1
            _write_jsonl(folder / "evaluations.jsonl", recs)
    else:
        rng = np.random.default_rng(s.seed)
        size = s.batch or 8
        gen = 0
        while len(recs) < s.evaluations:
            k = min(size, s.evaluations - len(recs))
            xs = [list(map(float, rng.random(n))) for _ in range(k)]
            for r in _evaluate(s, xs, out, workers, on_run, scheduler):
                recs.append({"method": method, "n": len(recs), "generation": gen, **r})
            gen += 1
            _write_jsonl(folder / "evaluations.jsonl", recs)
    return recs


def expected_runs(s: Search) -> int:
    """Runs the search makes at most (CMA-ES rounds up to whole generations)."""
    total = 0
    for m in s.methods:
        if m == "cmaes":
            pop = s.batch or 4 + int(3 * math.log(len(s.dims)))
            total += math.ceil(s.evaluations / pop) * pop
        else:
            total += s.evaluations
    return total * len(s.seeds)


def baseline(s: Search, out: Path, workers: int, scheduler: Optional[str]) -> Optional[float]:
    """The objective of the base scenario without the adversary (the same seeds, runs of the same kind)."""
    pts = [runs.point(s.base, k) for k in s.seeds]
    errors = run_all([_task(p, out) for p in pts], workers, scheduler)
    vals = [_value(out, p, s.metric, errors, "the base scenario (without the adversary)") for p in pts]
    got = [v for v in vals if v is not None]
    return sum(got) / len(got) if got and len(got) == len(vals) else None
