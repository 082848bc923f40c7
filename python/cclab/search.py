"""Adversarial search: the network conditions under which an algorithm does worst (``cclab search``).

A search file (TOML; the contract in docs/search.md)::

    scenario = "shrew_base.toml"        # relative to the search file; or an inline [base] table
    [[adversary]]                       # what the adversary controls, each with [low, high] bounds
    kind = "bursts"                     # a periodic on-off constant-rate source (the shrew attacker)
    period = ["0.2s", "3s"]
    burst = ["10ms", "500ms"]
    rate = ["1Mbps", "60Mbps"]
    [[adversary]]
    kind = "loss"                       # random loss on the bottleneck (or `key = "..."`)
    loss = [0.0, 0.01]
    [budget]
    cross_rate = 0.2                    # the bursts' mean rate ≤ 20 % of the bottleneck's capacity
    [objective]
    metric = "flows[0].goodput_bps"     # a path in summary.json; "a / b" for a ratio
    goal = "minimize"
    [search]
    method = "cmaes"                    # "cmaes" | "random" | ["cmaes", "random"]
    evaluations = 60
    seed = 1
    seeds = 1                           # simulation seeds per candidate (the objective is their mean)

The methods come from libraries: CMA-ES is the ``cma`` package's (Hansen's reference implementation), random
search draws from NumPy's seeded generator. Both work in the unit cube, one coordinate per bound; a point is
decoded into the adversary's values, the budget is applied by construction (a burst train whose mean rate
exceeds it has its burst rate scaled down to the budget), and the candidate becomes an ordinary scenario.
Each (candidate, seed) is a run of the sweep's kind, named by a hash of its scenario and seed and made
through cclab.executor in ``OUT/runs/<id>/``: a rerun of the same search asks the same candidates (the
methods are seeded) and finds their runs finished, so it resumes after Ctrl-C or SIGKILL without repeating
any. Candidates are evaluated a generation (CMA-ES's population) at a time, in parallel.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import executor, sweep, units
from .scenario import Scenario, ScenarioError

METHODS = ("cmaes", "random")
MAX_EVALUATIONS = 100_000
MAX_BURSTS = 20_000  # burst sources in one candidate: each is a [[traffic]] entry (4 kB of simulator state)
# What a candidate whose objective could not be measured (a null in summary.json) scores: worse than any
# measured value, finite because CMA-ES ranks by value and an infinity would break its step-size update.
UNMEASURED = 1e30

def _probability(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"must be a number (a probability), got {units.show_value(v)}")
    return float(v)


# Per adversary kind: its bounded parameters (name -> parser), and the scenario key it sets by default.
_KINDS: dict[str, dict[str, Callable[[object], float]]] = {
    "bursts": {"period": units.parse_time, "burst": units.parse_time, "rate": units.parse_rate},
    "loss": {"loss": lambda v: _probability(v)},
    "delay": {"delay": units.parse_time},
}
_DEFAULT_KEY = {"loss": "topology.bottleneck.loss", "delay": "topology.bottleneck.delay"}
_OPTIONAL = {"bursts": {"start", "packet_size"}, "loss": {"key"}, "delay": {"key"}}


class RunFailed(Exception):
    """A candidate's run failed (an exception in the simulator, its worker dying twice): the search stops, its
    finished runs kept (exit code 1, as a sweep's failed runs)."""


@dataclass
class Dim:
    """One coordinate of the search: adversary ``index``'s parameter ``name`` within [lo, hi] (SI units)."""

    index: int
    name: str
    lo: float
    hi: float


@dataclass
class Search:
    """A loaded search file."""

    base: dict
    adversaries: list[dict]
    dims: list[Dim]
    cross_rate: Optional[float]  # budget: the bursts' mean rate as a fraction of capacity
    capacity: Optional[float]    # the bottleneck's rate (bit/s), when a burst budget needs it
    metric: str
    goal: str
    methods: list[str]
    evaluations: int
    seed: int
    seeds: list[int]
    batch: Optional[int]
    top: int = 10
    raw: dict = field(default_factory=dict)


def _err(where: str, msg: str) -> ScenarioError:
    return ScenarioError([(where, msg)])


def _bounds(where: str, v: Any, parse: Callable[[object], float]) -> tuple[float, float]:
    if not (isinstance(v, list) and len(v) == 2):
        raise _err(where, f"must be [low, high], got {units.show_value(v)}")
    try:
        lo, hi = (parse(x) for x in v)
    except (ValueError, TypeError) as e:
        raise _err(where, str(e)) from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi or lo < 0:
        raise _err(where, f"must be [low, high] with 0 <= low <= high, got {units.show_value(v)}")
    return lo, hi


def _table(data: dict, key: str) -> dict:
    v = data.get(key, {})
    if not isinstance(v, dict):
        raise _err(key, "must be a table")
    return v


def _only(where: str, d: dict, allowed: set[str]) -> None:
    extra = sorted(set(d) - allowed)
    if extra:
        raise ScenarioError([(f"{where}.{k}" if where else k, f"unknown key; allowed: {', '.join(sorted(allowed))}")
                             for k in extra])


def _apply_sets(base: dict, sets: list[tuple[str, Any]]) -> None:
    for key, value in sets:
        try:
            sweep._set(base, key, value)
        except KeyError as e:
            raise _err(f"--set {key}", e.args[0]) from None


def parse_set(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set``: VALUE is read as a TOML value (``"cubic"``, ``0.01``, ``true``), else as a
    string (``cubic``), so an algorithm's name needs no quotes."""
    from .scenario import parse_toml

    if "=" not in text:
        raise _err("--set", f"must be KEY=VALUE (e.g. flows[0].cc=cubic), got {text!r}")
    key, value = (x.strip() for x in text.split("=", 1))
    try:
        return key, parse_toml(f"v = {value}", "--set")["v"]
    except ScenarioError:
        return key, value


def load(path: Path, sets: Optional[list[tuple[str, Any]]] = None) -> Search:
    """The search in file ``path``, ``sets`` (``--set`` overrides) applied to its base scenario; a
    ScenarioError naming the field on bad input."""
    path = Path(path)
    data = sweep._read_toml(path, "", "search file")
    _only("", data, {"scenario", "base", "adversary", "budget", "objective", "search"})
    if ("scenario" in data) == ("base" in data):
        raise _err("scenario", "give exactly one of `scenario` (a file) or a [base] table")
    if "scenario" in data:
        if not isinstance(data["scenario"], str):
            raise _err("scenario", "must be a path to a scenario file")
        base = sweep._read_toml(path.parent / data["scenario"], "scenario", "scenario file")
    else:
        base = data["base"]
        if not isinstance(base, dict):
            raise _err("base", "must be a table (a scenario)")
    _apply_sets(base, sets or [])
    try:
        Scenario.from_dict(base)
    except ScenarioError as e:
        raise ScenarioError([(f"scenario: {f}", m) for f, m in e.errors]) from None

    advs = data.get("adversary", [])
    if not isinstance(advs, list) or not advs or not all(isinstance(a, dict) for a in advs):
        raise _err("adversary", "must be one or more [[adversary]] tables")
    budget = _table(data, "budget")
    _only("budget", budget, {"cross_rate", "loss"})
    for k in ("cross_rate", "loss"):
        v = budget.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
            raise _err(f"budget.{k}", f"must be a fraction in [0, 1], got {units.show_value(v)}")
    dims: list[Dim] = []
    for i, a in enumerate(advs):
        where = f"adversary[{i}]"
        kind = a.get("kind")
        if kind not in _KINDS:
            raise _err(f"{where}.kind", f"must be one of {', '.join(_KINDS)}, got {units.show_value(kind)}")
        _only(where, a, {"kind", *_KINDS[kind], *_OPTIONAL[kind]})
        for name, parse in _KINDS[kind].items():
            if name not in a:
                raise _err(f"{where}.{name}", f"is required: [low, high] bounds of the {kind} adversary's {name}")
            lo, hi = _bounds(f"{where}.{name}", a[name], parse)
            if kind == "loss":
                if hi > 1:
                    raise _err(f"{where}.loss", "is a probability: bounds within [0, 1]")
                if budget.get("loss") is not None and lo > budget["loss"]:
                    raise _err(f"{where}.loss", f"its low bound {lo} exceeds budget.loss = {budget['loss']}")
                hi = min(hi, budget.get("loss", 1.0))  # the budget by construction: the bounds are cut to it
            if kind == "bursts" and name == "period":
                if lo <= 0:
                    raise _err(f"{where}.period", "must be > 0")
                dur = units.parse_time(base.get("duration", 0))
                if dur / lo > MAX_BURSTS:
                    raise _err(f"{where}.period", f"{dur / lo:,.0f} bursts in the run at the shortest period; at "
                                                  f"most {MAX_BURSTS:,}")
            if kind == "bursts" and name == "rate" and lo <= 0:
                raise _err(f"{where}.rate", "must be > 0")
            dims.append(Dim(i, name, lo, hi))
        if "key" in a and not isinstance(a["key"], str):
            raise _err(f"{where}.key", "must be a path in the scenario, e.g. \"topology.bottleneck.loss\"")
    bursts = any(a["kind"] == "bursts" for a in advs)
    capacity = None
    if budget.get("cross_rate") is not None:
        if not bursts:
            raise _err("budget.cross_rate", "bounds the bursts' mean rate, but no adversary is of kind \"bursts\"")
        bn = (base.get("topology") or {}).get("bottleneck") or {}
        if "rate" not in bn:
            raise _err("budget.cross_rate", "needs the scenario's topology.bottleneck.rate (a dumbbell with a fixed "
                                            "rate): the budget is a fraction of it")
        capacity = units.parse_rate(bn["rate"])

    obj = _table(data, "objective")
    _only("objective", obj, {"metric", "goal"})
    metric = obj.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        raise _err("objective.metric", "is required: a path in summary.json such as \"flows[0].goodput_bps\", "
                                       "\"jain\", \"links[0].utilization\", or a ratio \"a / b\"")
    goal = obj.get("goal", "minimize")
    if goal not in ("minimize", "maximize"):
        raise _err("objective.goal", f"must be \"minimize\" or \"maximize\", got {units.show_value(goal)}")

    s = _table(data, "search")
    _only("search", s, {"method", "evaluations", "seed", "seeds", "batch", "top"})
    methods = s.get("method", "cmaes")
    methods = [methods] if isinstance(methods, str) else methods
    if not isinstance(methods, list) or not methods or any(m not in METHODS for m in methods) \
            or len(set(methods)) != len(methods):
        raise _err("search.method", f"must be one of {', '.join(METHODS)} or a list of them, got "
                                    f"{units.show_value(s.get('method'))}")

    def count(key: str, default: int, lo: int, hi: int) -> int:
        v = s.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise _err(f"search.{key}", f"must be an integer in [{lo}, {hi:,}], got {units.show_value(v)}")
        return v

    evaluations = count("evaluations", 60, 1, MAX_EVALUATIONS)
    seed = count("seed", 1, 1, 2**31 - 1)  # cma's seed 0 would mean "from the clock"
    nseeds = count("seeds", 1, 1, 100)
    batch = count("batch", 0, 0, 10_000) or None
    top = count("top", 10, 1, 1000)
    first = int(base.get("seed", 1)) if isinstance(base.get("seed", 1), int) else 1
    return Search(base, advs, dims, budget.get("cross_rate"), capacity, metric.strip(), goal, methods, evaluations,
                  seed, list(range(first, first + nseeds)), batch, top, data)


# --- Candidates ----------------------------------------------------------------------------------------------

def decode(s: Search, x: list[float]) -> dict[str, float]:
    """The adversary's values (``"adversary[i].name"`` -> SI value) at unit-cube point ``x``, the budget applied."""
    vals: dict[str, float] = {}
    for d, u in zip(s.dims, x):
        u = min(1.0, max(0.0, float(u)))
        vals[f"adversary[{d.index}].{d.name}"] = d.lo + u * (d.hi - d.lo)
    for i, a in enumerate(s.adversaries):
        if a["kind"] != "bursts":
            continue
        p, b = f"adversary[{i}].period", f"adversary[{i}].burst"
        vals[b] = min(vals[b], vals[p])  # a burst longer than its period is a constant source
    if s.cross_rate is not None and s.capacity is not None:
        ids = [i for i, a in enumerate(s.adversaries) if a["kind"] == "bursts"]
        mean = sum(vals[f"adversary[{i}].rate"] * vals[f"adversary[{i}].burst"] / vals[f"adversary[{i}].period"]
                   for i in ids)
        cap = s.cross_rate * s.capacity
        if mean > cap:  # the budget by construction: every burst rate scaled down by the same factor
            for i in ids:
                vals[f"adversary[{i}].rate"] *= cap / mean
    return {k: float(v) for k, v in vals.items()}


def scenario_of(s: Search, vals: dict[str, float]) -> dict:
    """The base scenario with the adversary of ``vals`` added: an ordinary scenario (bursts are cbr sources)."""
    d = json.loads(json.dumps(s.base))
    dur = units.parse_time(d.get("duration"))
    for i, a in enumerate(s.adversaries):
        def g(n: str, i: int = i) -> float:
            return vals[f"adversary[{i}].{n}"]

        if a["kind"] == "bursts":
            t = units.parse_time(a.get("start", 0))
            period, burst, rate = g("period"), g("burst"), g("rate")
            src = d.setdefault("traffic", [])
            while t < dur and burst > 0:
                e: dict[str, Any] = {"kind": "cbr", "rate": rate, "start": t, "stop": min(t + burst, dur)}
                if "packet_size" in a:
                    e["packet_size"] = a["packet_size"]
                if e["stop"] > e["start"]:
                    src.append(e)
                t += period
        else:
            sweep._set(d, a.get("key", _DEFAULT_KEY[a["kind"]]), g(a["kind"]))
    return d


def metric_of(summary: dict, metric: str) -> Optional[float]:
    """The value of ``metric`` (a path such as ``flows[0].goodput_bps``, or ``a / b``) in a run's summary; None
    if it is null there (unmeasured); KeyError naming the missing step."""
    if "/" in metric:
        a, b = (metric_of(summary, m.strip()) for m in metric.split("/", 1))
        return None if a is None or b is None or b == 0 else a / b
    node: Any = summary
    for part in metric.split("."):
        m = sweep._STEP.match(part)
        if not m:
            raise KeyError(f"{part!r} is not a name or name[index]")
        if not isinstance(node, dict) or m.group(1) not in node:
            raise KeyError(f"{m.group(1)!r} is not in the run's summary")
        node = node[m.group(1)]
        for idx in (int(i) for i in m.group(2).strip("[]").split("][") if i):
            if not isinstance(node, list) or idx >= len(node):
                raise KeyError(f"{part}: no entry [{idx}]")
            node = node[idx]
    if node is None:
        return None
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise KeyError(f"{metric} is not a number in the run's summary")
    return float(node)


# --- Evaluations ----------------------------------------------------------------------------------------------

def _ci95(xs: list[float]) -> float:
    """Student-t 95 % half-width of the mean of ``xs`` (0 for one value: no spread measured)."""
    from .stats import ci_halfwidth

    n = len(xs)
    if n < 2:
        return 0.0
    m = sum(xs) / n
    return float(ci_halfwidth(math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)), n))


