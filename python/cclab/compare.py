"""Several runs side by side (``cclab compare RUN...``, docs/plots.md "Comparing runs"): the simulator
against the real datapath, algorithms against each other, seeds against seeds.

A RUN is a run's folder (``cclab run``, ``cclab net run``: it has summary.json), a folder of repeated runs
(``cclab net run --repeat N``: ``rep-<i>/`` each a run's folder) or a sweep's folder (``cclab sweep``:
``runs/<id>/``). Each run gets a label: the folder's name, or ``--label``; the runs of a repeated run share
their folder's label, and a sweep's runs are labelled by their grid point (folder name and the grid values
that vary), so the seeds of one point share a label. Runs that share a label are one *scheme*: the table
spreads its numbers over them, the figures draw their mean.

:func:`compare` returns the table (:func:`table`) and writes it and the figures (``cclab.plots.compare``).
The table has one row per run and group — ``forward`` (every forward flow), each algorithm among them,
and ``reverse`` (flows with ``reverse = true``) when there are any — with the mean over the group's flows
of each per-flow number and its 95 % confidence interval over those flows (Student t), and per scheme of
several runs one row more per group, ``run`` = ``mean of N runs``: the mean over the runs of each run's
number and its 95 % confidence interval over the runs (t with N − 1 degrees of freedom).
"""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from . import derived
from .errors import ScenarioError, show
from .stats import spread

if TYPE_CHECKING:
    import pandas as pd

    from .results import Result

# Per-flow numbers (summary.json key, column, scale): their mean over a group's flows, CI over the flows.
PER_FLOW = (
    ("goodput_bps", "goodput_mbps", 1e-6),
    ("p95_rtt_s", "p95_rtt_ms", 1e3),
    ("loss_rate", "loss_rate", 1.0),
    ("mean_cwnd_pkts", "mean_cwnd_pkts", 1.0),
)
# A group's own numbers (no spread within a run): its total goodput and Jain's index among its flows.
PER_GROUP = ("total_goodput_mbps", "jain")
# The run's link 0 (the bottleneck of a dumbbell): in the forward group's row only.
PER_LINK = (("utilization", "utilization", 1.0), ("p95_queue_delay_s", "p95_queue_delay_ms", 1e3),
            ("mean_queue_pkts", "mean_queue_pkts", 1.0))
METRICS = (*(c for _, c, _ in PER_FLOW), *PER_GROUP, *(c for _, c, _ in PER_LINK))
FILES = ("table.csv", "table.json")
FIGURES = ("rate", "cwnd", "queue", "cdf", "throughput_delay")  # cclab.plots.compare's
_REP = re.compile(r"rep-(\d+)$")
MAX_LABEL = 100  # characters of a --label (a legend entry; 100,000 took matplotlib minutes to lay out)


@dataclass
class Run:
    """One run to compare: its folder, label, datapath (sim or net) and results."""

    path: Path
    label: str
    result: Result
    reverse: set[int]

    @property
    def datapath(self) -> str:
        return str((self.result.summary.get("meta") or {}).get("datapath") or "sim")


def _bad(arg: Union[str, Path], why: str) -> ScenarioError:
    return ScenarioError([(f"RUN {show(str(arg))}", why)])


def _text(name: str) -> str:
    """A folder's name as text that can be written (tables, legends): bytes that are not UTF-8 (surrogates in a
    Python path) as \\x escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def repeats(folder: Path) -> list[Path]:
    """The runs ``rep-<i>/`` of a repeated run's folder, by ``i`` (empty: not such a folder): every ``rep-<i>/``
    with something named summary.json, which reading it then checks (a FIFO there was skipped without a word;
    now Result.load refuses it naming the file, as `cclab plot` and `cclab report` do: cclab.files)."""
    if not folder.is_dir():
        return []
    reps = [(int(m.group(1)), d) for d in folder.iterdir()
            if (m := _REP.match(d.name)) and d.is_dir() and os.path.lexists(d / "summary.json")]
    return [d for _, d in sorted(reps)]


def _sweep_runs(folder: Path, label: Optional[str]) -> list[tuple[Path, str, Optional[dict]]]:
    """A sweep folder's finished runs of its sweep, labelled by grid point."""
    from . import sweep as sw
    from .plots.sweep import key_label

    t = sw.table(folder)
    if t.empty:
        raise _bad(folder, "is a sweep's folder without finished runs")
    keys = [k for k in sw.grid_keys(t) if sw.labels(t, k).nunique(dropna=False) > 1]
    head = label or folder.name
    out = []
    for i, rid in enumerate(t["run"]):
        point = ", ".join(f"{key_label(k)} = {sw.labels(t, k).iloc[i]}" for k in keys)
        d = folder / "runs" / str(rid)
        p = json.loads((d / "point.json").read_text())
        out.append((d, f"{head}: {point}" if point else head, p.get("scenario")))
    return out


