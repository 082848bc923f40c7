"""Adversarial search: the network conditions under which an algorithm does worst (``cclab search``).

A search file names a base scenario, what an adversary controls with bounds (bursts, loss, delay, jitter, a
capacity trace), its budget and the objective (a number of summary.json); the contract is docs/search.md. The
methods come from libraries: CMA-ES is the ``cma`` package's (Hansen's reference implementation), random search
draws from NumPy's seeded generator. Both work in the unit cube, one coordinate per bound; a point is decoded
into the adversary's values with the budget applied by construction, and the candidate becomes an ordinary
scenario (cclab.search.space). Candidates run through the shared executor as sweeps do
(cclab.search.engine); the outputs are cclab.search.outputs', and ``--confirm`` re-runs the best candidates on
the real datapath or with Linux's TCP (cclab.search.confirm).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

from .engine import baseline, expected_runs, loss, run_method
from .outputs import print_result, to_toml, top_table, write_outputs
from .space import MAX_EVALUATIONS, METHODS, UNMEASURED, Dim, RunFailed, Search, decode, load, metric_of, parse_set, scenario_of, trace_text

__all__ = ["MAX_EVALUATIONS", "METHODS", "UNMEASURED", "Dim", "RunFailed", "Search", "decode", "expected_runs", "load",
           "loss", "metric_of", "parse_set", "print_result", "run", "scenario_of", "to_toml", "top_table", "trace_text"]


# What a search writes into OUT, files and folders: a FIFO in a file's place would block the writing for ever, a
# folder fail it after every run (cclab.search.outputs, engine, confirm).
_FILES = ("search.json", "best.toml", "best.trace", "top.csv", "top.md", "result.json", "convergence.png",
          *(f"confirm-{m}.{x}" for m in ("real", "kernel") for x in ("json", "md")))
_FOLDERS = ("top", "best", "runs", "traces", "confirm-real", "confirm-kernel")


def _check_outputs(out: Path, methods: list[str]) -> None:
    """Refuses (on ``--out``) an OUT where something that is not a regular file stands in a file's place, or a
    file in a folder's place, before any run."""
    from ..errors import ScenarioError, show

    files = [out / f for f in _FILES] + [out / m / f"evaluations.jsonl{x}" for m in methods for x in ("", ".tmp")]
    if (out / "top").is_dir():
        files += [f for f in (out / "top").iterdir() if f.suffix in (".toml", ".trace")]
    for f in files:
        if os.path.lexists(f) and (f.is_symlink() or not f.is_file()):
            raise ScenarioError([("--out", f"{show(str(f))} is not a regular file: the search writes its "
                                           f"{f.name} there; remove it or give another folder")])
    for d in [out / x for x in (*_FOLDERS, *methods)]:
        if os.path.lexists(d) and not d.is_dir():
            raise ScenarioError([("--out", f"{show(str(d))} is not a folder: the search writes into {d.name}/ there; "
                                           "remove it or give another folder")])


def run(search_file: Path, out: Path, sets: Optional[list[tuple[str, Any]]] = None, workers: Optional[int] = None,
        on_run: Callable[[], None] = lambda: None, scheduler: Optional[str] = None, figures: bool = True) -> dict:
    """Runs the search in ``search_file`` into ``out`` (resuming: finished runs are reused); returns
    ``{"search", "evaluations" (per method), "best", "baseline", "top"}``. Writes ``OUT/<method>/evaluations.jsonl``,
    ``OUT/best.toml`` (the best candidate, an ordinary scenario with the first of the search's seeds; its trace
    beside it), ``OUT/top/<rank>.toml``, ``OUT/top.csv``, ``OUT/top.md``, ``OUT/convergence.png`` and, with
    ``figures``, the best candidate's full run and figures in ``OUT/best/``."""
    from .. import executor
    from ..results import prepare_out

    executor.check_scheduler(scheduler)
    search_file = Path(search_file)
    s = load(search_file, sets)
    out = prepare_out(out)
    _check_outputs(out, s.methods)
    w = workers or os.cpu_count() or 1
    (out / "search.json").write_text(json.dumps({"search": s.raw, "set": [list(x) for x in sets or []]}, indent=1))
    base = baseline(s, out, w, scheduler)
    by_method = {m: run_method(s, m, out, w, on_run, scheduler) for m in s.methods}
    got = write_outputs(s, search_file, out, by_method, base, figures)
    return {"search": s, "evaluations": by_method, "best": got["best"], "baseline": base, "top": got["top"]}
