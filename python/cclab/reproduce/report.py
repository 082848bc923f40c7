"""``cclab report DIR``: the reproduction results as one self-contained HTML page, and docs/reproduce.md's
result sections, both from the ``reproduce.json`` files ``cclab reproduce --out DIR`` wrote, without
rerunning anything.

The page groups the experiments by paper: each has its claim table (verdicts with their per-seed counts),
its notes, the measured explanation and the figures the paper shows, drawn from the runs on disk by the
experiment's own ``figures`` hook. Figures are PNGs embedded as data URIs, styles are inline and the one
script (a filter for the claims that do not hold) is inline too: the file opens from disk with no server
and no network.
"""
from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Optional

from ..files import shaped
from ..results import Result
from . import experiments
from .markdown import _requested, render as render_markdown, verdict, verdict_text

BEGIN = "<!-- cclab report: results begin -->"
END = "<!-- cclab report: results end -->"


def find(root: Path) -> list[tuple[Path, dict]]:
    """Every (folder, reproduce.json) under ``root`` (``root`` itself, or its subfolders one level down),
    in the papers' order (experiments cclab does not know last, by id)."""
    root = Path(root)
    top = root / "reproduce.json"
    files = [top] if os.path.lexists(top) else sorted(root.glob("*/reproduce.json"))
    order = {k.upper(): i for i, k in enumerate(experiments())}
    found = [(f.parent, load(f)) for f in files]
    return sorted(found, key=lambda x: (order.get(x[1]["id"], len(order)), x[1]["id"]))


# A claim row's verdicts (reproduce.json's ``verdict``; older files have only ``holds``).
_VERDICTS = ("holds", "does not hold", "inconclusive", "reported")


def load(path: Path) -> dict:
    """A reproduce.json, read (a regular file only) and checked to have the form ``cclab reproduce``
    writes; a ScenarioError naming the file and the first thing wrong otherwise. Every reader of the file
    (the HTML page, the Markdown sections) takes it from here, so none meets a form it does not expect."""
    from ..errors import ScenarioError
    from ..files import read_json

    rep = read_json(path, "reproduce.json")

    def text(v: Any) -> bool:
        return isinstance(v, str)

    def ints(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)

    def claim_ok(c: Any) -> bool:
        return (isinstance(c, dict) and all(text(c.get(k)) for k in ("claim", "paper", "measured", "criterion"))
                and c.get("holds") in (True, False, None) and "holds" in c
                and (c.get("seeds_held") is None or (ints(c["seeds_held"]) and len(c["seeds_held"]) == 2))
                and c.get("verdict") in (None, *_VERDICTS) and (c.get("seeds") is None or ints(c["seeds"])))

    checks = (
        (isinstance(rep, dict), f"the file must be a JSON object, not {type(rep).__name__}"),
        (isinstance(rep, dict) and text(rep.get("id")) and rep["id"] != "", "`id` must be an experiment id"),
        (isinstance(rep, dict) and all(text(rep.get(k, "")) for k in ("paper", "title", "scenario", "notes",
                                                                       "explanation")),
         "`paper`, `title`, `scenario`, `notes` and `explanation` must be text"),
        (isinstance(rep, dict) and all(text(rep.get(k)) for k in ("paper", "title", "scenario")),
         "`paper`, `title` and `scenario` are required"),
        (isinstance(rep, dict) and isinstance(rep.get("quick", False), bool), "`quick` must be true or false"),
        (isinstance(rep, dict) and all(ints(rep.get(k, [])) for k in ("seeds", "seeds_requested")),
         "`seeds` must be a list of integers"),
        (isinstance(rep, dict) and isinstance(rep.get("claims"), list) and all(claim_ok(c) for c in rep["claims"]),
         "`claims` must be a list of rows with text `claim`, `paper`, `measured`, `criterion` and `holds` true, "
         "false or null"),
        (isinstance(rep, dict) and isinstance(rep.get("runs"), dict)
         and all(isinstance(v, list) and all(isinstance(x, dict) for x in v) for v in rep["runs"].values()),
         "`runs` must map each variant to a list of summaries"),
    )
    for ok, why in checks:
        if not ok:
            raise ScenarioError([(str(path), f"is not a reproduce.json as cclab writes it: {why}; it may be "
                                             "truncated or edited")])
    return rep


