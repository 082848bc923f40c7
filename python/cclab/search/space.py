"""The search file and its space (``cclab search``): loading and checking a search file, decoding a point of the
unit cube into the adversary's values with the budget applied, and the candidate scenario they make.

Adversary kinds: ``bursts`` (periodic on-off cbr sources: the shrew attacker), ``poisson`` (unresponsive
Poisson cross traffic), ``transfers`` (short congestion-controlled transfers: Poisson arrivals, Pareto sizes),
``loss``, ``delay``, ``jitter`` (each sets one scenario key) and ``capacity`` (a piecewise-constant capacity
trace of a link, one rate per segment). The contract in full: docs/search.md.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .. import runs, units
from ..errors import unknown_key
from ..scenario import Scenario, ScenarioError

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
    "jitter": {"jitter": units.parse_time},
    "capacity": {"rate": units.parse_rate},  # one coordinate per segment (see `segments`)
    "poisson": {"rate": units.parse_rate},
    "transfers": {"rate": units.parse_rate, "mean_size": units.parse_size},
}
# The cross-traffic kinds: each becomes [[traffic]] and its mean rate counts against budget.cross_rate.
CROSS = ("bursts", "poisson", "transfers")
_DEFAULT_KEY = {"loss": "topology.bottleneck.loss", "delay": "topology.bottleneck.delay",
                "jitter": "topology.bottleneck.jitter", "capacity": "topology.bottleneck"}
# Fixed settings passed through to the [[traffic]] entry a cross-traffic adversary makes (checked there).
_PASS = {"bursts": ("packet_size",), "poisson": ("start", "stop", "packet_size"),
         "transfers": ("start", "stop", "packet_size", "cc", "params", "rtt", "transport", "shape")}
_OPTIONAL = {"bursts": {"start", "packet_size"}, "loss": {"key"}, "delay": {"key"}, "jitter": {"key"},
             "capacity": {"key", "segments"}, "poisson": set(_PASS["poisson"]), "transfers": set(_PASS["transfers"])}
MAX_SEGMENTS = 100  # capacity segments of one adversary: each is a coordinate of the search
# Opportunities of one capacity trace: written in Python for every candidate (~20 bytes and ~1 µs each).
MAX_TRACE_LINES = 1_000_000


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
        raise ScenarioError([(f"{where}.{k}" if where else k, unknown_key(k, allowed)) for k in extra])


def _apply_sets(base: dict, sets: list[tuple[str, Any]]) -> None:
    for key, value in sets:
        try:
            runs.set_key(base, key, value)
        except KeyError as e:
            raise _err(f"--set {key if len(key) <= 200 else units.show_value(key)}", e.args[0]) from None


def parse_set(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set``: VALUE is read as a TOML value (``"cubic"``, ``0.01``, ``true``), else as a
    string (``cubic``), so an algorithm's name needs no quotes."""
    from ..scenario import parse_toml

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
    data = runs.read_toml(path, "", "search file")
    _only("", data, {"scenario", "base", "adversary", "budget", "objective", "search"})
    if ("scenario" in data) == ("base" in data):
        raise _err("scenario", "give exactly one of `scenario` (a file) or a [base] table")
    if "scenario" in data:
        if not isinstance(data["scenario"], str):
            raise _err("scenario", "must be a path to a scenario file")
        base = runs.read_toml(path.parent / data["scenario"], "scenario", "scenario file")
        absolute_traces(base, (path.parent / data["scenario"]).parent)
    else:
        base = data["base"]
        if not isinstance(base, dict):
            raise _err("base", "must be a table (a scenario)")
        absolute_traces(base, path.parent)
    _apply_sets(base, sets or [])
    absolute_traces(base, Path.cwd())  # a trace given by --set is named from where the command runs
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
                    raise _err(f"{where}.period", f"{dur / lo:,.3g} bursts in the run at the shortest period; at "
                                                  f"most {MAX_BURSTS:,}")
            if kind in CROSS and name in ("rate", "mean_size") and lo <= 0:
                raise _err(f"{where}.{name}", "must be > 0")
            if kind == "capacity":
                # A segment's rate must let at least one 1500-byte opportunity through: a trace needs one.
                if lo <= 0:
                    raise _err(f"{where}.rate", "must be > 0 (a link with no capacity has no trace)")
                n = a.get("segments", 1)
                if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SEGMENTS:
                    raise _err(f"{where}.segments", f"must be an integer in [1, {MAX_SEGMENTS}], got "
                                                    f"{units.show_value(n)}")
                if not units.parse_time(base.get("duration", 0)) > 0:
                    raise _err(f"{where}", "a capacity trace needs the scenario's duration")
                dims += [Dim(i, f"rate[{k}]", lo, hi) for k in range(n)]
                continue
            dims.append(Dim(i, name, lo, hi))
        if "key" in a and not isinstance(a["key"], str):
            raise _err(f"{where}.key", "must be a path in the scenario, e.g. \"topology.bottleneck.loss\"")
        _check_target(where, a, base, dims)
        if kind in ("poisson", "transfers"):
            _check_source(where, i, a, base)
    cross = any(a["kind"] in CROSS for a in advs)
    capacity = None
    if budget.get("cross_rate") is not None:
        if not cross:
            raise _err("budget.cross_rate", "bounds the cross traffic's mean rate, but no adversary is of kind "
                                            "\"bursts\", \"poisson\" or \"transfers\"")
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
    if any(ord(c) < 32 or 0x7f <= ord(c) < 0xa0 or c in "\u2028\u2029" for c in metric):
        raise _err("objective.metric", f"must be a path in summary.json of visible characters, got "
                                       f"{units.show_value(metric)}")
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
    if first + nseeds - 1 >= 2**63:  # the seeds are seed, seed + 1, …: each must be a seed (< 2^63)
        raise _err("search.seeds", f"{nseeds} seeds from the scenario's seed {first} go beyond the largest seed, "
                                   "2^63 - 1")
    return Search(base, advs, dims, budget.get("cross_rate"), capacity, metric.strip(), goal, methods, evaluations,
                  seed, list(range(first, first + nseeds)), batch, top, data)