def _evaluate(s: Search, xs: list[list[float]], out: Path, workers: int, on_run: Callable[[], None],
              scheduler: Optional[str] = None) -> list[dict]:
    """Evaluates candidates ``xs`` (unit-cube points), each over ``s.seeds``, their runs in parallel through the
    executor (finished runs are skipped: a resumed search repeats none); one record per candidate."""
    from .results import load_summary

    cands = []
    tasks = []
    for x in xs:
        vals = decode(s, x)
        scen = scenario_of(s, vals)
        pts = []
        for seed in s.seeds:
            d = dict(scen, seed=seed)
            pts.append(sweep.Point(sweep._run_id(d, seed), vals, seed, d))
        cands.append((x, vals, pts))
        tasks += [sweep._task(p, out, False) for p in pts]
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
    recs = []
    for x, vals, pts in cands:
        per: list[Optional[float]] = []
        for p in pts:
            f = out / "runs" / p.id / "summary.json"
            if p.id in errors or not f.exists():
                raise RunFailed(f"run {p.id} of candidate {vals} failed: {errors.get(p.id, 'no summary.json')}")
            try:
                per.append(metric_of(load_summary(f), s.metric))
            except KeyError as e:
                raise _err("objective.metric", f"{e.args[0]} (in {f})") from None
        got = [v for v in per if v is not None]
        mean = sum(got) / len(got) if len(got) == len(per) else None
        recs.append({"x": [float(u) for u in x], "values": vals, "seeds": [p.seed for p in pts],
                     "runs": [p.id for p in pts], "per_seed": per, "objective": mean,
                     "ci95": _ci95(got) if mean is not None else None})
    return recs


