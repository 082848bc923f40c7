"""What a search leaves in its folder: the best candidates as ordinary scenario files (their traces beside them),
the top table, the convergence figure, and the best candidate's run in full with its time-series figures."""
from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any, Optional

from .engine import loss
from .space import Search, scenario_of


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


def convergence(s: Search, by_method: dict[str, list[dict]], baseline: Optional[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for m, recs in by_method.items():
        best, ys = math.inf, []
        for r in recs:
            best = min(best, loss(s, r))
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
    for r in sorted(recs, key=lambda r: (loss(s, r), r["method"], r["n"])):
        key = json.dumps(r["values"], sort_keys=True)
        if key in seen or r.get("invalid"):  # a candidate the scenario rules refused has no run to show
            continue
        seen.add(key)
        rows.append({"method": r["method"], "evaluation": r["n"], **r["values"], "objective": r["objective"],
                     "ci95": r["ci95"], "seeds": len(r["seeds"]), "run": r["runs"][0]})
        if len(rows) == s.top:
            break
    return pd.DataFrame(rows)



def _localise(d: Any, dest: Path, stem: str, n: list[int]) -> Any:
    """``d`` with every trace file (the search's, in ``OUT/traces/``, and the base scenario's: absolute paths,
    space.absolute_traces) copied beside ``dest`` as ``<stem>.trace`` (``<stem>-2.trace``, ...) and named relative
    to it: the scenario file and its traces move together, and `cclab run` reads the same opportunities from any
    working directory (a scenario file's relative traces are its neighbours). Shipped traces keep their names."""
    if isinstance(d, dict):
        out = {}
        for k, v in d.items():
            if k == "trace" and isinstance(v, str) and Path(v).is_absolute():
                n[0] += 1
                name = f"{stem}.trace" if n[0] == 1 else f"{stem}-{n[0]}.trace"
                shutil.copyfile(v, dest / name)
                out[k] = name
            else:
                out[k] = _localise(v, dest, stem, n)
        return out
    if isinstance(d, list):
        return [_localise(v, dest, stem, n) for v in d]
    return d


def _shown(path: Path) -> str:
    """A path for a comment of a written file: one that is not UTF-8 (its undecodable bytes are surrogates, which
    cannot be written as UTF-8) with those bytes as \\x escapes."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def write_scenario(s: Search, rec: dict, path: Path, out: Path, header: str) -> Path:
    """Candidate ``rec`` as an ordinary scenario file at ``path`` (with the first of its seeds), its traces
    beside it; `cclab run path` makes the candidate's first run again, to the digit."""
    scen = scenario_of(s, rec["values"], out / "traces")
    scen["seed"] = rec["seeds"][0] if rec["seeds"] else s.seeds[0]
    scen = _localise(scen, path.parent, path.stem, [0])
    path.write_text(header + to_toml(scen))
    return path


def _fmt(k: str, v: Any) -> str:
    """An adversary value in the unit a person reads (SI in the CSV)."""
    if not isinstance(v, float):
        return str(v)
    name = k.rsplit(".", 1)[-1]
    if name.startswith("rate"):
        return f"{v / 1e6:.3f} Mbit/s"
    if name in ("period", "burst", "delay", "jitter"):
        return f"{v * 1e3:.1f} ms"
    if name == "mean_size":
        return f"{v / 1e3:.1f} kB"
    return f"{v:.4g}"


def top_markdown(s: Search, top: Any, baseline: Optional[float]) -> str:
    """The top table as Markdown, values in readable units, each candidate's change against the baseline."""
    cols = [c for c in top.columns if c.startswith("adversary[")]
    head = ["#", "method", "eval"] + [c.replace("adversary", "adv") for c in cols] + [s.metric, "±95 %", "vs base"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, row in enumerate(top.itertuples(index=False), 1):
        r = dict(zip(top.columns, row))
        obj = r["objective"]
        ch = f"{(obj - baseline) / baseline:+.1%}" if obj is not None and baseline and not math.isnan(obj) else "–"
        lines.append("| " + " | ".join([str(i), r["method"], str(r["evaluation"])] + [_fmt(c, r[c]) for c in cols]
                                       + [f"{obj:.6g}" if obj is not None else "–", f"{r['ci95']:.3g}"
                                          if r["ci95"] is not None else "–", ch]) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(s: Search, search_file: Path, out: Path, by_method: dict[str, list[dict]],
                  base: Optional[float], figures: bool = True) -> dict:
    """Writes best.toml (+ trace), top/<rank>.toml, top.csv, top.md, convergence.png, result.json and, with
    ``figures``, the best candidate's run in full in ``OUT/best/`` (summary, time series and its figures)."""
    allrecs = [r for m in s.methods for r in by_method[m]]
    best = min(allrecs, key=lambda r: (loss(s, r), r["method"], r["n"]))
    note = (f"# {s.metric} = {best['objective']!r} (mean over seeds {best['seeds']}); `cclab run` reproduces run "
            f"{best['runs'][0] if best['runs'] else '(none)'}.\n")
    write_scenario(s, best, out / "best.toml", out,
                   f"# The best candidate of `cclab search {_shown(search_file)}` ({best['method']}, evaluation {best['n']}):\n"
                   + note)
    top = top_table(s, allrecs)
    top.to_csv(out / "top.csv", index=False)
    (out / "top.md").write_text(top_markdown(s, top, base))
    (out / "top").mkdir(exist_ok=True)
    for i, row in enumerate(top.itertuples(index=False), 1):
        r = dict(zip(top.columns, row))
        rec = next(x for x in allrecs if x["method"] == r["method"] and x["n"] == r["evaluation"])
        write_scenario(s, rec, out / "top" / f"{i}.toml", out,
                       f"# Candidate {i} of the top table of `cclab search {_shown(search_file)}`: {s.metric} = "
                       f"{rec['objective']!r}\n")
    convergence(s, by_method, base, out / "convergence.png")
    summary = {"baseline": base, "best": best, "metric": s.metric, "goal": s.goal,
               "evaluations": {m: len(r) for m, r in by_method.items()}}
    (out / "result.json").write_text(json.dumps(summary, indent=1))
    if figures and best["runs"]:
        from ..runner import run
        from ..scenario import Scenario

        run(Scenario.load(out / "best.toml"), out / "best", progress=False, plots=True)
    return {"best": best, "top": top}


def print_result(r: dict, out: Path) -> None:
    """The top candidates as a rich table, and the best against the base scenario without the adversary."""
    from rich.console import Console
    from rich.table import Table

    s, top = r["search"], r["top"].drop(columns=["run"], errors="ignore")  # (no column: every candidate refused)  # the run ids are in top.csv
    tab = Table(title=f"top {len(top)} candidates ({s.metric}, {s.goal})")
    for c in top.columns:  # "adversary[0].period" -> "0.period": the table fits a terminal
        tab.add_column(re.sub(r"adversary\[(\d+)\]\.", r"\1.", str(c)), justify="right", no_wrap=True)
    for _, row in top.iterrows():
        tab.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v)[:8] for v in row))
    con = Console()
    con.print(tab)
    b, base = r["best"]["objective"], r["baseline"]
    change = f" ({(b - base) / base:+.1%} against {base:.6g} without the adversary)" if b is not None and base else ""
    con.print(f"best {s.metric} = {b:.6g}{change}" if b is not None else "best: unmeasured", highlight=False)
    con.print(f"wrote {out}/best.toml, best/ (its run and figures), top/, top.csv, top.md, convergence.png, "
              "result.json, <method>/evaluations.jsonl", highlight=False)