def _check_target(where: str, a: dict, base: dict, dims: list[Dim]) -> None:
    """What a candidate is built from that no scenario rule sees until every candidate is refused: a bursts
    adversary's ``start``, the scenario ``key`` an adversary sets (a path that is no path, a missing list entry or
    a table the scenario does not have), and a capacity trace's size (a trace at 100 Gbit/s would be billions of
    lines). A ScenarioError naming ``adversary[i].<field>``."""
    kind = a["kind"]
    if kind == "bursts" and "start" in a:
        try:
            t = units.parse_time(a["start"])
        except (ValueError, TypeError) as e:
            raise _err(f"{where}.start", str(e)) from None
        if not (math.isfinite(t) and t >= 0):
            raise _err(f"{where}.start", f"must be a time >= 0, got {units.show_value(a['start'])}")
    if kind == "capacity":
        dur = units.parse_time(base.get("duration", 0))
        hi = dims[-1].hi  # this adversary's segments are the last coordinates added, all with its bounds
        lines = hi * dur / (1500 * 8)
        if lines > MAX_TRACE_LINES:
            raise _err(f"{where}.rate", f"its high bound makes a trace of {lines:,.3g} opportunities over the run's "
                                        f"{dur:g} s; at most {MAX_TRACE_LINES:,} (a rate of at most "
                                        f"{MAX_TRACE_LINES * 12000 / dur / 1e6:,.6g} Mbit/s)")
    if kind not in _DEFAULT_KEY:
        return
    key = a.get("key", _DEFAULT_KEY[kind])
    target = f"{key}.trace" if kind == "capacity" else key
    # A candidate sets the value in SI units (decoded from the bounds): probed with the low bound as it will be set.
    value: Any = "constant-12mbps" if kind == "capacity" else dims[-1].lo
    probe = json.loads(json.dumps(base))
    try:
        runs.set_key(probe, target, value)
        if kind == "capacity":
            runs.set_key(probe, f"{key}.rate", None)
            _drop_none(probe)
    except KeyError as e:
        raise _err(f"{where}.key", f"{units.show_value(key)} is not a path in the scenario: {e.args[0]}") from None
    try:
        Scenario.from_dict(probe)
    except ScenarioError as err:
        for f, m in err.errors:  # a table or key the scenario does not have (not a bad value at the low bound)
            if target.startswith(f + ".") or target.startswith(f + "[") or (f == target and "unknown" in m):
                raise _err(f"{where}.key", f"{units.show_value(key)} is not a key this adversary can set: {f}: "
                                           f"{m}") from None
        if kind != "capacity" and any(f == target for f, _ in err.errors):
            # Refused there at the low bound: a key that takes no such value (`name`) is refused at the high one too,
            # and would leave every candidate unmeasured.
            high = json.loads(json.dumps(base))
            runs.set_key(high, target, dims[-1].hi)
            try:
                Scenario.from_dict(high)
            except ScenarioError as err2:
                bad = [m for f, m in err2.errors if f == target]
                if bad:
                    raise _err(f"{where}.key", f"{units.show_value(key)} takes neither bound of the {kind} adversary: "
                                               f"{target}: {bad[0]}") from None


