"""``cclab search FILE --confirm real|kernel``: does the failure a search found in the simulator hold outside it?

The top candidates (``top`` of them, from the search's top table) and the base scenario without the adversary
are each run ``repeats`` times (seeds seed, seed+1, ...) in the simulator and on the real datapath
(cclab.net: real sockets through the userspace link emulator, in real time):

* ``real``: the scenario as it is, our transport on both ends;
* ``kernel``: each flow's algorithm replaced by Linux's own (``kernel:reno`` for NewReno, Reno and SACK,
  ``kernel:cubic``, ``kernel:bbr``) or, for an algorithm Linux does not have, ours inside Linux TCP
  (``bpf:<name>``, docs/kernel-datapath.md).

Per candidate the objective's mean ± 95 % CI (Student t over the repeats) in both, and whether the failure
holds: the real objective with the adversary is worse than the real one without it, their 95 % CIs apart. A
candidate the real datapath cannot run (an adversary feature it lacks, e.g. cross traffic) is reported as
such with the datapath's own reasons, and nothing of it is run there.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Optional

from .engine import ci95, run_all
from .space import RunFailed, Search, metric_of, scenario_of

MODES = ("real", "kernel")
_KERNEL = {"newreno": "kernel:reno", "reno": "kernel:reno", "sack": "kernel:reno", "cubic": "kernel:cubic",
           "bbr": "kernel:bbr"}


def kernel_cc(cc: str) -> str:
    """Linux's implementation of our algorithm ``cc`` (``kernel:*``), else ours inside Linux TCP (``bpf:cc``)."""
    return cc if cc.startswith(("kernel:", "bpf:")) else _KERNEL.get(cc, f"bpf:{cc}")


def for_mode(scen: dict, mode: str) -> dict:
    """The scenario as ``mode`` runs it (``kernel``: every flow on Linux TCP)."""
    d = json.loads(json.dumps(scen))
    if mode == "kernel":
        for f in d.get("flows", []):
            f["cc"] = kernel_cc(f.get("cc", "newreno"))
    return d


def unsupported(scen: dict) -> Optional[str]:
    """Why the real datapath cannot run ``scen`` (its own checks, every field named), or None."""
    from .. import net
    from ..scenario import Scenario, ScenarioError

    try:
        sc = Scenario.from_dict(scen, datapath="net")
        net.validate(sc, sc.to_spec(datapath="net"))
    except ScenarioError as e:
        return "; ".join(f"{f}: {m}" if f else m for f, m in e.errors)
    return None


def _stats(xs: list[Optional[float]]) -> dict[str, Any]:
    got = [x for x in xs if x is not None and math.isfinite(x)]
    mean = sum(got) / len(got) if got and len(got) == len(xs) else None
    return {"values": xs, "mean": mean, "ci95": ci95(got) if mean is not None else None}


def _sim(s: Search, scen: dict, seeds: list[int], out: Path, workers: int) -> dict[str, Any]:
    from .. import runs
    from ..results import load_summary

    pts = [runs.point(scen, k) for k in seeds]
    errors = run_all([runs.task(p, out, light=True) for p in pts], workers, None)
    vals = []
    for p in pts:
        f = out / "runs" / p.id / "summary.json"
        if p.id in errors or not f.exists():
            raise RunFailed(f"simulator run {p.id} failed: {errors.get(p.id, 'no summary.json')}")
        vals.append(metric_of(load_summary(f), s.metric))
    return _stats(vals)


def _real(s: Search, scen: dict, seeds: list[int], folder: Path, on_run: Callable[[str], None]) -> dict[str, Any]:
    """``scen`` on the real datapath once per seed, each run kept in ``folder/<seed>/`` (a finished one, with its
    summary.json, is not run again: an interrupted confirmation resumes). The folder is named by rank, and the
    rank's candidate changes when the search does (a larger budget in the same OUT, another --set): its
    ``scenario.json`` says which scenario its runs are of, and runs of another one are moved aside to
    ``<folder>.old-<n>`` (kept, not deleted) instead of being reported as this candidate's."""
    import os

    from .. import net
    from ..results import load_summary

    mine = json.dumps(scen, sort_keys=True)
    tag = folder / "scenario.json"
    if folder.exists() and (not tag.exists() or tag.read_text() != mine):
        n = 1
        while folder.with_name(f"{folder.name}.old-{n}").exists():
            n += 1
        os.replace(folder, folder.with_name(f"{folder.name}.old-{n}"))
    folder.mkdir(parents=True, exist_ok=True)
    tag.write_text(mine)
    vals, disturbed = [], 0
    for k in seeds:
        where = folder / str(k)
        f = where / "summary.json"
        if not f.exists():
            on_run(f"{folder.name} seed {k}")
            res = net.run(scen, where, seed=k, progress=False, plots=False)
            summary = res.summary
        else:
            summary = load_summary(f)
        vals.append(metric_of(summary, s.metric))
        disturbed += bool((summary.get("net") or {}).get("disturbed"))
    # A run the machine disturbed (CPU pressure, late timers: cclab.net's own rule) is kept but counted: its
    # numbers are real but not a quiet machine's (docs/real-datapath.md).
    return dict(_stats(vals), disturbed=disturbed)


