"""Sweeps: one scenario run over a grid of settings and seeds, in parallel, resumable.

(The run protocol that survives any kill — per-run locks, atomic renames, workers that die with their
parent — is cclab.executor's, shared with `cclab reproduce`; this module holds the grid and the tables.)

A sweep file (TOML)::

    scenario = "scenarios/binomial_b1.toml"   # relative to the sweep file; or an inline [base] table
    seeds = 10                                # 1..10; or a list [1, 5, 9]
    [grid]                                    # every combination of these (Cartesian product)
    "flows[1].cc" = ["sqrt", "iiad"]
    "topology.bottleneck.rate" = ["3Mbps", "10Mbps"]
    "flows[*].rtt" = ["50ms", "100ms"]        # [*]: every entry of the list
    "flows[1].params.k, flows[1].params.l" = [[0.25, 0.25], [0.5, 0.5]]   # linked: set together

Each grid point × seed is one run, named by a hash of its scenario, seed and the cclab version (so runs
made by another version are never taken for this one's: upgrading cclab reruns a sweep). A run's results are written
into ``OUT/runs/<id>.partial/``, renamed to ``OUT/runs/<id>/`` when complete (an atomic rename), so a
run directory exists exactly when its run finished. Re-running the same sweep skips finished runs: an
interrupted sweep (Ctrl-C, SIGKILL, a crash, a lost cluster) resumes without losing or repeating any. The
process running a run holds its lock (``flock`` on ``OUT/runs/<id>.lock``, freed by the kernel when the
holder dies), so no sweep starts a run that is finished or under way in another live process;
local workers die with the sweep process (``PR_SET_PDEATHSIG`` on Linux). A run that fails (an exception, a
Rust panic, its worker dying twice) is reported with a message and the others go on (``RunsFailed`` at
the end). The table ``OUT/results.csv`` (and ``results.parquet``) has one row per finished run of this
sweep: the grid values, the seed, and the summary's headline numbers, one column per flow's goodput. Grid
values written with units ("10Mbps") are numbers in SI units there, the strings kept in ``<key>_label``
(:func:`quantity`), so they sort and plot as numbers. ``OUT/summary.csv`` (:func:`summarize`) has per grid
point the mean, std, n and 95 % CI half-width (Student t) over seeds of each headline metric; the figures
are ``cclab.plots.sweep``'s. A folder holding a different sweep is refused unless ``force``. The contract
in full: docs/sweep.md.

Runs go to a pool of local processes (``workers``, default: the CPU count) or, with
``scheduler="tcp://host:8786"``, to a Dask cluster (``pip install "dask[distributed]"``) through its
``concurrent.futures`` executor; every worker needs cclab installed, and no filesystem shared with this process:
a worker makes a run in its scratch folder and returns its files, which this process writes into ``OUT/runs/``.
Whole runs are the unit of work:
the simulator is single-threaded and deterministic, so a run's result does not depend on where it ran.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import re
import shutil
import warnings
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import derived, executor, provenance, runs, units
from .errors import unknown_key
from .results import prepare_out
from .scenario import Scenario, ScenarioError

if TYPE_CHECKING:
    import pandas as pd

# Most runs (grid points × seeds) in one sweep: each is validated before the first starts.
MAX_RUNS = 100_000
# Longest grid key (a path in the scenario, or linked paths "a, b").
MAX_KEY = 1000

# The run and key-path helpers live in cclab.runs (shared with `cclab search`).
Point = runs.Point
_set = runs.set_key
_run_id = runs.run_id
_read_toml = runs.read_toml


def load(path: Path) -> tuple[dict, list[int], dict[str, list]]:
    """(base scenario, seeds, grid) from a sweep file; a ScenarioError naming the field of every problem
    found (the file's parts are checked independently, so that one mistake does not hide another)."""
    path = Path(path)
    data = _read_toml(path, "", "sweep file")
    errors: list[tuple[str, str]] = []

    def check(f: Callable[[], Any]) -> Any:
        """``f()``, or None with its problems added to ``errors``."""
        try:
            return f()
        except ScenarioError as e:
            errors.extend(e.errors)
            return None

    allowed = {"scenario", "base", "seeds", "grid", "metrics"}
    errors += [(k, unknown_key(k, allowed, "sweep key")) for k in sorted(set(data) - allowed)]
    base: Any = None
    if ("scenario" in data) == ("base" in data):
        errors.append(("scenario", "give exactly one of `scenario` (a file) or a [base] table"))
    elif "scenario" in data:
        if not isinstance(data["scenario"], str):
            errors.append(("scenario", "must be a path to a scenario file"))
        else:
            base = check(lambda: _read_toml(path.parent / data["scenario"], "scenario", "scenario file"))
    else:
        base = data["base"]
        if not isinstance(base, dict):
            errors.append(("base", f"must be a table (a scenario), got {type(base).__name__}"))
            base = None
    seeds = data.get("seeds", [base.get("seed", 1) if isinstance(base, dict) else 1])
    if isinstance(seeds, bool) or not (
            (isinstance(seeds, int) and 1 <= seeds <= MAX_RUNS)
            or (isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool)
                                                          and 0 <= s < 2**63 for s in seeds))):
        errors.append(("seeds", f"must be a count in [1, {MAX_RUNS:,}] or a non-empty list of integers in "
                                f"[0, 2^63), got {str(seeds)[:100]}"))
        seeds = [1]
    seeds = list(range(1, seeds + 1)) if isinstance(seeds, int) else list(seeds)
    if len(set(seeds)) != len(seeds):
        errors.append(("seeds", "has repeated values"))
    grid = data.get("grid", {})
    if not isinstance(grid, dict):
        errors.append(("grid", "must be a table of key = [values]"))
        grid = {}
    runs, grid_ok = len(seeds), True
    for k, v in grid.items():
        before = len(errors)
        if len(k) > MAX_KEY:  # a path in a scenario is a few dozen characters; a long one would fill every message
            errors.append((f"grid.{k[:40]}… ({len(k):,} characters)", f"is not a key of the scenario: a grid key "
                           f"is a path such as \"flows[0].cc\", at most {MAX_KEY} characters"))
        elif not isinstance(v, list) or not v:
            errors.append((f"grid.{k}", f"must be a non-empty list of values, got {str(v)[:100]}"))
        elif "seed" in (x.strip() for x in k.split(",")):
            # Each run's seed comes from `seeds` (it overwrote the grid's, and the table's seed column hid it).
            errors.append((f"grid.{k}", "the seed is not a grid key: give the seeds as `seeds = [5, 6]`"))
        else:
            check(partial(_check_values, k, v))
        if len(errors) > before:
            grid_ok = False
        else:
            runs *= len(v)
    if grid_ok and runs > MAX_RUNS:
        errors.append(("grid", f"{runs:,} runs (grid points × seeds); at most {MAX_RUNS:,} in one sweep"))
    check(lambda: _metrics(data.get("metrics"), grid))  # checked with the rest of the file, before anything runs
    if errors:
        raise ScenarioError(errors)
    return base, seeds, grid