def _check_source(where: str, i: int, a: dict, base: dict) -> None:
    """A poisson or transfers adversary's fixed settings, checked by the scenario's own rules on the base scenario
    with the source added at its low bounds (a ScenarioError naming ``adversary[i].<field>``), so that a bad one
    stops the search here instead of making every candidate invalid."""
    topo = (base.get("topology") or {}).get("kind", "dumbbell")
    if a["kind"] == "transfers" and "rtt" not in a and topo != "graph":
        raise _err(f"{where}.rtt", "is required on a dumbbell: the transfers' round-trip propagation delay")
    d = json.loads(json.dumps(base))
    src = d.setdefault("traffic", [])
    e: dict[str, Any] = {"kind": a["kind"], **{k: a[k] for k in _PASS[a["kind"]] if k in a}}
    e.update({n: a[n][0] for n in _KINDS[a["kind"]]})
    src.append(e)
    mine = f"traffic[{len(src) - 1}]"
    try:
        Scenario.from_dict(d)
    except ScenarioError as err:
        ours = [(f, m) for f, m in err.errors if f == mine or f.startswith(mine + ".")]
        if ours:
            raise ScenarioError([(where + f[len(mine):], m) for f, m in ours]) from None


def absolute_traces(d: Any, folder: Path) -> None:
    """Names every trace file of scenario ``d`` relative to ``folder`` by its absolute path (a shipped trace keeps
    its name): a base scenario's traces are its file's neighbours, whatever the working directory of the search
    and of the candidates' runs."""
    from .. import traces

    if isinstance(d, dict):
        for k, v in d.items():
            if k == "trace" and isinstance(v, str) and v and v not in traces.builtin():
                p = Path(v).expanduser()
                d[k] = str(p if p.is_absolute() else (folder / p).resolve())
            else:
                absolute_traces(v, folder)
    elif isinstance(d, list):
        for v in d:
            absolute_traces(v, folder)


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
        ids = [i for i, a in enumerate(s.adversaries) if a["kind"] in CROSS]
        mean = sum(mean_rate(s, vals, i) for i in ids)
        cap = s.cross_rate * s.capacity
        if mean > cap:  # the budget by construction: every source's rate scaled down by the same factor
            for i in ids:
                vals[f"adversary[{i}].rate"] *= cap / mean
    return {k: float(v) for k, v in vals.items()}


def mean_rate(s: Search, vals: dict[str, float], i: int) -> float:
    """Cross-traffic adversary ``i``'s mean rate (bit/s): a burst source's rate × burst / period, a Poisson
    source's rate, the transfers' offered load (arrivals × mean size)."""
    r = vals[f"adversary[{i}].rate"]
    if s.adversaries[i]["kind"] == "bursts":
        return r * vals[f"adversary[{i}].burst"] / vals[f"adversary[{i}].period"]
    return r