def _runs(folder: Path, rep: dict) -> Optional[dict[str, list[Result]]]:
    """The runs behind ``rep``, loaded from their folders (None if any is missing: the figures need all)."""
    out: dict[str, list[Result]] = {}
    seeds = rep.get("seeds") or [1]
    for variant in rep["runs"]:
        out[variant] = []
        for s in seeds:
            where = folder / f"{variant}-seed{s}"
            if not where.exists() and len(seeds) == 1:
                where = folder / variant  # written before every run was named by its seed
            if not os.path.lexists(where / "summary.json"):
                return None
            out[variant].append(Result.load(where))
    return out


def figures(folder: Path, rep: dict) -> dict[str, bytes]:
    """The experiment's figures as PNG bytes, by name ({} when it draws none or its runs are not on disk)."""
    exp = experiments().get(rep["id"].lower())
    if exp is None or exp.figures is None:
        return {}
    runs = _runs(folder, rep)
    if runs is None:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    for name, fig in exp.figures(runs).items():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        out[name] = buf.getvalue()
    return out


_CSS = """
body{font:15px/1.45 system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em} h2{border-bottom:2px solid #ccc;margin-top:2em} h3{margin-top:1.6em}
table{border-collapse:collapse;width:100%;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.3em .5em;vertical-align:top;text-align:left}
th{background:#f3f3f3} tr.no td.verdict{background:#fde2e2;font-weight:600}
tr.yes td.verdict{background:#e3f6e3} tr.none td.verdict{background:#eee}
tr.inconclusive td.verdict{background:#fff3cd;font-weight:600}
.notes{color:#555} .quick{color:#b00;font-weight:600}
figure{margin:1em 0} figure img{max-width:100%;border:1px solid #eee}
figcaption{color:#666;font-size:.85em} nav a{margin-right:.7em}
body.only-no tr.yes,body.only-no tr.none{display:none}
"""

_SCRIPT = """
document.getElementById('only-no').addEventListener('change', function (e) {
  document.body.classList.toggle('only-no', e.target.checked);
});
"""


def _verdict(c: dict) -> tuple[str, str]:
    v = verdict(c)
    cls = {"holds": "yes", "does not hold": "no", "inconclusive": "inconclusive", "reported": "none"}[v]
    return cls, verdict_text(c, {"holds": "yes", "does not hold": "no", "inconclusive": "inconclusive",
                                 "reported": "—"})


def _md(text: str) -> str:
    """An explanation (Markdown from a reproduce.json, which may come from anyone's results folder) as HTML
    with nothing live in it: raw HTML is shown as text (Python-Markdown's raw-HTML block and inline
    handlers are removed, so ``<script>`` is escaped like any other text), links keep only http(s)/mailto
    or relative targets, and images become their alt text (the page fetches nothing)."""
    import re
    from xml.etree.ElementTree import Element

    import markdown

    safe_schemes = ("http", "https", "mailto")  # anything else (javascript:, data:, vbscript:, …) becomes "#"

    class Defang(markdown.treeprocessors.Treeprocessor):
        def run(self, root: Element) -> None:
            for el in root.iter():
                if el.tag == "img":
                    alt = el.get("alt", "")
                    el.tag, el.text = "span", alt
                    el.attrib.clear()
                for k in [k for k in el.attrib if k.lower() in ("href", "src")]:
                    # Browsers ignore control characters and spaces inside a scheme ("java\tscript:").
                    url = re.sub(r"[\x00-\x20]", "", el.get(k, "")).lower()
                    scheme = re.match(r"([a-z][a-z0-9+.-]*):", url)
                    if scheme and scheme.group(1) not in safe_schemes:
                        el.set(k, "#")

    class Safe(markdown.Extension):
        def extendMarkdown(self, md: markdown.Markdown) -> None:
            md.preprocessors.deregister("html_block")
            md.inlinePatterns.deregister("html")
            md.treeprocessors.register(Defang(md), "cclab_defang", 0)

    return markdown.markdown(text, extensions=["tables", Safe()])


def _experiment(folder: Path, rep: dict, figs: dict[str, bytes]) -> str:
    e = html.escape
    rows = []
    for c in rep["claims"]:
        cls, text = _verdict(c)
        rows.append(f"<tr class='{cls}'><td>{e(c['claim'])}</td><td>{e(c['paper'])}</td><td>{e(c['measured'])}</td>"
                    f"<td>{e(c['criterion'])}</td><td class='verdict'>{e(text)}</td></tr>")
    quick = "<span class='quick'>QUICK run (a tenth of the duration): not the experiment's claims.</span> " \
        if rep.get("quick") else ""
    fig_html = "".join(
        f"<figure><img alt='{e(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        f"<figcaption>{e(rep['id'])}: {e(name)} (from the runs in {e(folder.name)}/)</figcaption></figure>"
        for name, png in figs.items())
    return (f"<section class='experiment' id='{e(rep['id'])}'><h3>{e(rep['id'])}: {e(rep['title'])}</h3>"
            f"<p class='notes'>{quick}Scenario <code>{e(rep['scenario'])}</code>; {len(rep.get('seeds', []))} seeds"
            f"{e(_requested(rep))}; "
            f"variants: {e(', '.join(rep['runs']))}. {e(rep.get('notes', ''))}</p>"
            "<table class='claims'><thead><tr><th>claim</th><th>paper</th><th>measured (mean ± 95 % CI over seeds)</th>"
            f"<th>criterion</th><th>verdict</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + (f"<div class='explanation'>{_md(rep['explanation'])}</div>" if rep.get("explanation") else "")
            + fig_html + "</section>")