def _loss(s: Search, r: dict) -> float:
    """What the methods minimise: the objective, negated for ``maximize``; unmeasured scores worst."""
    if r["objective"] is None:
        return UNMEASURED
    return r["objective"] if s.goal == "minimize" else -r["objective"]


def _write_jsonl(path: Path, recs: list[dict]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in recs))
    os.replace(tmp, path)


def _run_method(s: Search, method: str, out: Path, workers: int, on_run: Callable[[], None],
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
            es.tell([np.array(x) for x in xs], [_loss(s, r) for r in batch])
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


# --- Outputs --------------------------------------------------------------------------------------------------

def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)  # repr round-trips a float exactly: the scenario is the one that ran, to the digit
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {type(v).__name__}")


def to_toml(d: dict, prefix: str = "") -> str:
    """A scenario dict as TOML (tables as sections, lists of tables as [[arrays]])."""
    lines, tables, arrays = [], [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_toml_value(v)}")
    text = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        name = f"{prefix}{_key(k)}"
        text += f"\n[{name}]\n" + to_toml(v, name + ".")
    for k, v in arrays:
        for x in v:
            text += f"\n[[{prefix}{_key(k)}]]\n" + "".join(
                f"{_key(a)} = {_toml_value(b)}\n" for a, b in x.items())
    return text