def trace_text(rates: list[float], duration: float) -> str:
    """A mahimahi trace (docs/scenario.md, "Trace-driven links") of piecewise-constant ``rates`` (bit/s), equal
    segments over ``duration`` s: each segment's opportunities (1500 B each) evenly spaced in it, the last line
    the period (the run's end), so that the trace covers the run once. Times in ms with 6 decimals (ns)."""
    seg = duration / len(rates)
    lines = []
    for k, r in enumerate(rates):
        n = max(1, round(r * seg / (1500 * 8)))
        lines += [f"{(k * seg + (j + 0.5) * seg / n) * 1e3:.6f}" for j in range(n)]
    lines.append(f"{duration * 1e3:.6f}")
    return "\n".join(lines) + "\n"


def write_trace(text: str, folder: Path) -> Path:
    """Writes trace ``text`` into ``folder`` under a name of its content's hash (atomically; an existing one is
    the same trace), so the same candidate names the same file and its run id is the same: resumption."""
    import hashlib

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.trace"
    if not path.exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path.resolve()


def scenario_of(s: Search, vals: dict[str, float], trace_dir: Optional[Path] = None) -> dict:
    """The base scenario with the adversary of ``vals`` added: an ordinary scenario (bursts are cbr sources, a
    capacity adversary a trace file written into ``trace_dir``, named by an absolute path)."""
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
        elif a["kind"] in ("poisson", "transfers"):
            e = {"kind": a["kind"], **{k: a[k] for k in _PASS[a["kind"]] if k in a}}
            e.update({n: g(n) for n in _KINDS[a["kind"]]})
            d.setdefault("traffic", []).append(e)
        elif a["kind"] == "capacity":
            if trace_dir is None:
                raise ValueError("a capacity adversary needs a folder for its trace files")
            rates = [g(f"rate[{k}]") for k in range(a.get("segments", 1))]
            path = write_trace(trace_text(rates, dur), trace_dir)
            link = a.get("key", _DEFAULT_KEY["capacity"])
            runs.set_key(d, f"{link}.trace", str(path))
            try:
                runs.set_key(d, f"{link}.rate", None)
            except KeyError:
                pass
            _drop_none(d)
        else:
            runs.set_key(d, a.get("key", _DEFAULT_KEY[a["kind"]]), g(a["kind"]))
    return d


def _drop_none(d: Any) -> None:
    """Removes keys set to None (a link's rate replaced by its trace): TOML has no null."""
    if isinstance(d, dict):
        for k in [k for k, v in d.items() if v is None]:
            del d[k]
        for v in d.values():
            _drop_none(v)
    elif isinstance(d, list):
        for v in d:
            _drop_none(v)


def metric_of(summary: dict, metric: str) -> Optional[float]:
    """The value of ``metric`` (a path such as ``flows[0].goodput_bps``, or ``a / b``) in a run's summary; None
    if it is null there (unmeasured); KeyError naming the missing step."""
    if "/" in metric:
        a, b = (metric_of(summary, m.strip()) for m in metric.split("/", 1))
        return None if a is None or b is None or b == 0 else a / b
    node: Any = summary
    for part in metric.split("."):
        m = runs.STEP.match(part)
        if not m:
            raise KeyError(f"{units.show_value(part)} is not a name or name[index]")
        if not isinstance(node, dict) or m.group(1) not in node:
            raise KeyError(f"{units.show_value(m.group(1))} is not in the run's summary")
        node = node[m.group(1)]
        for idx in (int(i) for i in m.group(2).strip("[]").split("][") if i):
            if not isinstance(node, list) or idx >= len(node):
                raise KeyError(f"{part}: no entry [{idx}]")
            node = node[idx]
    if node is None:
        return None
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise KeyError(f"{units.show_value(metric)} is not a number in the run's summary")
    return float(node)


