"""``cclab reproduce``: each paper's headline experiment with one command, the claim beside the measurement.

An :class:`Experiment` names a scenario file shipped with the package (``cclab/scenarios/``, the same
files ``cclab run`` takes), the variants it runs (the paper's protocol and the ones it is compared with,
each a change to that scenario), and a function that turns the runs into :class:`Claim` rows: what the
paper claims, the paper's number or statement, our measurement, the criterion we judge it by, and whether
it holds. Nothing is hard-coded: every measured column comes from the runs just made.

Experiments live one module per paper (``fast``, ``maxnet``, ``binomial``, ``libra``, ``madison``);
the identifiers of docs/experiments.md (F2, M2, …) name them. ``quick=True`` shortens every run (for tests and a
first look); the printed report says so, because the claims are about the full-size runs.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Optional, Union

from .. import executor, provenance
from ..results import Result
from ..runner import run as _run
from ..scenario import as_scenario
from ..tomlfile import tomllib  # tomli before Python 3.11

# Each variant's runs (one per seed), by variant name: what an experiment's claims are computed from.
Runs = dict[str, list[Result]]

# At least five seeds per claim (a stochastic outcome is a mean with its 95 % CI over seeds); an
# experiment uses the paper's count where the paper ran more (B1: 10). Seeds differ in the simulator's
# random streams and, where a scenario gives ``start = [lo, hi]``, in the flows' start times.
SEEDS: tuple[int, ...] = (1, 2, 3, 4, 5)
# Sequential seeds: while a row is inconclusive (its 95 % CI straddles its criterion, or its seeds split
# without a sign test deciding), the experiment runs SEED_BATCH more seeds and judges again, up to
# MAX_SEEDS in all. At 30 seeds a Student-t CI is 0.37 standard deviations wide each side against 1.24 at
# 5 (3.3 times narrower); a row still straddling there sits within a third of a run-to-run standard
# deviation of its criterion, closer than the paper's words or single-run figures can be about, and
# more seeds would buy little (the width falls as 1/sqrt(n)) at a run time that grows as n. A settled row
# keeps the seeds it settled on (each row says which). An experiment may set a lower bound of its own
# (Experiment.max_seeds: L1 and L2, whose seeds are 60 and 50 runs of 300 s each).
SEED_BATCH = 5
MAX_SEEDS = 30


VERDICTS = ("holds", "does not hold", "inconclusive", "reported")


@dataclass
class Claim:
    """One row of a report.

    ``verdict`` is one of :data:`VERDICTS`: "holds" / "does not hold" when the 95 % confidence interval over
    the seeds clears the criterion on one side (``judged``; a per-seed criterion: a sign test, see
    :mod:`.overseeds`), "inconclusive" when it straddles it, "reported" for a row with no criterion.
    ``holds`` is kept for readers of reproduce.json written before ``verdict`` existed: True / False for the
    first two, None for the last two."""

    claim: str  # the paper's claim, in words
    paper: str  # the paper's number or statement
    measured: str  # ours, formatted
    criterion: str  # what "holds" means here
    holds: Optional[bool]  # None: inconclusive, or reported (no criterion; the paper gives none)
    # (k, n): the criterion held on k of the n seeds' own runs (``holds`` judges the mean over seeds);
    # None where the row is not judged per seed (one run, or a criterion over the whole set).
    seeds_held: Optional[tuple[int, int]] = None
    verdict: str = ""  # "" = derived from ``holds`` (True: holds, False: does not hold, None: reported)
    seeds: Optional[list[int]] = None  # the seeds whose runs made this row (set by ``reproduce``)

    def __post_init__(self) -> None:
        # Verdicts computed with numpy arrive as numpy.bool_ / numpy.int64, which reproduce.json would
        # store as 0.0 or 1.0: the row's contract is a Python bool (or None) and a pair of ints.
        if self.holds is not None:
            self.holds = bool(self.holds)
        if self.seeds_held is not None:
            self.seeds_held = (int(self.seeds_held[0]), int(self.seeds_held[1]))
        if not self.verdict:
            self.verdict = {True: "holds", False: "does not hold", None: "reported"}[self.holds]
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}: one of {', '.join(VERDICTS)}")
        self.holds = {"holds": True, "does not hold": False}.get(self.verdict)
        if self.seeds is not None:
            self.seeds = [int(x) for x in self.seeds]


@dataclass
class Experiment:
    id: str  # "F2", "M2", ...
    paper: str  # "FAST TCP (Jin, Wei & Low, INFOCOM 2004)"
    title: str
    scenario: str  # file name in cclab/scenarios
    # variant name -> scenario dict transform (the identity for the file as written)
    variants: dict[str, Callable[[dict], dict]]
    claims: Callable[[Runs], list[Claim]]
    seeds: tuple[int, ...] = SEEDS
    notes: str = ""  # what was scaled from the paper's setting, and why
    # The bound on sequential seeds when the caller sets none: MAX_SEEDS, or less for an experiment whose
    # runs are so many that 30 seeds would not fit the suite's time (its definition says why).
    max_seeds: int = MAX_SEEDS
    # The figures the paper shows, drawn from our runs in the same form, for ``cclab report``: name ->
    # matplotlib Figure (the caller saves and closes them). None: the experiment has no figure of its own.
    figures: Optional[Callable[[Runs], dict[str, Any]]] = None
    # Why the verdicts come out as they do, in Markdown, computed from the runs (every number in it is
    # measured, none typed in): docs/reproduce.md and the HTML report print it under the table.
    explain: Optional[Callable[[Runs, list[Claim]], str]] = None


@dataclass
class Report:
    experiment: Experiment  # its ``seeds``: every seed run (the requested ones and the added batches)
    quick: bool
    claims: list[Claim]
    runs: dict[str, list[dict]] = field(default_factory=dict)  # variant -> summaries (one per seed)
    explanation: str = ""  # Experiment.explain's text for these runs
    requested: tuple[int, ...] = ()  # the seeds asked for; the rest were added to settle inconclusive rows
    max_seeds: int = 0  # the bound on added seeds

    def to_json(self) -> dict:
        e = self.experiment
        return {"id": e.id, "paper": e.paper, "title": e.title, "scenario": e.scenario, "quick": self.quick,
                "seeds": list(e.seeds), "seeds_requested": list(self.requested or e.seeds),
                "max_seeds": self.max_seeds, "notes": e.notes, "claims": [asdict(c) for c in self.claims],
                "explanation": self.explanation, "runs": self.runs}


class _Sequence:
    """One experiment's seeds, batch by batch: after each batch the claims are judged over every seed run
    so far; a row that settles (holds / does not hold / reported) keeps that round's version and seeds,
    and while a row is inconclusive and the bound allows, the next batch is the SEED_BATCH seeds after the
    largest one run."""

    def __init__(self, e: Experiment, seeds: tuple[int, ...], max_seeds: int) -> None:
        self.e, self.requested = e, tuple(seeds)
        self.max_seeds = max(max_seeds, len(seeds))
        self.ran: tuple[int, ...] = ()
        self.batch: tuple[int, ...] = tuple(seeds)
        self.rows: Optional[list[Claim]] = None

    def judge(self, results: Runs) -> None:
        """``results``: every variant's runs over ``ran + batch``, in that order."""
        self.ran += self.batch
        rows = self.e.claims(results)
        for c in rows:
            c.seeds = list(self.ran)
        old = self.rows
        if old is not None and len(old) == len(rows):
            # A settled row stays as it settled (sequential testing stops a row once it is decided).
            rows = [o if o.verdict != "inconclusive" and o.claim == n.claim else n for o, n in zip(old, rows)]
        self.rows = rows
        room = self.max_seeds - len(self.ran)
        if room > 0 and any(c.verdict == "inconclusive" for c in rows):
            start = max(self.ran) + 1
            self.batch = tuple(range(start, start + min(SEED_BATCH, room)))
        else:
            self.batch = ()

    def report(self, results: Runs, quick: bool, out: Optional[Path]) -> Report:
        from dataclasses import replace

        e = replace(self.e, seeds=self.ran)
        claims = self.rows or []
        rep = Report(e, quick, claims, {k: [r.summary for r in v] for k, v in results.items()},
                     e.explain(results, claims) if e.explain else "", self.requested, self.max_seeds)
        if out is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            tmp = Path(out) / "reproduce.json.partial"
            tmp.write_text(json.dumps(rep.to_json(), indent=1, default=float))
            os.replace(tmp, Path(out) / "reproduce.json")
        return rep


