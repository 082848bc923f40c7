"""`cclab report`: the HTML page and docs/reproduce.md's results section from reproduce.json files, without
rerunning anything. The page is checked in a real headless Chromium (the OS package, which `make test`
installs): it loads with no script error and no network request, every figure has a non-zero size, every
experiment has its table with one row per claim, and the filter hides the claims that hold."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from cclab import reproduce as rp
from cclab.reproduce import report as rr

# Experiments whose figures the page must carry (one of each paper's that draws some), quick, two seeds.
IDS = ("M1", "B1", "L5", "D1")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("reproduce")
    for x in IDS:
        rp.reproduce(x, root / x, quick=True, seeds=(1, 2))
    return root


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True)


def test_report_writes_html_and_markdown_from_the_files(folder, tmp_path):
    doc = tmp_path / "reproduce.md"
    doc.write_text(f"# prose before\n\n{rr.BEGIN}\nstale table\n{rr.END}\n\nprose after\n")
    r = _cli("report", str(folder), "--markdown", str(doc))
    assert r.returncode == 0, r.stderr
    page = (folder / "report.html").read_text()
    text = doc.read_text()
    assert "stale table" not in text and text.startswith("# prose before") and text.rstrip().endswith("prose after")
    for x in IDS:
        rep = json.loads((folder / x / "reproduce.json").read_text())
        assert f"### {x}: {rep['title']}" in text
        for c in rep["claims"]:  # every row, in both outputs, from the file
            assert c["measured"].replace("|", "\\|") in text
            assert c["measured"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in page
    # Self-contained: nothing fetched from elsewhere.
    assert "src='http" not in page and 'src="http' not in page and "<link" not in page
    # Rebuilding touches no run: no run folder changes.
    before = sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("summary.json"))
    assert _cli("report", str(folder), "-o", str(tmp_path / "again.html")).returncode == 0
    assert sorted((p, p.stat().st_mtime_ns) for p in folder.rglob("summary.json")) == before


def test_report_refuses_a_folder_without_results(tmp_path):
    r = _cli("report", str(tmp_path))
    assert r.returncode == 2 and "folder:" in r.stderr and "reproduce.json" in r.stderr
    # A Markdown file without the markers is refused, not overwritten.
    (tmp_path / "B1").mkdir()
    rp.reproduce("B1", tmp_path / "B1", quick=True, seeds=(1,))
    doc = tmp_path / "x.md"
    doc.write_text("no markers")
    r = _cli("report", str(tmp_path), "--markdown", str(doc))
    assert r.returncode == 2 and "markdown:" in r.stderr and doc.read_text() == "no markers"

def _chromium():
    for name in (os.environ.get("CCLAB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _synthetic(root, exp_id, verdicts, measured):
    """A reproduce.json beside the real ones: claims with the given verdicts and ``measured`` texts (which
    may hold Python's "nan"/"inf", as a mean over no finite seed value prints)."""
    where = root / exp_id
    where.mkdir()
    claims = [{"claim": f"claim {i}", "paper": "x", "measured": m, "criterion": "ratio ≤ inf", "verdict": v,
               "holds": {"holds": True, "does not hold": False}.get(v), "seeds_held": [1, 2]}
              for i, (v, m) in enumerate(zip(verdicts, measured))]
    (where / "reproduce.json").write_text(json.dumps({
        "id": exp_id, "paper": f"Paper of {exp_id}", "title": "synthetic", "scenario": "default.toml",
        "quick": True, "seeds": [1, 2], "notes": "Mean nan over no seed.", "explanation": "| a | b |\n|---|---|\n| nan | -inf |",
        "claims": claims, "runs": {"v": [{}]}}))


def _failing(rep):
    return any(rr._fails(c) for c in rep["claims"])


def test_report_in_headless_chromium(folder, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (`make test` installs Debian's chromium when run as root)")
    pw = pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make setup`")
    root = tmp_path / "r"
    shutil.copytree(folder, root)
    # Beside the real experiments: one whose every claim holds (the filter must hide it whole, its paper's
    # heading and its summary row too) and one that fails; both carry non-finite values.
    _synthetic(root, "X1", ["holds", "holds"], ["nan ± nan Mbit/s", "inf"])
    _synthetic(root, "X2", ["holds", "does not hold"], ["1.0 ± 0.1", "-inf ms"])
    assert _cli("report", str(root)).returncode == 0
    reps = {r["id"]: r for _, r in rr.find(root)}
    url = (root / "report.html").resolve().as_uri()
    visible = "e => e.offsetParent !== null"
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page()
        errors, requests = [], []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(url, wait_until="load")
        imgs = page.eval_on_selector_all(
            "img", "els => els.map(e => [e.alt, e.naturalWidth, e.naturalHeight, e.getBoundingClientRect().width])")
        tables = dict(page.eval_on_selector_all(
            "section.experiment", "els => els.map(e => [e.id, e.querySelectorAll('table.claims tbody tr').length])"))
        visible_yes = f"els => els.filter({visible}).length"
        shown = page.eval_on_selector_all("tr.yes", visible_yes)
        text = page.evaluate("document.body.innerText")
        titles = page.eval_on_selector_all(".nonfinite", "els => els.map(e => [e.textContent, e.title])")
        captions = page.eval_on_selector_all("figcaption, caption", "els => els.map(e => e.textContent)")
        # A phone's width: the page itself never scrolls sideways, and no table cell is squeezed below
        # about one word (60 px holds a 7-letter word at the page's 15 px font) or has text spilling out.
        page.set_viewport_size({"width": 400, "height": 800})
        scroll_width = page.evaluate("document.scrollingElement.scrollWidth")
        cells = page.eval_on_selector_all("td, th", f"""els => els.filter({visible}).map(e =>
            [e.textContent.slice(0, 40), e.getBoundingClientRect().width, e.scrollWidth - e.clientWidth])""")
        page.set_viewport_size({"width": 1280, "height": 800})
        page.check("#only-no")
        hidden = page.eval_on_selector_all("tr.yes", visible_yes)
        sections = dict(page.eval_on_selector_all("section.experiment", f"""els => els.map(e => [e.id, {{
            shown: e.offsetParent !== null,
            parts: [...e.querySelectorAll('h3, p.notes, table.claims, thead')].map({visible}),
            rows: [...e.querySelectorAll('table.claims tbody tr')].filter({visible}).map(r => r.className)}}])"""))
        summary = dict(page.eval_on_selector_all(
            "table.summary tbody tr", f"els => els.map(r => [r.querySelector('a').textContent, ({visible})(r)])"))
        papers = dict(page.eval_on_selector_all(
            "section.paper", f"els => els.map(s => [s.querySelector('h2').textContent, ({visible})(s)])"))
        browser.close()
    assert errors == [] and requests == []
    expected_figs = {name for x in IDS for name in (rp.experiments()[x.lower()].figures(
        rr._runs(folder / x, json.loads((folder / x / "reproduce.json").read_text()))) or {})}
    assert {a for a, *_ in imgs} == expected_figs and len(imgs) == len(expected_figs)
    assert all(w > 0 and h > 0 and shown_w > 0 for _, w, h, shown_w in imgs), imgs
    for x, rep in reps.items():
        assert tables[x] == len(rep["claims"])
    assert shown > 0 and hidden == 0
    # No Python "nan"/"inf" reaches the reader: a dash or an infinity sign, each with a title saying so.
    assert re.search(r"\b(nan|inf|infinity)\b", text, re.IGNORECASE) is None, re.findall(r".{30}\b(?:nan|inf)\b", text)
    assert {t for t, _ in titles} == {"—", "∞", "−∞"} and all(title for _, title in titles), titles
    # Captions are sentences.
    assert captions and all(re.fullmatch(r"[A-Z].*\.", c, re.DOTALL) for c in captions), captions
    assert scroll_width <= 400
    narrow = [c for c in cells if c[1] < 60 or c[2] > 1]
    assert cells and narrow == [], narrow
    # The filter: an experiment without a failing claim is gone whole (heading, notes, table, header) with
    # its summary row and, when its paper has no failing experiment, the paper's heading; one with a
    # failing claim shows its table header and only its failing rows.
    for x, rep in reps.items():
        sec = sections[x]
        if _failing(rep):
            assert sec["shown"] and all(sec["parts"]) and summary[x], (x, sec)
            assert sec["rows"] and all(r in ("no", "inconclusive") for r in sec["rows"]), (x, sec)
        else:
            assert not sec["shown"] and not any(sec["parts"]) and not summary[x], (x, sec)
    assert not papers["Paper of X1"] and papers["Paper of X2"]
    assert not all(_failing(r) for r in reps.values())  # the case of a hidden experiment is exercised


# Text a shared results folder could carry, in every field the report shows (issue 28, section 2, item 9).
HOSTILE = ("<script>window.__pwned = 1</script><img src=x onerror='window.__pwned = 2'>"
           "<a href='javascript:window.__pwned = 3'>x</a>")
HOSTILE_MD = (HOSTILE + "\n\n<div onmouseover='window.__pwned = 4'>block</div>\n\n"
              "[a link](javascript:window.__pwned=5) and ![an image](x \"t\") and <javascript:alert(1)> "
              "and `code <b>` and 3 < 4 & 5 > 2.")


def _hostile(root):
    where = root / "X1"
    where.mkdir(parents=True)
    meta = {"cclab_version": HOSTILE, "git": {"commit": HOSTILE}, "started_utc": HOSTILE,
            "host": {"cpu": HOSTILE, "cores": HOSTILE}}
    rep = {"id": "X1", "paper": HOSTILE, "title": HOSTILE, "scenario": HOSTILE, "quick": True, "seeds": [1],
           "notes": HOSTILE, "explanation": HOSTILE_MD,
           "claims": [{"claim": HOSTILE, "paper": HOSTILE, "measured": HOSTILE, "criterion": HOSTILE,
                       "holds": False, "seeds_held": [0, 1]}],
           "runs": {HOSTILE: [{"meta": meta}]}}
    (where / "reproduce.json").write_text(json.dumps(rep))
    return rep


def _live(page):
    """What of ``page`` would run or load: script elements, event-handler attributes, javascript: URLs and
    elements that fetch (img/iframe/object/embed) with a source other than an embedded PNG."""
    from html.parser import HTMLParser

    found = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "script":
                found.append(("script", attrs))
            for k, v in attrs:
                if k.startswith("on") or (v or "").strip().lower().startswith("javascript:"):
                    found.append((tag, (k, v)))
                if tag in ("img", "iframe", "object", "embed") and k in ("src", "data") \
                        and not (v or "").startswith("data:image/png;base64,"):
                    found.append((tag, (k, v)))

    P().feed(page)
    return found


def test_text_from_results_files_is_never_live_html(tmp_path):
    # Before: the explanation (Markdown) was rendered with its raw HTML, so a <script> in a shared
    # reproduce.json ran when the report was opened.
    _hostile(tmp_path)
    r = _cli("report", str(tmp_path))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "report.html").read_text()
    scripts = [a for tag, a in _live(page) if tag == "script"]
    assert len(scripts) == 1 and _live(page) == [("script", [])], _live(page)  # the report's own filter only
    assert "window.__pwned" in page  # shown as text, not dropped
    # Markdown itself still renders, and a lone "<" or "&" in prose stays a character.
    assert "<code>code &lt;b&gt;</code>" in page and "3 &lt; 4 &amp; 5 &gt; 2" in page
    # The Markdown section for docs/reproduce.md carries no tag either.
    doc = tmp_path / "r.md"
    doc.write_text(f"{rr.BEGIN}\n{rr.END}\n")
    assert _cli("report", str(tmp_path), "-o", str(tmp_path / "x.html"), "--markdown", str(doc)).returncode == 0
    import markdown

    assert _live(markdown.markdown(doc.read_text(), extensions=["tables"])) == []


def test_hostile_report_runs_no_script_in_chromium(tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (`make test` installs Debian's chromium when run as root)")
    pw = pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make setup`")
    _hostile(tmp_path)
    assert _cli("report", str(tmp_path)).returncode == 0
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto((tmp_path / "report.html").resolve().as_uri(), wait_until="load")
        for el in page.query_selector_all("a, div, img"):
            el.hover()
        pwned = page.evaluate("() => window.__pwned")
        browser.close()
    assert pwned is None