# Columns of the table a derived metric may not be named as (goodput_mbps_flow<i> is refused by prefix).
TABLE_COLUMNS = ("run", "seed", "wall_s", "goodput_mbps_reverse")


def _metrics(raw: Any, grid: dict) -> list[derived.Metric]:
    keys = tuple(x.strip() for k in grid for x in k.split(","))
    return derived.parse_metrics(raw, reserved=(*HEADLINE, *TABLE_COLUMNS, *keys))


def load_metrics(path: Path) -> list[derived.Metric]:
    """The derived metrics (``[[metrics]]``) of a sweep file, checked (docs/sweep.md "Derived metrics")."""
    data = _read_toml(Path(path), "", "sweep file")
    grid = data.get("grid")
    return _metrics(data.get("metrics"), grid if isinstance(grid, dict) else {})


def _short(v: Any) -> str:
    """A grid value in a message as Python writes it ('cubic'), cut when long (a 100 kB string value)."""
    text = repr(v)
    return text if len(text) <= 80 else f"{text[:60]}… ({len(text):,} characters)"


def _kind(v: Any) -> Optional[str]:
    """What a grid value is when it is not one a grid may hold (None: a string, a finite number or a boolean)."""
    if isinstance(v, (str, bool, int)):
        return None
    if isinstance(v, float):
        return None if math.isfinite(v) else f"{v} (grid numbers are finite)"
    return "a table" if isinstance(v, dict) else "a list" if isinstance(v, list) else f"a {type(v).__name__}"


