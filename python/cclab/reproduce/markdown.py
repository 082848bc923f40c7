"""docs/reproduce.md's result sections, rendered from reproduce.json files (no hand-edited result tables):
one section per experiment with its claim table, per-seed counts, notes and measured explanation."""
from __future__ import annotations

import json
from pathlib import Path


def _verdict(c: dict) -> str:
    v = {True: "yes", False: "**no**", None: "—"}[c["holds"]]
    if c.get("seeds_held"):
        k, n = c["seeds_held"]
        v += f" ({k}/{n} seeds)"
    return v


def section(rep: dict) -> str:
    """One experiment's section."""
    cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    seeds = rep.get("seeds", [])
    out = [f"### {rep['id']}: {rep['title']}", "",
           f"{rep['paper']}; `scenarios/{rep['scenario']}`; variants: {', '.join(rep['runs'])}; "
           f"seeds: {len(seeds)}{' (QUICK: a tenth of the duration)' if rep.get('quick') else ''}. {rep['notes']}", "",
           "| claim | paper | measured (cclab, mean ± 95 % CI over seeds) | criterion | holds |",
           "| --- | --- | --- | --- | --- |"]
    out += [f"| {cell(c['claim'])} | {cell(c['paper'])} | {cell(c['measured'])} | {cell(c['criterion'])} | "
            f"{_verdict(c)} |" for c in rep["claims"]]
    if rep.get("explanation"):
        out += ["", rep["explanation"]]
    return "\n".join(out) + "\n"


def render(paths: list[Path]) -> str:
    """The sections of every reproduce.json in ``paths`` (files or folders holding one), in order."""
    reps = []
    for p in paths:
        f = p / "reproduce.json" if p.is_dir() else p
        reps.append(json.loads(f.read_text()))
    return "\n".join(section(r) for r in reps)