def _convergence(s: Search, by_method: dict[str, list[dict]], baseline: Optional[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for m, recs in by_method.items():
        best, ys = math.inf, []
        for r in recs:
            best = min(best, _loss(s, r))
            ys.append(best if s.goal == "minimize" else -best)
        ax.step(range(1, len(ys) + 1), ys, where="post", label={"cmaes": "CMA-ES", "random": "random search"}[m])
    if baseline is not None:
        ax.axhline(baseline, color="grey", ls="--", lw=1, label="without the adversary")
    ax.set_xlabel("evaluations")
    ax.set_ylabel(f"best {s.metric} ({s.goal[:3]})")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def top_table(s: Search, recs: list[dict]) -> Any:
    """The ``s.top`` best evaluations (each candidate once), best first, as a DataFrame."""
    import pandas as pd

    seen, rows = set(), []
    for r in sorted(recs, key=lambda r: (_loss(s, r), r["method"], r["n"])):
        key = json.dumps(r["values"], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        rows.append({"method": r["method"], "evaluation": r["n"], **r["values"], "objective": r["objective"],
                     "ci95": r["ci95"], "seeds": len(r["seeds"]), "run": r["runs"][0]})
        if len(rows) == s.top:
            break
    return pd.DataFrame(rows)


def run(search_file: Path, out: Path, sets: Optional[list[tuple[str, Any]]] = None, workers: Optional[int] = None,
        on_run: Callable[[], None] = lambda: None, scheduler: Optional[str] = None) -> dict:
    """Runs the search in ``search_file`` into ``out`` (resuming: finished runs are reused); returns
    ``{"search", "evaluations" (per method), "best", "baseline", "top"}``. Writes ``OUT/<method>/evaluations.jsonl``,
    ``OUT/best.toml`` (the best candidate, an ordinary scenario with the first of the search's seeds),
    ``OUT/top.csv`` and ``OUT/convergence.png``."""
    from .results import load_summary, prepare_out

    s = load(search_file, sets)
    out = prepare_out(out)
    w = workers or os.cpu_count() or 1
    (out / "search.json").write_text(json.dumps({"search": s.raw, "set": [list(x) for x in sets or []]}, indent=1))
    # The base scenario without the adversary, for comparison: the same seeds, runs of the same kind.
    base_pts = [sweep.Point(sweep._run_id(dict(s.base, seed=k), k), {}, k, dict(s.base, seed=k)) for k in s.seeds]
    base_tasks = [sweep._task(p, out, False) for p in base_pts]
    if scheduler:  # every run goes where the sweep's would: a Dask cluster's workers, or the local pool
        executor.run_dask(base_tasks, scheduler, lambda *a: None)
    else:
        executor.run_local(base_tasks, w, lambda *a: None)
    base_vals = []
    for p in base_pts:
        f = out / "runs" / p.id / "summary.json"
        if not f.exists():
            raise RunFailed(f"the base scenario's run (seed {p.seed}, without the adversary) failed")
        try:
            base_vals.append(metric_of(load_summary(f), s.metric))
        except KeyError as e:
            raise _err("objective.metric", e.args[0]) from None
    got = [v for v in base_vals if v is not None]
    baseline = sum(got) / len(got) if got and len(got) == len(base_vals) else None
    by_method = {m: _run_method(s, m, out, w, on_run, scheduler) for m in s.methods}
    allrecs = [r for m in s.methods for r in by_method[m]]
    best = min(allrecs, key=lambda r: (_loss(s, r), r["method"], r["n"]))
    scen = scenario_of(s, best["values"])
    scen["seed"] = best["seeds"][0]
    (out / "best.toml").write_text(
        f"# The best candidate of `cclab search {search_file}` ({best['method']}, evaluation {best['n']}):\n"
        f"# {s.metric} = {best['objective']!r} (mean over seeds {best['seeds']}); `cclab run` reproduces run "
        f"{best['runs'][0]}.\n" + to_toml(scen))
    top = top_table(s, allrecs)
    top.to_csv(out / "top.csv", index=False)
    _convergence(s, by_method, baseline, out / "convergence.png")
    summary = {"baseline": baseline, "best": best, "metric": s.metric, "goal": s.goal,
               "evaluations": {m: len(r) for m, r in by_method.items()}}
    (out / "result.json").write_text(json.dumps(summary, indent=1))
    return {"search": s, "evaluations": by_method, "best": best, "baseline": baseline, "top": top}


def print_result(r: dict, out: Path) -> None:
    """The top candidates as a rich table, and the best against the base scenario without the adversary."""
    from rich.console import Console
    from rich.table import Table

    s, top = r["search"], r["top"].drop(columns=["run"])  # the run ids are in top.csv
    tab = Table(title=f"top {len(top)} candidates ({s.metric}, {s.goal})")
    for c in top.columns:  # "adversary[0].period" -> "0.period": the table fits a terminal
        tab.add_column(str(c).replace("adversary[", "").replace("]", ""), justify="right", no_wrap=True)
    for _, row in top.iterrows():
        tab.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v)[:8] for v in row))
    con = Console()
    con.print(tab)
    b, base = r["best"]["objective"], r["baseline"]
    change = f" ({(b - base) / base:+.1%} against {base:.6g} without the adversary)" if b is not None and base else ""
    con.print(f"best {s.metric} = {b:.6g}{change}" if b is not None else "best: unmeasured", highlight=False)
    con.print(f"wrote {out}/best.toml, top.csv, convergence.png, result.json, <method>/evaluations.jsonl", highlight=False)