def _check_values(key: str, values: list) -> None:
    """Grid values are strings, finite numbers or booleans (linked keys: a list of those per setting), checked
    before anything runs: a table or a list as one value would run every point and then fail writing the
    table, which has one plain column per key. A table's keys are set one by one instead, a list's entries by
    index (``measure[0]``) or as linked keys."""
    linked = len(key.split(",")) > 1
    for v in values:
        for x in (v if linked and isinstance(v, list) else [v]):
            what = _kind(x)
            if what is not None:
                raise ScenarioError([(f"grid.{key}", f"got {what}: grid values are strings, numbers or booleans; set "
                                                     "a table's keys one by one (\"flows[0].params.k\" = [...]), a list's "
                                                     "entries by index (\"measure[0]\") or as linked keys (\"a, b\" = "
                                                     "[[1, 2], [3, 4]])")])


def expand(base: dict, seeds: list[int], grid: dict[str, list], validate: bool = True,
           version: Optional[str] = None) -> list[Point]:
    """Every grid point × seed, each validated as a scenario (ScenarioError names the grid key and value)
    unless ``validate`` is false. Run ids are those of cclab ``version`` (see _run_id; None: this one)."""
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
            if validate:
                Scenario.from_dict(d)
        except ScenarioError as e:
            where = ", ".join(f"{k} = {_short(v)}" for k, v in values.items()) or "the base scenario"
            raise ScenarioError([(f"grid ({where}): {f}" if f else f"grid ({where})", m) for f, m in e.errors]) from None
        for seed in seeds:
            d2 = dict(d, seed=seed)
            points.append(Point(_run_id(d2, seed, version), values, seed, d2))
    return points


# --- Worker side (the run protocol itself is cclab.executor's, shared with `cclab reproduce`) ----------------

_Lock = executor.Lock


def _task(p: Point, out: Path, plots: bool) -> executor.Task:
    return runs.task(p, out, plots)


# --- The sweep's side ---------------------------------------------------------------------------------------

def finished(out: Path) -> set[str]:
    """Ids of every finished run in ``out/runs`` (of this sweep or of another one run into the same folder)."""
    runs = Path(out) / "runs"
    if not runs.exists():
        return set()
    return {d.name for d in runs.iterdir() if not d.name.endswith(".partial") and (d / "point.json").exists()}


def read_sweep_json(out: Path) -> Optional[dict]:
    """``out/sweep.json`` (None if there is none), checked to have the form :func:`_claim` writes; a
    ScenarioError naming the file otherwise (it is not a regular file, not JSON, or not of that form)."""
    from .files import read_json

    f = Path(out) / "sweep.json"
    if not os.path.lexists(f):
        return None
    meta = read_json(f, "sweep.json")
    why = None
    if not isinstance(meta, dict):
        why = f"the file must be a JSON object, not {type(meta).__name__}"
    elif not isinstance(meta.get("base"), dict):
        why = "`base` must be a scenario (an object)"
    elif not (isinstance(meta.get("seeds"), list) and meta["seeds"]
              and all(isinstance(x, int) and not isinstance(x, bool) for x in meta["seeds"])):
        why = "`seeds` must be a list of integers"
    elif not isinstance(meta.get("grid"), dict) or not all(isinstance(v, list) for v in meta["grid"].values()):
        why = "`grid` must be an object of lists"
    elif not isinstance(meta.get("cclab", ""), str):
        why = "`cclab` must be a version string"
    else:
        try:
            _metrics(meta.get("metrics"), meta["grid"])
        except ScenarioError as e:
            why = f"`metrics`: {e}".replace("\n", "; ")
    if why:
        raise ScenarioError([(str(f), f"is not a sweep.json as cclab writes it: {why}; it may be truncated or edited")])
    return meta