def collect(args: Sequence[Union[str, Path]], labels: Optional[Sequence[str]] = None) -> list[Run]:
    """The runs named by ``args`` (run, repeated-run or sweep folders) with their labels; ScenarioError
    naming the argument that is not one, or ``--label`` when the labels do not match the arguments."""
    from .results import Result

    labels = list(labels or [])
    if not args:
        raise ScenarioError([("RUN", "give at least one run's folder")])
    if labels and len(labels) != len(args):
        raise ScenarioError([("--label", f"{len(labels)} labels for {len(args)} RUN folders: give one --label per "
                                         "RUN, in the same order, or none (each run is then labelled by its folder's name)")])
    for text in labels:  # a label is drawn in every legend and printed in the table: one short line
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_LABEL or any(
                ord(c) < 32 or 0x7f <= ord(c) < 0xa0 or c in "\u2028\u2029" for c in text):
            raise ScenarioError([("--label", f"must be 1-{MAX_LABEL} visible characters on one line, got {show(text)}")])
    found: list[tuple[Path, str, Optional[dict]]] = []
    for i, a in enumerate(args):
        d = Path(a)
        lab = labels[i] if labels else None
        if not d.exists():
            raise _bad(a, "no such folder")
        if not d.is_dir():
            raise _bad(a, "is not a folder: give a run's folder (with summary.json)")
        name = _text(d.resolve().name or str(d))
        if (d / "summary.json").exists():
            found.append((d, lab or name, None))
        elif repeats(d):
            found += [(r, lab or name, None) for r in repeats(d)]
        elif (d / "sweep.json").exists() or (d / "runs").is_dir():
            found += _sweep_runs(d, lab)
        else:
            raise _bad(a, "is not a run's folder: it has no summary.json (cclab run / cclab net run), no rep-<i>/ "
                          "runs (cclab net run --repeat) and no sweep.json (cclab sweep)")
    runs = []
    for d, lab, scenario in found:
        res = Result.load(d)
        n, k = len(res.spec.get("flows") or []), len(res.summary.get("flows") or [])
        if n != k:  # the flows of the figures (timeseries, spec) would have no row in the table
            raise ScenarioError([(_text(str(d / "summary.json")), f"is not a summary.json of this run: it has {k} flows, "
                                  f"its spec.json {n}; it may be truncated or edited")])
        runs.append(Run(d, lab, res, derived.reverse_flows(res.summary, res.spec, scenario)))
    _same_length(runs)
    return runs


def _same_length(runs: list[Run]) -> None:
    """Runs of different durations or measurement windows are not compared: their means cover different
    times (slow start weighs more in a short run)."""
    def desc(r: Run) -> str:
        m0, m1 = r.result.summary["measure"]
        return f"{r.result.spec.get('duration', math.nan):g} s, window {m0:g}–{m1:g} s"

    seen: dict[str, Run] = {}
    for r in runs:
        seen.setdefault(desc(r), r)
    if len(seen) > 1:
        which = "; ".join(f"{show(str(r.path))}: {k}" for k, r in seen.items())
        raise ScenarioError([("RUN", f"the runs differ in duration or measurement window ({which}): compare runs "
                                     "of the same length and window")])


def _groups(r: Run) -> list[tuple[str, list[dict]]]:
    flows = r.result.summary.get("flows") or []
    fwd = [f for f in flows if int(f["id"]) not in r.reverse]
    out = [("forward", fwd)]
    ccs = list(dict.fromkeys(f["cc"] for f in fwd))
    if len(ccs) > 1:
        out += [(cc, [f for f in fwd if f["cc"] == cc]) for cc in ccs]
    rev = [f for f in flows if int(f["id"]) in r.reverse]
    if rev:
        out.append(("reverse", rev))
    return out


def _num(v: Any) -> float:
    return math.nan if v is None or isinstance(v, bool) else float(v)


def run_rows(r: Run) -> list[dict[str, Any]]:
    """The table's rows of one run: one per group, means over its flows and their 95 % CI over the flows."""
    from .metrics import jain

    s = r.result.summary
    link = (s.get("links") or [{}])[0]
    rows = []
    for group, fl in _groups(r):
        row: dict[str, Any] = {"label": r.label, "run": _text(str(r.path)), "datapath": r.datapath, "group": group,
                               "runs": 1, "flows": len(fl), "ci_over": "flows"}
        for key, col, scale in PER_FLOW:
            mean, _, _, ci = spread(_num(f.get(key)) * scale for f in fl)
            row[col], row[f"{col}_ci95"] = mean, ci
        good = [_num(f.get("goodput_bps")) for f in fl]
        row["total_goodput_mbps"] = sum(good) / 1e6 if fl else math.nan
        row["jain"] = jain(good) if fl else math.nan
        for key, col, scale in PER_LINK:
            row[col] = _num(link.get(key)) * scale if group == "forward" else math.nan
        for col in (*PER_GROUP, *(c for _, c, _ in PER_LINK)):
            row[f"{col}_ci95"] = math.nan
        rows.append(row)
    return rows