def all_flows_as(cc: str, params: Optional[dict] = None) -> Callable[[dict], dict]:
    """A variant: every flow runs ``cc`` with ``params`` (its defaults without), as a paper compares
    protocols on one scenario."""
    def change(d: dict) -> dict:
        for f in d["flows"]:
            f["cc"] = cc
            f.pop("params", None)
            if params:
                f["params"] = dict(params)
        return d
    return change


def paper_transport(d: dict) -> dict:
    """``d`` on the papers' transport unless it names a profile: ``[transport] profile = "paper"`` (an ACK
    per packet, dupack loss detection, no undo, no D-SACK), as in the ns-2/ns-3 simulations the papers'
    figures come from. Every run of every experiment passes here (:func:`_jobs`), so a reproduction keeps its
    numbers under cclab's Linux-like default transport even if its scenario file or a variant does not say
    so; settings the scenario writes out (``receiver``, ``loss_detection``, …) still win over the profile."""
    d.setdefault("transport", {}).setdefault("profile", "paper")
    return d


def scenario_dict(name: str) -> dict:
    """A scenario file shipped with cclab, as the dict ``cclab.run`` takes."""
    return tomllib.loads(resources.files("cclab").joinpath("scenarios", name).read_text())


# One module per paper, in docs/experiments.md's order (Madison's in three: D1-D2, D3-D4, D5-D7).
PAPERS = ("fast", "maxnet", "binomial", "libra", "madison", "madison_figs")