def _sweep_ids(out: Path) -> list[str]:
    """The run ids of the sweep recorded in ``out/sweep.json``, in grid order (every finished run if none)."""
    meta = read_sweep_json(out)
    if meta is None:
        return sorted(finished(out))
    # A sweep.json without a version is older than versioned run ids: its runs have the unversioned ids.
    try:
        return [p.id for p in _unique(expand(meta["base"], meta["seeds"], meta["grid"], validate=False,
                                             version=meta.get("cclab", "")))]
    except ScenarioError as e:
        raise ScenarioError([(str(Path(out) / "sweep.json"), "is not a sweep.json as cclab writes it: its grid "
                                                             f"does not apply to its base: {e}".replace("\n", "; "))]) from None


def _row(d: Path, metrics: tuple[derived.Metric, ...] = ()) -> dict[str, Any]:
    """The table's row of the finished run in folder ``d`` from its point.json and summary.json; a
    ScenarioError naming the file that is missing, not a regular file, or not of the form cclab writes.
    ``goodput_mbps`` and ``jain`` are over the forward flows; reverse-direction flows (``reverse = true``)
    have their own total, ``goodput_mbps_reverse``, when the run has any. ``metrics``: derived columns."""
    from .files import read_json
    from .metrics import jain
    from .results import load_summary

    pf = d / "point.json"
    p = read_json(pf, "point.json")
    if not (isinstance(p, dict) and isinstance(p.get("values"), dict)
            and isinstance(p.get("seed"), int) and not isinstance(p["seed"], bool)):
        raise ScenarioError([(str(pf), "is not a point.json as cclab writes it: it must be a JSON object with the "
                                       "run's grid `values` (an object) and its `seed` (an integer); it may be "
                                       "truncated or edited")])
    s = load_summary(d / "summary.json")
    nan = float("nan")
    num = lambda v: nan if v is None else float(v)  # null: a value the run could not measure
    link = s["links"][0]
    scenario = p.get("scenario")
    reverse = derived.reverse_flows(s, scenario=scenario if isinstance(scenario, dict) else None)
    fwd = [f for f in s["flows"] if int(f["id"]) not in reverse]
    row: dict[str, Any] = {"run": d.name, **p["values"], "seed": p["seed"]}
    row.update({"goodput_mbps": sum(num(f.get("goodput_bps")) for f in fwd) / 1e6,
                **({"goodput_mbps_reverse": sum(num(f.get("goodput_bps")) for f in s["flows"]
                                                if int(f["id"]) in reverse) / 1e6} if reverse else {}),
                # Jain's index of the forward flows: the reverse ones send over another link (the reverse
                # direction), so their goodput is no share of the forward bottleneck.
                "jain": num(s["jain"]) if not reverse else jain([num(f.get("goodput_bps")) for f in fwd]),
                **{k: num(link.get(k)) for k in ("utilization", "loss_rate", "drops", "mean_queue_pkts",
                                                 "p95_queue_delay_s")},
                "wall_s": num((s.get("sim") or {}).get("wall_s"))})
    if link.get("drops") is not None:
        row["drops"] = link["drops"]
    for f in s["flows"]:
        row[f"goodput_mbps_flow{f['id']}"] = num(f.get("goodput_bps")) / 1e6
    for m in metrics:
        row[m.name] = derived.evaluate(m, s, reverse)
    return row


def table(out: Path, ids: Optional[list[str]] = None, metrics: Optional[list[derived.Metric]] = None) -> pd.DataFrame:
    """The results table of the sweep in ``out`` (pandas DataFrame): one row per finished run of that sweep (the
    grid of its ``sweep.json``, or the runs ``ids``), in grid order. Runs of an earlier, different sweep left in
    ``runs/`` are not in it. A run whose point.json or summary.json is damaged raises a ScenarioError naming the
    file (a sweep run again redoes such a run: see :func:`run`). The derived metrics are ``metrics``, by
    default those recorded in ``sweep.json``; their names are in ``attrs["derived"]``."""
    import pandas as pd

    have = finished(out)
    if metrics is None:
        meta = read_sweep_json(Path(out))
        metrics = _metrics(meta.get("metrics"), meta["grid"]) if meta else []
    rows = [_row(Path(out) / "runs" / rid, tuple(metrics))
            for rid in (_sweep_ids(Path(out)) if ids is None else ids) if rid in have]
    t = _numeric_grid(pd.DataFrame(rows))
    t.attrs["derived"] = [m.name for m in metrics]
    t.attrs["derived_labels"] = {m.name: m.words() for m in metrics}
    return t