def holds(s: Search, cand: dict, base: dict) -> Optional[bool]:
    """Whether the candidate's real objective is worse than the base's, their 95 % CIs apart (None: unmeasured)."""
    if cand["mean"] is None or base["mean"] is None:
        return None
    sign = 1 if s.goal == "minimize" else -1
    gap = sign * (base["mean"] - cand["mean"])
    return gap > (cand["ci95"] or 0.0) + (base["ci95"] or 0.0)


def confirm(s: Search, top: Any, out: Path, mode: str, n: int = 3, repeats: int = 3, workers: int = 1,
            on_run: Callable[[str], None] = lambda what: None) -> dict[str, Any]:
    """Re-runs the ``n`` best candidates of ``top`` (the search's top table) and the base scenario ``repeats``
    times in the simulator and on the real datapath (``mode``); writes ``OUT/confirm-<mode>.json`` and
    ``OUT/confirm-<mode>.md`` and returns the JSON's content. Raises cclab.net.NetUnavailable when the real
    datapath cannot run here."""
    from .. import net

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    ok, reason = net.check()
    if not ok:
        raise net.NetUnavailable(reason)
    seeds = [s.seeds[0] + i for i in range(repeats)]
    folder = out / f"confirm-{mode}"
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    base_real = for_mode(s.base, mode)
    why_base = unsupported(base_real)
    base: dict[str, Any] = {"sim": _sim(s, s.base, seeds, out, workers),
            "real": None if why_base else _real(s, base_real, seeds, folder / "base", on_run),
            "unsupported": why_base}
    for rank, r in enumerate(top.head(n).to_dict("records"), 1):
        vals = {k: v for k, v in r.items() if k.startswith("adversary[")}
        scen = scenario_of(s, vals, out / "traces")
        real_scen = for_mode(scen, mode)
        why = unsupported(real_scen)
        row: dict[str, Any] = {"rank": rank, "values": vals, "sim": _sim(s, scen, seeds, out, workers),
                               "unsupported": why, "real": None, "holds": None}
        if why is None:
            row["real"] = _real(s, real_scen, seeds, folder / f"candidate-{rank}", on_run)
            if base["real"] is not None:
                row["holds"] = holds(s, row["real"], base["real"])
        rows.append(row)
    result = {"mode": mode, "metric": s.metric, "goal": s.goal, "seeds": seeds, "base": base, "candidates": rows}
    (out / f"confirm-{mode}.json").write_text(json.dumps(result, indent=1))
    (out / f"confirm-{mode}.md").write_text(markdown(result))
    return result


def _ms(x: Optional[dict]) -> str:
    if x is None or x["mean"] is None:
        return "–"
    note = f" ({x['disturbed']} of {len(x['values'])} disturbed)" if x.get("disturbed") else ""
    return f"{x['mean']:.4g} ± {x['ci95']:.2g}{note}"


def markdown(result: dict[str, Any]) -> str:
    """The confirmation as a Markdown table: per candidate the sim and real objective and the verdict."""
    what = {"real": "real datapath (our transport)", "kernel": "Linux TCP (kernel:* / bpf:*)"}[result["mode"]]
    lines = [f"{result['metric']} ({result['goal']}), mean ± 95 % CI over seeds {result['seeds']}; real = {what}",
             "", "| candidate | sim | real | failure holds |", "|---|---|---|---|"]
    b = result["base"]
    lines.append(f"| without the adversary | {_ms(b['sim'])} | "
                 f"{_ms(b['real']) if not b['unsupported'] else 'not run: ' + b['unsupported']} | – |")
    for r in result["candidates"]:
        if r["unsupported"]:
            real, verdict = f"not run: {r['unsupported']}", "unknown (the real datapath cannot run it)"
        else:
            real = _ms(r["real"])
            verdict = {True: "yes", False: "no", None: "unmeasured"}[r["holds"]]
        lines.append(f"| {r['rank']} | {_ms(r['sim'])} | {real} | {verdict} |")
    return "\n".join(lines) + "\n"
