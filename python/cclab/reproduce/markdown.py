"""docs/reproduce.md's result sections, rendered from reproduce.json files (no hand-edited result tables):
one section per experiment with its claim table, per-seed counts, notes and measured explanation."""
from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from .record import load, verdict

# What in a reproduce.json's text (anyone's results folder) a Markdown renderer would make live: a "<" that
# opens a tag, a comment or an autolink, and an "&" that starts an entity; a lone "<" ("< 1 ms") or "&"
# stays as written. Links may only point to http(s), mailto or relative targets; images are not drawn.
_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_LINK = re.compile(r"(\]\(\s*<?)\s*([A-Za-z][A-Za-z0-9+.\-]*):")
_IMAGE = re.compile(r"!\[")


def _safe(text: object) -> str:
    """``text`` with nothing in it a Markdown renderer would turn into HTML markup or a live link."""
    s = _ENTITY.sub("&amp;", str(text))
    s = _TAG.sub("&lt;", s)
    s = _LINK.sub(lambda m: m.group(1) + (m.group(2) + ":" if m.group(2).lower() in ("http", "https", "mailto")
                                          else "#"), s)
    return _IMAGE.sub("!\\[", s)


def seeds_text(seeds: list[int]) -> str:
    """``[1, 2, 3, 4, 5, 11]`` as ``"1-5, 11"``."""
    runs: list[list[int]] = []
    for s in sorted(int(x) for x in seeds):
        if runs and runs[-1][1] == s - 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def verdict_text(c: dict, word: dict[str, str]) -> str:
    """The verdict cell: ``word[verdict]``, then the per-seed count and the seeds that made the row."""
    v = word[verdict(c)]
    seeds = c.get("seeds")
    if c.get("seeds_held"):
        k, n = c["seeds_held"]
        v += f" ({k}/{n} seeds" + (f": {seeds_text(seeds)}" if seeds else "") + ")"
    elif seeds and verdict(c) != "reported":
        v += f" (seeds {seeds_text(seeds)})"
    return v


def _verdict(c: dict) -> str:
    return verdict_text(c, {"holds": "yes", "does not hold": "**no**", "inconclusive": "**inconclusive**",
                            "reported": "—"})


def _requested(rep: dict) -> str:
    """How the seed set came about: the seeds asked for, and the batches added to settle rows."""
    asked, ran = rep.get("seeds_requested"), rep.get("seeds", [])
    if not asked or list(asked) == list(ran):
        return f" ({seeds_text(ran)})" if ran else ""
    return (f" ({seeds_text(ran)}: {seeds_text(asked)} asked for, the rest added in batches of 5 to settle "
            f"inconclusive rows, at most {rep.get('max_seeds')})")


def section(rep: dict) -> str:
    """One experiment's section."""
    cell = lambda s: _safe(s).replace("|", "\\|").replace("\n", " ")
    seeds = rep.get("seeds", [])
    out = [f"### {_safe(rep['id'])}: {_safe(rep['title'])}", "",
           f"{_safe(rep['paper'])}; `scenarios/{str(rep['scenario']).replace('`', '')}`; variants: "
           f"{_safe(', '.join(rep['runs']))}; "
           f"seeds: {len(seeds)}{_requested(rep)}{' (QUICK: a tenth of the duration)' if rep.get('quick') else ''}. {_safe(rep['notes'])}",
           "",
           "| claim | paper | measured (cclab, mean ± 95 % CI over seeds) | criterion | verdict |",
           "| --- | --- | --- | --- | --- |"]
    out += [f"| {cell(c['claim'])} | {cell(c['paper'])} | {cell(c['measured'])} | {cell(c['criterion'])} | "
            f"{_verdict(c)} |" for c in rep["claims"]]
    if rep.get("explanation"):
        out += ["", _safe(rep["explanation"])]
    return "\n".join(out) + "\n"


def render(paths: list[Path]) -> str:
    """The sections of every reproduce.json in ``paths`` (files or folders holding one), in order."""
    from ..files import shaped

    out = []
    for p in paths:
        f = p / "reproduce.json" if p.is_dir() else p
        rep = load(f)  # checked: a file in anyone's results folder may be damaged or edited
        out.append(shaped(f, "reproduce.json", partial(section, rep)))
    return "\n".join(out)