# --- Grid values as numbers, spread over seeds --------------------------------------------------------------

LABEL = "_label"  # suffix of the column keeping a grid value as written ("10Mbps") beside its number
# The headline metrics of a run (columns of the table) that summary.csv and the printed table spread over seeds.
HEADLINE = ("goodput_mbps", "jain", "utilization", "loss_rate", "drops", "mean_queue_pkts", "p95_queue_delay_s")
_BDP = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)?)\s*BDP")
_PKTS = re.compile(r"([-+]?\d+)\s*p")


def quantity(value: Any) -> Optional[tuple[str, float]]:
    """A grid value written with a unit as (unit, number in that unit): rates in "bit/s", times in "s",
    sizes in "B" (the units module's SI base units), buffers in "BDP" (multiples) or "pkts" ("500p");
    None for anything else (a number, a name, a list)."""
    if not isinstance(value, str):
        return None
    v = value.strip()
    m = _BDP.fullmatch(v)
    if m:
        return ("BDP", float(m.group(1)) if m.group(1) not in ("", "+") else 1.0)
    m = _PKTS.fullmatch(v)
    if m:
        return ("pkts", float(m.group(1)))
    for unit, parse in (("bit/s", units.parse_rate), ("s", units.parse_time), ("B", units.parse_size)):
        try:
            return (unit, parse(v))
        except units.UnitError:
            pass
    return None


# Units whose plain numbers in a scenario mean the same unit (docs/scenario.md: numbers are SI base units).
_SI = ("bit/s", "s", "B")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numeric_grid(t: pd.DataFrame) -> pd.DataFrame:
    """Each grid column whose values are all strings with units of one kind ("3Mbps", "10Mbps") becomes
    their numbers in that unit (3e6, 1e7: sorts and plots as numbers), and ``<key>_label``, right after it,
    keeps the strings as written. Plain numbers among rates, times or sizes are that SI unit already (as in
    a scenario file), so ``["10Mbps", 2e7]`` is 1e7 and 2e7 (labels "10Mbps", "20000000.0"). Any other mix of
    kinds ("2BDP" and 30000 bytes, a name and a number) is kept as written, every value a string: one
    column holds one type, which the Parquet table needs."""
    for key in grid_keys(t):
        vals = list(t[key])
        parsed = [quantity(v) for v in vals]
        unit = {q[0] for q in parsed if q}
        if (len(unit) == 1 and any(parsed)
                and all(q is not None or (_is_number(v) and next(iter(unit)) in _SI) for q, v in zip(parsed, vals))):
            at = list(t.columns).index(key)
            t.insert(at + 1, key + LABEL, [str(v) for v in vals])
            t[key] = [float(q[1]) if q else float(v) for q, v in zip(parsed, vals)]
            continue
        kinds = {"number" if _is_number(v) else type(v).__name__ for v in vals if v is not None and v == v}
        if len(kinds) > 1 or kinds & {"dict", "list"}:
            # (Tables and lists come only from folders of a cclab that allowed them: JSON, hashable text.)
            t[key] = [json.dumps(v) if isinstance(v, (bool, dict, list)) else str(v) for v in vals]
    return t


def grid_keys(t: pd.DataFrame) -> list[str]:
    """The grid's columns of a sweep table (those between ``run`` and ``seed``), without the ``_label``
    columns."""
    cols = list(t.columns)
    if "run" not in cols or "seed" not in cols:
        return []
    inner = cols[cols.index("run") + 1:cols.index("seed")]
    return [c for c in inner if not (c.endswith(LABEL) and c[:-len(LABEL)] in inner)]


def grid_unit(t: pd.DataFrame, key: str) -> Optional[str]:
    """The unit of a grid column made numeric (see :func:`quantity`), or None."""
    lab = key + LABEL
    if lab not in t or not len(t):
        return None
    # The first label with a unit: a plain number among them ("20000000.0") has none.
    q = next((q for q in map(quantity, t[lab]) if q), None)
    return q[0] if q else None