def experiments() -> dict[str, Experiment]:
    """Every experiment, by lower-case id (``"f2"``, ``"m2"``, …), in paper order."""
    import importlib

    out: dict[str, Experiment] = {}
    for name in PAPERS:
        for e in importlib.import_module(f"{__name__}.{name}").EXPERIMENTS:
            out[e.id.lower()] = e
    return out


def _experiment(exp_id: str) -> Experiment:
    exps = experiments()
    key = exp_id.lower()
    if key not in exps:
        raise KeyError(f"unknown experiment {exp_id!r}; known: {', '.join(e.id for e in exps.values())}")
    return exps[key]


def _bound(e: Experiment, seeds: Optional[tuple[int, ...]], max_seeds: Optional[int],
           grow_chosen: bool = False) -> int:
    """The seed bound: ``max_seeds`` if given; else the experiment's own (``Experiment.max_seeds``) for its
    own seeds, or for chosen ones with ``grow_chosen`` (the CLI's ``--seeds``), and no added seeds when
    the caller chose them (a test, a look at particular seeds)."""
    if max_seeds is not None:
        return max_seeds
    return e.max_seeds if seeds is None or grow_chosen else 0


def reproduce(exp_id: str, out: Optional[Path] = None, quick: bool = False,
              progress: Callable[[str], None] = lambda s: None,
              seeds: Optional[tuple[int, ...]] = None, max_seeds: Optional[int] = None) -> Report:
    """Runs experiment ``exp_id`` (every variant, every seed) and judges its claims. With ``out``, writes
    ``reproduce.json`` there and each run's results in ``out/<variant>-seed<k>/`` (:func:`run_folder`). ``seeds`` replaces
    the experiment's own. While a row is inconclusive, SEED_BATCH more seeds are run, up to ``max_seeds``
    in all (default: the experiment's own bound, ``Experiment.max_seeds``, for its own seeds; none added to
    seeds the caller chose)."""
    e = _experiment(exp_id)
    seq = _Sequence(e, tuple(seeds) if seeds is not None else e.seeds, _bound(e, seeds, max_seeds))
    results: Runs = {name: [] for name in e.variants}
    while seq.batch:
        jobs = iter(_jobs(e.id, Path(out) if out is not None else Path("."), quick, seq.batch))
        for name in e.variants:
            for seed in seq.batch:
                d, where = next(jobs)
                progress(f"{e.id} {name} seed {seed}")
                results[name].append(_run_once(d, where if out is not None else None))
        seq.judge(results)
    return seq.report(results, quick, Path(out) if out is not None else None)


def _finished(d: dict, where: Path) -> bool:
    """Whether ``where`` holds a finished run of ``d`` made by this code (it is then reused): the same resolved
    spec, cclab version and build id (``meta.build_id``, :func:`cclab.provenance.build_id`), whichever machine
    or git commit ran it. A run whose files are damaged (not regular files, not the form cclab writes) is not
    finished: it is redone."""
    import stat

    from ..files import read_json
    from ..results import load_summary

    if not os.path.lexists(where / "summary.json"):
        return False
    try:
        spec = as_scenario(d).to_spec()
        same_spec = read_json(where / "spec.json", "spec.json") == json.loads(json.dumps(spec))
        meta = load_summary(where / "summary.json").get("meta") or {}
        # The Parquet footer (the schema) is read, not the data: a truncated file fails here.
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        ts = where / "timeseries.parquet"
        if not stat.S_ISREG(os.stat(ts).st_mode):
            return False
        with open(ts, "rb") as f:  # an open file: pyarrow would encode a path as UTF-8
            pq.read_schema(f)
        # The spec holds no algorithm defaults, so code changed under the same version would go unseen: a run
        # is reused only if made by the same code, its build id (the engine's sources and the modules that
        # write the results, provenance.build_id). Not the git commit: a Dask worker at another commit, or
        # installed from a wheel, makes the same results with the same code, and must not be made to redo them.
        build = provenance.build_id()
        return bool(same_spec and isinstance(meta, dict) and meta.get("cclab_version") == provenance.version()
                    and build != "unknown" and meta.get("build_id") == build)
    except (OSError, ValueError, TypeError):  # unreadable or damaged (pyarrow's errors are among these): redo it
        return False


