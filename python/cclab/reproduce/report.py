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
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Optional

from ..files import shaped
from ..results import Result
from . import experiments, folder_name, run_folder
from .markdown import _requested, render as render_markdown, verdict_text
from .record import load, verdict

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


def _runs(folder: Path, rep: dict) -> Optional[dict[str, list[Result]]]:
    """The runs behind ``rep``, loaded from their folders (None if any is missing: the figures need all)."""
    out: dict[str, list[Result]] = {}
    seeds = rep.get("seeds") or [1]
    for variant in rep["runs"]:
        out[variant] = []
        for s in seeds:
            where = folder / run_folder(variant, s)
            if not where.exists() and len(seeds) == 1:
                where = folder / folder_name(variant)  # written before every run was named by its seed
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
body{font:15px/1.45 system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;
overflow-wrap:break-word}
h1{font-size:1.6em} h2{border-bottom:2px solid #ccc;margin-top:2em} h3{margin-top:1.6em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;margin:.6em 0;font-size:.92em}
caption{text-align:left;color:#666;font-size:.9em;padding:.2em 0}
th,td{border:1px solid #ddd;padding:.3em .5em;vertical-align:top;text-align:left;min-width:4.5em}
th{background:#f3f3f3} tr.no td.verdict{background:#fde2e2;font-weight:600}
tr.yes td.verdict{background:#e3f6e3} tr.none td.verdict{background:#eee}
tr.inconclusive td.verdict{background:#fff3cd;font-weight:600}
.notes{color:#555} .quick{color:#b00;font-weight:600}
pre{overflow-x:auto}
figure{margin:1em 0} figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#666;font-size:.85em} nav a{margin-right:.7em}
body.only-no tr.yes,body.only-no tr.none,body.only-no .all-hold{display:none}
@media (max-width:600px){
 body{margin:1em auto;padding:0 .6em}
 table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:auto;min-width:0}
 table.stack thead{display:none} table.stack caption{display:block}
 table.stack tr{border:1px solid #ddd;margin:.6em 0}
 table.stack td{border:none;border-top:1px solid #eee}
 table.stack td::before{content:attr(data-label);display:block;color:#666;font-size:.85em}
}
"""

_SCRIPT = """
document.getElementById('only-no').addEventListener('change', function (e) {
  document.body.classList.toggle('only-no', e.target.checked);
});
"""

# A value that is no number ("nan", "inf", "-inf", as Python formats them) in text a reproduce.json
# carries: shown as a dash or an infinity sign that says what it stands for, never as Python's word.
_NONFINITE = re.compile(r"(?<![\w.])([-+]?)(nan|inf(?:inity)?)(?![\w])", re.IGNORECASE)


def _finite(text: str) -> str:
    """Escaped text with every non-finite value written for a reader (a span with a title)."""
    def word(m: re.Match[str]) -> str:
        if m.group(2).lower() == "nan":
            return "<span class='nonfinite' title='no value: undefined for these runs (not a number)'>—</span>"
        sign = "−" if m.group(1) == "-" else ""
        return f"<span class='nonfinite' title='{sign and 'minus '}infinite'>{sign}∞</span>"

    return _NONFINITE.sub(word, text)


def _finite_html(markup: str) -> str:
    """:func:`_finite` on the text between the tags of ``markup`` (attributes are left alone)."""
    return re.sub(r">([^<]+)<", lambda m: f">{_finite(m.group(1))}<", markup)


def _fails(c: dict) -> bool:
    """A row the filter keeps: a claim that does not hold, or that the seeds could not settle."""
    return verdict(c) in ("does not hold", "inconclusive")


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


_CLAIM_COLUMNS = ("claim", "paper", "measured (mean ± 95 % CI over seeds)", "criterion", "verdict")


def _table(cls: str, caption: str, columns: tuple[str, ...], rows: list[str]) -> str:
    """A table in a horizontally scrolling box (a narrow screen scrolls the table, not the page); a
    ``stack`` table shows each row as a card under 600 px, every cell headed by its column's name."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    return (f"<div class='scroll'><table class='{cls}'><caption>{html.escape(caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def _cells(columns: tuple[str, ...], cells: list[tuple[str, str]]) -> str:
    """``<td>`` elements from (class, HTML) pairs, each labelled with its column for stacked rows."""
    return "".join(f"<td data-label='{html.escape(col)}'{_class(cls)}>{_finite(text)}</td>"
                   for col, (cls, text) in zip(columns, cells))


def _class(cls: str) -> str:
    """`` class='…'`` for a start tag ("" for no class)."""
    return f" class='{html.escape(cls)}'" if cls else ""


def _experiment(folder: Path, rep: dict, figs: dict[str, bytes]) -> str:
    e = html.escape
    rows = []
    for c in rep["claims"]:
        cls, text = _verdict(c)
        rows.append(f"<tr class='{cls}'>" + _cells(_CLAIM_COLUMNS, [
            ("", e(c["claim"])), ("", e(c["paper"])), ("", e(c["measured"])), ("", e(c["criterion"])),
            ("verdict", e(text))]) + "</tr>")
    quick = "<span class='quick'>QUICK run (a tenth of the duration): not the experiment's claims.</span> " \
        if rep.get("quick") else ""
    # Captions are sentences: a capital letter first, a full stop last.
    fig_html = "".join(
        f"<figure><img alt='{e(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        f"<figcaption>Figure {e(name)} of {e(rep['id'])}, drawn from the runs in {e(folder.name)}/.</figcaption>"
        "</figure>" for name, png in figs.items())
    explanation = ""
    if rep.get("explanation"):
        body = _finite_html(_md(rep["explanation"]))
        body = body.replace("<table>", "<div class='scroll'><table>").replace("</table>", "</table></div>")
        explanation = f"<div class='explanation'>{body}</div>"
    # With "show only …" on, an experiment whose every claim holds (or is only reported) disappears whole:
    # no heading, notes or table header is left standing without rows.
    hide = "" if any(_fails(c) for c in rep["claims"]) else " all-hold"
    caption = f"The claims of {rep['id']}, each with the verdict of its criterion over the seeds."
    return (f"<section class='experiment{hide}' id='{e(rep['id'])}'><h3>{_finite(e(rep['id']) + ': ' + e(rep['title']))}</h3>"
            f"<p class='notes'>{quick}Scenario <code>{e(rep['scenario'])}</code>; {len(rep.get('seeds', []))} seeds"
            f"{e(_requested(rep))}; "
            f"variants: {e(', '.join(rep['runs']))}. {_finite(e(rep.get('notes', '')))}</p>"
            + _table("claims stack", caption, _CLAIM_COLUMNS, rows)
            + explanation + fig_html + "</section>")


_SUMMARY_COLUMNS = ("experiment", "title", "claims that hold")


def build_html(root: Path, progress: Callable[[str], None] = lambda s: None) -> str:
    """The whole page for the experiments under ``root``."""
    found = find(root)
    if not found:
        raise FileNotFoundError(f"no reproduce.json in {root} or its subfolders (write them with "
                                f"`cclab reproduce ... --out {root}`)")
    e = html.escape
    papers: dict[str, list[tuple[str, bool]]] = {}
    summary = []
    for folder, rep in found:
        progress(f"figures of {rep['id']}")
        figs = figures(folder, rep)
        fails = any(_fails(c) for c in rep["claims"])
        papers.setdefault(rep["paper"], []).append((
            shaped(folder / "reproduce.json", "reproduce.json", partial(_experiment, folder, rep, figs)), fails))
        held = sum(1 for c in rep["claims"] if verdict(c) == "holds")
        judged = sum(1 for c in rep["claims"] if verdict(c) != "reported")
        unsure = sum(1 for c in rep["claims"] if verdict(c) == "inconclusive")
        summary.append(f"<tr{'' if fails else _class('all-hold')}>" + _cells(_SUMMARY_COLUMNS, [
            ("", f"<a href='#{e(rep['id'])}'>{e(rep['id'])}</a>"), ("", e(rep["title"])),
            ("", f"{held} of {judged}" + (f" ({unsure} inconclusive)" if unsure else ""))]) + "</tr>")
    # A paper whose experiments all hold loses its heading too when the filter is on.
    body = "".join(f"<section class='paper{'' if any(f for _, f in secs) else ' all-hold'}'><h2>{_finite(e(p))}</h2>"
                   f"{''.join(s for s, _ in secs)}</section>" for p, secs in papers.items())
    meta = _meta(found)
    summary_table = _table("summary stack", "One row per experiment: how many of its judged claims hold.",
                           _SUMMARY_COLUMNS, summary)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            "<title>cclab: reproduction report</title>"
            f"<style>{_CSS}</style></head><body><h1>cclab: which claims of the five papers hold</h1>"
            f"<p class='notes'>{_finite(e(meta))} Every number is measured from the runs in this folder: a mean with its "
            "95 % confidence interval (Student t) over seeds; a verdict is yes when the interval clears the "
            "criterion, no when it fails it, inconclusive when it straddles it (a per-seed criterion: a sign "
            "test over the seeds); the count beside it says on how many seeds the criterion held on that seed's "
            "own run, and which seeds made the row. A dash (—) is a value the runs did not define.</p>"
            "<label><input type='checkbox' id='only-no'> show only the claims that do not hold or are "
            "inconclusive (and the experiments that have any)</label>"
            f"{summary_table}{body}<script>{_SCRIPT}</script></body></html>")


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