def labels(t: pd.DataFrame, key: str) -> pd.Series:
    """A grid column's values as written in the sweep file."""
    return t[key + LABEL] if key + LABEL in t else t[key].astype(str)


def summarize(t: pd.DataFrame, metrics: Optional[list[str]] = None, by: Optional[list[str]] = None) -> pd.DataFrame:
    """One row per grid point (``by``: the grid keys by default), in numeric order: the grid columns (and
    their labels), ``n`` (runs at the point, i.e. seeds), and for each metric (default: :data:`HEADLINE`, those
    in the table) ``<metric>_mean``, ``<metric>_std`` (sample standard deviation, ddof 1) and
    ``<metric>_ci95`` (half-width of the 95 % confidence interval of the mean, Student t with n − 1 degrees
    of freedom: t · std / √n). std and ci95 are NaN with one seed; a run's missing value (NaN) is left out."""
    import pandas as pd

    from .stats import spread

    if metrics is None:  # the headline metrics, the reverse flows' goodput and the derived metrics
        metrics = [*HEADLINE, "goodput_mbps_reverse", *t.attrs.get("derived", [])]
    metrics = [m for m in metrics if m in t]
    keys = grid_keys(t) if by is None else list(by)
    cols = [c for k in keys for c in (k, k + LABEL) if c in t]
    groups = list(t.groupby(cols, dropna=False, sort=True)) if cols else [((), t)]
    rows = []
    for name, g in groups:
        row: dict[str, Any] = dict(zip(cols, name if isinstance(name, tuple) else (name,)))
        row["n"] = len(g)
        for m in metrics:
            mean, std, _, ci = spread(g[m].to_numpy(dtype=float))
            row.update({f"{m}_mean": mean, f"{m}_std": std, f"{m}_ci95": ci})
        rows.append(row)
    return pd.DataFrame(rows, columns=[*cols, "n", *(f"{m}_{s}" for m in metrics for s in ("mean", "std", "ci95"))])


class RunsFailed(Exception):
    """Raised by :func:`run` at the end of a sweep in which some runs failed. Every other run is finished and
    in ``table``; ``failures`` holds one dict per failed run (``run``, ``values``, ``seed``, ``error``,
    ``stderr``), also written to ``OUT/failed.json``. Running the sweep again retries the failed runs."""

    def __init__(self, failures: list[dict], table: Any, total: int, out: Path):
        self.failures, self.table = failures, table
        lines = [f"{_where(f)}: {f['error']}".replace("\n", "\n    ") for f in failures]
        super().__init__(f"{len(failures)} of {total} runs failed (details in {out}/failed.json; the same command "
                         "retries them):\n" + "\n".join(f"  {x}" for x in lines))
        self._args = (failures, table, total, out)

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the constructor's arguments (``args`` holds only the message): it crosses processes.
        return (type(self), self._args)


def _where(f: dict) -> str:
    return ", ".join([f"{k} = {v!r}" for k, v in f["values"].items()] + [f"seed {f['seed']}"])


def _unique(points: list[Point]) -> list[Point]:
    """The points with distinct ids (two grid settings may give the same scenario), first one kept."""
    seen: set[str] = set()
    out = []
    for p in points:
        if p.id not in seen:
            seen.add(p.id)
            out.append(p)
    return out