def over_runs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per label with several runs, per group: the mean over those runs of each run's number and its 95 %
    CI over the runs (Student t, N − 1 degrees of freedom)."""
    out = []
    by: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        by.setdefault((row["label"], row["group"]), []).append(row)
    for (label, group), rs in by.items():
        if len(rs) < 2:
            continue
        dp = sorted({r["datapath"] for r in rs})
        agg: dict[str, Any] = {"label": label, "run": f"mean of {len(rs)} runs", "datapath": "+".join(dp),
                               "group": group, "runs": len(rs), "flows": sum(r["flows"] for r in rs),
                               "ci_over": "runs"}
        for m in METRICS:
            mean, _, _, ci = spread(r[m] for r in rs)
            agg[m], agg[f"{m}_ci95"] = mean, ci
        out.append(agg)
    return out


def table(runs: list[Run]) -> pd.DataFrame:
    """One row per run and group, then per label of several runs its rows over the runs (see the module)."""
    import pandas as pd

    rows = [row for r in runs for row in run_rows(r)]
    agg = over_runs(rows)
    # Each label's runs, then its rows over the runs.
    order = list(dict.fromkeys(r.label for r in runs))
    rows = [row for lab in order for row in (*(x for x in rows if x["label"] == lab), *(x for x in agg if x["label"] == lab))]
    cols = ["label", "run", "datapath", "group", "runs", "flows", "ci_over",
            *(c for m in METRICS for c in (m, f"{m}_ci95"))]
    return pd.DataFrame(rows, columns=cols)


def check_out(out: Path) -> None:
    """``out`` may take the comparison's files: not a run's own folder (its figures would be replaced)."""
    if (out / "summary.json").exists():
        raise ScenarioError([("--out", f"{show(str(out))} is a run's folder: its figures would be replaced by the "
                                       "comparison's; give another folder")])
    for name in (*FILES, *(f"{n}.{x}" for n in FIGURES for x in ("png", "pdf", "svg"))):
        f = out / name  # a folder or FIFO under a file's name would fail (or block) the writing after the work
        if os.path.lexists(f) and not f.is_file():
            raise ScenarioError([("--out", f"{show(str(f))} is not a regular file: the comparison writes its "
                                           f"{name} there; remove it or give another folder")])


def write(runs: list[Run], out: Path, fmt: str = "png", style: Optional[str] = None,
          figures: bool = True) -> tuple[pd.DataFrame, list[Path]]:
    """Writes the table (table.csv, table.json) and, with ``figures``, the figures (``cclab.plots.compare``)
    into ``out``; returns the table and the paths written."""
    from .plots import check_format
    from .plots.compare import write_figures
    from .results import prepare_out

    check_format(fmt)
    out = prepare_out(out, "--out")
    t = table(runs)
    t.to_csv(out / "table.csv", index=False)
    recs = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
            for row in t.to_dict(orient="records")]
    (out / "table.json").write_text(json.dumps(recs, indent=1) + "\n")
    paths = [out / f for f in FILES] + (write_figures(runs, out, fmt, style) if figures else [])
    return t, paths


def print_table(t: pd.DataFrame) -> None:
    """The table on the terminal (rich): mean ± 95 % CI half-width."""
    from rich.console import Console
    from rich.table import Table

    cols = [("goodput_mbps", "goodput/flow Mbit/s", "flows"), ("total_goodput_mbps", "total Mbit/s", "runs"),
            ("jain", "Jain", "runs"), ("p95_rtt_ms", "p95 RTT ms", "flows"), ("loss_rate", "loss rate", "flows"),
            ("utilization", "utilisation", "runs"), ("p95_queue_delay_ms", "p95 queue ms", "runs")]
    tab = Table(title="mean ± 95 % CI half-width (Student t) over the group's flows, or over runs (mean of N runs)")
    for c in ("label", "run", "group", "flows"):
        tab.add_column(c, overflow="fold")
    for _, name, _ in cols:
        tab.add_column(name, justify="right", no_wrap=True)
    last = None
    for _, r in t.iterrows():
        cells = [str(r["label"]) if r["label"] != last else "", Path(str(r["run"])).name if r["runs"] == 1
                 else str(r["run"]), str(r["group"]), str(r["flows"])]
        last = r["label"]
        for m, _, _ in cols:
            mean, ci = float(r[m]), float(r[f"{m}_ci95"])
            cells.append("–" if mean != mean else f"{mean:.4g}" + ("" if ci != ci else f" ± {ci:.2g}"))
        tab.add_row(*cells)
    Console(width=200).print(tab)


def compare(args: Sequence[Union[str, Path]], out: Union[str, Path], labels: Optional[list[str]] = None,
            fmt: str = "png", style: Optional[str] = None) -> tuple[pd.DataFrame, list[Path]]:
    """Collects the runs ``args`` (see :func:`collect`) and writes their table and figures into ``out``."""
    out = Path(out)
    check_out(out)
    runs = collect(args, labels)
    return write(runs, out, fmt, style)