def _write_run(d: dict, part: Path) -> Result:
    """Runs scenario ``d`` into folder ``part`` (the report draws what it needs; per-run PNGs cost ~0.5 s)."""
    return _run(d, part, progress=False, plots=False)


def _run_once(d: dict, where: Optional[Path]) -> Result:
    """One run of an experiment. With a folder, the run is done at most once whatever interrupts it, by the
    protocol ``cclab sweep`` uses (cclab.executor): under the run's lock (``<where>.lock``) it is written into
    ``<where>.partial`` and renamed into place when complete (an atomic rename), so ``where`` exists only for
    a finished run and no other process writes into it meanwhile; a rerun of the same experiment into the same
    folder loads a finished run whose resolved spec and cclab version are this one's instead of simulating it
    again, and replaces a stale or damaged one or a leftover ``.partial`` (docs/reproduce.md, "Interrupted
    runs")."""
    if where is None:
        return _run(d, None, progress=False, plots=False)
    if not _finished(d, where):
        res = executor.in_folder(where, functools.partial(_write_run, d), functools.partial(_finished, d))
        if res is not None:
            return res
    return Result.load(where)


class RunsFailed(RuntimeError):
    """Raised by :func:`run_many` once every run is settled, if some failed (the others are finished and
    kept; the same call retries the failed ones). ``failures``: (run folder, message) pairs."""

    def __init__(self, failures: list[tuple[str, str]], total: int):
        self.failures, self.total = failures, total
        super().__init__(f"{len(failures)} of {total} runs failed (the same command retries them):\n"
                         + "\n".join(f"  {w}: {m}".replace("\n", "\n    ") for w, m in failures))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.failures, self.total))


# A run folder's name must stay one path component below NAME_MAX (255 bytes on Linux) with ``-seed<k>`` and
# the executor's ``.partial`` / ``.lock`` after it: a longer variant name is cut here and a digest of the
# whole name keeps it distinct.
_NAME_BYTES = 200


def folder_name(variant: str) -> str:
    """``variant`` as one folder-name component: ``/`` (F4's "α = 10/20/40", D1's "M/D/1 check" would otherwise
    nest their runs in subfolders), NUL and ``%`` itself percent-encoded, so two names never share a folder and
    every other name keeps the folder it always had (finished runs are still found and reused)."""
    s = variant.replace("%", "%25").replace("/", "%2F").replace("\0", "%00")
    if len(s.encode()) > _NAME_BYTES:
        digest = hashlib.sha256(variant.encode()).hexdigest()[:16]
        s = s.encode()[:_NAME_BYTES - 17].decode(errors="ignore") + "~" + digest
    return s


def run_folder(variant: str, seed: int) -> str:
    """The folder of ``variant``'s run on ``seed`` inside its experiment's folder: ``<variant>-seed<k>`` with the
    name made safe by :func:`folder_name` (the one place run folders are named; the displayed name is kept)."""
    return f"{folder_name(variant)}-seed{seed}"


def _jobs(exp_id: str, out: Path, quick: bool, seeds: Optional[tuple[int, ...]] = None) -> list[tuple[dict, Path]]:
    """Every run of experiment ``exp_id`` as (scenario dict, folder), as :func:`reproduce` lays them out."""
    e = experiments()[exp_id.lower()]
    seeds = tuple(seeds) if seeds is not None else e.seeds
    base = scenario_dict(e.scenario)
    if quick:
        base = shorten(base)
    out_jobs = []
    for name, change in e.variants.items():
        for seed in seeds:
            d = paper_transport(change(json.loads(json.dumps(base))))
            d["seed"] = seed
            # Always named by seed: an experiment's seed set can grow (sequential seeds).
            out_jobs.append((d, Path(out) / run_folder(name, seed)))
    return out_jobs