def _replace(path: Path, write: Callable[[Path], Any]) -> None:
    """Writes ``path`` through a temporary file renamed over it: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


_SWEEP_KEYS = ("base", "seeds", "grid")


def _claim(out: Path, meta: dict, force: bool, metrics: Optional[list[dict]] = None) -> list[str]:
    """Records the sweep in ``out/sweep.json`` (with the cclab version and git commit running it). A folder
    holding a different sweep (another base scenario, grid or seeds) is refused with a ScenarioError unless
    ``force``; with ``force`` its tables are removed (they belong to the other sweep) and its runs stay in
    runs/, reused where they coincide with this sweep's. The same sweep written by another cclab version is
    not a different sweep, but none of its runs is this version's (the ids differ): its tables are removed
    and the returned notes say so; so does a note when the same version ran it from another git commit
    (those runs are reused: bump the version or use a new folder to redo them)."""
    out.mkdir(parents=True, exist_ok=True)
    f = out / "sweep.json"
    version, commit = provenance.version(), (provenance.git() or {}).get("commit")
    new = json.loads(json.dumps({k: meta[k] for k in _SWEEP_KEYS}))
    # The derived metrics are recorded (cclab plot and cclab.sweep.table compute them from it) but are
    # not part of what makes a sweep: changing them recomputes the tables and reruns nothing.
    record = dict(new, cclab=version, git=commit, **({"metrics": metrics} if metrics else {}))
    notes: list[str] = []
    old: Any = None
    full: Any = None
    if os.path.lexists(f):
        try:
            from .files import read_json

            full = read_json(f, "sweep.json")  # a regular file only: a FIFO there would wait forever
            old = {k: full.get(k) for k in _SWEEP_KEYS} if isinstance(full, dict) else full
        except (OSError, ValueError) as e:
            old = full = e
        if old == new and full.get("cclab", "") != version:
            notes.append(f"{out} holds this sweep's runs made by "
                         + (f"cclab {full['cclab']}" if full.get("cclab") else "a cclab older than versioned run ids")
                         + f"; this is cclab {version}: run ids include the version, so every run is redone "
                         "(the old runs stay in runs/, outside the new table)")
            for name in ("results.csv", "results.parquet", "failed.json"):
                (out / name).unlink(missing_ok=True)
        elif old == new and commit and full.get("git") and full["git"] != commit:
            notes.append(f"{out} holds runs of this sweep made at git commit {full['git'][:12]}; this is "
                         f"{commit[:12]}, the same cclab version {version}: finished runs are reused (each "
                         "run's summary.json records its commit in meta.git); bump the version or use another "
                         "--out to redo them")
        if old != new and not force:
            why = (f"its sweep.json cannot be read: {old}" if isinstance(old, Exception) else "its sweep.json has "
                   + (", ".join(f"another {k}" for k in new if not isinstance(old, dict) or old.get(k) != new[k])
                      or "another format"))
            raise ScenarioError([("out", f"{out} holds a different sweep ({why}); give another --out, or pass "
                                         "--force (force=True) to run this sweep there: the table then has only "
                                         "this sweep's runs")])
        if old != new:
            for name in ("results.csv", "results.parquet", "summary.csv", "failed.json"):
                (out / name).unlink(missing_ok=True)
    if full != record:
        _replace(f, lambda tmp: tmp.write_text(json.dumps(record, indent=1)))
    return notes


def _clean(out: Path) -> None:
    """Removes what killed processes left: ``.partial`` folders and lock files nobody holds (a live holder keeps
    its lock, so a run still under way elsewhere is left alone), and temporary files of dead writers."""
    runs = out / "runs"
    for part in runs.glob("*.partial"):
        lock = _Lock(runs / (part.name[:-len(".partial")] + ".lock"))
        if lock.acquire(block=False):
            try:
                shutil.rmtree(part, ignore_errors=True)
            finally:
                lock.release()
    for f in runs.glob("*.lock"):
        lock = _Lock(f)
        if lock.acquire(block=False):
            lock.release()
    for f in out.glob(".*.tmp"):
        try:
            os.kill(int(f.name.rsplit(".", 2)[-2]), 0)
        except ProcessLookupError:
            f.unlink(missing_ok=True)
        except (ValueError, OSError):
            pass


def _on_pool(todo: list[Point], workers: int, out: Path, plots: bool, settle: Callable[..., None]) -> None:
    """Runs ``todo`` on local worker processes (cclab.executor.run_local: workers that die with this process,
    runs retried when a worker dies, Ctrl-C lets the running ones finish)."""
    executor.run_local([_task(p, out, plots) for p in todo], workers, lambda t, *r: settle(t.key, *r))


def _discard(runs: Path, rid: str) -> bool:
    """Removes finished run ``rid`` (its files are damaged) under its lock; False if another process holds
    the lock (that process is redoing it)."""
    lock = _Lock(runs / f"{rid}.lock")
    if not lock.acquire(block=False):
        return False
    try:
        d = runs / rid
        if d.is_dir() and not d.is_symlink():
            shutil.rmtree(d)
        else:
            d.unlink(missing_ok=True)
        return True
    finally:
        lock.release()


def _on_dask(todo: list[Point], scheduler: str, out: Path, plots: bool, settle: Callable[..., None]) -> None:
    executor.run_dask([_task(p, out, plots) for p in todo], scheduler, lambda t, *r: settle(t.key, *r))


def run(sweep_file: Path, out: Path, workers: Optional[int] = None, scheduler: Optional[str] = None,
        plots: bool = False, on_done: Callable[[int, int], None] = lambda done, total: None,
        force: bool = False, on_note: Optional[Callable[[str], None]] = None) -> pd.DataFrame:
    """Runs every unfinished point of ``sweep_file`` into ``out``; returns the results table (only this sweep's
    runs).

    ``out`` holding a different sweep is refused (ScenarioError) unless ``force``. A run that fails (any
    exception, a Rust panic, its worker dying twice) does not stop the others: once every run is settled, the
    table is written and RunsFailed is raised, carrying the table and the failures. Ctrl-C
    (KeyboardInterrupt) stops submitting, lets the running runs finish (a second Ctrl-C kills them), writes
    the table of what finished, and re-raises: nothing finished is lost, nothing unfinished is kept as done.

    ``on_note`` receives what a resumed sweep should know (runs redone because they were made by another
    cclab version, or reused although made at another git commit); by default each is a warning."""
    executor.check_scheduler(scheduler)
    base, seeds, grid = load(sweep_file)
    metrics = load_metrics(sweep_file)
    points = _unique(expand(base, seeds, grid))
    derived.check_applies(metrics, [p.scenario for p in points])
    out = prepare_out(out)
    for note in _claim(out, {"base": base, "seeds": seeds, "grid": grid}, force, [m.as_dict() for m in metrics]):
        if on_note is not None:
            on_note(note)
        else:
            warnings.warn(note, stacklevel=2)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    _clean(out)
    done = finished(out)
    for p in points:  # a finished run whose files were damaged since is redone, not kept failing the table
        if p.id in done:
            try:
                _row(out / "runs" / p.id, tuple(metrics))
            except ScenarioError as e:
                if _discard(out / "runs", p.id):
                    done.discard(p.id)
                    (on_note or (lambda m: warnings.warn(m, stacklevel=2)))(
                        f"run {p.id} ({_where(vars(p))}) is redone: {e}".replace("\n", "; "))
    todo = [p for p in points if p.id not in done]
    total = len(points)
    count = [total - len(todo)]
    on_done(count[0], total)
    failures: dict[str, dict] = {}

    def settle(p: Point, status: str, message: str = "", stderr: str = "") -> None:
        if status == "failed":
            failures[p.id] = {"run": p.id, "values": p.values, "seed": p.seed, "error": message, "stderr": stderr}
        elif status != "stopped":
            count[0] += 1
            on_done(count[0], total)

    try:
        if scheduler:
            _on_dask(todo, scheduler, out, plots, settle)
        else:
            _on_pool(todo, workers or os.cpu_count() or 1, out, plots, settle)
        # Every run this sweep did not see fail is in runs/ now: a run reported finished whose folder is not
        # there (a folder removed meanwhile, an older cclab's workers writing elsewhere) is a failure, not a
        # silent gap in the table.
        have = finished(out)
        for p in todo:
            if p.id not in have and p.id not in failures:
                failures[p.id] = {"run": p.id, "values": p.values, "seed": p.seed, "stderr": "",
                                  "error": f"it was reported finished but {out / 'runs' / p.id} is not there"}
    finally:
        t = table(out, [p.id for p in points], metrics)
        for name, write in (("results.csv", lambda tmp: t.to_csv(tmp, index=False)),
                            ("results.parquet", lambda tmp: t.to_parquet(tmp, index=False)),
                            ("summary.csv", lambda tmp: summarize(t).to_csv(tmp, index=False))):
            if len(t):
                _replace(out / name, write)
            else:
                (out / name).unlink(missing_ok=True)
        failed = [failures[p.id] for p in points if p.id in failures]
        if failed:
            _replace(out / "failed.json", lambda tmp: tmp.write_text(json.dumps(failed, indent=1)))
        else:
            (out / "failed.json").unlink(missing_ok=True)
    if failed:
        raise RunsFailed(failed, t, total, out)
    return t