def build_html(root: Path, progress: Callable[[str], None] = lambda s: None) -> str:
    """The whole page for the experiments under ``root``."""
    found = find(root)
    if not found:
        raise FileNotFoundError(f"no reproduce.json in {root} or its subfolders (write them with "
                                f"`cclab reproduce ... --out {root}`)")
    e = html.escape
    papers: dict[str, list[str]] = {}
    summary = []
    for folder, rep in found:
        progress(f"figures of {rep['id']}")
        figs = figures(folder, rep)
        papers.setdefault(rep["paper"], []).append(
            shaped(folder / "reproduce.json", "reproduce.json", partial(_experiment, folder, rep, figs)))
        held = sum(1 for c in rep["claims"] if verdict(c) == "holds")
        judged = sum(1 for c in rep["claims"] if verdict(c) != "reported")
        unsure = sum(1 for c in rep["claims"] if verdict(c) == "inconclusive")
        summary.append(f"<tr><td><a href='#{e(rep['id'])}'>{e(rep['id'])}</a></td><td>{e(rep['title'])}</td>"
                       f"<td>{held} of {judged}" + (f" ({unsure} inconclusive)" if unsure else "") + "</td></tr>")
    body = "".join(f"<h2>{e(p)}</h2>{''.join(secs)}" for p, secs in papers.items())
    meta = _meta(found)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>cclab: reproduction report</title>"
            f"<style>{_CSS}</style></head><body><h1>cclab: which claims of the five papers hold</h1>"
            f"<p class='notes'>{e(meta)} Every number is measured from the runs in this folder: a mean with its "
            "95 % confidence interval (Student t) over seeds; a verdict is yes when the interval clears the "
            "criterion, no when it fails it, inconclusive when it straddles it (a per-seed criterion: a sign "
            "test over the seeds); the count beside it says on how many seeds the criterion held on that seed's "
            "own run, and which seeds made the row.</p>"
            "<label><input type='checkbox' id='only-no'> show only the claims that do not hold or are "
            "inconclusive</label>"
            "<table class='summary'><thead><tr><th>experiment</th><th>title</th><th>claims that hold</th></tr></thead>"
            f"<tbody>{''.join(summary)}</tbody></table>{body}<script>{_SCRIPT}</script></body></html>")


def _meta(found: list[tuple[Path, dict]]) -> str:
    """Which cclab version made the runs (from the first run's summary)."""
    for folder, rep in found:
        line = shaped(folder / "reproduce.json", "reproduce.json", partial(_meta_of, rep))
        if line:
            return line
    return ""


def _meta_of(rep: dict) -> str:
    """The version line from the first run's summary in ``rep`` ("" if none has a ``meta``)."""
    for summaries in rep["runs"].values():
        for s in summaries:
            m: dict[str, Any] = s.get("meta") or {}
            if m:
                git = m.get("git") or {}
                host = m.get("host") or {}
                return (f"cclab {m.get('cclab_version', '?')} (git {str(git.get('commit', '?'))[:10]}), first run "
                        f"started {m.get('started_utc', '?')} on {host.get('cpu', '?')} ({host.get('cores', '?')} cores).")
    return ""


def write_markdown(root: Path, doc: Path) -> None:
    """Replaces the text between the BEGIN and END markers of ``doc`` by the rendered sections of every
    experiment under ``root`` (the prose around them stays as written)."""
    from ..files import read_bytes

    data = read_bytes(doc, "Markdown document")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{doc}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}): not rewritten") from None
    if BEGIN not in text or END not in text:
        raise ValueError(f"{doc}: no '{BEGIN}' ... '{END}' markers to write the results between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    sections = render_markdown([folder for folder, _ in find(root)])
    doc.write_text(f"{head}{BEGIN}\n\n{sections}\n{END}{tail}")