def run_many(exp_ids: list[str], out: Path, quick: bool = False, workers: Optional[int] = None,
             scheduler: Optional[str] = None, on_done: Callable[[int, int], None] = lambda done, total: None,
             seeds: Optional[tuple[int, ...]] = None, max_seeds: Optional[int] = None,
             grow_chosen: bool = False) -> dict[str, Report]:
    """Runs every unfinished run of the experiments ``exp_ids`` into ``out/<ID>/`` on ``workers`` local
    processes (default: one per core) or on the Dask cluster at ``scheduler``, as ``cclab sweep`` does,
    then judges each experiment from its runs on disk and writes its ``reproduce.json``; an experiment
    with inconclusive rows gets its next batch of seeds in the next round (as :func:`reproduce`), every
    experiment's batch in one pool. Returns the reports by id. Each run is atomic (``_run_once``), so
    Ctrl-C loses only the runs under way: queued ones are cancelled, and the next call resumes."""
    from ..results import prepare_out

    prepare_out(out, "--out")  # a folder that cannot be written is refused before any run (ScenarioError)
    # The build id the runs will record, fixed now (it is cached for the process): forked workers inherit it,
    # so the runs they write and the judging below agree on it even if the files change meanwhile.
    provenance.build_id()
    seqs = {x: _Sequence(e, tuple(seeds) if seeds is not None else e.seeds, _bound(e, seeds, max_seeds, grow_chosen))
            for x in exp_ids for e in (_experiment(x),)}
    reports: dict[str, Report] = {}
    done = total = 0
    while any(s.batch for s in seqs.values()):
        open_ = {x: s for x, s in seqs.items() if s.batch}
        jobs = [j for x, s in open_.items() for j in _jobs(x, Path(out) / s.e.id, quick, s.batch)]
        total += len(jobs)
        done = _run_jobs(jobs, workers, scheduler, on_done, done, total)
        for x, s in open_.items():
            # Loaded one experiment at a time (every experiment's runs at once would not fit in memory).
            where = Path(out) / s.e.id
            results: Runs = {name: [Result.load(where / run_folder(name, k)) for k in s.ran + s.batch]
                             for name in s.e.variants}
            s.judge(results)
            if not s.batch:
                reports[x] = s.report(results, quick, where)
    return reports


def _run_jobs(jobs: list[tuple[dict, Path]], workers: Optional[int], scheduler: Optional[str],
              on_done: Callable[[int, int], None], done: int, total: int) -> int:
    """Runs the unfinished ``jobs`` through the executor ``cclab sweep`` uses (cclab.executor: workers make
    each run in their scratch space and return its files, which this process writes under per-run locks with
    atomic renames; local workers die with this process, runs are retried when a worker dies) on local
    processes or a Dask cluster; returns ``done`` plus the jobs now finished. Raises RunsFailed at the end if
    some runs failed (the others are kept)."""
    todo = [(d, w) for d, w in jobs if not _finished(d, w)]
    done += len(jobs) - len(todo)
    on_done(done, total)
    if not todo:
        return done
    tasks = [executor.Task(w, functools.partial(_write_run, d), functools.partial(_finished, d)) for d, w in todo]
    failures: list[tuple[str, str]] = []
    count = [done]

    def settle(t: executor.Task, status: str, message: str = "", stderr: str = "") -> None:
        if status == "failed":
            failures.append((str(t.final), message))
        elif status != "stopped":
            count[0] += 1
            on_done(count[0], total)

    if scheduler:
        executor.run_dask(tasks, scheduler, settle)
    else:
        executor.run_local(tasks, workers or os.cpu_count() or 1, settle)
    # A run reported finished must be in its folder now (the workers return their files and this process
    # writes them): one that is not is a failure named here, not a KeyError when the runs are judged.
    failed = {w for w, _ in failures}
    failures += [(str(w), f"it was reported finished but {w} is not there") for d, w in todo
                 if str(w) not in failed and not (w / "summary.json").is_file()]
    if failures:
        raise RunsFailed(failures, len(jobs))
    return count[0]


QUICK_FACTOR = 0.1


def _secs(v: Union[str, float]) -> float:
    from ..units import parse_time

    return parse_time(v)


def shorten(d: dict, factor: float = QUICK_FACTOR) -> dict:
    """The scenario with its duration, measure window and every flow's and source's start/stop scaled by
    ``factor``: the same shape of experiment, shorter."""
    def scale(v: Any) -> Any:
        if isinstance(v, list):
            return [scale(x) for x in v]
        return f"{_secs(v) * factor:.6g}s"

    d = json.loads(json.dumps(d))
    d["duration"] = scale(d["duration"])
    if "measure" in d:
        d["measure"] = scale(d["measure"])
    for group in ("flows", "traffic"):
        for f in d.get(group, []):
            for k in ("start", "stop"):
                if k in f:
                    f[k] = scale(f[k])
    return d
